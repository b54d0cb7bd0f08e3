"""Shared fixtures. `tests/` is on sys.path (pytest's rootdir-relative import), so helper modules
such as tests/fakecann.py import by name."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import settings

# In CI (CI=true) property tests draw the same examples every run, so a submission's result does
# not depend on luck; on a developer's machine they explore new examples each run.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() == "true":
    settings.load_profile("ci")


@pytest.fixture(scope="session")
def fake_cann_homes(tmp_path_factory):
    """Fake CANN installs (tests/fakecann.py LAYOUTS): layout name -> ASCEND_HOME_PATH."""
    import fakecann

    return fakecann.make_installs(tmp_path_factory.mktemp("fake-cann"))


@pytest.fixture(scope="session")
def aclnngen_cli():
    """Runs `aclnngen ARGS` in a fresh interpreter, as a user's shell does: returns the completed
    process with its output as text. One runner for every test of the command line."""

    def run(*args, cwd=None, env=None, timeout: float = 600) -> subprocess.CompletedProcess:
        command = [sys.executable, "-m", "aclnngen.codegen.cli", *map(str, args)]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)

    return run


@pytest.fixture
def reference_kernels(monkeypatch):
    """The simulator computes with the reference, not its compiled kernels: for tests whose subject
    is the call path (layouts, offsets, streams, threads) checked bit for bit against the reference.
    The compiled kernels are checked against the reference in tests/sim/test_compiled_kernels.py and
    in every generated test."""
    from aclnngen.runtime.sim import compiled

    monkeypatch.setenv(compiled.MODE_ENV, "reference")
