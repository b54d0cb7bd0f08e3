"""Attribute and scalar sweeps: which values of an op's scalars and attributes the generated tests
try beyond the defaults, so a wrong branch of the formula (an enum value, a bool, a scalar on the far
side of a boundary) cannot pass unnoticed.

Each sweep point changes one parameter from the values `planning.scalar_values` picks (one at a time,
so the number of cases grows with the sum, not the product, of the value counts):
- a bool attribute: both values; a `char*` attribute with `choices`: every choice; a dimension
  attribute (`dim_of`): every dim of the test data, from -rank to rank-1;
- a scalar: its default and values around it, zero, negative and positive values, each constraint's bound and values
  just inside it, and the other scalars' values and their neighbours (so for a min/max pair each
  crosses the other); every value is one the scalar's aclScalar dtype holds exactly and that
  satisfies every constraint at the version (violations are the scalar-constraint tests' job).
"""

from __future__ import annotations

import math
import numbers
import struct
from decimal import Decimal
from typing import Any, Mapping

from . import planning
from .meta import op_meta
from .rules import version_key

STEP = 0.25  # the distance of "around a boundary": values this far on either side


def _satisfies(value: float, constraints) -> bool:
    for c in constraints:
        op, bound = c.op, c.value
        ok = {">=": value >= bound, ">": value > bound, "<=": value <= bound, "<": value < bound, "!=": value != bound}[
            op
        ]
        if not ok:
            return False
    return True


# The IEEE formats of the scalar dtypes a value is rounded to (bfloat16 and the others keep it as given).
_ROUNDED = {"float16": "e", "float32": "f"}


def _exact(value: float, dtype_name: str | None) -> float:
    """`value` as the scalar's dtype holds it (round to nearest even; too large: infinity)."""
    code = _ROUNDED.get(dtype_name or "float32")
    if code is None:
        return float(value)
    try:
        return struct.unpack(code, struct.pack(code, value))[0]
    except OverflowError:
        return math.copysign(math.inf, value)


def scalar_points(meta: Mapping, version) -> list[tuple[str, Any]]:
    """(C name, value) pairs to sweep, in parameter order, without duplicates of the base value."""
    version = version_key(version)
    base = planning.scalar_values(meta)
    op = op_meta(meta)
    scalars = [p for p in op.by_role("scalar", "optional_scalar") if not p.is_list]
    points: list[tuple[str, Any]] = []
    for p in op.params:
        name, role = p.name, p.role
        if role == "attribute":
            if p.attr_type == "bool":
                candidates = [False, True]
            elif p.choices:
                candidates = list(p.choices)
            elif p.dim_of:  # every dim of the tests' rank-3 data, negative ones too
                rank = len(planning.BASE_SHAPE)
                candidates = list(range(-rank, rank))
            else:
                continue
            points += [(name, v) for v in candidates if v != base.get(name)]
            continue
        if not p.is_scalar or p.is_list:  # a scalar list is not swept
            continue
        constraints = [c for c in p.constraints if c.holds_at(version) and planning.condition_holds(c, base)]
        raw = [0.0, -0.5, 0.5, -2.0, 2.0]
        if p.default is not None:
            raw += [p.default, -p.default, p.default - STEP, p.default + STEP]
        for c in constraints:
            raw += [c.value - STEP, c.value, c.value + STEP]
        for other in scalars:
            if other.name != name:
                v = base[other.name]
                raw += [v - STEP, v, v + STEP]
        seen = {base.get(name)}
        for value in raw:
            if isinstance(value, bool) or not math.isfinite(float(value)):
                continue
            value = _exact(float(value), p.scalar_dtype)
            if value in seen or not _satisfies(value, constraints):
                continue
            seen.add(value)
            points.append((name, value))
    return points


def overrides_for(meta: Mapping, version, name: str, value: Any) -> dict[str, Any]:
    """The values a sweep point sets: the swept one, and any scalar a conditional bound (one whose
    `when` the new value triggers) moves back inside it."""
    version = version_key(version)
    before = planning.scalar_values(meta)
    fixed = planning.satisfy_constraints(meta, {**before, name: value}, version)
    fixed[name] = value  # the swept value itself stays as chosen
    return {k: v for k, v in fixed.items() if k == name or v != before.get(k)}


def value_id(value: Any) -> str:
    """A short, id-safe spelling of a swept value."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return _positional(value).replace("-", "minus").replace(".", "p")
    if isinstance(value, numbers.Integral):
        return str(value).replace("-", "minus")
    return str(value)


def _positional(value: float) -> str:
    """The shortest round-tripping digits of a finite `value`, positional, without a trailing `.0`."""
    if not math.isfinite(value):
        return repr(value)
    text = format(Decimal(repr(value)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text
