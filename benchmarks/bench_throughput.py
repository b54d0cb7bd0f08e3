"""Target 3 of issue 24 (target 2 before it): each op's opmath reference against PyTorch's CPU kernel, and a binding call on the
simulator against the reference, on 16M float32 elements.

    python benchmarks/bench_throughput.py                      # every op, 16M elements
    python benchmarks/bench_throughput.py --ops gelu_backward --elements 4000000
    python benchmarks/bench_throughput.py --dtype bfloat16              # float16, bfloat16 too
    python benchmarks/bench_throughput.py --reference-only             # the reference and torch only

Per op, side by side in one run (interleaved rounds, best round each):

  reference    the generated reference (`mode="opmath"`), NumPy, in pieces on one thread
               (ACLNNGEN_REFERENCE_THREADS=1; evaluate/chunking.py)
  torch 1t     the anchor as a PyTorch user calls it: the aten op (benchmarks/_anchors.py) on
               torch.from_numpy tensors (no copies), torch.set_num_threads(1)
  reference all  the reference with its pieces on every core
  torch all    the same anchor with every core
  binding      the generated binding on the simulator (kernels on), NumPy arrays in and out
  binding, device  the same with device arrays (uploaded once; the output stays on the device);
               the simulator computes with the op's compiled kernel (runtime/sim/compiled.py) on
               every core, or the reference where the op has none
  binding, device 1t   the same on one thread (ACLNNGEN_REFERENCE_THREADS=1)
  binding, device, ref the simulator computing with the reference (ACLNNGEN_SIM_KERNELS=reference)

and the ratios reference / torch 1t (target <= 2x) and reference all / torch all, binding /
reference all (target <= 1.2x), the simulated binding (device arrays) / torch on one thread and on
every core (targets <= 1.5x), with
the reference's error against the float64 golden on the same data (its accuracy: the largest
absolute error, and the mean relative error away from the function's roots).
Needs PyTorch (pip install 'aclnngen[test]').
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

import ml_dtypes
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _anchors import anchor  # noqa: E402
from _common import header, row  # noqa: E402

from aclnngen.generated import OPS  # noqa: E402
from aclnngen.core.meta import op_meta  # noqa: E402
from aclnngen.verify import cases  # noqa: E402
from aclnngen.verify.opcheck import OpUnderTest  # noqa: E402


def _op(snake: str) -> OpUnderTest:
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    reference = importlib.import_module(f"aclnngen.generated.reference.{snake}")
    binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake)
    from aclnngen.core.releases import known_releases

    return OpUnderTest(meta, reference=reference, binding=binding, version=str(known_releases(meta)[-1]))


DTYPES = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}


def _values(op: OpUnderTest, elements: int, rng: np.random.Generator, dtype: str = "float32") -> dict:
    """The op's base case with every tensor grown to about `elements` elements (rank 3; a
    per-channel weight keeps one value per channel), stored as `dtype`."""
    side = round(elements ** (1 / 3))
    values = dict(cases.make_values(op.meta, "contiguous", "float32", version=op.version))
    typed = op_meta(op.meta)
    for p in typed.by_role("input"):
        small = values.get(p.name)
        if not isinstance(small, np.ndarray):
            continue
        shape = (side,) if small.ndim == 1 else (side,) * 3
        if p.meaning == "forward_output":  # a value the forward can produce (sigmoid's, softmax's)
            data = rng.uniform(0.01, 0.99, size=shape)
        elif small.ndim == 1:
            data = rng.uniform(0.05, 0.5, size=shape)
        else:
            data = rng.standard_normal(size=shape) * 2.0
        values[p.name] = data.astype(DTYPES[dtype])
    for p in typed.by_role("output"):
        values.pop(p.name, None)
    return values


def _best(fn) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the whole process: every thread) of one call."""
    start, used = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - start, time.process_time() - used


def _errors(ours: np.ndarray, golden: np.ndarray) -> tuple[float, float]:
    """(max absolute error, mean relative error away from the roots: |golden| >= 1e-3)."""
    golden = golden.astype(np.float64)
    diff = np.abs(ours.astype(np.float64) - golden)
    away = np.abs(golden) >= 1e-3
    return float(np.max(diff)), float(np.mean(diff[away] / np.abs(golden[away]))) if away.any() else 0.0


def bench(snake: str, elements: int, rounds: int, torch, dtype: str = "float32", reference_only: bool = False) -> None:
    op = _op(snake)
    rng = np.random.default_rng(0)
    values = _values(op, elements, rng, dtype)
    by_py = {p.py: values.get(p.name) for p in op_meta(op.meta).params if p.role != "output"}
    positional, keywords, _ = op.split(values)
    cores = os.cpu_count() or 1

    def reference():  # on one thread, as torch 1t
        os.environ["ACLNNGEN_REFERENCE_THREADS"] = "1"
        try:
            return op.run_reference(values)
        finally:
            del os.environ["ACLNNGEN_REFERENCE_THREADS"]

    def reference_all():  # its pieces on every core (evaluate/chunking.py)
        return op.run_reference(values)

    anchor_name, anchor_call = anchor(torch, op.meta, by_py)  # aten on zero-copy tensors

    def torch_one():
        torch.set_num_threads(1)
        return anchor_call()

    def torch_all():
        torch.set_num_threads(cores)
        return anchor_call()

    def binding():
        return op.binding(*positional, **keywords)

    from aclnngen.runtime.arrays import DeviceArray

    def device(a):
        return DeviceArray.from_host(a) if isinstance(a, np.ndarray) else a

    # every tensor uploaded once, the keyword ones too (an input passed by name, such as
    # EluBackward's self_or_result, was uploaded on every call before)
    on_device = [device(a) for a in positional]
    keywords_on_device = {k: device(a) for k, a in keywords.items()}

    def binding_device():  # inputs already on the device, the output left there
        result = op.binding(*on_device, **keywords_on_device)
        for r in result if isinstance(result, tuple) else (result,):
            r.free()

    def with_env(fn, **settings):
        def call():
            saved = {k: os.environ.get(k) for k in settings}
            os.environ.update(settings)
            try:
                return fn()
            finally:
                for k, v in saved.items():
                    if v is None:
                        del os.environ[k]
                    else:
                        os.environ[k] = v

        return call

    variants = (
        ("reference", reference),
        ("torch 1t", torch_one),
        ("reference all", reference_all),
        ("torch all", torch_all),
        ("binding", binding),
        ("binding, device", binding_device),
        # the simulator's compiled kernel (runtime/sim/compiled.py) on one thread, and the
        # simulator computing with the reference instead (what every launch did before)
        ("binding, device 1t", with_env(binding_device, ACLNNGEN_REFERENCE_THREADS="1")),
        ("binding, device, ref", with_env(binding_device, ACLNNGEN_SIM_KERNELS="reference")),
    )
    if reference_only:  # target 3's reference rows: no simulator build, a quarter of the time
        variants = variants[:4]
    for _, fn in variants:  # warm-up: imports, simulator build
        fn()
    times = {name: float("inf") for name, _ in variants}
    cpu = {name: float("inf") for name, _ in variants}
    for _ in range(rounds):
        for name, fn in variants:
            wall, used = _best(fn)
            if wall < times[name]:
                times[name], cpu[name] = wall, used
    golden = op.run_reference(values, mode="golden")
    errors = [_errors(a, g) for a, g in zip(reference(), golden)]
    worst_abs, mean_rel = max(e[0] for e in errors), max(e[1] for e in errors)
    n = int(np.prod(next(v.shape for v in values.values() if isinstance(v, np.ndarray) and v.ndim == 3)))
    itemsize = np.dtype(DTYPES[dtype]).itemsize
    print(f"\n{op.name}: {n / 1e6:.1f}M {dtype} elements, best of {rounds} interleaved rounds")
    print(f"  torch = {anchor_name} on torch.from_numpy tensors (no copies), as a PyTorch user calls it")
    for name, seconds in times.items():
        print(
            row(
                name,
                f"{seconds * 1e3:9.1f} ms",
                f"cpu {cpu[name] * 1e3:8.1f} ms; {n * itemsize / seconds / 1e9:.2f} GB/s of one input",
            )
        )
    one = times["reference"] / times["torch 1t"]  # issue 24, target 3: the NumPy reference <= 2x
    print(row("reference / torch 1 thread", f"{one:.2f}x", "target <= 2x: " + ("ok" if one <= 2.0 else "MISSED")))
    allr = times["reference all"] / times["torch all"]
    print(row(f"reference / torch, {cores} threads each", f"{allr:.2f}x", "(no target)"))
    if not reference_only:
        _binding_ratios(times, cores)
    print(row("reference vs float64: max abs error", f"{worst_abs:.2e}", ""))
    print(
        row("reference vs float64: mean rel error", f"{mean_rel:.2e}", "where |golden| >= 1e-3 (no verdict at roots)")
    )


def _binding_ratios(times: dict, cores: int) -> None:
    bind = times["binding"] / times["reference all"]
    print(row("binding (NumPy in and out) / reference", f"{bind:.2f}x", "(+ an upload per input, a download)"))
    dev = times["binding, device"] / times["reference all"]
    print(
        row(
            "binding (device arrays) / reference",
            f"{dev:.2f}x",
            "target <= 1.2x: " + ("ok" if dev <= 1.2 else "MISSED"),
        )
    )
    kernel_one = times["binding, device 1t"] / times["torch 1t"]
    print(
        row(
            "binding (device, 1 thread) / torch 1 thread",
            f"{kernel_one:.2f}x",
            "target <= 1.5x: " + ("ok" if kernel_one <= 1.5 else "MISSED"),
        )
    )
    kernel_all = times["binding, device"] / times["torch all"]
    print(
        row(
            f"binding (device) / torch, {cores} threads each",
            f"{kernel_all:.2f}x",
            "target <= 1.5x: " + ("ok" if kernel_all <= 1.5 else "MISSED"),
        )
    )
    gain = times["binding, device, ref"] / times["binding, device"]
    print(row("simulator on the reference / compiled", f"{gain:.2f}x", "(equal where the op falls back)"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", nargs="+", default=list(OPS), help="ops (snake_case), default every op")
    parser.add_argument("--elements", type=int, default=16_000_000, help="elements per tensor (default 16M)")
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds (default 3)")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32", help="storage dtype (default float32)")
    parser.add_argument(
        "--reference-only", action="store_true", help="time the reference and torch only (no simulated binding)"
    )
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("bench_throughput needs PyTorch: pip install 'aclnngen[test]'")
    print(header(f"issue 24, target 3: throughput of the references and the simulated binding ({args.dtype})"))
    for snake in args.ops:
        bench(snake, args.elements, args.rounds, torch, args.dtype, args.reference_only)


if __name__ == "__main__":
    main()
