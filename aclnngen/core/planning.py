"""Test-case planning: which cases an op's META gives, with the shapes, layout and status of each,
as plain data. `verify.cases.make_values` builds the NumPy arrays of a plan.

Case kinds (`SHAPE_CASES`); `applicable_cases(meta, version)` lists those that apply to an op with
the status the op's rules at `version` give them (0 = accepted):

- "contiguous": every input of the base shape (2, 3, 4) (a per-channel weight: (C,), C = 3),
  with the dims the rank rules want where they want others (`_fitted_inputs`: leading 2s added
  for a min_rank, leading dims dropped for a max_rank below 3). Always applies.
- "broadcast": one input has shape (3, 1), broadcasting to the base shape. Applies when a
  `broadcast` or `broadcast_to` rule lets some input differ in shape (an input in no `same_shape`
  rule, not a `broadcast_to` target, not in a `per_channel` rule).
- "broadcast-rejected": input shapes the op does not accept. With a `broadcast` rule: an input of
  shape (2, 5, 4), which does not broadcast; else with a `broadcast_to` rule: the param of shape
  (2, 2, 3, 4), which broadcasts with the target but not to it; else with a `same_shape` rule
  over two inputs: an input of shape (3, 1), which broadcasts but is not the same shape.
- "shape-mismatch": an output of the wrong shape (the inferred shape with its last dim + 1), for
  an output a `same_shape` or `broadcast` rule names; failing that, an input of a `same_shape`
  rule with shape (2, 3, 5).
- "rank0", "rank8", "rank9": every non-weight tensor 0-d, 8-d, 9-d (small sizes, C = 3; rank0
  makes the per-channel weight 0-d too). Always apply; rejected by a `max_rank` rule below, or a
  `min_rank` rule above.
- "empty": the base shape with dim 0 of size 0, (0, 3, 4), fitted to the rank rules like the
  base shape. Always applies; rejected by an
  `empty` rule with `allowed: false`.
- "non-contiguous": every tensor a strided view (every other element of a larger buffer whose
  gaps hold junk, or a transposed buffer). Always applies; rejected by a `non_contiguous` rule
  with `allowed: false`.
- "offset": every tensor a contiguous view starting 3 elements into a larger buffer. Always
  applies, accepted unless another rule objects.
- "per-channel-single", "per-channel-rejected", "grad-shape-rejected": with a `per_channel` rule:
  a weight of 1 element; a weight of C + 1 elements; a weight gradient of shape (1, C) instead of
  (C,) (only when the rule names a `grad`).
- "mixed-dtype": two inputs of different dtypes (the requested dtype and float32, or float16 when
  the requested dtype is float32). Applies with two or more input tensors; the mixed one is one
  with a second dtype in its own list where there is one (`_mixed_input`); accepted with a `promote` rule over them (the
  output takes the promoted dtype) and without any dtype rule, rejected by a `same_dtype` rule
  (even beside a `promote` rule). Where the mixed input's own list lacks the second dtype, it
  takes the first of its list that differs (`OpAt.second_dtype`).
- "output-dtype": an output of another dtype of its own list than the one inferred, for an output
  a rule fixes the dtype of (`RuleKind.dtype_fixed`: `output_dtype`); rejected by the rules that
  dtype breaks (`RuleKind.dtypes_break`).

The rules' expectations assume each input takes the requested dtype where its own list has it and
a dtype of its list otherwise (`OpAt.dtypes_for`, core/dtype_combinations.py); the mixed dtype
combinations the reference is compared on are planned there too.

The expected status is that of the first rule (in spec order) the case breaks, counting both the
rule the case aims at and the max_rank / empty / non_contiguous rules its shapes and layout meet.
It assumes the requested dtype is supported on the family; pass `family` and `dtype` to
`applicable_cases` to account for the dtype tables too.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from .attribute_types import POINTER_C_TYPES
from .dtypes import ALL_DTYPES, promote_names
from .formats import ND, RANKS as FORMAT_RANKS
from .kinds import KINDS, RuleKind, kind_of
from .meta import op_meta
from .kinds.broadcast import KIND as BROADCAST
from .kinds.broadcast_to import KIND as BROADCAST_TO
from .kinds.max_rank import KIND as MAX_RANK
from .kinds.min_rank import KIND as MIN_RANK
from .kinds.per_channel import KIND as PER_CHANNEL
from .kinds.same_shape import KIND as SAME_SHAPE
from .dtype_combinations import Combination, combination, combination_status, tensor_lists
from .scalar_values import condition_holds, satisfy_constraints, scalar_values
from .releases import CannVersion
from .rules import (
    MetaCache,
    channels,
    infer_output_names,
    status_of,
    supported_dtypes,
    supported_families,
    version_key,
)

__all__ = [
    "SHAPE_CASES",
    "applicable_cases",
    "case_formats",
    "case_plan",
    "case_shapes",
    "op_at",
    "null_cases",
    "scalar_violations",
    "conditional_violations",
    "condition_holds",
    "satisfy_constraints",
    "dtype_cases",
    "scalar_values",
]

SHAPE_CASES: tuple[str, ...] = (
    "contiguous",
    "broadcast",
    "broadcast-rejected",
    "shape-mismatch",
    "rank0",
    "rank8",
    "rank9",
    "empty",
    "non-contiguous",
    "offset",
    "per-channel-single",
    "per-channel-rejected",
    "grad-shape-rejected",
    "mixed-dtype",
    "output-dtype",
)

BASE_SHAPE = (2, 3, 4)
BROADCAST_SHAPE = (3, 1)  # broadcasts to BASE_SHAPE
UNBROADCASTABLE_SHAPE = (2, 5, 4)  # does not broadcast with BASE_SHAPE
MISMATCH_SHAPE = (2, 3, 5)
EMPTY_SHAPE = (0, 3, 4)
RANK8_SHAPE = (2, 3, 1, 2, 1, 2, 1, 2)
RANK9_SHAPE = (2, 3, 1, 2, 1, 1, 2, 1, 2)

# the kinds whose rules take their inputs' promoted dtype (a mixed pair is accepted by them)
PROMOTING = tuple(k for k in KINDS if k.promotes_inputs)

_OTHER = "<other dtype>"  # marks the input that takes the second dtype in "mixed-dtype"


def other_dtype(dtype: str) -> str:
    """The second dtype of a "mixed-dtype" case."""
    return "float16" if dtype == "float32" else "float32"


# --- what the META says at one version ----------------------------------------------------------


class OpAt:
    """The op's tensors and the rules that hold at one version, indexed for the case builders."""

    def __init__(self, meta: Mapping, version: str, family: str | None = None):
        self.meta = meta
        self.version = version
        self.family = family
        typed = op_meta(meta)
        self.inputs = [p.name for p in typed.by_role("input")]
        self.outputs = list(typed.outputs)
        self.tensors = [p.name for p in typed.tensors]
        # (META index, rule as data) for the rules that hold at `version`; statuses by index
        held = [
            (i, r)
            for i, r in enumerate(typed.rules)
            if r.holds_at(version)
            and r.holds_on(family)
            and (not r.when or condition_holds(r, scalar_values(meta)))  # as the cases set them
        ]
        self.rules = [(i, r.data) for i, r in held]
        self._kinds = [(i, r.data, r.kind) for i, r in held]  # each rule's kind, looked up once
        self.status = {i: r.status for i, r in held}
        self.per_channel = [r for _, r in self.of_kind(PER_CHANNEL)]
        self.weights = {r["weight"] for r in self.per_channel}
        self.sources = {r["input"] for r in self.per_channel}
        self._lists: dict[str, tuple[str, ...]] | None = None
        # what every case plan of the op asks again (one OpAt plans all of an applicable_cases)
        self._bounds: dict[str, tuple[int, int | None]] | None = None
        self._fitted: dict[tuple[int, ...], dict[str, tuple[int, ...]]] = {}
        self._inferred: dict[tuple, dict[str, tuple[tuple[int, ...], str]]] = {}

    def of_kind(self, *kinds: RuleKind):
        return [(i, r) for i, r, kind in self._kinds if kind in kinds]

    def dtypes_for(self, dtype: str) -> dict[str, str]:
        """Each input's dtype in a case that asks for `dtype`: `dtype` where the input's own
        list has it, else one of its list (core/dtype_combinations.py)."""
        return combination(self.meta, dtype, self.version, self.family)

    def second_dtype(self, name: str, dtype: str) -> str:
        """The dtype input `name` takes in a "mixed-dtype" case beside others of `dtype`:
        `other_dtype(dtype)`, or, where the input's own list lacks it, the first of its list
        that differs from `dtype`."""
        own = self.own_list(name)
        other = other_dtype(dtype)
        if not own or other in own:
            return other
        return next((d for d in own if d != dtype), other)

    def own_list(self, name: str) -> tuple[str, ...]:
        """The dtypes tensor `name`'s own list has (on the family, else on any)."""
        if self._lists is None:
            self._lists = tensor_lists(self.meta, self.version, self.family)
        return self._lists.get(name, ())

    def in_same_shape(self, name) -> bool:
        return any(name in r["params"] for _, r in self.of_kind(SAME_SHAPE))

    def broadcast_to_targets(self):
        return {r["target"] for _, r in self.of_kind(BROADCAST_TO)}

    def free_to_broadcast(self) -> list[str]:
        """Inputs the rules let take a shape that merely broadcasts to the others'."""
        found = []
        for _, r, kind in self._kinds:
            for name in kind.broadcasting(r):
                if name not in found:
                    found.append(name)
        banned = self.broadcast_to_targets() | self.weights | self.sources
        return [n for n in found if n not in banned and not self.in_same_shape(n) and n in self.inputs]


@dataclass
class CasePlan:
    """One case: its expected status, the shape of every input, the outputs it gets wrong on
    purpose, the input that takes the second dtype and the layout of every tensor."""

    expected: int
    shapes: dict[str, tuple[int, ...]]  # every input
    outputs: dict[str, tuple[int, ...]] = field(default_factory=dict)  # deliberately wrong outputs
    output_dtypes: dict[str, str] = field(default_factory=dict)  # outputs of a deliberately wrong dtype
    mixed: str | None = None  # the input that takes the second dtype
    layout: str = "contiguous"  # "contiguous" | "strided" | "offset"


def _inputs_for(op: OpAt, data_shape: tuple[int, ...], weight_shape: tuple[int, ...] | None = None):
    weight = weight_shape if weight_shape is not None else (channels(data_shape),)
    return {n: (weight if n in op.weights else data_shape) for n in op.inputs}


def _format_ranks(op: OpAt) -> dict[str, tuple[int, int]]:
    """(fewest, most) dims of each tensor that accepts no ND on the op's family, only layout
    formats with a rank (NCHW-only: 4 dims)."""
    if op.family is None:
        return {}
    found = {}
    for p in op_meta(op.meta).tensors:
        accepted = p.formats_at(op.family, op.version)
        if ND in accepted or not all(f in FORMAT_RANKS for f in accepted):
            continue
        ranks = [FORMAT_RANKS[f] for f in accepted]
        found[p.name] = (min(ranks), max(ranks))
    return found


def case_formats(meta: Mapping, version: str | CannVersion, family: str, shapes: Mapping) -> dict[str, str]:
    """The format of each tensor of a case on `family` that cannot be ND (C name -> format name):
    the first it accepts with as many dims as its planned shape (`shapes`), else its first."""
    op = op_meta(meta)
    version = version_key(version)
    chosen = {}
    for p in op.tensors:
        accepted = p.formats_at(family, version)
        if ND in accepted:
            continue
        rank = len(shapes[p.name]) if p.name in shapes else None
        chosen[p.name] = next((f for f in accepted if FORMAT_RANKS.get(f) == rank), accepted[0])
    return chosen


def _rank_bounds(op: OpAt) -> dict[str, tuple[int, int | None]]:
    """Each tensor's (fewest, most) dims by the min_rank and max_rank rules that hold, and by
    the layout formats it alone accepts (`_format_ranks`); worked out once per OpAt (read only)."""
    if op._bounds is None:
        op._bounds = _worked_out_rank_bounds(op)
    return op._bounds


def _worked_out_rank_bounds(op: OpAt) -> dict[str, tuple[int, int | None]]:
    bounds: dict[str, tuple[int, int | None]] = dict(_format_ranks(op))
    for _, rule in op.of_kind(MIN_RANK, MAX_RANK):
        for name in rule["params"]:
            lo, hi = bounds.get(name, (0, None))
            if kind_of(rule) is MIN_RANK:
                lo = max(lo, rule["rank"])
            else:
                hi = rule["rank"] if hi is None else min(hi, rule["rank"])
            bounds[name] = (lo, hi)
    return bounds


def _of_rank(shape: tuple[int, ...], rank: int) -> tuple[int, ...]:
    """`shape` (BASE_SHAPE or EMPTY_SHAPE) with `rank` dims: leading 2s added, or leading dims
    dropped (an empty shape keeps a 0 first)."""
    if rank >= len(shape):
        return (2,) * (rank - len(shape)) + shape
    kept = shape[len(shape) - rank :]
    return ((0,) + kept[1:]) if 0 in shape and rank else kept


def _fitted_inputs(op: OpAt, data_shape: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """The inputs of `data_shape`, each given as many dims as the rank rules want: every tensor the
    rank the most demanding min_rank asks (outputs follow their inputs), an input a max_rank holds
    lower as many as it allows (a 3d pooling op's 4-d input, a 1-d index beside 3-d data). A new
    dict each call (case plans change theirs), worked out once per OpAt and shape."""
    fitted = op._fitted.get(data_shape)
    if fitted is None:
        fitted = op._fitted[data_shape] = _worked_out_fitted_inputs(op, data_shape)
    return dict(fitted)


def _worked_out_fitted_inputs(op: OpAt, data_shape: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    bounds = _rank_bounds(op)
    if not bounds:
        return _inputs_for(op, data_shape)
    target = max([len(data_shape)] + [lo for name, (lo, _) in bounds.items() if name not in op.weights])
    ranks = {}
    for name in op.tensors:
        lo, hi = bounds.get(name, (0, None))
        ranks[name] = max(target, lo) if hi is None else min(max(target, lo), hi)
    for _, rule in op.of_kind(SAME_SHAPE):  # one shape: the rank its most limited member allows
        members = [n for n in rule["params"] if n in ranks and n not in op.weights]
        lowest = min((ranks[n] for n in members), default=0)
        if all(lowest >= bounds.get(n, (0, None))[0] for n in members):
            ranks.update(dict.fromkeys(members, lowest))
    shapes = _inputs_for(op, data_shape)
    return {n: (s if n in op.weights else _of_rank(data_shape, ranks[n])) for n, s in shapes.items()}


def _infer(op: OpAt, shapes: dict[str, tuple[int, ...]], dtypes: dict[str, str], family: str | None):
    """Output shapes and dtype names for inputs of these shapes and dtype names (a new dict each
    call; the case plans of one OpAt ask the same again and again, so each answer is kept)."""
    key = (tuple(shapes.items()), tuple((n, dtypes[n]) for n in shapes), family)
    found = op._inferred.get(key)
    if found is None:
        found = op._inferred[key] = infer_output_names(
            op.meta, shapes, {n: dtypes[n] for n in shapes}, op.version, family=family
        )
    return dict(found)


def _all_shapes(op: OpAt, plan: CasePlan) -> dict[str, tuple[int, ...]]:
    shapes = dict(plan.shapes)
    for name, (shape, _) in _infer(op, plan.shapes, dict.fromkeys(plan.shapes, "float32"), op.family).items():
        shapes[name] = shape
    shapes.update(plan.outputs)
    return shapes


def _collateral(op: OpAt, plan: CasePlan) -> list[tuple[int, int]]:
    """(META index, status) of the max_rank, empty and non_contiguous rules the case's shapes and
    layout break."""
    shapes = _all_shapes(op, plan)
    broken = []
    for index, rule, kind in op._kinds:
        if kind.breaks(rule, shapes, plan.layout):
            broken.append((index, op.status[index]))
    return broken


def _first(broken: list[tuple[int, int]]) -> int:
    return min(broken)[1] if broken else 0


def _rules_naming(op: OpAt, name: str, kinds) -> list[tuple[int, int]]:
    found = []
    for index, rule in op.of_kind(*kinds):
        if name in kind_of(rule).names(rule):
            found.append((index, op.status[index]))
    return found


def case_plan(op: OpAt, case: str, dtype: str = "float32") -> CasePlan | None:
    """The plan of one case kind for the op, or None when the kind does not apply to it; `dtype`
    is the requested dtype name (a "mixed-dtype" case pairs it with `other_dtype(dtype)`)."""
    base = _fitted_inputs(op, BASE_SHAPE)
    targeted: list[tuple[int, int]] = []
    if case in ("contiguous", "offset", "non-contiguous"):
        layout = {"contiguous": "contiguous", "offset": "offset", "non-contiguous": "strided"}[case]
        plan = CasePlan(0, base, layout=layout)
    elif case == "rank0":
        plan = CasePlan(0, _inputs_for(op, (), weight_shape=()))
    elif case == "rank8":
        plan = CasePlan(0, _inputs_for(op, RANK8_SHAPE))
    elif case == "rank9":
        plan = CasePlan(0, _inputs_for(op, RANK9_SHAPE))
    elif case == "empty":
        plan = CasePlan(0, _fitted_inputs(op, EMPTY_SHAPE))
    elif case == "broadcast":
        free = op.free_to_broadcast()
        if not free:
            return None
        plan = CasePlan(0, {**base, free[0]: BROADCAST_SHAPE})
    elif case in ("broadcast-rejected", "shape-mismatch"):
        built = (_broadcast_rejected if case == "broadcast-rejected" else _shape_mismatch)(op, base)
        if built is None:
            return None
        plan, broken = built
        targeted += broken
    elif case in ("per-channel-single", "per-channel-rejected", "grad-shape-rejected"):
        if not op.per_channel:
            return None
        rule = op.per_channel[0]
        index = next(i for i, r in op.rules if r is rule)
        c = channels(base[rule["input"]])
        if case == "per-channel-single":
            plan = CasePlan(0, {**base, rule["weight"]: (1,)})
        elif case == "per-channel-rejected":
            plan = CasePlan(0, {**base, rule["weight"]: (c + 1,)})
            targeted.append((index, op.status[index]))
        else:
            if not rule.get("grad"):
                return None
            plan = CasePlan(0, base, outputs={rule["grad"]: (1, c)})
            targeted.append((index, op.status[index]))
    elif case == "output-dtype":
        built = _output_dtype(op, base, dtype)
        if built is None:
            return None
        plan, broken = built
        targeted += broken
    elif case == "mixed-dtype":
        if len(op.inputs) < 2:
            return None
        mixed = _mixed_input(op, dtype)
        plan = CasePlan(0, base, mixed=mixed)
        # dtypes of every tensor: `mixed` differs from the others, outputs follow infer_outputs;
        # a promoting rule accepts the pair, a same_dtype rule over the same inputs still refuses it
        dtypes = mixed_case_dtypes(op, plan, dtype)
        for name, (_, dt) in _infer(op, base, dtypes, op.family).items():
            dtypes[name] = dt
        broken = _dtype_breaks(op, dtypes, mixed)
        if not broken and op.family is not None:
            # a rule the mixed input is not named in can still refuse the dtypes it gives others
            # (same_dtype [a, out] and [b, out]: out follows a, then differs from b); the dtype
            # checks run before the rules
            inputs = {n: dtypes[n] for n in op.inputs}
            status = combination_status(op.meta, Combination(inputs), op.family, op.version)
            broken = [(-1, status)] if status else []
        targeted += broken
    else:
        raise ValueError(f"unknown case {case!r}; the case kinds are {', '.join(SHAPE_CASES)}")
    if case not in ("rank0", "rank8", "rank9"):
        _fit_outputs(op, plan, EMPTY_SHAPE if case == "empty" else BASE_SHAPE)
    plan.expected = _first(targeted + _collateral(op, plan))
    return plan


def _fit_outputs(op: OpAt, plan: CasePlan, data_shape: tuple[int, ...]) -> None:
    """An output no shape rule ties to the inputs takes the first input's shape; where its rank
    rules want other dims (a 1-d offsets output beside 3-d data), it gets them instead."""
    bounds = _rank_bounds(op)
    tied = {n for _, rule, kind in op._kinds for n in kind.shape_fixed(rule)}
    inferred = _infer(op, plan.shapes, dict.fromkeys(plan.shapes, "float32"), op.family)
    for name in op.outputs:
        if name in plan.outputs or name in tied or name not in inferred or name not in bounds:
            continue
        lo, hi = bounds[name]
        rank = len(inferred[name][0])
        if rank < lo or (hi is not None and rank > hi):
            plan.outputs[name] = _of_rank(data_shape, lo if rank < lo else hi)


def _mixed_input(op: OpAt, dtype: str) -> str:
    """The input a "mixed-dtype" case gives a second dtype: the second input of a promoting rule,
    else the second input, unless its own list holds no dtype beside the one the case gives it
    (an int64 index beside float data); then the next input that has one (none has: the first
    choice, whose second dtype the dtype table refuses)."""
    promotes = op.of_kind(*PROMOTING)
    preferred = promotes[0][1]["inputs"][1] if promotes else op.inputs[1]
    given = op.dtypes_for(dtype)
    order = [preferred] + [n for n in op.inputs[1:] + op.inputs[:1] if n != preferred]
    for name in order:
        own = op.own_list(name)
        if not own or any(d != given[name] for d in own):
            return name
    return preferred  # none has one: the case is refused by the dtype table (planned so)


def _output_dtype(op: OpAt, base, dtype: str) -> tuple[CasePlan, list] | None:
    """An output a rule fixes the dtype of, given the first other dtype of its own list (so the
    dtype table accepts it and the rule alone refuses it)."""
    dtypes = op.dtypes_for(dtype)
    for name, (_, dt) in _infer(op, base, dtypes, op.family).items():
        dtypes[name] = dt
    for _, rule, kind in op._kinds:
        for name in kind.dtype_fixed(rule):
            other = next((d for d in op.own_list(name) if d != dtypes.get(name)), None)
            if name in op.outputs and name in dtypes and other is not None:
                return CasePlan(0, base, output_dtypes={name: other}), _dtype_breaks(op, {**dtypes, name: other}, name)
    return None


def _dtype_breaks(op: OpAt, dtypes: dict[str, str], mixed: str) -> list[tuple[int, int]]:
    """(META index, status) of the rules tensors of these dtypes break, `mixed` the odd one."""
    return [(i, op.status[i]) for i, r, kind in op._kinds if kind.dtypes_break(r, dtypes, mixed)]


def mixed_case_dtypes(op: OpAt, plan: CasePlan, dtype: str, own: bool = True) -> dict[str, str]:
    """The dtype of each input in a case asking for `dtype`, the case's `mixed` input taking a
    second one: with `own`, each input's own (`OpAt.dtypes_for`: the dtype where its list has
    it) and the mixed one `OpAt.second_dtype`; else `dtype` for all and `other_dtype(dtype)`."""
    if not own:
        return {n: other_dtype(dtype) if n == plan.mixed else dtype for n in op.inputs}
    dtypes = op.dtypes_for(dtype)
    if plan.mixed is not None:
        dtypes[plan.mixed] = op.second_dtype(plan.mixed, dtypes[plan.mixed])
    return dtypes


def case_shapes(
    meta: Mapping, case: str, version: str | CannVersion, family: str | None = None
) -> dict[str, tuple[int, ...]]:
    """The shape of every tensor of one case kind: the planned inputs, then each output as
    inferred (the base shape when nothing can be), or as the case deliberately gets it wrong."""
    op = op_at(meta, version, family)
    if case not in SHAPE_CASES:
        raise ValueError(f"unknown case {case!r}; the case kinds are {', '.join(SHAPE_CASES)}")
    plan = case_plan(op, case)
    if plan is None:
        raise ValueError(f"case {case!r} does not apply to {op_meta(meta).name} at CANN {op.version}")
    shapes = dict(plan.shapes)
    inferred = _infer(op, plan.shapes, dict.fromkeys(plan.shapes, "float32"), op.family)
    for tensor in op.outputs:
        shapes[tensor] = plan.outputs.get(tensor, inferred[tensor][0] if tensor in inferred else BASE_SHAPE)
    return shapes


def _broadcast_rejected(op: OpAt, base) -> tuple[CasePlan, list] | None:
    free = op.free_to_broadcast()
    broadcasts = op.of_kind(BROADCAST)
    if broadcasts:
        rule = broadcasts[0][1]
        name = next((n for n in free if n in rule["inputs"]), rule["inputs"][0])
        shapes = {**base, name: UNBROADCASTABLE_SHAPE}
        broken = _rules_naming(op, name, (BROADCAST, BROADCAST_TO, SAME_SHAPE, PER_CHANNEL))
        return CasePlan(0, shapes), broken
    targets = op.of_kind(BROADCAST_TO)
    if targets:
        rule = targets[0][1]
        name = rule["param"]
        shapes = {**base, name: (2,) + tuple(base[rule["target"]])}
        broken = [(i, op.status[i]) for i, r in targets if r["param"] == name or r["target"] == name]
        broken += _rules_naming(op, name, (SAME_SHAPE,))
        return CasePlan(0, shapes), broken
    for _, rule in op.of_kind(SAME_SHAPE):
        members = [n for n in rule["params"] if n in op.inputs and n not in op.weights]
        if len(members) >= 2:
            name = members[0]
            shapes = {**base, name: BROADCAST_SHAPE}
            return CasePlan(0, shapes), _rules_naming(op, name, (SAME_SHAPE,))
    return None


def _shape_mismatch(op: OpAt, base) -> tuple[CasePlan, list] | None:
    inferred = _infer(op, base, dict.fromkeys(base, "float32"), op.family)
    for _, rule, kind in op._kinds:
        for name in kind.shape_fixed(rule):
            if name in op.outputs and name in inferred:
                shape = inferred[name][0]
                wrong = shape[:-1] + (shape[-1] + 1,) if shape else (2,)
                broken = _rules_naming(op, name, (SAME_SHAPE, BROADCAST, BROADCAST_TO))
                return CasePlan(0, base, outputs={name: wrong}), broken
    for _, rule in op.of_kind(SAME_SHAPE):
        members = [n for n in rule["params"] if n in op.inputs and n not in op.weights]
        if len(members) >= 2:
            name = members[-1]
            broken = _rules_naming(op, name, (SAME_SHAPE, BROADCAST, BROADCAST_TO, PER_CHANNEL))
            return CasePlan(0, {**base, name: MISMATCH_SHAPE}), broken
    return None


def op_at(meta: Mapping, version: str | CannVersion, family: str | None = None) -> OpAt:
    """The op's tensors and rules at `version` (on `family`, when given); one per META, release
    and family, so what its case plans work out (rank bounds, fitted inputs, inferred outputs)
    serves every later ask (`case_shapes`, `make_values`: one case per call)."""
    return _OPS_AT.get(meta, version_key(version), family)


_OPS_AT = MetaCache(OpAt)


def applicable_cases(
    meta: Mapping, version: str | CannVersion, *, family: str | None = None, dtype: str | None = None
) -> list[tuple[str, int]]:
    """The case kinds that apply to the op at `version`, each with the status validation gives it
    (0 = accepted). With `family`, only the rules that hold on it; with `family` and `dtype`, the
    dtype tables of that family are taken into account too (an unsupported op or dtype, or a mixed
    pair that promotes to an unsupported dtype). `dtype` is a dtype name (core.dtypes). A new
    list each call; worked out once per META, version, family and dtype (a test plan asks the same
    family's cases several times)."""
    return list(_APPLICABLE.get(meta, version_key(version), family, dtype))


def _applicable_cases(meta: Mapping, version: str, family: str | None, dtype: str | None) -> tuple:
    op = op_at(meta, version, family)
    result = []
    for case in SHAPE_CASES:
        plan = case_plan(op, case, dtype or "float32")
        if plan is None:
            continue
        expected = plan.expected
        if family is not None and dtype is not None:
            dtype_status = _dtype_status(op, plan, family, dtype)
            if dtype_status:
                expected = dtype_status
        result.append((case, expected))
    return tuple(result)


_APPLICABLE = MetaCache(_applicable_cases)


def _dtype_status(op: OpAt, plan: CasePlan, family: str, dtype: str) -> int:
    """The status the dtype checks (which run before the rules) give the case, or 0."""
    meta, version = op.meta, op.version
    if family not in supported_families(meta, version):
        return 161002
    status = status_of(meta, "dtype", version, 161002)
    dtypes = mixed_case_dtypes(op, plan, dtype, own=False)  # as make_values builds them by default
    promotes = [r for _, r in op.of_kind(*PROMOTING)]
    promoted_inputs = {n for r in promotes for n in r["inputs"]}
    for rule in promotes:
        promoted = promote_names(dtypes[n] for n in rule["inputs"])
        if promoted is None or any(promoted not in supported_dtypes(meta, n, family, version) for n in rule["inputs"]):
            return status
    for name, (_, dt) in _infer(op, {n: plan.shapes[n] for n in op.inputs}, dtypes, family).items():
        dtypes[name] = dt
    for name in op.tensors:
        if name not in promoted_inputs and dtypes.get(name) not in supported_dtypes(meta, name, family, version):
            return status
    return 0


# --- nulls, scalars, dtypes ---------------------------------------------------------------------


def null_cases(meta: Mapping) -> list[str]:
    """C names of the parameters that must not be NULL (None): required tensors (inputs and
    outputs), required scalars, and pointer attributes without a default."""
    names = []
    for p in op_meta(meta).params:
        if p.is_tensor and not p.optional:
            names.append(p.name)
        elif p.role == "scalar":
            names.append(p.name)
        elif p.role == "attribute" and p.attr_type in POINTER_C_TYPES and p.default is None:
            names.append(p.name)
    return names


def _outside(op: str, bound):
    step = 0.0625 * max(1.0, abs(float(bound)))
    return {
        ">=": bound - step,
        ">": bound,
        "<=": bound + step,
        "<": bound,
        "!=": bound,
    }[op]


def scalar_violations(meta: Mapping, version: str | CannVersion) -> list[tuple[str, float, int]]:
    """(C name, bad value, status) for every scalar constraint that holds at `version`: a value just
    outside the bound (the bound itself for a strict one), and NaN once per constrained scalar."""
    version = version_key(version)
    found = []
    for p in op_meta(meta).params:
        if not p.is_scalar:
            continue
        holding = [c for c in p.constraints if c.holds_at(version) and not c.when]
        for c in holding:
            found.append((p.name, float(_outside(c.op, c.value)), c.status))
        if holding:
            found.append((p.name, float("nan"), holding[0].status))
    return found


def conditional_violations(meta: Mapping, version: str | CannVersion) -> list[tuple[str, float, int, dict]]:
    """(C name, bad value, status, condition) for every conditional scalar constraint (`when`) that
    holds at `version`: a value just outside its bound, with the values that make it apply."""
    version = version_key(version)
    found = []
    for p in op_meta(meta).params:
        if not p.is_scalar:
            continue
        for c in p.constraints:
            if c.when and c.holds_at(version):
                found.append((p.name, float(_outside(c.op, c.value)), c.status, dict(c.when)))
    return found


def dtype_cases(meta: Mapping, family: str, version: str | CannVersion) -> list[tuple[str, bool]]:
    """(dtype name, accepted) for every dtype a spec can name, with all inputs of that dtype and
    the outputs of the dtype the rules give them (that one, unless a rule such as output_dtype
    says otherwise): accepted when the op is supported on `family` at `version` and every
    tensor's list there has its dtype."""
    version = version_key(version)
    typed = op_meta(meta)
    supported = family in supported_families(meta, version)
    tables = {p.name: supported_dtypes(meta, p.name, family, version) for p in typed.tensors}
    inputs = [p.name for p in typed.by_role("input")]
    found = []
    for d in ALL_DTYPES:
        dtypes = dict.fromkeys(tables, d)
        inferred = infer_output_names(
            meta, dict.fromkeys(inputs, BASE_SHAPE), dict.fromkeys(inputs, d), version, family=family
        )
        dtypes.update({name: dt for name, (_, dt) in inferred.items()})
        found.append((d, supported and all(dtypes[t] in tables[t] for t in tables)))
    return found
