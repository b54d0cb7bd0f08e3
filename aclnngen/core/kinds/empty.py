"""empty: whether tensors with a zero-sized dim are accepted."""

from __future__ import annotations

from .base import Field, Provocation, RuleKind, Violation, fmt
from ._params_rule import each_checker


class Empty(RuleKind):
    relation = "layout"
    name = "empty"
    model = "EmptyTensors"
    doc = "Whether tensors with a zero-sized dim are accepted (the op then does nothing)."
    kind_doc = "empty: whether tensors with a zero-sized dimension are accepted."
    fields = (
        Field("params", "param list", "The tensors the rule applies to.", min_items=1),
        Field("allowed", "bool", "Whether empty tensors are accepted."),
    )
    example = {"params": ["a"], "allowed": True}
    cases = ("empty",)
    accepted_change = {"empty": "allow"}

    def sentence(self, rule):
        return f"empty tensors {'are' if rule.allowed else 'are not'} accepted ({', '.join(rule.params)})"

    def checker(self, rule):
        if rule["allowed"]:
            return None
        status = rule["status"]
        return each_checker(
            rule,
            lambda name, entry, contiguous: 0 in entry[0],
            lambda name, shape: Violation(
                status,
                name,
                f"{name} is empty (shape {fmt(shape)}); empty tensors are not allowed",
                found=shape,
                allowed="tensors without a zero-sized dim",
            ),
        )

    def breaks(self, rule, shapes, layout):
        return not rule["allowed"] and any(0 in shapes.get(n, (1,)) for n in rule["params"])

    def provoke(self, rules, param, shape, dtype):
        return Provocation(shape=(0,) + tuple(shape[1:]))


KIND = Empty()
