"""Which scalar and attribute values the generated tests sweep (verify/sweeps.py), on made-up
metadata: every bool and enum value, scalars at and around boundaries, never a value the
constraints forbid, each value exact in the scalar's dtype."""

from __future__ import annotations

import numpy as np

from aclnngen.core import sweeps


def _meta(*params):
    return {"name": "Probe", "params": list(params)}


def _scalar(name, default=None, constraints=(), scalar_dtype="float32", role=None):
    return {
        "name": name,
        "py": name,
        "role": role or ("optional_scalar" if default is not None else "scalar"),
        "default": default,
        "constraints": list(constraints),
        "scalar_dtype": scalar_dtype,
    }


def _attribute(name, attr_type, default=None, choices=()):
    return {
        "name": name,
        "py": name,
        "role": "attribute",
        "attr_type": attr_type,
        "default": default,
        "choices": list(choices),
    }


def _values(points, name):
    return [v for n, v in points if n == name]


def test_bool_and_enum_attributes_take_every_value_besides_the_base():
    meta = _meta(_attribute("flag", "bool", default=False), _attribute("mode", "char*", choices=("a", "b", "c")))
    points = sweeps.scalar_points(meta, "8.5.0")
    assert _values(points, "flag") == [True]
    assert _values(points, "mode") == ["b", "c"]


def test_a_constrained_scalar_is_swept_at_and_inside_its_bound_only():
    meta = _meta(_scalar("lambd", default=0.5, constraints=[{"op": ">=", "value": 0, "status": 161002}]))
    values = _values(sweeps.scalar_points(meta, "8.5.0"), "lambd")
    assert 0.0 in values and 0.25 in values and 0.75 in values and 2.0 in values
    assert all(v >= 0 for v in values) and 0.5 not in values and len(values) == len(set(values))


def test_a_constraint_outside_its_release_does_not_limit_the_sweep():
    meta = _meta(_scalar("k", default=1.0, constraints=[{"op": ">=", "value": 0, "status": 161002, "since": "9.0.0"}]))
    assert any(v < 0 for v in _values(sweeps.scalar_points(meta, "8.5.0"), "k"))
    assert all(v >= 0 for v in _values(sweeps.scalar_points(meta, "9.0.0"), "k"))


def test_a_pair_of_scalars_each_crosses_the_other():
    meta = _meta(_scalar("lo"), _scalar("hi"))  # no defaults: the base picks -1 and 1
    points = sweeps.scalar_points(meta, "8.5.0")
    assert {0.75, 1.0, 1.25} <= set(_values(points, "lo"))
    assert {-1.25, -1.0, -0.75} <= set(_values(points, "hi"))


def test_swept_values_are_exact_in_the_scalars_dtype():
    meta = _meta(_scalar("s", default=0.1, scalar_dtype="float16"))
    for value in _values(sweeps.scalar_points(meta, "8.5.0"), "s"):
        assert float(np.float16(value)) == value


def test_value_ids_are_readable():
    assert [sweeps.value_id(v) for v in (True, -0.5, 2.0, "tanh")] == ["true", "minus0p5", "2", "tanh"]
