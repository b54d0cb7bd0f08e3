"""Target 5: `aclnngen generate` at CANN scale, on synthetic specs (renamed copies of specs/ops/).

    python benchmarks/bench_generate.py                 # 1,000 specs
    python benchmarks/bench_generate.py --specs 5000

Each figure is measured in a fresh process running the generate command into a stand-alone
package (`--specs DIR --out DIR`) with a generation cache of its own (cold at first; see
codegen/gencache.py), beside its target: from scratch (< 5 s at 1,000 specs), again
with nothing changed (< 0.5 s), with one spec changed (< 0.5 s), and the peak memory of the
from-scratch run counted over the parent and its worker processes (< 300 MB at 5,000 specs): the
sum of each process's own peak resident set (VmHWM, an upper bound), beside the peak of their
summed resident sets sampled every 20 ms and the largest single process. The floor (reading and validating every spec, no
rendering) is printed beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import header, row  # noqa: E402
from regenerate import make_specs  # noqa: E402

_RUN = """
import json, resource, sys, time
from aclnngen.codegen.cli import main
start = time.perf_counter()
code = main(sys.argv[1:])
took = time.perf_counter() - start
print(json.dumps({"seconds": took, "rss_mb": max(resource.getrusage(w).ru_maxrss for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024, "code": code}))
"""

_READ = """
import json, resource, sys, time
from pathlib import Path
from aclnngen.codegen.loader import load_all, load_products
start = time.perf_counter()
load_all(Path(sys.argv[1]), load_products())
print(json.dumps({"seconds": time.perf_counter() - start, "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "code": 0}))
"""


def _status_kb(pid: int, field: str) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _tree(root: int) -> list[int]:
    """`root` and every process below it (from /proc/<pid>/stat's parent ids)."""
    parents = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, todo = [root], [root]
    while todo:
        pid = todo.pop()
        children = [c for c, p in parents.items() if p == pid]
        found += children
        todo += children
    return found


def _measure(script: str, *args: str, cache: Path) -> dict:
    """One run in a fresh process; its memory counted over it and its workers (forked renderers):
    the peak of their summed resident sets (sampled every 20 ms) and the sum of each one's own
    peak (VmHWM: an upper bound, as the peaks need not coincide)."""
    env = {**os.environ, "ACLNNGEN_CACHE_DIR": str(cache)}  # a cache of this run's own: cold at first
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # compiled modules kept, as on a user's machine
    child = subprocess.Popen(
        [sys.executable, "-c", script, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )
    summed, peaks = 0, {}
    with ThreadPoolExecutor(1) as pool:
        output = pool.submit(child.communicate)
        while not output.done():
            pids = _tree(child.pid)
            summed = max(summed, sum(_status_kb(p, "VmRSS") for p in pids))
            peaks.update({p: max(peaks.get(p, 0), _status_kb(p, "VmHWM")) for p in pids})
            time.sleep(0.02)
        stdout, stderr = output.result()
    if child.returncode != 0 and not stdout.strip():
        sys.exit(f"bench_generate: {' '.join(args)} failed:\n{stderr[-3000:]}")
    figure = json.loads(stdout.strip().splitlines()[-1])
    figure.update(tree_mb=summed / 1024, peaks_mb=sum(peaks.values()) / 1024, processes=len(peaks))
    return figure


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--specs", type=int, default=1000, help="how many specs (default 1000)")
    args = parser.parse_args()
    print(header(f"target 5: generation of {args.specs} specs"))
    with tempfile.TemporaryDirectory() as tmp:
        specs = make_specs(Path(tmp), args.specs)
        out = Path(tmp) / "out"
        command = ["generate", "--specs", str(specs), "--out", str(out / "bench_ops")]
        cache = Path(tmp) / "cache"
        floor = _measure(_READ, str(specs), cache=cache)
        scratch = _measure(_RUN, *command, cache=cache)
        again = _measure(_RUN, *command, cache=cache)
        changed = sorted((specs / "ops").glob("*.yaml"))[len(list((specs / "ops").glob("*.yaml"))) // 2]
        changed.write_text(
            changed.read_text(encoding="utf-8").replace("summary: ", "summary: Changed. ", 1), encoding="utf-8"
        )
        one = _measure(_RUN, *command, cache=cache)
    for name, figure in (
        ("read and validate only (the floor)", floor),
        ("from scratch", scratch),
        ("nothing changed", again),
        ("one spec changed", one),
    ):
        print(
            row(
                name,
                f"{figure['seconds']:8.2f} s",
                f"largest process {figure['rss_mb']:.0f} MB, {figure['processes']} processes: summed"
                f" {figure['tree_mb']:.0f} MB, their peaks {figure['peaks_mb']:.0f} MB;"
                f" {figure['seconds'] / args.specs * 1e3:.1f} ms/spec",
            )
        )
    scale = args.specs / 1000
    checks = [
        ("from scratch", scratch["seconds"], 5.0 * scale),
        ("nothing changed", again["seconds"], 0.5),
        ("one spec changed", one["seconds"], 0.5),
    ]
    for name, seconds, target in checks:
        print(
            row(
                f"{name} / target",
                f"{seconds / target:.2f}x",
                f"target {target:g} s: " + ("ok" if seconds <= target else "MISSED"),
            )
        )
    if args.specs >= 5000:  # counted over the parent and its workers: the sum of their peaks
        print(
            row(
                "peak memory (parent and workers) / 300 MB",
                f"{scratch['peaks_mb'] / 300:.2f}x",
                "ok" if scratch["peaks_mb"] <= 300 else "MISSED",
            )
        )
    print(
        row("from scratch / floor", f"{scratch['seconds'] / floor['seconds']:.2f}x", "rendering's share over reading")
    )


if __name__ == "__main__":
    main()
