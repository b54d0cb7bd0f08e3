"""The rule kinds of the spec language: one module per kind, each one class holding every facet
of that kind (docs/architecture.md, "Adding a rule kind"). Every consumer iterates `KINDS` or
looks a rule's kind up with `kind_of`; none branches on a kind's name.
"""

from __future__ import annotations

from typing import Any

from . import (
    broadcast,
    broadcast_to,
    castable,
    dtype_pairs,
    empty,
    max_rank,
    min_rank,
    non_contiguous,
    output_dtype,
    per_channel,
    promote,
    same_dtype,
    same_shape,
)
from .base import Field, Provocation, RuleKind, Violation, value

# The registry, in a fixed order: the spec model's union, the JSON Schema and the return-code
# checks list the kinds in it.
KINDS: tuple[RuleKind, ...] = (
    same_shape.KIND,
    same_dtype.KIND,
    broadcast.KIND,
    broadcast_to.KIND,
    promote.KIND,
    castable.KIND,
    per_channel.KIND,
    max_rank.KIND,
    min_rank.KIND,
    empty.KIND,
    non_contiguous.KIND,
    dtype_pairs.KIND,
    output_dtype.KIND,
)
BY_NAME: dict[str, RuleKind] = {k.name: k for k in KINDS}
KIND_NAMES: tuple[str, ...] = tuple(BY_NAME)


class UnknownRuleKind(ValueError):
    """A rule whose kind no module of aclnngen/core/kinds defines."""


def kind_of(rule: Any) -> RuleKind:
    """The kind of a rule (a META dict, a spec model rule, or a kind's name)."""
    name = rule if isinstance(rule, str) else value(rule, "kind")
    try:
        return BY_NAME[name]
    except KeyError:
        raise UnknownRuleKind(f"unknown rule kind {name!r}; the kinds are {', '.join(KIND_NAMES)}") from None


def cases_probing() -> dict[str, tuple[str, ...]]:
    """planned case -> the kinds whose rules decide it, in registry order."""
    found: dict[str, list[str]] = {}
    for kind in KINDS:
        for case in kind.cases:
            found.setdefault(case, []).append(kind.name)
    return {case: tuple(names) for case, names in found.items()}


__all__ = ["KINDS", "BY_NAME", "KIND_NAMES", "RuleKind", "Field", "Violation", "Provocation", "kind_of"]
