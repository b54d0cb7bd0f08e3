"""dtype_pairs: two tensors have one dtype, or one of the listed mixed (first, second) pairs.

A page that accepts, say, a float16 gradient with a float32 input states it as a table of
allowed combinations; a same_dtype rule would refuse them, and promote would accept too many.
"""

from __future__ import annotations

from .base import Field, Provocation, RuleKind, Violation, first_violation, value

# the dtypes a generated test tries, in order, to make a pair the rule refuses
_CANDIDATES = ("float16", "bfloat16", "float32", "float64", "int32")


def _pairs(rule) -> list[tuple[str, str]]:
    return [tuple(p) for p in value(rule, "pairs") or ()]


def _listed_pairs(rule) -> str:
    return ", ".join(f"({a}, {b})" for a, b in _pairs(rule))


class DTypePairs(RuleKind):
    relation = "dtype"
    name = "dtype_pairs"
    model = "DTypePairs"
    doc = (
        "`params` (two tensors) have the same dtype, or their dtypes are one of `pairs`\n"
        "(the first tensor's dtype, the second's): the mixed combinations the page allows."
    )
    kind_doc = "dtype_pairs: two tensors have one dtype, or one of the listed mixed pairs."
    fields = (
        Field("params", "param list", "The two tensors (C names), in the order of each pair.", min_items=2),
        Field("pairs", "dtype pair list", "The mixed (first, second) dtype combinations accepted.", min_items=1),
    )
    example = {"params": ["a", "b"], "pairs": [["float16", "float32"]]}
    cases = ("mixed-dtype",)
    row_phrases = ("数据类型组合", "dtype combination")
    row_precedence = 1  # before the plain dtype and same_dtype phrases it contains
    row_condition = "{} are not one of the dtype combinations allowed."

    def spec_problems(self, rule):
        problems = super().spec_problems(rule)
        if len(rule.params) != 2:
            problems.append((("params",), f"a dtype_pairs rule names two tensors, found {len(rule.params)}"))
        seen = set()
        for i, (first, second) in enumerate(_pairs(rule)):
            if first == second:
                problems.append((("pairs", i), f"({first}, {second}) is not mixed: equal dtypes are always accepted"))
            elif (first, second) in seen:
                problems.append((("pairs", i), f"({first}, {second}) is listed twice"))
            seen.add((first, second))
        return problems

    def sentence(self, rule):
        first, second = rule.params
        return f"{first} and {second} have the same dtype or one of the pairs {_listed_pairs(rule)}"

    def accepts(self, rule, first: str, second: str) -> bool:
        return first == second or (first, second) in _pairs(rule)

    def checker(self, rule):
        (first, second), status = rule["params"], rule["status"]

        def run(info):
            a, b = info.get(first), info.get(second)
            if a is None or b is None or self.accepts(rule, a[1], b[1]):
                return None
            return Violation(
                status,
                second,
                f"{first} has dtype {a[1]} and {second} has dtype {b[1]}; they must have the same dtype "
                f"or one of the pairs {_listed_pairs(rule)}",
                found=(a[1], b[1]),
                allowed=tuple(_pairs(rule)),
            )

        return first_violation(rule, run)

    def dtypes_break(self, rule, dtypes, changed):
        first, second = rule["params"]
        if changed not in (first, second) or first not in dtypes or second not in dtypes:
            return False
        return not self.accepts(rule, dtypes[first], dtypes[second])

    def provoke(self, rules, param, shape, dtype):
        # the other tensor keeps `dtype`: pick one for param that makes a refused pair
        for rule in rules:
            if param in rule["params"]:
                for candidate in _CANDIDATES:
                    pair = (candidate, dtype) if rule["params"][0] == param else (dtype, candidate)
                    if not self.accepts(rule, *pair):
                        return Provocation(dtype=candidate)
        raise ValueError(f"every dtype pairs {param} acceptably: no dtype_pairs rule can be broken on it")


KIND = DTypePairs()
