"""Survival: many calls leave nothing behind, and random arguments never crash the runtime.

- 100,000 calls on reused device arrays (default and explicit streams): the simulator's live
  handle and allocation counters come back to where they started, and never drift on the way.
  The first KERNEL_CALLS of every 10,000 run the kernels (hooks, references); the rest run the
  call path and the C protocol with the kernels switched off (`set_kernels(False)`), which is
  what the counters count, at a fraction of the cost.
- hypothesis over shapes (rank 0 to 9, zero-sized dims), layouts (non-contiguous, negative
  strides, offsets), dtypes (unsupported ones included), scalars (NaN, inf, huge), outputs (given
  or inferred, host or device) and product families: an accepted call equals the generated
  reference bit for bit, a rejected one raises only the runtime's typed errors, and no example
  leaks a handle or a byte of device memory.
"""

from __future__ import annotations

import importlib
import time

import catalog
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from aclnngen.runtime import arrays, products, session
from aclnngen.verify import cases
from aclnngen.runtime.arrays import DeviceArray
from aclnngen.runtime.call import bind
from aclnngen.runtime.errors import AclnnError, AclnnStatusError, AclRuntimeError
from aclnngen.core.dtypes import ALL_DTYPES
from aclnngen.runtime.shapes import NUMPY_DTYPES, infer_outputs
from aclnngen.core.rules import supported_dtypes
from simtools import reference_args, same_bits

# the call path checked bit for bit: the simulator computes with the reference (conftest.py)
pytestmark = pytest.mark.usefixtures("reference_kernels")

#: the ops the tests call: one of each structure, the catalog's variety, not its size
OPS = catalog.representatives()
VERSION = "8.5.0"
SURVIVAL_CALLS = 100_000
KERNEL_CALLS = 200  # of every 10,000 calls, the first this many with the kernels on


_OPS: dict = {}


def _op(snake):
    found = _OPS.get(snake)
    if found is None:
        meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
        reference = importlib.import_module(f"aclnngen.generated.reference.{snake}")
        found = _OPS[snake] = (meta, bind(meta), reference)
    return found


def _counters():
    b = session.backend()
    assert b.kind == "sim"
    return b.counters()


_same_bits = same_bits


def _host(result):
    return result.to_host() if isinstance(result, DeviceArray) else result


# --- 100,000 calls -----------------------------------------------------------------------------------


@pytest.mark.slow(reason="100,000 binding calls on the simulator, counters checked at checkpoints")
def test_100k_calls_on_reused_device_arrays_leave_the_counters_unchanged():
    """One op of each structure in turn (catalog.representatives) on device arrays allocated once:
    the first half on the default stream (each call synchronises), the second on an explicit
    stream synchronised every 100 calls (each launch keeps its workspace and temporaries until
    then)."""
    with session.simulated(family="a2", version=VERSION):
        jobs = []
        for snake in OPS:
            meta, call, reference = _op(snake)
            values = dict(cases.make_values(meta, "non-contiguous", "float32", version=VERSION))
            device = {k: arrays.from_host(v) if isinstance(v, np.ndarray) else v for k, v in values.items()}
            jobs.append((call, [device[p["name"]] for p in meta["params"]], meta, reference, values))
        session.synchronize()
        start = _counters()
        checkpoints = []
        half = SURVIVAL_CALLS // 2
        b = session.backend()
        t0 = time.perf_counter()
        try:
            for i in range(half):
                b.set_kernels(i % 10_000 < KERNEL_CALLS)
                call, args = jobs[i % len(jobs)][:2]
                call(*args)
                if (i + 1) % 10_000 == 0:
                    checkpoints.append(_counters())
            t1 = time.perf_counter()
            with session.stream() as stream:
                with_stream = dict(start, streams=start["streams"] + 1)
                for i in range(half, SURVIVAL_CALLS):
                    if i % 100 == 0:  # a launch runs its kernel at the synchronisation
                        b.set_kernels(i % 10_000 < KERNEL_CALLS)
                    call, args = jobs[i % len(jobs)][:2]
                    call(*args, stream=stream)
                    if (i + 1) % 100 == 0:
                        stream.synchronize()
                        if (i + 1) % 10_000 == 0:
                            checkpoints.append(dict(_counters(), streams=start["streams"]))
                            assert stream.pending == 0
                assert _counters()["streams"] == with_stream["streams"]
        finally:
            b.set_kernels(True)
        t2 = time.perf_counter()
        session.synchronize()
        end = _counters()
        assert end == start, f"leaked: { {k: end[k] - start[k] for k in start if end[k] != start[k]} }"
        assert checkpoints == [start] * (SURVIVAL_CALLS // 10_000), "the counters drifted during the run"
        # the arrays were reused the whole time and still hold the right answer
        for call, args, meta, reference, values in jobs:
            got = call(*args)
            got = got if isinstance(got, tuple) else (got,)
            inputs, scalars = reference_args(meta, values)
            want = reference.reference(*inputs, **scalars)
            want = want if isinstance(want, tuple) else (want,)
            assert all(_same_bits(g.to_host(), w) for g, w in zip(got, want))
        for _, args, *_ in jobs:
            for a in args:
                if isinstance(a, DeviceArray):
                    a.free()
    rate_default = half / (t1 - t0)
    rate_stream = (SURVIVAL_CALLS - half) / (t2 - t1)
    print(
        f"\n{SURVIVAL_CALLS} calls: default stream {rate_default:.0f} calls/s, explicit stream {rate_stream:.0f} calls/s"
    )


# --- random arguments ---------------------------------------------------------------------------------

FAMILIES = products.family_ids()
VERSIONS = ("8.5.0", "8.0.0")
#: dtypes the ABI knows (ALL_DTYPES) plus two it does not
EXTRA_DTYPES = (np.dtype(np.longdouble), np.dtype(object))
SCALARS = (
    0.0,
    -0.0,
    1.0,
    -1.5,
    0.5,
    3,
    True,
    np.float32(2.0),
    np.float16(-1.0),
    np.int64(-7),
    float("nan"),
    float("inf"),
    float("-inf"),
    3.4e38,
    1e39,
    -1e300,
    5e-324,
    2**63,
    -(2**64),
    10**30,
)
#: statuses that mean the simulated library itself broke (its Python kernel raised)
CRASH_STATUSES = {561000, 561103, 507015}
FLOAT_NAMES = {"float16", "float32", "bfloat16", "float64"}


@st.composite
def layouts(draw, rank):
    """How a view lies in its storage: axis order, steps, flipped axes, leading offset."""
    perm = draw(st.permutations(range(rank))) if rank and draw(st.booleans()) else list(range(rank))
    steps = [draw(st.sampled_from((1, 1, 2))) for _ in range(rank)]
    flips = [draw(st.booleans()) and draw(st.booleans()) for _ in range(rank)]
    offset = draw(st.sampled_from((0, 0, 1, 3)))
    return perm, steps, flips, offset


def place(data: np.ndarray, layout) -> np.ndarray:
    """A view holding `data` with the given layout (not necessarily contiguous)."""
    perm, steps, flips, offset = layout
    shape = data.shape
    if data.dtype == object:
        return data.copy()
    if data.ndim == 0:  # a 0-d view into a larger storage, at an offset
        view = np.zeros(offset + 1, dtype=data.dtype)[offset:].reshape(())
        view[...] = data
        return view
    big = [d * s for d, s in zip(shape, steps)]
    storage = np.zeros(offset + int(np.prod(big)), dtype=data.dtype)
    base = storage[offset:].reshape([big[p] for p in perm])
    view = base.transpose(np.argsort(perm))
    view = view[tuple(slice(None, None, s) for s in steps)]
    view = view[tuple(slice(None, None, -1) if f else slice(None) for f in flips)]
    assert view.shape == shape
    view[...] = data
    return view


def make_data(draw, shape, dtype) -> np.ndarray:
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    raw = np.asarray(rng.standard_normal(shape)) * draw(st.sampled_from((1.0, 1.0, 1e-3, 1e4)))
    if raw.size and draw(st.booleans()):
        specials = np.array([np.nan, np.inf, -np.inf, -0.0, 0.0, 1e38, 65504.0, 1e-40])
        mask = rng.random(shape) < 0.3
        raw = np.asarray(np.where(mask, specials[rng.integers(0, len(specials), shape)], raw))
    with np.errstate(all="ignore"):
        if dtype is object:
            out = np.empty(shape, dtype=object)
            out[...] = raw
            return out
        if dtype.kind == "c":
            return np.asarray(raw + 1j * np.flip(raw)).astype(dtype)
        return np.asarray(raw.astype(dtype))


@st.composite
def examples(draw):
    snake = draw(st.sampled_from(OPS))
    meta, call, reference = _op(snake)
    family = draw(st.sampled_from(FAMILIES))
    version = draw(st.sampled_from(VERSIONS))
    rank = draw(st.integers(0, 9) if draw(st.integers(0, 4)) == 0 else st.integers(0, 4))
    dims = st.integers(0, 3) if draw(st.booleans()) else st.integers(1, 3)
    shape = tuple(draw(dims) for _ in range(rank))
    if int(np.prod(shape)) > 2048:
        shape = tuple(min(d, 1) for d in shape)
    first = next(p["name"] for p in meta["params"] if p["role"] == "input")
    supported = sorted(supported_dtypes(meta, first, family, version))
    if supported and draw(st.integers(0, 3)):
        main = NUMPY_DTYPES[draw(st.sampled_from(supported))]
    else:  # anything, most of it unsupported
        choice = draw(st.sampled_from(list(ALL_DTYPES) + list(EXTRA_DTYPES)))
        main = NUMPY_DTYPES[choice] if isinstance(choice, str) else choice
    values = {}
    for p in meta["params"]:
        if p["role"] != "input":
            continue
        s = shape
        if p["name"] == "weight":  # PReLU: one weight per channel, or one for all
            kind = draw(st.sampled_from(("channel", "channel", "one", "any")))
            s = (
                (shape[1] if len(shape) > 1 else 1,)
                if kind == "channel"
                else (1,)
                if kind == "one"
                else tuple(draw(dims) for _ in range(draw(st.integers(0, 3))))
            )
        elif draw(st.integers(0, 5)) == 0:  # broadcast-compatible or simply different
            s = tuple(1 if draw(st.booleans()) else d for d in shape)[draw(st.integers(0, len(shape))) :]
        dt = main if draw(st.integers(0, 7)) else NUMPY_DTYPES[draw(st.sampled_from(ALL_DTYPES))]
        values[p["name"]] = place(make_data(draw, s, dt), draw(layouts(len(s))))
    for p in meta["params"]:
        if p["role"] in ("scalar", "optional_scalar"):
            values[p["name"]] = draw(st.sampled_from(SCALARS + ((None,) if p["role"] == "optional_scalar" else ())))
        elif p["role"] == "attribute":
            values[p["name"]] = None
    outputs = draw(st.sampled_from(("infer", "host", "host")))
    try:
        inferred = infer_outputs(meta, values, version)
    except Exception:  # noqa: BLE001 - nothing to infer from: let the runtime infer (and reject)
        inferred = {}
    for name in meta["outputs"]:
        if outputs == "host" and name in inferred:
            oshape, odtype = inferred[name]
            if not draw(st.integers(0, 7)):
                odtype = NUMPY_DTYPES[draw(st.sampled_from(ALL_DTYPES))]
            values[name] = place(np.zeros(oshape, dtype=odtype), draw(layouts(len(oshape))))
        else:
            values[name] = None
    # where the tensors live: NumPy only, all on the device, or device inputs with the outputs
    # (if given) as NumPy arrays
    device = draw(st.sampled_from(("host", "host", "host", "device", "device-inputs")))
    return snake, family, version, values, device


def _reference(meta, reference, values):
    """The generated reference of the arguments, in the dtypes of the outputs the caller gave."""
    inputs, scalars = reference_args(meta, values)
    out_dtypes = {name: values[name].dtype for name in meta["outputs"] if values.get(name) is not None} or None
    with np.errstate(all="ignore"):
        want = reference.reference(*inputs, **scalars, out_dtypes=out_dtypes)
    return want if isinstance(want, tuple) else (want,)


@pytest.mark.slow(reason="1,500 random binding calls, each against the reference")
@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(examples())
def test_random_arguments_never_crash_never_leak_and_match_the_reference(example):
    snake, family, version, values, device = example
    meta, call, reference = _op(snake)
    with session.simulated(family=family, version=version):
        session.synchronize()
        before = _counters()
        args = []
        made = []
        try:
            for p in meta["params"]:
                value = values[p["name"]]
                roles = {"host": (), "device": ("input", "output"), "device-inputs": ("input",)}[device]
                if isinstance(value, np.ndarray) and value.dtype != object and p["role"] in roles:
                    try:
                        value = arrays.from_host(value)
                        made.append(value)
                    except AclnnError:
                        pass  # e.g. a dtype the device has no type for: passed as NumPy instead
                args.append(value)
            try:
                with np.errstate(all="ignore"):
                    result = call(*args)
            except AclnnError as exc:
                crashed = isinstance(exc, (AclnnStatusError, AclRuntimeError)) and exc.status in CRASH_STATUSES
                assert not crashed, f"the simulated library broke: {exc}"
                event(f"rejected: {type(exc).__name__}")
                result = None
            else:
                event(f"accepted ({device})")
            got = None
            if result is not None:
                results = result if isinstance(result, tuple) else (result,)
                for r in results:
                    if isinstance(r, DeviceArray) and all(r is not m for m in made):
                        made.append(r)
                got = [_host(r) for r in results]
        finally:
            for d in made:
                d.free()
            session.synchronize()
        assert _counters() == before, "an example leaked handles or device memory"
    if got is not None:
        want = _reference(meta, reference, values)
        assert len(got) == len(want)
        for name, g, w in zip(meta["outputs"], got, want):
            assert _same_bits(np.asarray(g), np.asarray(w)), f"{snake} {name}: {g!r} != {w!r}"
            given_out = values.get(name)
            if isinstance(given_out, np.ndarray) and device in ("host", "device-inputs"):
                assert g is given_out, "a NumPy output is filled in place and returned"
