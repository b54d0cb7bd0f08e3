"""What a call plan is keyed on (runtime/call.py `BoundOp.plan_key`): once a signature has a plan,
a call whose arrays have another shape, another dtype or another layout never runs that plan; it
gets its own (or the Python path) and the result the Python path gives. The binding's fast exits
(no output given, positional `BoundOp.call`) keep the outputs' and the arguments' handling.
Every op of the catalog's structures, NumPy and device arrays."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from aclnngen.core.planning import applicable_cases
from aclnngen.core.rules import supported_dtypes, supported_families
from aclnngen.runtime import callplan, session
from aclnngen.runtime.arrays import DeviceArray
from aclnngen.runtime.call import NO_PLAN
from aclnngen.verify import cases
from aclnngen.verify.opcheck import binding_args
import catalog
from catalog import PLAIN
from simtools import no_leaks_around, same_bits

VERSION = "8.5.0"
# the cases that change only the arrays' shape or layout, accepted by validation
OTHER_SHAPES = ("rank8", "broadcast")
OTHER_LAYOUTS = ("non-contiguous", "offset")


def _op(snake):
    meta = catalog.meta(snake)
    module = importlib.import_module(f"aclnngen.generated.ops.{snake}")
    return meta, getattr(module, snake), module._CALL


def _float_dtypes(meta, family):
    tensors = [p["name"] for p in meta["params"] if p["role"] in ("input", "output")]
    return [d for d in ("float32", "float16") if all(d in supported_dtypes(meta, t, family, VERSION) for t in tensors)]


def _call_values(meta, case, dtype, device):
    """(positional, keywords) of one case, tensors on the device when asked."""
    values = dict(cases.make_values(meta, case, dtype, version=VERSION))
    positional, keywords = binding_args(meta, values)

    def arg(a):
        if not isinstance(a, np.ndarray):
            return a
        return DeviceArray.from_host(a) if device else a

    return [arg(a) for a in positional], {k: arg(a) for k, a in keywords.items()}


def _host(result):
    results = result if isinstance(result, tuple) else (result,)
    return [r.to_host() if isinstance(r, DeviceArray) else r for r in results]


def _python_way(binding, positional, keywords):
    before = callplan.mode()
    callplan.set_mode("python")
    try:
        return _host(binding(*positional, **keywords))
    finally:
        callplan.set_mode(before)


def _planned(bound, binding, positional, keywords):
    """Calls twice (the Python path, then the plan) and returns the C helper calls of the plans made
    so far, counted from now on."""
    binding(*positional, **keywords)
    binding(*positional, **keywords)
    calls = []
    for plan in bound.plans.values():
        if plan is NO_PLAN:
            continue
        inner = plan.call

        def counted(*a, _inner=inner):
            calls.append(1)
            return _inner(*a)

        plan.call = counted
    return calls


def _variants(meta, family):
    """(what, case, dtype): the calls that differ from ("contiguous", the first float dtype) by one
    thing the key must tell apart."""
    dtypes = _float_dtypes(meta, family)
    accepted = {case for case, status in applicable_cases(meta, VERSION, family=family) if status == 0}
    found = [(f"shape ({case})", case, dtypes[0]) for case in OTHER_SHAPES if case in accepted]
    found += [(f"layout ({case})", case, dtypes[0]) for case in OTHER_LAYOUTS if case in accepted]
    found += [(f"dtype {d}", "contiguous", d) for d in dtypes[1:]]
    return dtypes[0], found


@pytest.mark.parametrize("device", [False, True], ids=["numpy", "device"])
@pytest.mark.parametrize("snake", catalog.representatives())
def test_another_shape_dtype_or_layout_never_runs_a_planned_signature(snake, device):
    meta, binding, bound = _op(snake)
    family = supported_families(meta, VERSION)[0]
    dtype, variants = _variants(meta, family)
    assert variants, f"{snake}: no other shape, layout or dtype to call with"
    bound.plans.clear()
    with session.simulated(family=family, version=VERSION), no_leaks_around():
        positional, keywords = _call_values(meta, "contiguous", dtype, device)
        calls = _planned(bound, binding, positional, keywords)
        assert len(bound.plans) == 1, f"{snake}: the contiguous call made no plan"
        for what, case, other in variants:
            positional, keywords = _call_values(meta, case, other, device)
            want = _python_way(binding, positional, keywords)
            for attempt in ("first", "second"):  # the second may run the variant's own plan
                got = _host(binding(*positional, **keywords))
                where = f"{snake}, {'device' if device else 'NumPy'} arrays, {what}, {attempt} call"
                assert calls == [], f"{where}: ran the plan of the contiguous {dtype} call"
                assert len(got) == len(want) and all(
                    g.shape == w.shape and g.dtype == w.dtype and same_bits(g, w) for g, w in zip(got, want)
                ), f"{where}: {got} != {want}"
        del positional, keywords  # device arrays: freed before the leak count


def test_a_reshaped_array_of_the_same_data_is_another_signature():
    """The same memory seen with another shape (NumPy reshape, a device view of another shape)
    makes another plan; the first one keeps serving its own shape."""
    meta, binding, bound = _op(PLAIN)
    family = supported_families(meta, VERSION)[0]
    bound.plans.clear()
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)
    g = np.ones((4, 6), np.float32)
    with session.simulated(family=family, version=VERSION), no_leaks_around():
        for device in (False, True):
            shaped = [(g, x), (g.reshape(24), x.reshape(24)), (g.reshape(2, 12), x.reshape(2, 12))]
            if device:
                shaped = [tuple(DeviceArray.from_host(a) for a in pair) for pair in shaped]
            for pair in shaped:
                want = _python_way(binding, pair, {})
                for _ in range(3):
                    got = _host(binding(*pair))
                    assert got[0].shape == want[0].shape and same_bits(got[0], want[0]), (device, pair[0].shape)
            keys = [k for k in bound.plans if k[1] is not device]
            assert len(keys) == 3, f"{'device' if device else 'NumPy'}: {len(keys)} plans for 3 shapes"
            del shaped, pair  # device arrays: freed before the leak count


@pytest.mark.parametrize("snake", catalog.representatives())
def test_outputs_given_by_out_or_by_name_still_reach_the_call(snake):
    """The binding skips resolving its outputs only when none is given: `out=` and the output's own
    name still write into the caller's array, and giving both is still the binding's TypeError."""
    meta, binding, bound = _op(snake)
    family = supported_families(meta, VERSION)[0]
    dtype = _float_dtypes(meta, family)[0]
    values = dict(cases.make_values(meta, "contiguous", dtype, version=VERSION))
    positional, keywords = binding_args(meta, values)
    outputs = [p for p in bound.params if p.output]
    with session.simulated(family=family, version=VERSION):
        want = _host(binding(*positional, **keywords))
        given = tuple(np.zeros_like(w) for w in want)
        result = binding(*positional, **keywords, out=given if len(given) > 1 else given[0])
        got = _host(result)
        assert all(r is g for r, g in zip(got, given)), f"{snake}: out= was not written into"
        assert all(same_bits(g, w) for g, w in zip(given, want)), f"{snake}: out= holds {given}"
        if len(outputs) == 1 and outputs[0].py != "out":
            by_name = np.zeros_like(want[0])
            assert binding(*positional, **keywords, **{outputs[0].py: by_name}) is by_name
            assert same_bits(by_name, want[0])
            with pytest.raises(TypeError, match="is given twice"):
                binding(*positional, **keywords, out=given[0], **{outputs[0].py: by_name})


def test_the_positional_entry_and_the_call_operator_agree():
    meta, binding, bound = _op(PLAIN)
    family = supported_families(meta, VERSION)[0]
    values = dict(cases.make_values(meta, "contiguous", "float32", version=VERSION))
    positional, keywords = binding_args(meta, values)
    args = (*positional, None)
    with session.simulated(family=family, version=VERSION):
        want = binding(*positional, **keywords)
        assert same_bits(bound(*args), want) and same_bits(bound.call(args, None, True, None), want)
        with pytest.raises(TypeError, match="arguments"):
            bound.call(args[:-1], None, True, None)
