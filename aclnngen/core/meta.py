"""An op's metadata as frozen typed objects, built once per op from its generated data.

`generated/meta/<op>.py` holds plain data (a dict: generated data imports nothing of the
project); `op_meta(data)` turns it into an `OpMeta` the first time it is asked for and hands out
the same object after (cached by the dict's identity, which the cache keeps alive). Readers use
attributes (`op.params`, `p.role`, `rule.kind`) instead of string keys; the field names follow the
generated data's, so the dict stays the one serialised form (codegen/metadata.py writes it).
The classes are `core.records.Record`s (frozen and slotted, as frozen dataclasses, but created
without compiling methods: this module loads on a binding's first call).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .checks import check_order
from .formats import DEFAULT_FORMATS
from .kinds import RuleKind, kind_of
from .records import Record
from .releases import holds_at
from .tiers import DEFAULT_TIER, computes

TENSOR_ROLES = ("input", "output")
SCALAR_ROLES = ("scalar", "optional_scalar")


class MetaError(ValueError):
    """Generated metadata that does not have the shape codegen/metadata.py writes."""


class DTypeRow(Record):
    """The dtypes a tensor takes on some product families (and releases, and conditions)."""

    families: tuple[str, ...]
    dtypes: tuple[str, ...]
    since: str | None = None
    until: str | None = None
    when: Mapping[str, Any] | None = None  # accepted only while each named scalar/attribute has the value

    def holds_at(self, version: str) -> bool:
        return holds_at(self.since, self.until, version)


class FormatRow(Record):
    """The storage formats a tensor takes on some product families."""

    families: tuple[str, ...]
    formats: tuple[str, ...]
    since: str | None = None
    until: str | None = None

    def holds_at(self, version: str) -> bool:
        return holds_at(self.since, self.until, version)


class Constraint(Record):
    """A scalar's bound: `op` (a comparison) against `value`."""

    op: str
    value: Any
    status: int
    since: str | None = None
    until: str | None = None
    when: Mapping[str, Any] | None = None

    def holds_at(self, version: str) -> bool:
        return holds_at(self.since, self.until, version)


class Param(Record):
    """One parameter of the op's C prototype, as the runtime reads it."""

    name: str  # C name
    py: str  # Python name
    role: str  # input, output, scalar, optional_scalar, attribute
    optional: bool
    dtypes: tuple[DTypeRow, ...]
    scalar_dtype: str | None
    scalar_dtypes: tuple[str | DTypeRow, ...]
    default: Any
    constraints: tuple[Constraint, ...]
    attr_type: str | None
    choices: tuple[Any, ...]
    dim_of: str | None = None
    meaning: str | None = None
    formats: tuple[FormatRow, ...] = ()  # none stated: ND on every family
    is_list: bool = False  # an aclTensorList* or aclScalarList*: a sequence of them
    inplace: bool = False  # an input the op also writes (a vendor ...Ref parameter)

    @property
    def is_tensor(self) -> bool:
        return self.role in TENSOR_ROLES

    def dtypes_at(self, family: str, version: str) -> tuple[str, ...]:
        """The dtypes this tensor accepts on `family` at `version`, unconditionally (rows with
        `when` aside), in listing order."""
        found: list[str] = []
        for row in self.dtypes:
            if family in row.families and row.holds_at(version) and not row.when:
                found.extend(d for d in row.dtypes if d not in found)
        return tuple(found)

    def formats_at(self, family: str, version: str) -> tuple[str, ...]:
        """The formats this tensor accepts on `family` at `version`: the rows that hold there,
        else ND alone (what a spec that states no format means)."""
        found: list[str] = []
        for row in self.formats:
            if family in row.families and row.holds_at(version):
                found.extend(f for f in row.formats if f not in found)
        return tuple(found) or DEFAULT_FORMATS

    @property
    def is_scalar(self) -> bool:
        return self.role in SCALAR_ROLES


class Rule(Record):
    """A shape or dtype rule of the op, with its kind's behaviour and its status code."""

    kind: RuleKind
    status: int
    families: tuple[str, ...]
    since: str | None
    until: str | None
    when: Mapping[str, Any]
    data: Mapping[str, Any]  # the rule as generated: what the kind's facets read

    def holds_at(self, version: str) -> bool:
        return holds_at(self.since, self.until, version)

    def holds_on(self, family: str | None) -> bool:
        """Whether it holds on product `family` (no `families`: on all; None: any family)."""
        return family is None or not self.families or family in self.families


class ReturnCode(Record):
    """A row of the return-code table: which check gives which status."""

    status: int
    check: str
    params: tuple[str, ...]
    condition: str
    since: str | None = None
    until: str | None = None

    def holds_at(self, version: str) -> bool:
        return holds_at(self.since, self.until, version)


class Product(Record):
    """Whether a product family supports the op."""

    family: str
    supported: bool
    since: str | None = None
    until: str | None = None

    def holds_at(self, version: str) -> bool:
        return holds_at(self.since, self.until, version)


class FormulaInfo(Record):
    """What the formula says of each output, and the thresholds of its boundaries."""

    outputs: Mapping[str, str]  # output Python name -> its kind of maths (selection, arithmetic, ...)
    boundaries: tuple[tuple[str, str], ...]  # (tensor Python name, threshold expression)


class EarlyReturn(Record):
    """Success with no work when one of `params` is empty, at the `early_return` step of the
    check order (a behaviour profile's fact; runtime/profiles.py puts it in the META)."""

    params: tuple[str, ...]
    families: tuple[str, ...] = ()  # empty: every family

    def holds_on(self, family: str | None) -> bool:
        return not self.families or family in self.families


class OpMeta(Record):
    """One op's metadata (generated/meta/<op>.py), typed and frozen."""

    name: str
    snake: str
    symbol: str
    library: str
    cann_version: str
    cdef: str
    products: tuple[Product, ...]
    params: tuple[Param, ...]
    rules: tuple[Rule, ...]
    return_codes: tuple[ReturnCode, ...]
    outputs: tuple[str, ...]  # C names of the output tensors, in order
    formula: FormulaInfo
    oracle: Mapping[str, Any]
    arithmetic: Mapping[str, Any] | None = None  # the spec's arithmetic facts (core/arithmetic.py), if stated
    # what a behaviour profile states about the checks (none for the spec's own profile)
    unchecked_nulls: tuple[str, ...] = ()
    early_returns: tuple[EarlyReturn, ...] = ()
    check_order: tuple[str, ...] = check_order()
    tier: str = DEFAULT_TIER  # aclnngen/core/tiers.py: binding-tier ops have no formula or oracle

    @property
    def computes(self) -> bool:
        """Whether the op's outputs are computed (full tier) or left poisoned (binding tier)."""
        return computes(self.tier)

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"{self.name} has no parameter {name!r}; it has {', '.join(p.name for p in self.params)}")

    def by_role(self, *roles: str) -> tuple[Param, ...]:
        return tuple(p for p in self.params if p.role in roles)

    @property
    def tensors(self) -> tuple[Param, ...]:
        return self.by_role(*TENSOR_ROLES)

    @property
    def inplace(self) -> tuple[str, ...]:
        """C names of the inputs the op also writes, in prototype order."""
        return tuple(p.name for p in self.params if p.inplace)

    @property
    def written(self) -> tuple[str, ...]:
        """C names of every tensor the op writes, as a call returns them: the outputs, then the
        in-place inputs."""
        return self.outputs + self.inplace

    def rules_at(self, version: str, family: str | None = None) -> tuple[Rule, ...]:
        """The rules that hold at `version` on `family` (None: every family's), in spec order."""
        return tuple(r for r in self.rules if r.holds_at(version) and r.holds_on(family))

    def default_of(self, name: str) -> Any:
        return next((p.default for p in self.params if p.name == name), None)


def dtype_row(d: Mapping) -> DTypeRow:
    """One dtype row from data (a META's, or a behaviour profile's)."""
    return DTypeRow(
        tuple(d["families"]),
        tuple(d["dtypes"]),
        d.get("since"),
        d.get("until"),
        dict(d["when"]) if d.get("when") else None,
    )


def _param(p: Mapping) -> Param:
    return Param(
        name=p["name"],
        py=p.get("py", p["name"]),
        role=p["role"],
        optional=bool(p.get("optional")),
        dtypes=tuple(dtype_row(d) for d in p.get("dtypes") or ()),
        scalar_dtype=p.get("scalar_dtype"),
        scalar_dtypes=tuple(d if isinstance(d, str) else dtype_row(d) for d in p.get("scalar_dtypes") or ()),
        default=p.get("default"),
        constraints=tuple(
            Constraint(
                c["op"],
                c["value"],
                c["status"],
                c.get("since"),
                c.get("until"),
                dict(c["when"]) if c.get("when") else None,
            )
            for c in p.get("constraints") or ()
        ),
        attr_type=p.get("attr_type"),
        choices=tuple(p.get("choices") or ()),
        dim_of=p.get("dim_of"),
        meaning=p.get("meaning"),
        is_list=bool(p.get("list")),
        inplace=bool(p.get("inplace")),
        formats=tuple(
            FormatRow(tuple(f["families"]), tuple(f["formats"]), f.get("since"), f.get("until"))
            for f in p.get("formats") or ()
        ),
    )


def _rule(r: Mapping) -> Rule:
    return Rule(
        kind=kind_of(r),
        status=r["status"],
        families=tuple(r.get("families") or ()),
        since=r.get("since"),
        until=r.get("until"),
        when=dict(r.get("when") or {}),
        data=r,
    )


def build(data: Mapping) -> OpMeta:
    """The typed metadata of one op from its generated data; a MetaError names what is missing.
    Only `name` and `params` are required: a META written by hand for a test of the planner or
    the validator may leave out what they do not read (outputs default to the output tensors)."""
    try:
        params = tuple(_param(p) for p in data["params"])
        formula = data.get("formula") or {}
        return OpMeta(
            name=data["name"],
            snake=data.get("snake", ""),
            symbol=data.get("symbol", ""),
            library=data.get("library", ""),
            cann_version=data.get("cann_version", ""),
            cdef=data.get("cdef", ""),
            products=tuple(
                Product(p["family"], p.get("supported", True), p.get("since"), p.get("until"))
                for p in data.get("products") or ()
            ),
            params=params,
            rules=tuple(_rule(r) for r in data.get("rules") or ()),
            return_codes=tuple(
                ReturnCode(
                    r["status"], r["check"], tuple(r["params"]), r.get("condition", ""), r.get("since"), r.get("until")
                )
                for r in data.get("return_codes") or ()
            ),
            outputs=tuple(data["outputs"])
            if "outputs" in data
            else tuple(p.name for p in params if p.role == "output"),
            formula=FormulaInfo(
                dict(formula.get("outputs") or {}), tuple(tuple(b) for b in formula.get("boundaries") or ())
            ),
            oracle=data.get("oracle") or {},
            arithmetic=data.get("arithmetic"),
            unchecked_nulls=tuple(data.get("unchecked_nulls") or ()),
            early_returns=tuple(
                EarlyReturn(tuple(e["params"]), tuple(e.get("families") or ())) for e in data.get("early_returns") or ()
            ),
            check_order=check_order(data.get("check_order") or ()),
            tier=data.get("tier", DEFAULT_TIER),
        )
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        name = data.get("name", "?") if isinstance(data, Mapping) else "?"
        raise MetaError(f"metadata of op {name} is not as codegen/metadata.py writes it: {exc!r}") from None


_BUILT: dict[int, tuple[Mapping, OpMeta]] = {}


def op_meta(data: Mapping | OpMeta) -> OpMeta:
    """The `OpMeta` of generated data `data`, built once per dict (an OpMeta is returned as is).
    The dict is treated as immutable once read, as every META reader does."""
    if isinstance(data, OpMeta):
        return data
    entry = _BUILT.get(id(data))
    if entry is not None and entry[0] is data:
        return entry[1]
    built = build(data)
    if len(_BUILT) > 4096:  # throwaway METAs of tests: forget the oldest half
        for key in list(_BUILT)[:2048]:
            del _BUILT[key]
    _BUILT[id(data)] = (data, built)
    return built


def forget(data: Mapping) -> None:
    """Drop the cached OpMeta of `data`: the generator builds one throwaway dict per op it renders,
    and the cache would keep thousands of them (and their OpMetas) alive in each worker."""
    entry = _BUILT.get(id(data))
    if entry is not None and entry[0] is data:
        del _BUILT[id(data)]
