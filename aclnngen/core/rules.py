"""What an op's META says at one (family, release), as plain data: the rules that hold, the
families and dtypes it supports, the return code of a check, and the shapes and dtype names of its
outputs.

- `rules_at(meta, version, family)`: the rules that hold (cached per META, `MetaCache`);
- `supported_families`, `supported_dtypes`, `status_of`: the product and dtype tables, the
  return-code rows;
- `broadcast_shapes(*shapes)`: NumPy/PyTorch broadcasting, raising `BroadcastError`;
- `infer_output_names(meta, shapes, dtypes, version)`: the shape and dtype name of every output from
  its inputs' shapes and dtype names (`runtime.shapes.infer_outputs` reads them from arrays).

META is plain data (codegen/metadata.py); nothing here knows an op by name or imports NumPy.
"""

from __future__ import annotations

import functools
from collections import OrderedDict
from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Callable

# re-exported: the call path, the planner and the verdict read them from here too
from .broadcasting import BroadcastError, broadcast_shapes, broadcasts_to, channels, numel  # noqa: F401
from .kinds import kind_of
from .meta import DTypeRow, OpMeta, Param, dtype_row, op_meta
from .releases import CannVersion, holds_at


# --- per-META caching ---------------------------------------------------------------------------


class MetaCache:
    """A small LRU of values computed from one META at one (family, version).

    Keyed by the META's identity and the extra key; the entry keeps a reference
    to its META, so a key can never be reused by another dict. A META is treated as immutable:
    mutate a copy, not a META that has been used.
    """

    def __init__(self, build: Callable[..., Any], maxsize: int = 512):
        self._build = build
        self._maxsize = maxsize
        self._entries: OrderedDict = OrderedDict()

    def get(self, meta: Mapping, *key: Any) -> Any:
        full = (id(meta), *key)  # the entry keeps its META alive, so the id stays its own
        entry = self._entries.get(full)
        if entry is not None and entry[0] is meta:
            self._entries.move_to_end(full)
            return entry[1]
        value = self._build(meta, *key)
        self._entries[full] = (meta, value)
        if len(self._entries) > self._maxsize:
            self._entries.popitem(last=False)
        return value

    def clear(self) -> None:
        self._entries.clear()


@functools.lru_cache(maxsize=256)
def version_key(version: str | CannVersion) -> str:
    """`version` as text, checked (cached): a ValueError names a malformed release."""
    text = str(version)
    CannVersion(text)
    return text


def rules_at(meta: Mapping, version: str | CannVersion, family: str | None = None) -> tuple[dict, ...]:
    """The META's rules that hold at `version` on product `family`, in spec order (cached). Without
    a family, every family's rules (a rule limited to some families included)."""
    return _RULES.get(meta, version_key(version), family)


def holds_on(rule: Mapping, family: str | None) -> bool:
    """Whether a rule holds on `family` (a rule without `families` holds on all; None: any)."""
    return family is None or not rule.get("families") or family in rule["families"]


def _build_rules(meta: Mapping, version: str, family: str | None) -> tuple[dict, ...]:
    return tuple(r.data for r in op_meta(meta).rules_at(version, family))


_RULES = MetaCache(_build_rules)


# --- products, dtypes and return codes at one release -----------------------------------------


def holds(entity: Mapping, version: str) -> bool:
    """Whether a fact with `since`/`until` holds at `version`."""
    return holds_at(entity.get("since"), entity.get("until"), version)


def families_at(meta: Mapping | OpMeta, version: str) -> tuple[str, ...]:
    supported: list[str] = []
    for product in op_meta(meta).products:
        if not product.holds_at(version):
            continue
        if product.supported:
            if product.family not in supported:
                supported.append(product.family)
        elif product.family in supported:  # a holding "not supported" entry wins
            supported.remove(product.family)
    return tuple(supported)


def _rows(param: Mapping | Param) -> tuple[DTypeRow, ...]:
    """A parameter's dtype rows, from the typed parameter or from data (a profile's rows)."""
    if isinstance(param, Mapping):
        return tuple(dtype_row(d) for d in param.get("dtypes") or ())
    return param.dtypes


def dtypes_at(param: Mapping | Param, family: str, version: str) -> tuple[str, ...]:
    found: list[str] = []
    for row in _rows(param):
        if family in row.families and row.holds_at(version) and not row.when:
            for name in row.dtypes:
                if name not in found:
                    found.append(name)
    return tuple(found)


def param_of(meta: Mapping | OpMeta, name: str) -> Param:
    return op_meta(meta).param(name)


def supported_families(meta: Mapping | OpMeta, version: str | CannVersion) -> tuple[str, ...]:
    """The product families the op is supported on at `version`, in the spec's order."""
    return _FAMILIES.get(meta, version_key(version))


_FAMILIES = MetaCache(families_at)  # asked for every planned case and every tensor's dtypes


def supported_dtypes(meta: Mapping | OpMeta, param: str, family: str, version: str | CannVersion) -> tuple[str, ...]:
    """The dtypes parameter `param` (C name) accepts on `family` at `version`; () when the op is
    not supported on the family there. For a scalar: the dtypes the page lists for it (or the one
    the binding creates)."""
    version = version_key(version)
    p = param_of(meta, param)
    if family not in _FAMILIES.get(meta, version):
        return ()
    if p.is_scalar:
        listed = p.scalar_dtypes
        if listed and isinstance(listed[0], DTypeRow):  # entries per product family
            rows = tuple(d for d in listed if isinstance(d, DTypeRow))
            return dtypes_at(_Rows(rows), family, version)
        return tuple(d for d in listed if isinstance(d, str)) or ((p.scalar_dtype,) if p.scalar_dtype else ())
    return dtypes_at(p, family, version)


@dataclass(frozen=True)
class _Rows:
    """Rows read like a parameter's (a scalar's dtypes per family)."""

    dtypes: tuple[DTypeRow, ...]


def status_of(meta: Mapping | OpMeta, check: str, version: str, default: int) -> int:
    for row in op_meta(meta).return_codes:
        if row.check == check and row.holds_at(version):
            return row.status
    return default


# --- output inference ---------------------------------------------------------------------------


def _output_plan(meta: Mapping, version: str, family: str | None):
    rules = rules_at(meta, version, family)
    if family is None:
        # Every family's rules at once: where one family broadcasts and another demands one shape,
        # the broadcast shape is the answer (it equals the shared shape whenever the inputs agree).
        rules = tuple(sorted(rules, key=lambda r: not kind_of(r).shapes_across_families))
    op = op_meta(meta)
    # each rule with its kind, looked up once: inference runs for every planned case
    ruled = tuple((rule, kind_of(rule)) for rule in rules)
    # a binding-tier op's outputs on `family`: where no rule gives an output its dtype, the first
    # input's is only a guess, and one its list there lacks is no answer. A full-tier op keeps
    # the guess: its reference is asked for dtypes beyond the tables, at other releases, and
    # computes the output's dtype itself
    own = {
        name: supported_dtypes(meta, name, family, version) if family and not op.computes else () for name in op.outputs
    }
    # a tensor list has no one shape or dtype to infer from
    return ruled, tuple(p.name for p in op.by_role("input") if not p.is_list), op.outputs, own


_OUTPUT_PLANS = MetaCache(_output_plan)


def _shape_from_rules(name, ruled, known, strict):
    for rule, kind in ruled:
        shape = kind.output_shape(rule, name, known, strict)
        if shape is not None:
            return shape
    return None


def _dtype_from_rules(name, ruled, known, first_input, strict, own):
    """The dtype a rule gives output `name`; else the first input's where the output's own list
    (`own`) has it or is empty, else the first of that list (a quantizing op's int8 output)."""
    for rule, kind in ruled:
        dtype = kind.output_dtype(rule, name, known, strict)
        if dtype is not None:
            return dtype
    if own and first_input is not None and first_input not in own:
        return own[0]
    return first_input


def infer_output_names(
    meta: Mapping,
    shapes: Mapping[str, tuple[int, ...]],
    dtypes: Mapping[str, str],
    version: str | CannVersion,
    *,
    strict: bool = False,
    family: str | None = None,
) -> dict[str, tuple[tuple[int, ...], str]]:
    """Shape and dtype name of every output tensor, from the shapes and dtype names of the inputs
    present (`shapes`, `dtypes`: C name -> value, inputs in META order), by the rules that hold at
    `version` (on `family`, when given). The rules are those of `runtime.shapes.infer_outputs`,
    which documents them; an output nothing can be derived for is left out."""
    ruled, _, outputs, own = _OUTPUT_PLANS.get(meta, version_key(version), family)
    shapes = dict(shapes)
    dtypes = dict(dtypes)
    first_shape = next(iter(shapes.values()), None)
    first_dtype = next(iter(dtypes.values()), None)

    pending = list(outputs)
    while pending:  # outputs may follow other outputs (same_shape [out1, out2])
        progressed = False
        for name in list(pending):
            shape = _shape_from_rules(name, ruled, shapes, strict)
            if shape is not None:
                shapes[name] = shape
                pending.remove(name)
                progressed = True
        if not progressed:
            break
    for name in pending:
        if first_shape is not None:
            shapes[name] = first_shape

    for name in outputs:
        dtype = _dtype_from_rules(name, ruled, dtypes, first_dtype, strict, own[name])
        if dtype is not None:
            dtypes[name] = dtype

    return {name: (shapes[name], dtypes[name]) for name in outputs if name in shapes and name in dtypes}


def output_inputs(meta: Mapping, version: str | CannVersion, family: str | None = None) -> tuple[str, ...]:
    """The C names of the input tensors `infer_output_names` reads, in META order (cached)."""
    return _OUTPUT_PLANS.get(meta, version_key(version), family)[1]
