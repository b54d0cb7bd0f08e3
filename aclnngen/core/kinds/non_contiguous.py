"""non_contiguous: whether strided views are accepted."""

from __future__ import annotations

from ..broadcasting import numel
from .base import Field, Provocation, RuleKind, Violation, fmt
from ._params_rule import each_checker


class NonContiguous(RuleKind):
    relation = "layout"
    name = "non_contiguous"
    model = "NonContiguous"
    kind_doc = "non_contiguous: whether non-contiguous (strided) tensors are accepted."
    fields = (
        Field("params", "param list", "The tensors the rule applies to.", min_items=1),
        Field("allowed", "bool", "Whether non-contiguous tensors are accepted."),
    )
    example = {"params": ["a"], "allowed": False}
    cases = ("non-contiguous",)
    accepted_change = {"non-contiguous": "drop"}

    def sentence(self, rule):
        return f"non-contiguous tensors {'are' if rule.allowed else 'are not'} accepted ({', '.join(rule.params)})"

    def checker(self, rule):
        if rule["allowed"]:
            return None
        status = rule["status"]
        return each_checker(
            rule,
            lambda name, entry, contiguous: not contiguous(name),
            lambda name, shape: Violation(
                status,
                name,
                f"{name} (shape {fmt(shape)}) is not contiguous; non-contiguous tensors are not allowed",
                found="non-contiguous",
                allowed="contiguous tensors",
            ),
        )

    def breaks(self, rule, shapes, layout):
        if rule["allowed"] or layout != "strided":
            return False
        return any(numel(shapes.get(n, ())) > 1 for n in rule["params"])

    def provoke(self, rules, param, shape, dtype):
        return Provocation(strided=True)


KIND = NonContiguous()
