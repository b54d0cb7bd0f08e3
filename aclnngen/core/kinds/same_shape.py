"""same_shape: the listed tensors have one shape."""

from __future__ import annotations

from .base import Field, Provocation, RuleKind, fmt
from ._sameness import same_as_other, sameness_checker


class SameShape(RuleKind):
    relation = "shape"
    name = "same_shape"
    model = "SameShape"
    doc = "All listed tensors have identical shapes."
    kind_doc = "same_shape: the tensors have one shape."
    fields = (Field("params", "param list", "The tensors (C names) that share a shape.", min_items=2),)
    example = {"params": ["a", "b"]}
    cases = ("broadcast-rejected", "shape-mismatch")
    row_phrases = ("shape不同", "shape不一致", "shape不相同", "shapes differ")
    row_precedence = 6
    row_condition = "{} differ in shape."
    # a usage note saying the tensors' shapes agree (importer); "after broadcasting" is not one
    note_pattern = r"shape[^。；;，,]{0,24}?(?<!不)(?:一致|相同)|same shape"

    def sentence(self, rule):
        return f"{', '.join(rule.params)} have the same shape"

    def checker(self, rule):
        return sameness_checker(rule, self.name, 0, "shape", fmt)

    def output_shape(self, rule, name, known, strict):
        return same_as_other(rule, name, known)

    def shape_fixed(self, rule):
        return tuple(rule["params"])

    def provoke(self, rules, param, shape, dtype):
        return Provocation(shape=shape[:-1] + (shape[-1] + 3,) if shape else (5,))


KIND = SameShape()
