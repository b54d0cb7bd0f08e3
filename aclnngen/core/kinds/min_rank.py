"""min_rank: the listed tensors have at least `rank` dims."""

from __future__ import annotations

from .base import Field, Provocation, RuleKind, Violation, fmt
from ._params_rule import each_checker


class MinRank(RuleKind):
    relation = "rank"
    name = "min_rank"
    model = "MinRank"
    doc = "Each listed tensor has at least `rank` dims."
    kind_doc = "min_rank: each listed tensor has at least `rank` dims."
    fields = (
        Field("params", "param list", "The tensors the rule is about.", min_items=1),
        Field("rank", "int", "The smallest rank allowed.", minimum=1),
    )
    example = {"params": ["a"], "rank": 1}
    cases = ("rank0",)
    accepted_change = {"rank0": "drop"}

    def sentence(self, rule):
        return f"{', '.join(rule.params)} have at least {rule.rank} dims"

    def checker(self, rule):
        rank, status = rule["rank"], rule["status"]
        return each_checker(
            rule,
            lambda name, entry, contiguous: len(entry[0]) < rank,
            lambda name, shape: Violation(
                status,
                name,
                f"{name} has {len(shape)} dims (shape {fmt(shape)}); at least {rank} are required",
                found=shape,
                allowed=f"at least {rank} dims",
            ),
        )

    def breaks(self, rule, shapes, layout):
        return any(n in shapes and len(shapes[n]) < rule["rank"] for n in rule["params"])

    def provoke(self, rules, param, shape, dtype):
        rank = min(r["rank"] for r in rules if param in r["params"])
        return Provocation(shape=(1,) * (rank - 1))


KIND = MinRank()
