"""Runs every benchmarks/bench_*.py in turn (found by name, so a new one needs no change here),
each in its own interpreter with the arguments of its defaults, and prints their output.

    python benchmarks/run_all.py [--only call_overhead,memory] [--list]

The exit status is 1 when any benchmark failed to run (not when a target is missed: the scripts
print "MISSED" beside such a figure)."""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def benchmarks() -> list[Path]:
    return sorted(HERE.glob("bench_*.py"))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated names without bench_ and .py")
    parser.add_argument("--list", action="store_true", help="list the benchmarks and stop")
    args = parser.parse_args(argv)
    found = benchmarks()
    if args.only:
        wanted = set(args.only.split(","))
        unknown = wanted - {p.stem[len("bench_") :] for p in found}
        if unknown:
            parser.error(
                f"no benchmark named {', '.join(sorted(unknown))}; known: {', '.join(p.stem[6:] for p in found)}"
            )
        found = [p for p in found if p.stem[len("bench_") :] in wanted]
    if args.list:
        print("\n".join(p.name for p in found))
        return 0
    failed = []
    for path in found:
        start = time.perf_counter()
        print(f"\n### {path.name}", flush=True)
        done = subprocess.run([sys.executable, str(path)], check=False)
        print(f"### {path.name}: exit {done.returncode}, {time.perf_counter() - start:.1f} s", flush=True)
        if done.returncode != 0:
            failed.append(path.name)
    if failed:
        print(f"\nfailed to run: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
