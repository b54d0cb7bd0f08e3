"""Dtype combinations per parameter: which dtype each tensor of a test case takes.

Each tensor has its own dtype list (per family). A case asks for one dtype; a tensor whose list
lacks it takes its own dtype instead (`combination`), so an op whose forward input accepts int8
while its gradient accepts only floats gets a float gradient beside the int8 input, never an int8
gradient. Beyond those, the dtype rules (promote, castable, dtype_pairs, ...) accept mixed
combinations; `mixed_combinations` picks a few representative ones per rule: a dtype of one
tensor's own list beside the others' (an integer or bool forward input beside a float gradient),
two inputs of different dtypes the rule accepts, an output of another dtype the inputs cast to.

Whether a combination is accepted is decided here as the validator decides it (the dtype tables,
promotion, then every dtype rule's check), over dtype names only, so the planner needs no arrays.
Plain Python over META, like the rest of core.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .dtypes import CATEGORY, promote_names
from .kinds import kind_of
from .meta import op_meta
from .rules import MetaCache, infer_output_names, status_of, supported_dtypes, supported_families, version_key
from .scalar_values import condition_holds, scalar_values

__all__ = ["Combination", "combination", "combination_status", "mixed_combinations", "resolved", "tensor_lists"]

# the representative mixed combinations planned per rule (the full cross product is not)
PER_RULE = 2
_SHAPE = (2, 3, 4)  # any shape: dtype checks do not read it
_PREFERRED = "float32"  # what a tensor lacking the requested dtype takes first


@dataclass(frozen=True)
class Combination:
    """The dtype of every input, and of the outputs the combination sets apart from the inferred
    one (empty: each output as the family's rules infer it)."""

    inputs: Mapping[str, str]
    outputs: Mapping[str, str] = field(default_factory=dict)

    def key(self) -> tuple:
        return tuple(sorted(self.inputs.items())), tuple(sorted(self.outputs.items()))

    def uniform(self) -> bool:
        return not self.outputs and len(set(self.inputs.values())) == 1

    def label(self) -> str:
        """The dtypes as a test id: each input's in order, then `to-<dtype>` for each set output."""
        parts = list(self.inputs.values()) + [f"to-{d}" for d in self.outputs.values()]
        return "-".join(parts)


def tensor_lists(meta: Mapping, version: str, family: str | None) -> dict[str, tuple[str, ...]]:
    """Each tensor's dtypes on `family` (None: on any family the op supports, in family order)."""
    return dict(_TENSOR_LISTS.get(meta, version_key(version), family))


def _tensor_lists(meta: Mapping, version: str, family: str | None) -> dict[str, tuple[str, ...]]:
    families = [family] if family is not None else list(supported_families(meta, version))
    lists: dict[str, tuple[str, ...]] = {}
    for p in op_meta(meta).tensors:
        found: list[str] = []
        for f in families:
            found += [d for d in supported_dtypes(meta, p.name, f, version) if d not in found]
        lists[p.name] = tuple(found)
    return lists


# planning asks for the same lists and rules once per candidate combination: derived once each
_TENSOR_LISTS = MetaCache(_tensor_lists)


def _dtype_rules(meta: Mapping, version: str, family: str) -> tuple[Mapping, ...]:
    """The dtype rules that hold on `family` at `version`, a conditional one when its `when` holds
    for the scalar and attribute values the planned cases set."""
    return _DTYPE_RULES.get(meta, version, family)


def _holding_dtype_rules(meta: Mapping, version: str, family: str) -> tuple[Mapping, ...]:
    values = scalar_values(meta)
    return tuple(
        r.data
        for r in op_meta(meta).rules_at(version, family)
        if r.kind.relation == "dtype" and (not r.when or condition_holds(r, values))
    )


_DTYPE_RULES = MetaCache(_holding_dtype_rules)


def resolved(meta: Mapping, combo: Combination, version: str, family: str) -> dict[str, str]:
    """The dtype of every tensor: the combination's, each other output's as `family`'s rules infer it."""
    inputs = dict(combo.inputs)
    shapes = dict.fromkeys(inputs, _SHAPE)
    dtypes = dict(inputs)
    for name, (_, dtype) in infer_output_names(meta, shapes, inputs, version, family=family).items():
        dtypes[name] = dtype
    dtypes.update(combo.outputs)
    return dtypes


def combination_status(meta: Mapping, combo: Combination, family: str, version: str) -> int:
    """The status validation gives tensors of these dtypes on `family` (0: accepted): the op's
    support, each tensor's list (for the inputs of a promoting rule, their promoted dtype), then
    each dtype rule's check, as runtime/validation.py orders them. Worked out once per META,
    release, family and combination (planning asks for the same ones again and again)."""
    # keyed in the combination's order: the first input's dtype is the outputs' default
    return _STATUSES.get(meta, version_key(version), family, tuple(combo.inputs.items()), tuple(combo.outputs.items()))


def _combination_status(meta: Mapping, version: str, family: str, inputs: tuple, outputs: tuple) -> int:
    combo = Combination(dict(inputs), dict(outputs))
    if family not in supported_families(meta, version):
        return 161002
    dtypes = resolved(meta, combo, version, family)
    lists = tensor_lists(meta, version, family)
    dtype_status = status_of(meta, "dtype", version, 161002)
    rules = _dtype_rules(meta, version, family)
    promoted_inputs = set()
    for rule in rules:
        if kind_of(rule).promotes_inputs:
            present = [dtypes[n] for n in rule["inputs"] if n in dtypes]
            promoted = promote_names(present)
            if promoted is None:
                return rule["status"]
            if any(promoted not in lists.get(n, ()) for n in rule["inputs"]):
                return dtype_status
            promoted_inputs.update(rule["inputs"])
    for name, dtype in dtypes.items():
        if name not in promoted_inputs and dtype not in lists.get(name, ()):
            return dtype_status
    info = {name: (_SHAPE, dtype, None) for name, dtype in dtypes.items()}
    for rule in rules:
        check = kind_of(rule).checker(rule)
        violation = check(info, lambda _name: True) if check is not None else None
        if violation is not None:
            return violation.status
    return 0


_STATUSES = MetaCache(_combination_status, maxsize=4096)


def _candidates(name: str, used: list[str], lists: Mapping[str, tuple[str, ...]]) -> list[str]:
    """The dtypes tensor `name` tries, in order, when it cannot take the requested one."""
    own = lists.get(name, ())
    order = [_PREFERRED] + used + list(own)
    return [d for i, d in enumerate(order) if d in own and d not in order[:i]]


def _complete(meta: Mapping, fixed: Mapping[str, str], version: str, family: str) -> Combination | None:
    """`fixed` (some inputs' dtypes) with every other input given a dtype of its own list, so the
    whole is accepted on `family`; None when no such choice is found."""
    op = op_meta(meta)
    lists = tensor_lists(meta, version, family)
    inputs = [p.name for p in op.by_role("input")]
    chosen = {n: fixed[n] for n in inputs if n in fixed}
    for name in inputs:
        if name in chosen:
            continue
        options = _candidates(name, list(dict.fromkeys(chosen.values())), lists)
        # the tensors present so far must be accepted together (absent ones are not checked)
        pick = next(
            (d for d in options if combination_status(meta, Combination({**chosen, name: d}), family, version) == 0),
            options[0] if options else None,
        )
        if pick is None:
            return None
        chosen[name] = pick
    combo = Combination({n: chosen[n] for n in inputs})
    return combo if combination_status(meta, combo, family, version) == 0 else None


def combination(meta: Mapping, dtype: str, version: str, family: str | None = None) -> dict[str, str]:
    """The dtype of every input for a case that asks for `dtype`: `dtype` for each input whose
    list (on `family`, None: on any family) has it, else a dtype of the input's own list
    (float32 first, then one the others already take, then its list's order; on a `family`, the
    first such choice its rules accept)."""
    version = version_key(version)
    lists = tensor_lists(meta, version, family)
    inputs = [p.name for p in op_meta(meta).by_role("input")]
    chosen: dict[str, str] = {}
    for name in inputs:
        if dtype in lists.get(name, ()) or not lists.get(name):
            chosen[name] = dtype
    fixed = dict(chosen)
    for name in inputs:
        if name not in chosen:
            options = _candidates(name, list(dict.fromkeys(chosen.values())), lists)
            chosen[name] = options[0] if options else dtype
    combo = {n: chosen[n] for n in inputs}
    if family is not None and len(fixed) < len(inputs) and inputs:
        # the first choices may break a dtype rule (a float32 gamma beside a float16 x where the
        # two share a dtype): the others then take dtypes of their lists the family accepts,
        # beside the inputs that take `dtype`, else beside the first input's choice
        if combination_status(meta, Combination(combo), family, version) != 0:
            for keep in (fixed, {inputs[0]: combo[inputs[0]]}):
                accepted = _complete(meta, keep, version, family)
                if accepted is not None:
                    return dict(accepted.inputs)
    return combo


def _interest(meta: Mapping, pair: tuple[str, str]) -> int:
    """How much a mixed pair tells (lower first): dtypes of different categories (an integer or
    bool beside a float), then a pair whose promotion is neither (float16 with bfloat16), then
    the rest."""
    a, b = pair
    if CATEGORY.get(a) != CATEGORY.get(b):
        return 0
    promoted = promote_names([a, b])
    return 1 if promoted not in (a, b) else 2


def mixed_combinations(meta: Mapping, version: str, family: str) -> list[Combination]:
    """Representative mixed combinations accepted on `family`: each dtype one input's own list
    holds and another input's lacks, beside the others' dtypes; for each dtype rule, up to
    PER_RULE pairs of its inputs in different dtypes and up to PER_RULE outputs in a dtype
    narrower than the inferred one. Each is accepted (combination_status 0); none is uniform."""
    version = version_key(version)
    op = op_meta(meta)
    inputs = [p.name for p in op.by_role("input")]
    outputs = list(op.outputs)
    lists = tensor_lists(meta, version, family)
    found: dict[tuple, Combination] = {}

    def keep(combo: Combination | None) -> bool:
        """Plan `combo` once; whether it is an accepted mixed combination (planned now or before)."""
        if combo is None or combo.uniform():
            return False
        if combo.key() not in found:
            if combination_status(meta, combo, family, version) != 0:
                return False
            found[combo.key()] = combo
        return True

    # a dtype of one input's own list beside the others' (an int8 forward input, float gradients)
    for name in inputs:
        others = [lists.get(n, ()) for n in inputs if n != name]
        for dtype in lists.get(name, ()):
            if others and not all(dtype in other for other in others):
                keep(_complete(meta, {name: dtype}, version, family))
    # the first two inputs in two dtypes, as any rule or none lets them mix, then each rule's own
    sources = [(inputs[:2], [])] + [
        ([n for n in kind_of(rule).names(rule) if n in inputs], [n for n in kind_of(rule).names(rule) if n in outputs])
        for rule in _dtype_rules(meta, version, family)
    ]
    for named, named_outputs in sources:
        base = _complete(meta, {}, version, family)  # the inputs an output variant is cast from
        if len(named) >= 2:
            a, b = named[0], named[1]
            pairs = [(x, y) for x in lists.get(a, ()) for y in lists.get(b, ()) if x != y]
            # one order of each pair; the most telling first
            pairs = [pair for i, pair in enumerate(pairs) if pair[::-1] not in pairs[:i]]
            pairs.sort(key=lambda pair: _interest(meta, pair))
            kept = 0
            for x, y in pairs:
                if kept == PER_RULE:
                    break
                combo = _complete(meta, {a: x, b: y}, version, family)
                if keep(combo):
                    kept += 1
                    base = base if kept > 1 else combo  # promoted, then cast to the output
        for out in named_outputs:
            if base is None:
                continue
            inferred = resolved(meta, base, version, family).get(out)
            kept = 0
            for dtype in lists.get(out, ()):
                if kept == PER_RULE:
                    break
                # a narrower output only: the library computes at the inputs' promoted dtype and
                # casts; the reference computes at the widest dtype stored, a wider output included
                if dtype != inferred and promote_names([inferred, dtype]) != dtype:
                    kept += keep(Combination(dict(base.inputs), {out: dtype}))
    return list(found.values())
