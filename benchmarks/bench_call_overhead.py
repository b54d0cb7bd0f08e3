"""Targets 1 and 2 of issue 24, call overhead.

Target 1: a binding call against the shortest hand-written cffi sequence that makes the same C
calls, on the simulator with its kernels switched off (`set_kernels(False)`: only the C protocol
runs, so the figures are the call path's own cost).

Target 2: a 1-element call of every op, kernels on, NumPy arrays (what a user gets), against the
op's anchor called as a PyTorch user calls it: `torch.ops.aten.<op>` on 1-element tensors made
with `torch.from_numpy` (benchmarks/_anchors.py), one torch thread, in the same run.

    python benchmarks/bench_call_overhead.py [--op gelu_backward] [--calls 2000] [--rounds 7]
                                             [--no-target-2]

Device arrays: inputs already on the device; per call aclrtMalloc (the output), three
aclCreateTensor, GetWorkspaceSize, the launch, aclrtSynchronizeStream, three aclDestroyTensor,
and aclrtFree when the caller drops the output. NumPy arrays: the same plus aclrtMalloc and a
host-to-device aclrtMemcpy per input and a device-to-host aclrtMemcpy into a new array.
The hand-written sequences allocate their cffi arrays once, outside the loop (the shortest
possible); the binding is called as a user calls it, with validation on. Targets (issue 24):
device <= 1.2x, NumPy <= 1.3x; 1-element calls <= 10x the anchor. One-element float32 tensors
(so the copies cost nothing either). The load average is printed with the figures: on a shared
machine the ratios move with it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import header, interleaved, row  # noqa: E402

from aclnngen.runtime import acl, session  # noqa: E402
from aclnngen.runtime.arrays import DeviceArray  # noqa: E402


def hand_written(binding, b, inputs: list[np.ndarray], out_dtype):
    """(device call, numpy call): the shortest cffi sequences making the binding's C calls."""
    ffi, api = b.ffi, b.api
    gws, launch, _ = binding.functions(b)
    shape = inputs[0].shape
    n = int(np.prod(shape)) if shape else 1
    dims = ffi.new("int64_t[]", list(shape) or [0])
    strides = ffi.new("int64_t[]", [int(np.prod(shape[k + 1 :])) for k in range(len(shape))] or [0])
    storage = ffi.new("int64_t[]", [n])
    ws, ex, ptr = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **"), ffi.new("void **")
    nd, fmt = len(shape), acl.enum_value("ACL_FORMAT_ND")
    dt_in = [acl.enum_value(_acl_name(a.dtype)) for a in inputs]
    dt_out = acl.enum_value(_acl_name(out_dtype))
    policy, h2d, d2h = (
        acl.enum_value(k)
        for k in ("ACL_MEM_MALLOC_HUGE_FIRST", "ACL_MEMCPY_HOST_TO_DEVICE", "ACL_MEMCPY_DEVICE_TO_HOST")
    )
    nbytes_in = [a.nbytes for a in inputs]
    out_bytes = n * np.dtype(out_dtype).itemsize
    dev_in = []
    for a in inputs:
        api.aclrtMalloc(ptr, a.nbytes, policy)
        api.aclrtMemcpy(ptr[0], a.nbytes, ffi.from_buffer(a), a.nbytes, h2d)
        dev_in.append(ptr[0])
    create, destroy = api.aclCreateTensor, api.aclDestroyTensor
    malloc, free, memcpy, sync = api.aclrtMalloc, api.aclrtFree, api.aclrtMemcpy, api.aclrtSynchronizeStream
    null = ffi.NULL

    def run(in_ptrs):
        malloc(ptr, out_bytes, policy)
        out = ptr[0]
        handles = [create(dims, nd, dt, strides, 0, fmt, storage, 1, p) for dt, p in zip(dt_in, in_ptrs)]
        handles.append(create(dims, nd, dt_out, strides, 0, fmt, storage, 1, out))
        assert gws(*handles, ws, ex) == 0
        assert launch(null, 0, ex[0], null) == 0
        for h in handles:
            destroy(h)
        assert sync(null) == 0
        return out

    def device():
        free(run(dev_in))

    def numpy_call():
        ptrs = []
        for a, size in zip(inputs, nbytes_in):
            malloc(ptr, size, policy)
            memcpy(ptr[0], size, ffi.from_buffer(a), size, h2d)
            ptrs.append(ptr[0])
        out = run(ptrs)
        host = np.empty(shape, out_dtype)
        memcpy(ffi.from_buffer(host), out_bytes, out, out_bytes, d2h)
        for p in ptrs:
            free(p)
        free(out)
        return host

    return device, numpy_call


def _acl_name(dtype) -> str:
    return {"float32": "ACL_FLOAT", "float16": "ACL_FLOAT16"}[np.dtype(dtype).name]


def one_element(meta) -> tuple[list, dict, dict]:
    """(positional, keywords) for the binding and the Python-named values for the anchor: the op's
    base case with every tensor cut to one element (its first), outputs left to the binding."""
    from aclnngen.core.meta import op_meta
    from aclnngen.core.releases import known_releases
    from aclnngen.verify import cases
    from aclnngen.verify.opcheck import binding_args

    version = str(known_releases(meta)[-1])
    values = dict(cases.make_values(meta, "contiguous", "float32", version=version))
    typed = op_meta(meta)
    for p in typed.params:
        value = values.get(p.name)
        if p.role == "output":
            values.pop(p.name, None)
        elif isinstance(value, np.ndarray):
            values[p.name] = value.reshape(-1)[:1].reshape((1,) * max(1, value.ndim)).copy()
    positional, keywords = binding_args(meta, values)
    by_py = {p.py: values.get(p.name) for p in typed.params if p.role != "output"}
    return positional, keywords, by_py


def target_2(calls: int, rounds: int) -> int:
    """Every op, 1 element, kernels on, NumPy arrays, against its aten anchor: the ratios."""
    import torch

    from _anchors import anchor

    from aclnngen.generated import OPS

    torch.set_num_threads(1)
    print(header("target 2: 1-element call, NumPy arrays, simulator kernels on, vs torch.ops.aten (1 thread)"))
    missed = 0
    hooks = _hook_entries()
    for snake in OPS:
        module = importlib.import_module(f"aclnngen.generated.ops.{snake}")
        meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
        fn = getattr(module, snake)
        positional, keywords, by_py = one_element(meta)
        name, call = anchor(torch, meta, by_py)
        t = interleaved({"binding": lambda: fn(*positional, **keywords), "anchor": call}, calls=calls, rounds=rounds)
        ratio = t["binding"] / t["anchor"]
        missed += ratio > 10
        print(
            row(
                f"{snake} vs {name}",
                f"{t['binding'] * 1e6:7.1f} / {t['anchor'] * 1e6:5.1f} us",
                f"{ratio:6.1f}x {'ok' if ratio <= 10 else 'MISSED'}",
            )
        )
    print(row("ops within 10x (target: every op)", f"{len(OPS) - missed} of {len(OPS)}"))
    if hooks is not None:
        entered = _hook_entries() - hooks
        print(row("Python hooks entered (all timed calls)", f"{entered[0]} prepare, {entered[1]} run"))
    return 0


def _hook_entries():
    """(prepare, run) hook entries the simulator's core counted (runtime/sim/sim_memo.c); None for
    a simulator that does not count them (an older tree measured as "before")."""
    from aclnngen.runtime.sim.controls import sim_ffi

    controls = session.backend().controls
    try:
        get = controls.aclsim_memo_get_stats
    except AttributeError:
        return None
    out = sim_ffi().new("struct aclsim_memo_stats *")
    get(out)
    return np.array([out.prepare_hooks, out.run_hooks])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--op", default="gelu_backward", help="an op with two tensor inputs and one output")
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-target-2", action="store_true", help="only target 1")
    args = parser.parse_args(argv)
    module = importlib.import_module(f"aclnngen.generated.ops.{args.op}")
    fn = getattr(module, args.op)
    binding = module._CALL
    b = session.backend()
    if b.kind != "sim":
        print("this benchmark needs the simulator (kernels off)")
        return 1
    x = [np.ones((1,), np.float32), np.ones((1,), np.float32)]
    dx = [DeviceArray.from_host(a) for a in x]
    b.set_kernels(False)
    try:
        device, numpy_call = hand_written(binding, b, x, np.float32)
        t = interleaved(
            {
                "binding, device arrays": lambda: fn(*dx).free(),
                "hand-written cffi, device": device,
                "binding, NumPy arrays": lambda: fn(*x),
                "hand-written cffi, NumPy": numpy_call,
            },
            calls=args.calls,
            rounds=args.rounds,
        )
    finally:
        b.set_kernels(True)
    print(header(f"call overhead: {args.op}, 1 float32 element, simulator kernels off"))
    for name, seconds in t.items():
        print(row(name, f"{seconds * 1e6:8.1f} us"))
    dev = t["binding, device arrays"] / t["hand-written cffi, device"]
    host = t["binding, NumPy arrays"] / t["hand-written cffi, NumPy"]
    print(row("ratio device (target <= 1.2x)", f"{dev:6.2f}x", "ok" if dev <= 1.2 else "MISSED"))
    print(row("ratio NumPy (target <= 1.3x)", f"{host:6.2f}x", "ok" if host <= 1.3 else "MISSED"))
    print(row("call path", _call_path(b)))
    if args.no_target_2:
        return 0
    print()
    return target_2(max(200, args.calls // 4), args.rounds)


def _call_path(b) -> str:
    try:
        from aclnngen.runtime import callplan
    except ImportError:  # an aclnngen before call plans (a before/after comparison)
        return "Python (no call plans in this aclnngen)"

    why = callplan.probe() if callplan.mode() == "auto" else f"{callplan.MODE_ENV}=python"
    return "C helper (call plans)" if why is None else f"Python ({why})"


if __name__ == "__main__":
    sys.exit(main())
