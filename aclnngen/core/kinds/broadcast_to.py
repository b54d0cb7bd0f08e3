"""broadcast_to: one tensor broadcasts to exactly another's shape."""

from __future__ import annotations

from ..broadcasting import BroadcastError, broadcast_shapes
from .base import Field, Provocation, RuleKind, Violation, first_violation, fmt


class BroadcastTo(RuleKind):
    relation = "shape"
    name = "broadcast_to"
    model = "BroadcastTo"
    doc = "`param` broadcasts to `target`'s shape, and the broadcast result is exactly that shape."
    kind_doc = "broadcast_to: one tensor broadcasts to another's shape."
    fields = (
        Field("param", "param", "The tensor that broadcasts."),
        Field("target", "param", "The tensor whose shape it broadcasts to."),
    )
    example = {"param": "a", "target": "b"}
    cases = ("broadcast", "broadcast-rejected", "shape-mismatch")

    def sentence(self, rule):
        return f"{rule.param} broadcasts to exactly {rule.target}'s shape"

    def checker(self, rule):
        param, target, status = rule["param"], rule["target"], rule["status"]

        def run(info):
            p, t = info.get(param), info.get(target)
            if p is None or t is None:
                return None
            try:
                result = broadcast_shapes(p[0], t[0])
            except BroadcastError:
                result = None
            if result != t[0]:
                how = "does not broadcast with it" if result is None else f"broadcasts to {fmt(result)}"
                return Violation(
                    status,
                    param,
                    f"{param} has shape {fmt(p[0])}, which does not broadcast to exactly {target}'s shape "
                    f"{fmt(t[0])} ({how})",
                    found=p[0],
                    allowed=f"a shape that broadcasts to {fmt(t[0])}",
                )
            return None

        return first_violation(rule, run)

    def output_shape(self, rule, name, known, strict):
        if rule["param"] == name and rule["target"] in known:
            return known[rule["target"]]
        if rule["target"] == name and rule["param"] in known:
            return known[rule["param"]]
        return None

    def broadcasting(self, rule):
        return (rule["param"],)

    def provoke(self, rules, param, shape, dtype):
        return Provocation(shape=shape[:-1] + (shape[-1] + 3,) if shape else (5,))


KIND = BroadcastTo()
