"""per_channel: a weight with one value per channel of the input (or one value), and its
gradient shaped like it."""

from __future__ import annotations

from ..broadcasting import channels, numel
from .base import Field, Provocation, RuleKind, Violation, first_violation, fmt, value


def weight_layout(weight: tuple[int, ...], source: tuple[int, ...]) -> tuple[int, ...] | None:
    """The shape a per-channel weight of shape `weight` takes to broadcast against an input of
    shape `source`: () for one element, (1, C, 1, ...) for one element per channel (C =
    `channels(source)`), None when it has neither. The weight's own shape does not matter, only
    its element count: its elements are the channels in row-major order (the vendor reshapes any
    weight to 1-D before its kernel). The rule's check and the evaluator's `per_channel` both
    ask this, so what the validator accepts is what the kernel runs."""
    n, c = numel(weight), channels(source)
    if n == 1:
        return ()
    if n != c or len(source) < 2:
        return None
    return (1, c) + (1,) * (len(source) - 2)


class PerChannel(RuleKind):
    relation = "shape"
    name = "per_channel"
    model = "PerChannel"
    doc = (
        "`weight` has 1 element or one per channel (`input.shape[1]`; 1 when input has rank <= 1);\n"
        "`grad` (the weight's gradient) has weight's shape when weight has 1 element, else shape (C,)."
    )
    kind_doc = "per_channel: a weight with one value per channel of the input."
    fields = (
        Field("weight", "param", "The per-channel weight tensor."),
        Field("input", "param", "The tensor whose channel dimension (dim 1) the weight follows."),
        Field("grad", "optional param", "The gradient of the weight, with the weight's shape, when there is one."),
    )
    example = {"weight": "w", "input": "a"}
    cases = ("per-channel-single", "per-channel-rejected", "grad-shape-rejected")

    def per_channel_tensors(self, rule):
        return tuple(n for n in (value(rule, "weight"), value(rule, "grad")) if n)

    def sentence(self, rule):
        grad = f"; {rule.grad} has weight's shape (1 element) or (C,)" if rule.grad else ""
        return f"{rule.weight} has 1 element or C = {rule.input}.shape[1]{grad}"

    def checker(self, rule):
        weight, source, grad, status = rule["weight"], rule["input"], rule.get("grad"), rule["status"]

        def run(info):
            w, x = info.get(weight), info.get(source)
            if w is None or x is None:
                return None
            n = numel(w[0])
            c = channels(x[0])
            if weight_layout(w[0], x[0]) is None:
                if len(x[0]) == 0:
                    why = f"{source} is 0-d, so {weight} must have exactly one element"
                elif len(x[0]) == 1:
                    why = f"{source} has rank 1, so its channel count is 1"
                else:
                    why = f"{source} has shape {fmt(x[0])}, so C = {c}"
                return Violation(
                    status,
                    weight,
                    f"{weight} has {n} elements (shape {fmt(w[0])}); it must have 1 or one per channel "
                    f"of {source} ({why})",
                    found=w[0],
                    allowed=f"1 or {c} elements",
                )
            g = info.get(grad) if grad is not None else None
            if g is None:
                return None
            expected = w[0] if n == 1 else (c,)
            if g[0] != expected:
                return Violation(
                    status,
                    grad,
                    f"{grad} has shape {fmt(g[0])}; with {weight} of shape {fmt(w[0])} it must have shape "
                    f"{fmt(expected)}",
                    found=g[0],
                    allowed=expected,
                )
            return None

        return first_violation(rule, run)

    def output_shape(self, rule, name, known, strict):
        if rule.get("grad") != name:
            return None
        weight, source = known.get(rule["weight"]), known.get(rule["input"])
        if weight is not None and numel(weight) == 1:
            return weight
        if source is not None:
            return (channels(source),)
        if weight is not None:
            return (numel(weight),)
        return None

    def provoke(self, rules, param, shape, dtype):
        if len(shape) >= 2:  # the input: change its channel count
            return Provocation(shape=(shape[0], shape[1] + 1) + tuple(shape[2:]))
        return Provocation(shape=(numel(shape) + 1,))  # weight or its gradient: one element too many


KIND = PerChannel()
