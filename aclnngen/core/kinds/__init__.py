"""The rule kinds of the spec language: one module per kind, each one class holding every facet
of that kind (docs/architecture.md, "Adding a rule kind"). Every consumer iterates `KINDS` or
looks a rule's kind up with `kind_of`; none branches on a kind's name.
"""

from __future__ import annotations

import importlib
from typing import Any

from .base import Field, Provocation, RuleKind, Violation, value

# The kinds in registry order, each the module aclnngen/core/kinds/<name>.py defining `KIND`.
# A module is imported when its kind is first asked for (`kind_of`, or `KINDS`/`BY_NAME` for all
# of them): a binding's import loads only the kinds its META's rules use.
KIND_NAMES: tuple[str, ...] = (
    "same_shape",
    "same_dtype",
    "broadcast",
    "broadcast_to",
    "promote",
    "castable",
    "per_channel",
    "max_rank",
    "min_rank",
    "empty",
    "non_contiguous",
    "dtype_pairs",
    "output_dtype",
)
_LOADED: dict[str, RuleKind] = {}


def __getattr__(attribute: str):
    """`KINDS` (every kind, in registry order) and `BY_NAME` (name -> kind), loaded on first use."""
    if attribute == "KINDS":
        return tuple(_kind(name) for name in KIND_NAMES)
    if attribute == "BY_NAME":
        return {name: _kind(name) for name in KIND_NAMES}
    raise AttributeError(f"module {__name__!r} has no attribute {attribute!r}")


def _kind(name: str) -> RuleKind:
    kind = _LOADED.get(name)
    if kind is None:
        kind = _LOADED[name] = importlib.import_module(f"{__name__}.{name}").KIND
    return kind


class UnknownRuleKind(ValueError):
    """A rule whose kind no module of aclnngen/core/kinds defines."""


def kind_of(rule: Any) -> RuleKind:
    """The kind of a rule (a META dict, a spec model rule, or a kind's name)."""
    name = rule if isinstance(rule, str) else value(rule, "kind")
    kind = _LOADED.get(name)
    if kind is not None:
        return kind
    if name not in KIND_NAMES:
        raise UnknownRuleKind(f"unknown rule kind {name!r}; the kinds are {', '.join(KIND_NAMES)}")
    return _kind(name)


def cases_probing() -> dict[str, tuple[str, ...]]:
    """planned case -> the kinds whose rules decide it, in registry order."""
    found: dict[str, list[str]] = {}
    for kind in __getattr__("KINDS"):
        for case in kind.cases:
            found.setdefault(case, []).append(kind.name)
    return {case: tuple(names) for case, names in found.items()}


__all__ = ["KINDS", "BY_NAME", "KIND_NAMES", "RuleKind", "Field", "Violation", "Provocation", "kind_of"]
