"""same_dtype: the listed tensors have one dtype."""

from __future__ import annotations

from .base import Field, Provocation, RuleKind
from ._sameness import same_as_other, sameness_checker


class SameDType(RuleKind):
    relation = "dtype"
    name = "same_dtype"
    model = "SameDType"
    doc = "All listed tensors have identical dtypes."
    kind_doc = "same_dtype: the tensors have one dtype."
    fields = (Field("params", "param list", "The tensors (C names) that share a dtype.", min_items=2),)
    example = {"params": ["a", "b"]}
    cases = ("mixed-dtype",)
    accepted_change = {"mixed-dtype": "drop"}
    row_phrases = ("数据类型不同", "数据类型不一致", "数据类型需", "dtypes differ", "数据类型不相同")
    row_precedence = 4
    row_condition = "{} differ in dtype."
    note_pattern = r"(?:数据类型|dtype)[^。；;，,]{0,24}?(?<!不)(?:一致|相同)|same dtype"

    def sentence(self, rule):
        return f"{', '.join(rule.params)} have the same dtype"

    def checker(self, rule):
        return sameness_checker(rule, self.name, 1, "dtype", str)

    def output_dtype(self, rule, name, known, strict):
        return same_as_other(rule, name, known)

    def dtypes_break(self, rule, dtypes, changed):
        return changed in rule["params"] and len({dtypes[n] for n in rule["params"] if n in dtypes}) > 1

    def provoke(self, rules, param, shape, dtype):
        return Provocation(dtype="float16" if dtype != "float16" else "float32")


KIND = SameDType()
