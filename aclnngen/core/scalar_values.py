"""Values for an op's scalars and attributes in planned cases, and whether a `when` holds for
them. The planner sets them this way; a rule or dtype row with a `when` holds for a case when its
condition holds for these values.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from .attribute_types import ATTRIBUTE_TYPES
from .dtypes import CATEGORY
from .meta import op_meta
from .rules import version_key

__all__ = ["scalar_values", "condition_holds", "satisfy_constraints"]


def _spaced(start: float, stop: float, count: int) -> list[float]:
    """`count` (>= 2) evenly spaced values from `start` to `stop`, as numpy.linspace computes them."""
    step = (stop - start) / (count - 1)
    return [i * step + start for i in range(count - 1)] + [stop]


# the values a scalar list (aclScalarList*) takes in planned cases
LIST_SCALARS = (0.5, -0.25, 2.0)
# ... and those of an integer (or bool) scalar list: values its dtype holds
INTEGER_LIST_SCALARS = (1, -2, 3)


def _whole(p) -> bool:
    """Whether a scalar's dtype holds whole numbers only (integer or bool, `scalar_dtype`): its
    planned values are integers then, so the binding can create the scalar it names."""
    return CATEGORY.get(p.scalar_dtype or "") in ("integer", "bool")


def _whole_picks(count: int) -> list[int]:
    """`count` distinct ascending integers around 1 (1 alone; -1, 1; -1, 0, 1, ...)."""
    return [1] if count == 1 else [-1 + i if count > 2 else (-1, 1)[i] for i in range(count)]


def scalar_values(meta: Mapping) -> dict[str, Any]:
    """Sensible values for the op's scalars and attributes: the default where there is one; else,
    for required scalars, 0.5 when there is one and evenly spaced ascending values from -1.0 to
    1.0 in the order they appear when there are several (so a min comes out below a max); each
    moved inside the constraints of every version. Attributes: default, first choice, or a
    neutral value of their type."""
    params = op_meta(meta).params
    free = [p for p in params if p.is_scalar and p.default is None and not p.is_list]
    picks = [0.5] if len(free) == 1 else _spaced(-1.0, 1.0, len(free)) if free else []
    chosen = {p.name: float(v) for p, v in zip(free, picks)}
    whole = [p for p in free if _whole(p)]
    chosen.update({p.name: v for p, v in zip(whole, _whole_picks(len(whole)))})
    values: dict[str, Any] = {}
    for p in params:  # attributes first: a scalar's conditional bounds depend on them
        if p.is_scalar and p.is_list:
            values[p.name] = list(INTEGER_LIST_SCALARS if _whole(p) else LIST_SCALARS)
        elif p.is_scalar:
            values[p.name] = p.default if p.default is not None else chosen[p.name]
        elif p.role == "attribute":
            if p.default is not None:
                values[p.name] = p.default
            elif p.choices:
                values[p.name] = p.choices[0]
            else:
                t = ATTRIBUTE_TYPES.get(p.attr_type or "")
                values[p.name] = None if t is None else copy.copy(t.neutral)
    return satisfy_constraints(meta, values)


def condition_holds(constraint: Any, values: Mapping[str, Any]) -> bool:
    """Whether a constraint's or rule's `when` (attribute or scalar values) holds for `values` (C
    names); `constraint` is typed metadata (core.meta) or its generated dict."""
    when = constraint.get("when") if isinstance(constraint, Mapping) else constraint.when
    return all(values.get(k) == v for k, v in (when or {}).items())


def satisfy_constraints(meta: Mapping, values: Mapping[str, Any], version: str | None = None) -> dict[str, Any]:
    """`values` with each scalar moved inside the bounds whose condition holds (every version's,
    or only those that hold at `version` when it is given)."""
    fixed = dict(values)
    for p in op_meta(meta).params:
        if p.is_scalar and p.name in fixed:
            holding = [
                c
                for c in p.constraints
                if condition_holds(c, fixed) and (version is None or c.holds_at(version_key(version)))
            ]
            fixed[p.name] = _inside(fixed[p.name], holding, step=1 if _whole(p) else 0.5)
    return fixed


def _inside(value, constraints, step=0.5):
    """`value` moved inside each bound; a strict bound is passed by `step` (1 for an integer scalar)."""
    for c in constraints:
        op, bound = c.op, c.value
        if op == ">=" and not value >= bound:
            value = bound
        elif op == ">" and not value > bound:
            value = bound + step
        elif op == "<=" and not value <= bound:
            value = bound
        elif op == "<" and not value < bound:
            value = bound - step
        elif op == "!=" and value == bound:
            value = bound + step
    return value
