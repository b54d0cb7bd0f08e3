"""Target 4, start-up: importing a binding beside importing NumPy, and the first call after the
import, each in a fresh interpreter.

    python benchmarks/bench_startup.py [--ops gelu_backward,swish_backward] [--rounds 7]

Each measurement is a new `python` process that times its own import statement (and then its
first call) with time.perf_counter, so the interpreter's start-up is left out of every figure;
the variants take turns round by round and each keeps its best round. Bytecode caches are warm
(PYTHONPYCACHEPREFIX points at a folder of this run, filled by a first untimed round, whatever
PYTHONDONTWRITEBYTECODE says) and so is the simulator's build cache, as for a user's second
session. Targets: import <= 1.5x `import numpy`; first call < 50 ms. The heavy modules present
after the import, and after the first call, are listed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import header, row  # noqa: E402

HEAVY = ("scipy", "torch", "jinja2", "pydantic", "yaml", "hypothesis", "pytest", "matplotlib")

CHILD = r"""
import json, sys, time
op = sys.argv[1]
t0 = time.perf_counter()
if op == "numpy":
    import numpy
    print(json.dumps({"import": time.perf_counter() - t0}))
    raise SystemExit
import importlib
module = importlib.import_module(f"aclnngen.generated.ops.{op}")
t1 = time.perf_counter()
heavy_import = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[2].split(",")))
import numpy as np
meta = importlib.import_module(f"aclnngen.generated.meta.{op}").META
from aclnngen.core.meta import op_meta
inputs = [np.full((4,), 0.5, np.float32) for p in op_meta(meta).by_role("input")]
fn = getattr(module, op)
t2 = time.perf_counter()
fn(*inputs)
t3 = time.perf_counter()
heavy_call = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[2].split(",")))
print(json.dumps({"import": t1 - t0, "first_call": t3 - t2, "heavy_import": heavy_import, "heavy_call": heavy_call}))
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="gelu_backward,swish_backward")
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    ops = args.ops.split(",")
    with tempfile.TemporaryDirectory(prefix="aclnngen-bench-pyc-") as pyc:
        env = dict(os.environ, PYTHONPYCACHEPREFIX=pyc)
        env.pop("PYTHONDONTWRITEBYTECODE", None)

        def measure(what: str) -> dict:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, what, ",".join(HEAVY)],
                capture_output=True,
                text=True,
                env=env,
                check=False,
            )
            if out.returncode != 0:
                raise SystemExit(out.stdout + out.stderr)
            return json.loads(out.stdout.strip().splitlines()[-1])

        variants = ["numpy", *ops]
        for what in variants:  # untimed: bytecode caches and the simulator's build
            measure(what)
        best: dict[str, dict] = {}
        for _ in range(args.rounds):
            for what in variants:
                got = measure(what)
                old = best.get(what)
                if old is None:
                    best[what] = got
                else:
                    for key in ("import", "first_call"):
                        if key in got:
                            old[key] = min(old[key], got[key])
    print(header("start-up: import of a binding and its first call, fresh interpreters"))
    numpy_time = best["numpy"]["import"]
    print(row("import numpy", f"{numpy_time * 1e3:7.1f} ms"))
    for op in ops:
        got = best[op]
        ratio = got["import"] / numpy_time
        print(
            row(
                f"import aclnngen.generated.ops.{op}",
                f"{got['import'] * 1e3:7.1f} ms",
                f"{ratio:.2f}x numpy (target <= 1.5x: {'ok' if ratio <= 1.5 else 'MISSED'})",
            )
        )
        print(row("  heavy modules after the import", ", ".join(got["heavy_import"]) or "none"))
        first = got["first_call"]
        print(
            row(
                f"first call of {op}", f"{first * 1e3:7.1f} ms", f"target < 50 ms: {'ok' if first < 0.05 else 'MISSED'}"
            )
        )
        print(row("  heavy modules after the first call", ", ".join(got["heavy_call"]) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
