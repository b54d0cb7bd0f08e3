"""Resident memory over many calls of a generated binding, beside a NumPy-only baseline.

    python benchmarks/rss_growth.py                       # 1,000,000 calls of swish_backward
    python benchmarks/rss_growth.py --calls 200000 --op prelu_backward --mode device

Two loops of the same length, each in a fresh child process (so neither inherits the other's heap):

  runtime   the generated binding on the active backend (the simulator unless CANN is found);
            --mode numpy: NumPy in, NumPy out (device copies, descriptors, workspace and the
            output allocated per call); --mode device: DeviceArrays allocated once and reused.
  baseline  only the NumPy work of the same call: the op's generated reference on the same
            inputs (what the simulated kernel computes) and a copy into an output array.

Each prints its RSS (VmRSS) before the first call, after a warm-up (first-use costs: the
simulator build and load, caches, the allocator's pools), every --every calls and at the end.
The table puts them side by side; growth per call = (RSS at the end - RSS after the warm-up) /
calls. A leak of one small object per call shows up as tens of bytes per call; allocator noise
as a few KB in total, i.e. a small fraction of a byte per call over a million calls.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import time

OPS = ("gelu_backward", "hardtanh_backward", "prelu_backward", "softshrink_backward", "swish_backward")


def rss_bytes() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _setup(op: str):
    from aclnngen.core.meta import op_meta
    from aclnngen.verify import cases

    meta = importlib.import_module(f"aclnngen.generated.meta.{op}").META
    binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{op}"), op)
    reference = importlib.import_module(f"aclnngen.generated.reference.{op}")
    values = dict(cases.make_values(meta, "contiguous", "float32", version="8.5.0"))
    typed = op_meta(meta)
    inputs = [values[p.name] for p in typed.by_role("input")]
    scalars = {p.py: values[p.name] for p in typed.by_role("scalar", "optional_scalar")}
    return meta, binding, reference, values, inputs, scalars


def child(phase: str, op: str, mode: str, calls: int, every: int, warmup: int) -> None:
    """One loop; prints one JSON object per measurement."""
    import numpy as np

    def report(label, done):
        print(json.dumps({"label": label, "calls": done, "rss": rss_bytes(), "t": time.perf_counter()}), flush=True)

    report("start", 0)
    meta, binding, reference, values, inputs, scalars = _setup(op)
    if phase == "runtime":
        from aclnngen.core.meta import op_meta
        from aclnngen.runtime import arrays, session

        backend = session.backend()
        print(json.dumps({"label": "backend", "kind": backend.kind}), flush=True)
        if mode == "device":
            dev_inputs = [arrays.from_host(a) for a in inputs]
            outs = {p.py: arrays.from_host(values[p.name]) for p in op_meta(meta).by_role("output")}

            def one():
                binding(*dev_inputs, **scalars, **outs)
        else:

            def one():
                binding(*inputs, **scalars)
    else:
        want = reference.reference(*inputs, **scalars)
        want = want if isinstance(want, tuple) else (want,)
        targets = [np.empty_like(w) for w in want]

        def one():
            got = reference.reference(*inputs, **scalars)
            got = got if isinstance(got, tuple) else (got,)
            for target, g in zip(targets, got):
                target[...] = g

    for _ in range(warmup):
        one()
    report("warm", 0)
    for i in range(1, calls + 1):
        one()
        if i % every == 0 and i != calls:
            report("progress", i)
    report("end", calls)


def run_child(phase: str, args) -> list[dict]:
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--phase",
        phase,
        "--op",
        args.op,
        "--mode",
        args.mode,
        "--calls",
        str(args.calls),
        "--every",
        str(args.every),
        "--warmup",
        str(args.warmup),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"the {phase} loop failed:\n{proc.stdout}\n{proc.stderr}")
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def _mib(n: int) -> str:
    return f"{n / 2**20:9.2f} MiB"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=1_000_000, help="calls per loop (default 1,000,000)")
    parser.add_argument("--every", type=int, default=100_000, help="report RSS every N calls (default 100,000)")
    parser.add_argument("--warmup", type=int, default=1_000, help="calls before the reference RSS (default 1,000)")
    parser.add_argument("--op", choices=OPS, default="swish_backward")
    parser.add_argument("--mode", choices=("numpy", "device"), default="numpy")
    parser.add_argument("--phase", choices=("runtime", "baseline"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.calls < 1 or args.every < 1 or args.warmup < 0:
        parser.error("--calls and --every must be positive, --warmup not negative")
    if args.phase:
        child(args.phase, args.op, args.mode, args.calls, args.every, args.warmup)
        return 0

    print(f"{args.op}, {args.calls:,} calls per loop, mode {args.mode}; each loop in its own process", flush=True)
    results = {phase: run_child(phase, args) for phase in ("runtime", "baseline")}
    kind = next((r["kind"] for r in results["runtime"] if r["label"] == "backend"), "?")
    rows = {phase: [r for r in res if "rss" in r] for phase, res in results.items()}
    print(f"backend: {kind}\n")
    print(f"{'point':>20}  {'runtime RSS':>13}  {'baseline RSS':>13}")
    for rt, base in zip(rows["runtime"], rows["baseline"]):
        point = {"start": "start", "warm": f"after {args.warmup:,} warm-up"}.get(rt["label"], f"{rt['calls']:,}")
        print(f"{point:>20}  {_mib(rt['rss']):>13}  {_mib(base['rss']):>13}")
    print()
    for phase in ("runtime", "baseline"):
        warm = next(r for r in rows[phase] if r["label"] == "warm")
        end = rows[phase][-1]
        growth = end["rss"] - warm["rss"]
        seconds = end["t"] - warm["t"]
        print(
            f"{phase:>8}: growth {growth / 1024:+10.1f} KiB after warm-up = {growth / args.calls:+8.4f} bytes/call; "
            f"{args.calls / seconds:,.0f} calls/s ({seconds / args.calls * 1e6:.1f} us/call)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
