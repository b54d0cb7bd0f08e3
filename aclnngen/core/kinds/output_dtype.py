"""output_dtype: an output's dtype as a function of one input's, or one fixed dtype.

Many pages list fewer dtypes for an output than for the input it is computed from: a math op takes
integers and writes floats (acos of int8 gives float32), a comparison writes bool, an index op
writes int64. Without this rule the output would take its input's dtype, which its own list leaves
out. `map` lists the (input dtype, output dtype) pairs where the two differ, any other input dtype
keeps its own; `dtype` fixes the output's dtype whatever the inputs are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..dtypes import category
from .base import Field, Provocation, RuleKind, Violation, first_violation, value

# the dtypes a generated test tries, in order, to give the output a dtype the rule refuses
_CANDIDATES = ("float16", "float32", "int32", "bool")


def _either(names: list[str]) -> str:
    """`a`, `a or b`, `a, b or c`."""
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def _map(rule) -> dict[str, str]:
    return {source: target for source, target in value(rule, "map") or ()}


def expected(rule, source: str | None) -> str | None:
    """The dtype the rule gives its output when its input has dtype `source` (None: unknown)."""
    fixed = value(rule, "dtype")
    if fixed is not None:
        return fixed
    if source is None:
        return None
    return _map(rule).get(source, source)


class OutputDType(RuleKind):
    relation = "dtype"
    name = "output_dtype"
    model = "OutputDType"
    doc = (
        "`output`'s dtype follows `input`'s by `map` (the (input dtype, output dtype) pairs where they\n"
        "differ; any other input dtype is the output's too), or is `dtype` whatever the inputs are:\n"
        "the page lists dtypes for the output that its input's list does not give it."
    )
    kind_doc = "output_dtype: an output's dtype, mapped from an input's or fixed."
    fields = (
        Field("output", "param", "The output tensor whose dtype the rule states.", role="output"),
        Field("input", "optional param", "The input tensor the output's dtype follows (with `map`).", role="input"),
        Field(
            "map",
            "optional dtype pair list",
            "The (input dtype, output dtype) pairs where the output's dtype differs from the input's.",
            min_items=1,
        ),
        Field("dtype", "optional dtype", "The output's one dtype, whatever the inputs' (instead of `input`, `map`)."),
    )
    example = {"output": "c", "input": "a", "map": [["int8", "float32"], ["int32", "float32"]]}
    cases = ("output-dtype",)
    accepted_change = {"output-dtype": "drop"}

    def spec_problems(self, rule):
        problems = super().spec_problems(rule)
        fixed, pairs, source = value(rule, "dtype"), value(rule, "map"), value(rule, "input")
        if (fixed is None) == (pairs is None):
            problems.append(((), "an output_dtype rule gives either `map` (with `input`) or `dtype`, not both"))
        elif fixed is not None and source is not None:
            problems.append((("input",), "a fixed `dtype` follows no input: leave `input` out"))
        elif pairs is not None and source is None:
            problems.append(((), "an output_dtype rule with `map` needs `input`, the tensor the map reads"))
        if source is not None and source == value(rule, "output"):
            problems.append((("input",), f"{source!r} is the output itself"))
        seen: set[str] = set()
        for i, (first, second) in enumerate(pairs or ()):
            if first == second:
                problems.append((("map", i), f"({first}, {second}) maps a dtype to itself, what an unlisted one does"))
            elif first in seen:
                problems.append((("map", i), f"input dtype {first} is mapped twice"))
            seen.add(first)
        return problems

    def sentence(self, rule):
        output, fixed = rule.output, value(rule, "dtype")
        if fixed is not None:
            return f"{output} has dtype {fixed} whatever the inputs' dtypes"
        by_target: dict[str, list[str]] = {}
        for source, target in _map(rule).items():
            by_target.setdefault(target, []).append(source)
        mapped = "; ".join(
            f"{target} where {rule.input} is {_either(sources)}" for target, sources in by_target.items()
        )
        return f"{output} has the dtype of {rule.input}, except {mapped}"

    def checker(self, rule):
        output, source, status = rule["output"], rule.get("input"), rule["status"]

        def run(info):
            out = info.get(output)
            given = info.get(source) if source is not None else None
            want = expected(rule, given[1] if given is not None else None)
            if out is None or want is None or out[1] == want:
                return None
            why = f"for {source} of dtype {given[1]}" if given is not None else "whatever the inputs"
            return Violation(
                status,
                output,
                f"{output} has dtype {out[1]}; it must have dtype {want} {why}",
                found=out[1],
                allowed=want,
            )

        return first_violation(rule, run)

    def output_dtype(self, rule, name, known, strict):
        if rule["output"] != name:
            return None
        return expected(rule, known.get(rule.get("input")) if rule.get("input") else None)

    def dtype_fixed(self, rule):
        return (rule["output"],)

    def dtypes_break(self, rule, dtypes, changed):
        source = rule.get("input")
        want = expected(rule, dtypes.get(source) if source else None)
        return want is not None and rule["output"] in dtypes and dtypes[rule["output"]] != want

    def provoke(self, rules, param, shape, dtype):
        # `dtype` is the one the rule gives the output: any other breaks it
        return Provocation(dtype=next(c for c in _CANDIDATES if c != dtype))

    def drafts(self, params: list[Mapping[str, Any]], related: Mapping[str, list[set[str]]]) -> list[dict[str, Any]]:
        """The importer's hint: for each output whose dtype list leaves out dtypes its first input
        takes, a rule giving it the one dtype it lists (int64 for an integer-only list beside a
        float input: indices), or mapping the left-out dtypes (`_target`), where every family
        that lists both says the same."""
        inputs = [p for p in params if p.get("role") == "input" and _lists(p)]
        if not inputs:
            return []
        source = inputs[0]
        found = []
        for out in (p for p in params if p.get("role") == "output" and _lists(p)):
            names = {out["name"]} | {p["name"] for p in params if p.get("role") == "input"}
            if any(out["name"] in group and len(group & names) > 1 for group in related.get(self.relation, ())):
                continue  # the page already relates the output's dtype to an input's (same_dtype, promote)
            rule = _drafted(source, out)
            if rule is not None:
                found.append(rule)
        return found


def _lists(param: Mapping[str, Any]) -> dict[str | None, list[str]]:
    """A drafted parameter's dtype lists by family (None: one list for every family)."""
    dtypes = param.get("dtypes")
    if not isinstance(dtypes, list) or not dtypes:
        return {}
    if all(isinstance(d, str) for d in dtypes):
        return {None: list(dtypes)}
    found: dict[str | None, list[str]] = {}
    for group in dtypes:
        if isinstance(group, Mapping) and isinstance(group.get("dtypes"), list):
            for family in group.get("families") or ():
                found[family] = list(group["dtypes"])
    return found


def _target(own: list[str], missing: list[str]) -> tuple[str, list[str]]:
    """The dtype an output of list `own` takes for the input dtypes it leaves out, and which of
    those it is said for: integers and bool written as float32 (or the first float listed) by a
    math op; anything written as bool by a logical one (a list of bool and uint8)."""
    floats = [d for d in own if category(d) == "float"]
    if floats:
        return ("float32" if "float32" in floats else floats[0]), [
            d for d in missing if category(d) in ("integer", "bool")
        ]
    if "bool" in own and all(category(d) in ("bool", "integer") for d in own):
        return "bool", list(missing)
    return "", []


def _drafted(source: Mapping[str, Any], out: Mapping[str, Any]) -> dict[str, Any] | None:
    ins, outs = _lists(source), _lists(out)
    shared = None in ins and None in outs  # one list each for every family
    if None in ins:
        ins = {f: ins[None] for f in outs}
    if None in outs:
        outs = {f: outs[None] for f in ins}
    fixed: set[str] = set()
    pairs: dict[str, str] = {}
    families: list[str | None] = []  # those whose output list leaves out some input dtypes
    for family, own in outs.items():
        missing = [d for d in ins.get(family, ()) if d not in own]
        if not missing:
            continue
        kinds = {category(d) for d in own}
        indices = [d for d in ("int64", "int32") if d in own]  # an integer-only list beside floats
        if len(own) == 1 or (kinds == {"integer"} and indices and any(category(d) == "float" for d in missing)):
            fixed.add(own[0] if len(own) == 1 else indices[0])
            families.append(family)
            continue
        target, mapped = _target(own, missing)
        if not mapped:
            continue  # a float dropped for another float: no telling what the output takes
        for d in mapped:
            if pairs.setdefault(d, target) != target:
                return None  # the families disagree
        families.append(family)
    if (fixed and pairs) or len(fixed) > 1:
        return None  # the families disagree
    if fixed:
        rule = {"kind": OutputDType.name, "output": out["name"], "dtype": fixed.pop()}
    elif pairs:
        rule = {
            "kind": OutputDType.name,
            "output": out["name"],
            "input": source["name"],
            "map": [list(p) for p in pairs.items()],
        }
    else:
        return None
    if not shared and len(families) < len(outs):
        rule["families"] = families  # elsewhere the output's list takes the input's dtypes
    return rule


KIND = OutputDType()
