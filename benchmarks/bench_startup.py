"""Target 4, start-up: importing a binding beside importing NumPy, and the first call after the
import, each in a fresh interpreter.

    python benchmarks/bench_startup.py [--ops gelu_backward,swish_backward] [--rounds 7]

Each measurement is a new `python` process that times its own import statement (and then its
first call) with time.perf_counter, so the interpreter's start-up is left out of every figure;
the variants take turns round by round and each keeps its best round. Two bytecode settings
(--bytecode): "cached", every module's bytecode cached (PYTHONPYCACHEPREFIX points at a folder of
this run, filled by a first untimed round), and "none", PYTHONDONTWRITEBYTECODE=1 as on this
machine, so aclnngen's modules (an editable install) compile from source at every import while
NumPy's bytecode, written by pip, is read. The simulator's build cache is warm, as for a user's
second session. Targets: import <= 1.5x `import numpy`; first call < 50 ms. The heavy modules present
after the import, and after the first call, are listed, with how many of aclnngen's own modules
each loads (each compiled from source without cached bytecode). The children import aclnngen
from the current folder when it is a checkout (aclnngen/__init__.py), so running the script from
a `git worktree` of another commit measures that commit.
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
t0, c0 = time.perf_counter(), time.process_time()
if op == "numpy":
    import numpy
    print(json.dumps({"import": time.perf_counter() - t0, "import_cpu": time.process_time() - c0}))
    raise SystemExit
import importlib
module = importlib.import_module(f"aclnngen.generated.ops.{op}")
t1, c1 = time.perf_counter(), time.process_time()
heavy_import = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[2].split(",")))
own_import = sum(m.startswith("aclnngen.") for m in sys.modules)
import numpy as np
meta = importlib.import_module(f"aclnngen.generated.meta.{op}").META
from aclnngen.core.meta import op_meta
inputs = [np.full((4,), 0.5, np.float32) for p in op_meta(meta).by_role("input")]
fn = getattr(module, op)
t2, c2 = time.perf_counter(), time.process_time()
fn(*inputs)
t3, c3 = time.perf_counter(), time.process_time()
heavy_call = sorted({m.split(".")[0] for m in sys.modules} & set(sys.argv[2].split(",")))
own_call = sum(m.startswith("aclnngen.") for m in sys.modules) - own_import
print(json.dumps({"import": t1 - t0, "import_cpu": c1 - c0, "first_call": t3 - t2, "first_call_cpu": c3 - c2,
                  "heavy_import": heavy_import, "heavy_call": heavy_call, "own_import": own_import,
                  "own_call": own_call}))
"""


def _environments(pyc: str) -> dict[str, dict[str, str]]:
    """cached: every module's bytecode is cached (a prefix folder of this run, filled by an untimed
    round); none: as on a machine with PYTHONDONTWRITEBYTECODE=1 and an editable install, NumPy's
    bytecode (written by pip) is read and aclnngen's modules compile from source at every import."""
    cached = dict(os.environ, PYTHONPYCACHEPREFIX=pyc)
    cached.pop("PYTHONDONTWRITEBYTECODE", None)
    none = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    none.pop("PYTHONPYCACHEPREFIX", None)
    return {"cached": cached, "none": none}


def _stale_bytecode() -> list[str]:
    """aclnngen's own __pycache__ folders: with them the "none" figures would read bytecode."""
    import aclnngen

    roots = {Path(aclnngen.__file__).resolve().parent.parent}
    for name in ("aclnngen.runtime", "aclnngen.core", "aclnngen.generated"):
        module = __import__(name, fromlist=["_"])
        roots.add(Path(module.__file__).resolve().parent)
    return sorted(str(p) for r in roots for p in r.rglob("__pycache__") if ".venv" not in p.parts)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="gelu_backward,swish_backward")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--bytecode", default="cached,none", help="cached, none or both (comma-separated)")
    args = parser.parse_args(argv)
    ops = args.ops.split(",")
    modes = args.bytecode.split(",")
    with tempfile.TemporaryDirectory(prefix="aclnngen-bench-pyc-") as pyc:
        envs = _environments(pyc)

        def measure(what: str, mode: str) -> dict:
            out = subprocess.run(
                [sys.executable, "-c", CHILD, what, ",".join(HEAVY)],
                capture_output=True,
                text=True,
                env=envs[mode],
                check=False,
            )
            if out.returncode != 0:
                raise SystemExit(out.stdout + out.stderr)
            return json.loads(out.stdout.strip().splitlines()[-1])

        variants = [(what, mode) for mode in modes for what in ["numpy", *ops]]
        for what, mode in variants:  # untimed: bytecode caches and the simulator's build
            measure(what, mode)
        best: dict[tuple[str, str], dict] = {}
        for _ in range(args.rounds):
            for variant in variants:
                got = measure(*variant)
                old = best.get(variant)
                if old is None:
                    best[variant] = got
                else:
                    for key in ("import", "import_cpu", "first_call", "first_call_cpu"):
                        if key in got:
                            old[key] = min(old[key], got[key])
    print(header("start-up: import of a binding and its first call, fresh interpreters"))
    if "none" in modes and _stale_bytecode():
        print("  warning: aclnngen has __pycache__ folders, the 'none' rows read them:", *_stale_bytecode()[:3])
    for mode in modes:
        print(f"bytecode {mode}: wall (the targets' measure), and CPU time (steadier on a loaded machine)")
        numpy_got = best["numpy", mode]
        numpy_time, numpy_cpu = numpy_got["import"], numpy_got["import_cpu"]
        print(row("import numpy", f"{numpy_time * 1e3:7.1f} ms", f"cpu {numpy_cpu * 1e3:6.1f} ms"))
        for op in ops:
            got = best[op, mode]
            ratio, cpu_ratio = got["import"] / numpy_time, got["import_cpu"] / numpy_cpu
            print(
                row(
                    f"import aclnngen.generated.ops.{op}",
                    f"{got['import'] * 1e3:7.1f} ms",
                    f"{ratio:.2f}x numpy (target <= 1.5x: {'ok' if ratio <= 1.5 else 'MISSED'}); "
                    f"cpu {got['import_cpu'] * 1e3:6.1f} ms, {cpu_ratio:.2f}x",
                )
            )
            print(row("  heavy modules after the import", ", ".join(got["heavy_import"]) or "none"))
            print(row("  aclnngen modules loaded by the import", str(got["own_import"])))
            first = got["first_call"]
            verdict = "ok" if first < 0.05 else "MISSED"
            note = f"target < 50 ms: {verdict}; cpu {got['first_call_cpu'] * 1e3:6.1f} ms"
            print(row(f"first call of {op}", f"{first * 1e3:7.1f} ms", note))
            print(row("  heavy modules after the first call", ", ".join(got["heavy_call"]) or "none"))
            print(row("  aclnngen modules loaded by the first call", str(got["own_call"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
