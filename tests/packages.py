"""A package generated from made-up specs, importable for the length of a test module: the one
fixture body the tests of stand-alone packages share (`with generated_package(...) as out`); and
its generated tests run as a user runs them (`run_generated_tests`).

`generate` runs the command in this process: for tests whose subject is the package the generator
writes, not the command line (tests/cli tests that), it spares an interpreter's start and imports,
~0.4 CPU-s a package. Not from specs of so many ops that the generator renders them in worker
processes: it would fork them from a test worker that runs threads (xdist's), and hold what a
catalog renders; those run `aclnngen generate` in a process of its own, as before."""

from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

from forkserver import Run, run_pytest
from repo_paths import DATA


def aclnngen(*args: str | Path) -> subprocess.CompletedProcess:
    """`aclnngen ARGS` in this process, through the command line's own entry (`cli.main`: its
    parser, dispatch and error reporting): its exit code and what it printed on stdout and stderr.
    An exception no command turns into a message fails the test as a traceback would."""
    from aclnngen.codegen.cli import main

    argv = [str(a) for a in args]
    stdout, stderr = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
        try:
            code = main(argv)
        except SystemExit as exc:  # argparse's own refusals
            code = exc.code if isinstance(exc.code, int) else 1
    return subprocess.CompletedProcess(["aclnngen", *argv], code, stdout.getvalue(), stderr.getvalue())


def generate(specs: Path, out: Path) -> Path:
    """`aclnngen generate --specs SPECS --out OUT`, which must succeed; returns OUT."""
    from aclnngen.codegen.generate import PARALLEL_FROM

    args = ["generate", "--specs", str(specs), "--out", str(out)]
    if sum(1 for _ in specs.rglob("*.yaml")) < PARALLEL_FROM:
        done = aclnngen(*args)
    else:
        done = subprocess.run(
            [sys.executable, "-m", "aclnngen.codegen.cli", *args], capture_output=True, text=True, timeout=900
        )
    assert done.returncode == 0, done.stdout + done.stderr
    return out


@contextlib.contextmanager
def generated_package(root: Path, specs: Path, name: str) -> Iterator[Path]:
    """`aclnngen generate --specs SPECS --out ROOT/pkg/NAME`, then NAME importable until the end."""
    out = generate(specs, root / "pkg" / name)
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
    (None: removes one). A nested run of its own (tests/forkserver.py)."""
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
