"""The compiled kernels' launch plans (runtime/sim/compiled.py): what a call signature decides is
remembered, but a repeated signature still reads its own tensors, and a changed shape, dtype,
scalar value, family or op registration is never served a stale plan."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import catalog
from aclnngen.core.meta import op_meta
from aclnngen.runtime import session
from aclnngen.runtime.errors import AclnnError
from aclnngen.runtime.sim import compiled, kernels
from aclnngen.runtime.sim.kernels import BUILTIN_PACKAGE
from aclnngen.verify import cases, opcheck


def _compiled_ops() -> list[str]:
    with session.simulated(profile="lenient"):
        falls = compiled.fallbacks(BUILTIN_PACKAGE, session.backend().libraries["nnopbase"])
    return [
        s
        for s in catalog.representatives()
        if op_meta(importlib.import_module(f"aclnngen.generated.meta.{s}").META).symbol not in falls
    ]


COMPILED = _compiled_ops()


@pytest.fixture
def forced(monkeypatch):
    """A launch that cannot run a compiled kernel fails; every value let through (lenient)."""
    monkeypatch.setenv(compiled.MODE_ENV, "compiled")
    with session.simulated(profile="lenient") as sim:
        # no plan of an earlier test: in the simulator's memory a signature would not reach the
        # dispatch's plans at all, in the plans it would not be planned again
        sim.controls.aclsim_memo_clear()
        compiled._PLANS.clear()
        yield


def _values(op, scale: float = 1.0, grow: int = 1) -> dict:
    """The op's contiguous float32 case, inputs scaled by `scale` and repeated `grow` times along
    dim 0 (a per-channel weight keeps its shape)."""
    values = dict(cases.make_values(op.meta, "contiguous", "float32", version=op.version))
    first = np.shape(values[op.of_roles("input")[0].name])
    for p in op.of_roles("input"):
        v = values[p.name]
        if isinstance(v, np.ndarray):
            if np.shape(v) == first and grow > 1:
                v = np.concatenate([v] * grow)
            values[p.name] = np.ascontiguousarray(v * np.float32(scale))
    for p in op.of_roles("output"):
        values.pop(p.name, None)
    return values


def _agree(op, values) -> None:
    positional, keywords, _ = op.split(values)
    before = compiled.stats()["compiled"]
    result = op.binding(*positional, **keywords, validate=False)
    assert compiled.stats()["compiled"] == before + 1
    got = result if isinstance(result, tuple) else (result,)
    for p, g, w in zip(op.of_roles("output"), got, op.run_reference(values)):
        opcheck.renderings_agree(op, values, p.py, g, w)


@pytest.mark.parametrize("snake", COMPILED)
def test_a_repeated_signature_reuses_its_plan_and_reads_its_own_tensors(snake, forced):
    op = catalog.under_test(snake)
    _agree(op, _values(op))
    planned = len(compiled._PLANS)
    _agree(op, _values(op, scale=-0.75))  # same signature, other data at other addresses
    assert len(compiled._PLANS) == planned, "the signature was planned again"
    _agree(op, _values(op, grow=3))  # another shape: a plan of its own
    assert len(compiled._PLANS) == planned + 1


SCALAR_OPS = [
    s
    for s in COMPILED
    if any(
        p.role in ("scalar", "optional_scalar") or p.attr_type == "double"
        for p in op_meta(importlib.import_module(f"aclnngen.generated.meta.{s}").META).params
    )
]


@pytest.mark.parametrize("snake", SCALAR_OPS)
def test_a_changed_scalar_is_a_new_plan(snake, forced):
    op = catalog.under_test(snake)
    values = _values(op)
    _agree(op, values)
    for p in op.typed.params:
        value = values.get(p.name)
        if (p.role in ("scalar", "optional_scalar") or p.attr_type == "double") and isinstance(value, float):
            values[p.name] = value * 0.5 + 0.125
    _agree(op, values)


def test_the_signature_names_family_profile_inputs_and_the_op_registration():
    args = [kernels.ViewArg(kind=0, name="x", is_null=False, shape=(1,), strides=(1,), dtype=np.dtype("float32"))]
    entry = kernels.OpEntry({}, BUILTIN_PACKAGE)
    key = compiled._signature(entry, args, "ascend910b", "core.so")
    assert key == compiled._signature(entry, list(args), "ascend910b", "core.so")
    assert key != compiled._signature(entry, args, "ascend310p", "core.so")
    assert key != compiled._signature(entry, args, "ascend910b", "other-core.so")
    assert key != compiled._signature(kernels.OpEntry({}, BUILTIN_PACKAGE), args, "ascend910b", "core.so")
    for change in ({"shape": (2,)}, {"strides": (2,)}, {"dtype": np.dtype("float16")}, {"is_null": True}):
        other = kernels.ViewArg(**{**vars(args[0]), **change})
        assert key != compiled._signature(entry, [other], "ascend910b", "core.so"), change
    scalar = kernels.ViewArg(kind=4, name="alpha", is_null=False, value=1.0)
    assert compiled._signature(entry, [scalar], "a", "c") != compiled._signature(
        entry, [kernels.ViewArg(**{**vars(scalar), "value": 2.0})], "a", "c"
    )
    assert compiled._signature(entry, [kernels.ViewArg(**{**vars(scalar), "value": [1, 2]})], "a", "c") is not None


def test_a_reregistered_op_is_planned_again(forced):
    snake = COMPILED[0]
    op = catalog.under_test(snake)
    _agree(op, _values(op))
    planned = {k: v for k, v in compiled._PLANS.items()}
    kernels.register_op(op.meta, package=BUILTIN_PACKAGE)  # a new entry for the same symbol
    _agree(op, _values(op))
    fresh = [v for k, v in compiled._PLANS.items() if k not in planned or planned[k] is not v]
    assert fresh, "the new registration was served the old entry's plan"


def test_a_remembered_refusal_is_given_every_time(forced):
    """A signature no compiled kernel can take (a strided view) fails the forced mode each time."""
    op = catalog.under_test(COMPILED[0])
    values = _values(op, grow=4)
    for p in op.of_roles("input"):
        v = values[p.name]
        if isinstance(v, np.ndarray) and v.ndim >= 1 and v.shape[0] > 1:
            values[p.name] = v[::2]
    positional, keywords, _ = op.split(values)
    for _ in range(2):
        with pytest.raises(AclnnError, match="no compiled kernel ran"):
            op.binding(*positional, **keywords, validate=False)
