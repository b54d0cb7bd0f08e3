"""Target 6: the whole test suite with 2 workers, at the built-in ops and with synthetic ops added.

    python benchmarks/bench_suite.py                   # 11 built-in ops, then 39 synthetic ones added (50)
    python benchmarks/bench_suite.py --added 0         # the built-in ops only
    python benchmarks/bench_suite.py --workers 4

Both runs happen in one copy of the checkout (its tracked files), installed into a fresh venv the
way the README says, each with a cold cache of its own (as CI's), so the two differ only by the ops: first as it is, then with renamed copies of
the built-in specs (benchmarks/regenerate.py `make_specs`) added and generated. Prints each wall
time, the growth per added op ((t_added - t_builtin) / added) against 1 s, and the built-in run
against 150 s (issue 22). A failing suite is reported as such: its time says nothing.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(1, str(ROOT / "tests"))
from _common import header, row  # noqa: E402
from isolated import copy_repository, fresh_venv, pip_install, venv_env  # noqa: E402
from regenerate import make_specs  # noqa: E402

TARGET = 150.0  # s, the whole suite at the built-in ops
GROWTH = 1.0  # s per added op
SLOWEST = 12


def _suite(repo: Path, python: Path, workers: int, cache: Path) -> tuple[float, bool, str, list[str]]:
    """Wall time, success, pytest's summary line and its slowest tests (or what failed), for the
    README's command."""
    command = [
        python,
        "-m",
        "pytest",
        "-q",
        "-rfE",
        "-n",
        str(workers),
        "-p",
        "no:cacheprovider",
        f"--durations={SLOWEST}",
    ]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=repo, capture_output=True, text=True, env=_env(python, cache))
    took = time.perf_counter() - start
    summary = next((line for line in reversed(done.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", line)), "")
    tail = done.stdout.split(f"slowest {SLOWEST} durations", 1)
    slowest = tail[1].splitlines()[1 : SLOWEST + 1] if len(tail) == 2 else []
    failed = [line for line in done.stdout.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    return took, done.returncode == 0, summary.strip("= "), [line.strip() for line in failed + slowest]


def _env(python: Path, cache: Path) -> dict[str, str]:
    """The venv's environment, with the cache given (each run's own: builds are not shared) and a
    temporary root of the run's own beside it. pytest keeps the folders of its last three runs under
    <temporary root>/pytest-of-<user> and removes older ones as a run ends, after its last test: on
    a machine that ran the suite before, that is a whole earlier run's files (~270 MB, seconds)
    inside the time. A CI machine starts with none, and so does each run here."""
    temporary = cache.with_name(cache.name + "-tmp")
    temporary.mkdir(exist_ok=True)
    return venv_env(python, ACLNNGEN_CACHE_DIR=str(cache), PYTEST_DEBUG_TEMPROOT=str(temporary))


def _as_a_clone(repo: Path) -> None:
    """The copy as a clone has it: a git work tree, its files in the index (tests list what git tracks)."""
    for command in (["git", "init", "-q"], ["git", "add", "-A"]):
        subprocess.run(command, cwd=repo, check=True, capture_output=True)


def _add_ops(repo: Path, python: Path, count: int, cache: Path) -> int:
    """Adds `count` renamed copies of the built-in specs to the copy and generates; the ops now."""
    with tempfile.TemporaryDirectory() as tmp:
        made = make_specs(Path(tmp), count)
        for spec in sorted((made / "ops").glob("*.yaml")):
            shutil.copy2(spec, repo / "specs" / "ops" / spec.name)
    aclnngen = python.parent / "aclnngen"
    for command in (["generate"], ["check"]):
        done = subprocess.run([aclnngen, *command], cwd=repo, capture_output=True, text=True, env=_env(python, cache))
        if done.returncode != 0:
            raise SystemExit(f"aclnngen {command[0]} failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return len(list((repo / "specs" / "ops").glob("*.yaml")))


def _report(label: str, took: float, ok: bool, summary: str, slowest: list[str]) -> None:
    print(row(f"{label}: pytest", "", summary))
    print(row(f"{label}: wall time", f"{took:8.1f} s", "" if ok else "THE SUITE FAILED: the time says nothing"))
    print(f"{label}: what failed, then the slowest tests")
    for line in slowest:
        print(f"  {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (default 2, the target's)")
    parser.add_argument("--added", type=int, default=39, help="synthetic ops to add (default 39: 50 ops in all)")
    args = parser.parse_args()
    print(header(f"target 6: the test suite with {args.workers} workers"))
    # the tests of the vendor's repositories run only where their mirrors are named (never in CI)
    mirrors = os.environ.get("ACLNNGEN_VENDOR_MIRRORS", "").strip()
    print(
        row(
            "vendor mirrors",
            "set" if mirrors else "not set",
            "their tests run" if mirrors else "their tests skip, as in CI",
        )
    )
    with tempfile.TemporaryDirectory(prefix="bench-suite-") as tmp:
        where = Path(tmp)
        repo = copy_repository(where / "checkout")
        _as_a_clone(repo)
        python = fresh_venv(where / "venv")
        pip_install(python, "-e", repo)
        builtin = len(list((repo / "specs" / "ops").glob("*.yaml")))
        # each run with a cold cache of its own, as a CI run has: the second run reuses no build or
        # generated record of the first (the catalog package, the built-in ops' kernels)
        took, ok, summary, slowest = _suite(repo, python, args.workers, where / "cache-builtin")
        _report(f"{builtin} ops", took, ok, summary, slowest)
        verdict = "ok" if ok and took <= TARGET else "MISSED"
        print(row(f"{builtin} ops / target", f"{took / TARGET:.2f}x", f"target {TARGET:g} s: {verdict}"))
        if args.added <= 0:
            return
        ops = _add_ops(repo, python, args.added, where / "cache-added-generate")
        more, more_ok, more_summary, more_slowest = _suite(repo, python, args.workers, where / "cache-added")
        _report(f"{ops} ops", more, more_ok, more_summary, more_slowest)
        growth = (more - took) / (ops - builtin)
        verdict = "ok" if ok and more_ok and growth <= GROWTH else "MISSED"
        print(row("growth per added op", f"{growth:8.2f} s", f"target {GROWTH:g} s: {verdict}"))


if __name__ == "__main__":
    main()
