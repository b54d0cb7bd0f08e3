"""broadcast: the inputs broadcast together, and the output has the broadcast shape."""

from __future__ import annotations

from ..broadcasting import BroadcastError, broadcast_shapes
from .base import Field, Provocation, RuleKind, Violation, first_violation, fmt, listed


class Broadcast(RuleKind):
    relation = "shape"
    name = "broadcast"
    model = "Broadcast"
    doc = "The inputs broadcast together, and the output has the broadcast shape."
    kind_doc = "broadcast: the inputs broadcast together to the output's shape."
    fields = (
        Field("inputs", "param list", "The input tensors that broadcast together.", min_items=2),
        Field("output", "param", "The tensor whose shape is the broadcast shape."),
    )
    example = {"inputs": ["a", "b"], "output": "c"}
    shapes_across_families = True
    cases = ("broadcast", "broadcast-rejected", "shape-mismatch")
    row_phrases = ("broadcast", "广播")
    row_precedence = 3
    row_condition = "{} do not broadcast, or the output has another shape."
    note_pattern = r"broadcast|广播"  # an input's usage note: it broadcasts with the others

    def sentence(self, rule):
        return f"{', '.join(rule.inputs)} broadcast together; {rule.output} has the broadcast shape"

    def checker(self, rule):
        inputs, output, status = tuple(rule["inputs"]), rule["output"], rule["status"]

        def run(info):
            present = [(n, info[n][0]) for n in inputs if n in info]
            if not present:
                return None
            try:
                shape = broadcast_shapes(*(s for _, s in present))
            except BroadcastError:
                # name the first input that does not broadcast with the ones before it
                acc = present[0][1]
                for index in range(1, len(present)):
                    name, s = present[index]
                    try:
                        acc = broadcast_shapes(acc, s)
                    except BroadcastError:
                        before = listed(n for n, _ in present[:index])
                        return Violation(
                            status,
                            name,
                            f"{name} has shape {fmt(s)}, which does not broadcast with {before} (shape {fmt(acc)})",
                            found=s,
                            allowed=f"a shape that broadcasts with {fmt(acc)}",
                        )
                raise  # pragma: no cover - broadcast_shapes is pairwise-consistent
            out = info.get(output)
            if out is not None and out[0] != shape:
                return Violation(
                    status,
                    output,
                    f"{output} has shape {fmt(out[0])}, not the broadcast shape {fmt(shape)} of "
                    f"{listed(n for n, _ in present)}",
                    found=out[0],
                    allowed=shape,
                )
            return None

        return first_violation(rule, run)

    def output_shape(self, rule, name, known, strict):
        if rule["output"] != name:
            return None
        present = [known[i] for i in rule["inputs"] if i in known]
        if not present:
            return None
        try:
            return broadcast_shapes(*present)
        except BroadcastError:
            if strict:
                raise
            return present[0]  # the validator (or the library) rejects these inputs anyway

    def broadcasting(self, rule):
        return tuple(rule["inputs"])

    def shape_fixed(self, rule):
        return (rule["output"],)

    def provoke(self, rules, param, shape, dtype):
        return Provocation(shape=shape[:-1] + (shape[-1] + 3,) if shape else (5,))


KIND = Broadcast()
