"""max_rank: the listed tensors have at most `rank` dims."""

from __future__ import annotations

from .base import Field, Provocation, RuleKind, Violation, fmt
from ._params_rule import each_checker


class MaxRank(RuleKind):
    relation = "rank"
    name = "max_rank"
    model = "MaxRank"
    kind_doc = "max_rank: the tensors have at most `rank` dimensions."
    fields = (
        Field("params", "param list", "The tensors the bound applies to.", min_items=1),
        Field("rank", "int", "The largest number of dimensions accepted.", minimum=0),
    )
    example = {"params": ["a"], "rank": 8}
    cases = ("rank8", "rank9")
    accepted_change = {"rank9": "drop"}
    row_phrases = ("维度大于", "维度超过", "more than 8", "dims")
    row_precedence = 1
    row_condition = "{} has more dims than allowed."

    def sentence(self, rule):
        return f"{', '.join(rule.params)} have at most {rule.rank} dims"

    def checker(self, rule):
        rank, status = rule["rank"], rule["status"]
        return each_checker(
            rule,
            lambda name, entry, contiguous: len(entry[0]) > rank,
            lambda name, shape: Violation(
                status,
                name,
                f"{name} has {len(shape)} dims (shape {fmt(shape)}); at most {rank} are allowed",
                found=shape,
                allowed=f"at most {rank} dims",
            ),
        )

    def breaks(self, rule, shapes, layout):
        return any(len(shapes.get(n, ())) > rule["rank"] for n in rule["params"])

    def provoke(self, rules, param, shape, dtype):
        return Provocation(shape=(1,) * 9)


KIND = MaxRank()
