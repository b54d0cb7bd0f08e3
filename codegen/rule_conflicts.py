"""Rules without `families` that contradict each other: a warning of `aclnngen validate`, not an error.

A page often states a rule for some products and its opposite for others (same shape on A2,
broadcasting on the 950 family); a spec that copies both without `families` makes every family
refuse what one rule allows. Two unqualified rules that hold together contradict each other when
one lets tensors differ (a shape that merely broadcasts, two dtypes that promote) and the other
refuses every such difference. Decided by the kinds' own run-time checks (core/kinds), so no kind
is known here by name.
"""

from __future__ import annotations

from typing import Mapping

from aclnngen.core.kinds import kind_of
from aclnngen.core.releases import holds_at

from .errors import Problem
from .model import OpSpec
from .yamlio import LineMap

_BASE = (2, 3, 4)
_SMALL = (3, 1)  # broadcasts to _BASE
_MIXED = ("float16", "float32")  # two dtypes that promote (to float32)


def _versions(spec: OpSpec) -> list[str]:
    found = [spec.cann_version] + [v for r in spec.rules for v in (r.since, r.until) if v]
    return list(dict.fromkeys(found))


def _together(a, b, versions: list[str]) -> bool:
    return any(holds_at(a.since, a.until, v) and holds_at(b.since, b.until, v) for v in versions)


def _refuses(rule: Mapping, info: Mapping) -> bool:
    check = kind_of(rule).checker(rule)
    return check is not None and check(info, lambda _name: True) is not None


def _shape_variants(rule: Mapping, names: list[str]) -> list[dict]:
    """The shapes under which `rule` lets a tensor merely broadcast: one of its broadcasting
    tensors small, or the others small; only those the rule itself accepts."""
    free = list(kind_of(rule).broadcasting(rule))
    variants = []
    for name in free:
        for small in ([name], [n for n in free if n != name]):
            if not small:
                continue
            info = {n: (_SMALL if n in small else _BASE, "float32", None) for n in names}
            if not _refuses(rule, info):
                variants.append(info)
    return variants


def _dtype_variants(rule: Mapping, names: list[str], inputs: set[str]) -> list[dict]:
    """Two of the rule's inputs in two dtypes (each way round), where the rule, a dtype rule,
    accepts them."""
    if kind_of(rule).relation != "dtype":
        return []
    mine = [n for n in kind_of(rule).names(rule) if n in inputs]
    variants = []
    for first, second in ((mine[0], mine[1]), (mine[1], mine[0])) if len(mine) >= 2 else ():
        info = {n: (_BASE, _MIXED[0] if n == first else _MIXED[1], None) for n in names}
        if not _refuses(rule, info):
            variants.append(info)
    return variants


def rule_conflicts(spec: OpSpec, meta: Mapping, path: str, lines: LineMap) -> list[Problem]:
    """One warning per pair of unqualified rules (no `families`, no `when`) that hold together
    where the second refuses every difference the first allows; at the second rule's line."""
    rules = list(meta["rules"])
    inputs = {p.name for p in spec.parameters if p.role == "input"}
    versions = _versions(spec)
    plain = [i for i, r in enumerate(spec.rules) if not r.families and not getattr(r, "when", None)]
    found = []
    for i in plain:
        for j in plain:
            if i == j or not _together(spec.rules[i], spec.rules[j], versions):
                continue
            allowing, refusing = rules[i], rules[j]
            names = sorted(set(kind_of(allowing).names(allowing)) | set(kind_of(refusing).names(refusing)))
            if _refuses(refusing, {n: (_BASE, _MIXED[1], None) for n in names}):
                continue  # it refuses even tensors of one shape and dtype: not for the difference
            for what, variants in (
                ("shapes that broadcast", _shape_variants(allowing, names)),
                ("inputs of two dtypes", _dtype_variants(allowing, names, inputs)),
            ):
                if variants and all(_refuses(refusing, info) for info in variants):
                    found.append(
                        Problem(
                            path,
                            lines.line_of(("rules", j)),
                            f"warning: rule {j} ({kind_of(refusing).name}) refuses the {what} rule {i} "
                            f"({kind_of(allowing).name}) allows, on every family; if each holds on some "
                            "products only, say which with `families`",
                        )
                    )
    return found
