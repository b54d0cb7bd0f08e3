"""Target 3, memory: the peak extra memory of one binding call on large float32 tensors, in units
of one tensor, beside the same work done in plain NumPy.

    python benchmarks/bench_memory.py [--op gelu_backward] [--elements 16777216]

Each figure comes from a fresh child process (so no variant inherits another's heap), the
variants alternating, each run twice (the smaller figure kept). In the child: the inputs are made
(and, for device arrays, uploaded) and a one-element call warms the simulator up; then the peak
resident set is reset (/proc/self/clear_refs) and the call made, its result kept alive. Peak extra
= VmHWM after the call - VmRSS before it (resident memory: NumPy's and the simulator's C
allocations alike). tracemalloc's peak over the call (NumPy's allocations only, not the simulated
device memory, which is C's malloc) is shown beside it.

Variants: the binding on NumPy arrays and on device arrays, with the simulator's kernels on (the
generated reference computes the result: its temporaries count) and off (`set_kernels(False)`:
the call path and the C protocol only, what targets 3 bounds: NumPy <= 4 tensors = the uploaded
inputs, the output, its download; device <= 1 = the output); anchors: the reference alone, and a
NumPy copy of one input (1 tensor by definition).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import header, row  # noqa: E402

VARIANTS = {
    "binding, NumPy arrays, kernels off": ("numpy", False),
    "binding, device arrays, kernels off": ("device", False),
    "binding, NumPy arrays, kernels on": ("numpy", True),
    "binding, device arrays, kernels on": ("device", True),
    "generated reference alone (opmath)": ("reference", True),
    "NumPy copy of one input (anchor)": ("copy", True),
}
TARGETS = {"binding, NumPy arrays, kernels off": 4.0, "binding, device arrays, kernels off": 1.0}


def _status(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def child(op: str, elements: int, what: str, kernels: bool) -> dict:
    import numpy as np

    from aclnngen.runtime import session
    from aclnngen.runtime.arrays import DeviceArray

    fn = getattr(importlib.import_module(f"aclnngen.generated.ops.{op}"), op)
    reference = importlib.import_module(f"aclnngen.generated.reference.{op}").reference
    rng = np.random.default_rng(0)
    x = [rng.standard_normal(elements, dtype=np.float32) for _ in range(2)]
    small = [a[:1].copy() for a in x]
    fn(*small)  # the simulator is built/loaded, caches are warm
    b = session.backend()
    if not hasattr(b, "set_kernels"):  # a checkout from before the setting (for "before" figures)
        if not kernels:
            return {"rss": None, "traced": None, "tensor": x[0].nbytes}
        b.set_kernels = lambda on: None
    b.set_kernels(kernels)
    args = [DeviceArray.from_host(a) for a in x] if what == "device" else x
    call = {
        "numpy": lambda: fn(*args),
        "device": lambda: fn(*args),
        "reference": lambda: reference(*x),
        "copy": lambda: x[0].copy(),
    }[what]
    tracemalloc.start()
    before = _status("VmRSS")
    with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
        clear.write("5")  # resets VmHWM to the current resident set
    result = call()
    peak = _status("VmHWM")
    traced = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    del result
    b.set_kernels(True)
    return {"rss": peak - before, "traced": traced, "tensor": x[0].nbytes}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", default="gelu_backward")
    parser.add_argument("--elements", type=int, default=1 << 24)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--child", nargs=2, metavar=("WHAT", "KERNELS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.op, args.elements, args.child[0], args.child[1] == "on")))
        return 0
    best: dict[str, dict] = {}
    for _ in range(args.repeat):
        for name, (what, kernels) in VARIANTS.items():
            out = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--op",
                    args.op,
                    "--elements",
                    str(args.elements),
                    "--child",
                    what,
                    "on" if kernels else "off",
                ],
                capture_output=True,
                text=True,
                env=os.environ.copy(),
                check=False,
            )
            if out.returncode != 0:
                print(out.stdout + out.stderr)
                return 1
            got = json.loads(out.stdout.strip().splitlines()[-1])
            if name not in best or (got["rss"] is not None and got["rss"] < best[name]["rss"]):
                best[name] = got
    tensor = next(iter(best.values()))["tensor"]
    print(header(f"memory: {args.op}, {args.elements} float32 elements ({tensor / 2**20:.0f} MiB per tensor)"))
    print(row("", "peak extra RSS", "tracemalloc peak (NumPy)"))
    for name, got in best.items():
        if got["rss"] is None:
            print(row(name, "n/a", "(this checkout cannot switch the kernels off)"))
            continue
        ratio = got["rss"] / tensor
        note = f"{got['traced'] / tensor:5.2f} tensors"
        target = TARGETS.get(name)
        if target is not None:
            note += f"   target <= {target:g}: {'ok' if ratio <= target + 0.05 else 'MISSED'}"
        print(row(name, f"{ratio:5.2f} tensors", note))
    return 0


if __name__ == "__main__":
    sys.exit(main())
