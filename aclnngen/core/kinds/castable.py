"""castable: the inputs' (promoted) dtype can be cast to the output's dtype."""

from __future__ import annotations

from ..dtypes import CATEGORY, can_cast, promote_names
from .base import Field, Provocation, RuleKind, Violation, first_violation
from ._promotion import described, no_common_dtype, promoted_output


class Castable(RuleKind):
    relation = "dtype"
    name = "castable"
    model = "Castable"
    doc = (
        "The dtype of `inputs` (promoted together when there are several) can be cast to `output`'s\n"
        "dtype, as torch.can_cast says (never down from complex to float, float to integer, or to bool);\n"
        "the output takes the promoted dtype when none is given."
    )
    kind_doc = "castable: the inputs' (promoted) dtype can be cast to the output's."
    fields = (
        Field("inputs", "param list", "The input tensors whose dtype (promoted together) is cast.", min_items=1),
        Field("output", "param", "The tensor the dtype is cast to."),
    )
    example = {"inputs": ["a"], "output": "b"}
    cases = ("mixed-dtype",)
    # an output's usage note: its dtype is one the promoted dtype casts to (else: promote)
    note_pattern = r"可转换|转换关系|cast to|castable|can be cast"

    def sentence(self, rule):
        return f"the dtype of {', '.join(rule.inputs)} (promoted) can be cast to {rule.output}'s dtype"

    def checker(self, rule):
        inputs, output, status = tuple(rule["inputs"]), rule["output"], rule["status"]

        def run(info):
            present = [(n, info[n][1]) for n in inputs if n in info]
            out = info.get(output)
            if not present or out is None:
                return None
            source = promote_names(d for _, d in present)
            if source is None:
                return no_common_dtype(status, present, f"cast to {output}")
            if source in CATEGORY and out[1] in CATEGORY and not can_cast(source, out[1]):
                return Violation(
                    status,
                    output,
                    f"{output} has dtype {out[1]}, which {described(present)} (dtype {source}) cannot be cast to",
                    found=out[1],
                    allowed=f"a dtype {source} can be cast to",
                )
            return None

        return first_violation(rule, run)

    def output_dtype(self, rule, name, known, strict):
        return promoted_output(rule, name, known, strict)

    def provoke(self, rules, param, shape, dtype):
        # an output dtype no other dtype can be cast to but bool itself
        return Provocation(dtype="bool" if dtype != "bool" else "float32")


KIND = Castable()
