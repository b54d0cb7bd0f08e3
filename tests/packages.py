"""A package generated from made-up specs, importable for the length of a test module: the one
fixture body the tests of stand-alone packages share (`with generated_package(...) as out`); and
its generated tests run as a user runs them (`run_generated_tests`)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

from nested_pytest import Run, run_pytest
from repo_paths import DATA


@contextlib.contextmanager
def generated_package(root: Path, specs: Path, name: str) -> Iterator[Path]:
    """`aclnngen generate --specs SPECS --out ROOT/pkg/NAME`, then NAME importable until the end."""
    out = root / "pkg" / name
    done = subprocess.run(
        [sys.executable, "-m", "aclnngen.codegen.cli", "generate", "--specs", str(specs), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(out.parent))
    try:
        yield out
    finally:
        sys.path.remove(str(out.parent))
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]


def run_generated_tests(package: Path, *args: str, **env: str | None) -> Run:
    """`python -m pytest PACKAGE/tests -q ARGS` in the package's folder, the package and tests/data
    (the `mutations` plugin) on PYTHONPATH, outside the outer run's xdist; `env` adds variables
    (None: removes one). A nested run of its own (tests/nested_pytest.py)."""
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(package.parent), str(DATA)]))
    environment.pop("PYTEST_XDIST_WORKER", None)
    for name, value in env.items():
        if value is None:
            environment.pop(name, None)
        else:
            environment[name] = value
    return run_pytest(
        package / "tests", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *args, cwd=package.parent, env=environment
    )
