"""Shared fixtures. `tests/` is on sys.path (pytest's rootdir-relative import), so helper modules
such as tests/fakecann.py import by name."""

from __future__ import annotations

import gc
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings

from bytecode_folder import link_installed_bytecode, memory_folder, rewrite_ahead
from repo_paths import REPO, TESTS

# In CI (CI=true) property tests draw the same examples every run, so a submission's result does
# not depend on luck; on a developer's machine they explore new examples each run.
settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI", "").lower() == "true":
    settings.load_profile("ci")


# The suite starts some two hundred interpreters (the command line, nested suites, packages). With
# bytecode writing off (PYTHONDONTWRITEBYTECODE, as CI images set it) each would compile aclnngen
# and its dependencies from source again, ~0.15 s apiece. They share one bytecode cache instead, in
# a folder of this run that is removed at its end (PYTHONPYCACHEPREFIX): nothing is written beside
# the sources, which is what turning bytecode off is for. The controller sets it up before xdist
# starts its workers, so they and every process they start inherit it, with the libraries' own
# bytecode linked in (tests/bytecode_folder.py), in memory where the system has a folder for it.
_BYTECODE_FOLDER: list[str] = []  # the controller's, to remove at the end


def pytest_configure(config):
    _steal_work(config)
    if hasattr(config, "workerinput") or os.environ.get("PYTHONPYCACHEPREFIX"):
        return  # a worker (the controller did it), or the user chose a bytecode folder already
    folder = tempfile.mkdtemp(prefix="aclnngen-test-bytecode-", dir=memory_folder())
    _BYTECODE_FOLDER.append(folder)
    link_installed_bytecode(folder)
    os.environ["PYTHONPYCACHEPREFIX"] = folder
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)


def _steal_work(config) -> None:
    """-n without a --dist of the user's: worksteal, not xdist's "load". An idle worker takes the
    tail of the other's unstarted tests, so both end within a test or two of each other (with
    "load" one ended ~5 s before the other). Here, not in addopts: there a --dist would be an
    unknown option to a run without xdist (-p no:xdist)."""
    chosen = [*config.invocation_params.args, *os.environ.get("PYTEST_ADDOPTS", "").split()]
    if getattr(config.option, "dist", None) == "load" and not any(a.startswith(("--dist", "-d")) for a in chosen):
        config.option.dist = "worksteal"


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session):
    # a worker collecting the whole suite writes its share of the test modules' rewritten bytecode
    # first (tests/bytecode_folder.py rewrite_ahead), so the workers do not each rewrite them all
    if all(Path(a).resolve() in (REPO, TESTS) for a in session.config.args):
        rewrite_ahead(session.config, sorted(TESTS.rglob("test_*.py")))


def pytest_unconfigure(config):
    while _BYTECODE_FOLDER:
        folder = _BYTECODE_FOLDER.pop()
        os.environ.pop("PYTHONPYCACHEPREFIX", None)
        shutil.rmtree(folder, ignore_errors=True)


# A full garbage collection walks every object the process holds. A worker that has imported
# torch, hypothesis and the generator and collected the suite holds ~450,000 of them, 0.5 to 1 s a
# pass on these VMs, and Python ran 60 such passes in the first third of a run (34 s of two
# workers). So what is alive after collection, and what outlives every 50 tests, is frozen
# (gc.freeze): later passes walk only newer objects. A frozen object is still freed when its last
# reference goes; only a cycle frozen before it became garbage stays, and the tests that count
# leaks (tests/simtools.no_leaks_around) do so within one test, never across a freeze.
FREEZE_EVERY = 50
_ran = [0]


def pytest_collection_finish(session):
    gc.collect()
    gc.freeze()


# With -n and --dist worksteal (_steal_work above), xdist hands each worker a consecutive share of
# the tests, and a worker that runs out takes the tail of another's unstarted share. The slow
# tests go first, in their collection order: a module whose fixture makes a venv, a wheel or a
# package of every catalog op then runs at the head of one worker's share, never the tail another
# takes, so the fixture is made once, and the longest tests start early instead of ending the run
# on one worker.
def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)  # (a stable sort)


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    _ran[0] += 1
    if _ran[0] % FREEZE_EVERY == 0:
        gc.collect()
        gc.freeze()


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
