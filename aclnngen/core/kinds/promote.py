"""promote: the inputs' dtypes promote together; the output has the promoted dtype."""

from __future__ import annotations

from ..dtypes import promote_names
from .base import Field, Provocation, RuleKind, Violation, first_violation, rule_when
from ._promotion import described, no_common_dtype, promoted_output


class Promote(RuleKind):
    relation = "dtype"
    name = "promote"
    model = "Promote"
    doc = (
        "The inputs' dtypes promote together; the promoted dtype is checked against the support table\n"
        "and the output has it."
    )
    kind_doc = "promote: the output dtype is the promotion of the inputs' dtypes."
    fields = (
        Field("inputs", "param list", "The input tensors whose dtypes are promoted.", min_items=2),
        Field("output", "param", "The tensor that has the promoted dtype."),
    )
    example = {"inputs": ["a", "b"], "output": "c"}
    conditional = False
    promotes_inputs = True
    cases = ("mixed-dtype",)
    row_phrases = ("推导", "promot")
    row_precedence = 2
    row_condition = "{} do not promote to a supported dtype."
    note_pattern = r"推导|promot"  # an input's usage note: its dtype promotes with the others'

    def spec_problems(self, rule):
        if rule_when(rule):
            return [
                (
                    ("when",),
                    "a promote rule decides the output's dtype and cannot be conditional; "
                    "state the condition on the dtypes instead",
                )
            ]
        return []

    def sentence(self, rule):
        return f"the dtypes of {', '.join(rule.inputs)} promote; {rule.output} has the promoted dtype"

    def promotion(self, rule, info) -> tuple[str | None, Violation | None]:
        """The inputs' promoted dtype, and the violation of the rule it shows (None: none)."""
        inputs, output, status = rule["inputs"], rule["output"], rule["status"]
        present = [(n, info[n][1]) for n in inputs if n in info]
        if not present:
            return None, None
        promoted = promote_names(d for _, d in present)
        if promoted is None:
            return None, no_common_dtype(status, present)
        out = info.get(output)
        if out is not None and out[1] != promoted:
            return promoted, Violation(
                status,
                output,
                f"{output} has dtype {out[1]}; it must have the promoted dtype {promoted} of {described(present)}",
                found=out[1],
                allowed=promoted,
            )
        return promoted, None

    def checker(self, rule):
        return first_violation(rule, lambda info: self.promotion(rule, info)[1])

    def output_dtype(self, rule, name, known, strict):
        return promoted_output(rule, name, known, strict)

    def provoke(self, rules, param, shape, dtype):
        # the promoted dtype leaves the list too: the widest unsupported float or complex one
        return Provocation(unsupported_dtype=True)


KIND = Promote()
