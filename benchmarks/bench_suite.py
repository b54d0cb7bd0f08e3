"""Target 6: the whole test suite, as the README runs it, against 90 s with 2 workers.

    python benchmarks/bench_suite.py              # python -m pytest -n 2 in a fresh process
    python benchmarks/bench_suite.py --workers 4

Prints the wall time beside the target, the tests run, and the slowest tests (where the time
goes). A failing suite is reported as such: its time says nothing.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import header, row  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
TARGET = 90.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2, help="pytest-xdist workers (default 2, the target's)")
    args = parser.parse_args()
    print(header(f"target 6: the test suite with {args.workers} workers"))
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", str(args.workers), "-p", "no:cacheprovider", "--durations=12"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - start
    summary = next((line for line in reversed(done.stdout.splitlines()) if re.search(r"\d+ (passed|failed)", line)), "")
    print(row("pytest summary", "", summary.strip("= ")))
    ok = done.returncode == 0
    print(row("wall time", f"{took:8.1f} s", "" if ok else "THE SUITE FAILED: the time says nothing"))
    print(
        row(
            "wall time / target",
            f"{took / TARGET:.2f}x",
            f"target {TARGET:g} s: " + ("ok" if ok and took <= TARGET else "MISSED"),
        )
    )
    slowest = done.stdout.split("slowest 12 durations", 1)[-1].splitlines()[1:13] if "slowest" in done.stdout else []
    print("slowest tests:")
    for line in slowest:
        print(f"  {line.strip()}")


if __name__ == "__main__":
    main()
