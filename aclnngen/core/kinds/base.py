"""What a rule kind is: every facet of one kind of shape or dtype rule, over plain data.

A rule is read either from the spec model (attributes) or from META (a dict); `value` reads a
field from either, so one kind serves the generator, the call path, the planner and the audit.
Each facet has a default that says "this kind has nothing to say here"; a kind overrides the
facets it takes part in (see docs/architecture.md, "Adding a rule kind").
"""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Mapping
from typing import Any, Callable, ClassVar

Shape = tuple[int, ...]
# name -> (shape, dtype name, the value as given): the tensors present in one call
Info = Mapping[str, tuple[Shape, str, Any]]
# whether the tensor of that name is contiguous (asked only by kinds that care: it costs a look)
Contiguous = Callable[[str], bool]

# The field types a kind may declare, in the project's vocabulary; codegen/model.py maps each to
# its pydantic type. An "optional" type may be left out of a rule (its value is then None).
FIELD_TYPES = (
    "param list",
    "param",
    "optional param",
    "int",
    "bool",
    "dtype pair list",
    "optional dtype pair list",
    "optional dtype",
)
PARAM_TYPES = ("param list", "param", "optional param")
# The roles a param field may demand of the tensors it names (codegen/consistency.py checks them).
FIELD_ROLES = ("input", "output")
# What a rule relates: tensors' shapes, their dtypes, their ranks, or what layouts are accepted.
RELATIONS = ("shape", "dtype", "rank", "layout")


@dataclass(frozen=True)
class Field:
    """One key of a rule of this kind, beyond the keys every rule has (status, families, when,
    since, until)."""

    name: str
    type: str  # one of FIELD_TYPES
    doc: str  # its description in the JSON Schema
    min_items: int | None = None  # a list's least length
    minimum: int | None = None  # an int's least value
    role: str | None = None  # a param field's: the role every tensor it names has (None: any)

    def __post_init__(self):
        if self.type not in FIELD_TYPES:
            raise ValueError(f"field {self.name!r}: type {self.type!r} is not one of {', '.join(FIELD_TYPES)}")
        if self.role is not None and (self.role not in FIELD_ROLES or self.type not in PARAM_TYPES):
            raise ValueError(f"field {self.name!r}: role {self.role!r} needs a param type and one of {FIELD_ROLES}")


@dataclass(frozen=True)
class Violation:
    """What a run-time check found wrong: `runtime.validation` raises it as its typed error."""

    status: int
    param: str
    message: str
    found: Any = None
    allowed: Any = None


@dataclass(frozen=True)
class Provocation:
    """How a generated test breaks a rule on one tensor, as plain data (`verify.opcheck` builds
    the array): a new shape, a dtype name, "a dtype the family does not list", or a strided view."""

    shape: Shape | None = None
    dtype: str | None = None
    unsupported_dtype: bool = False
    strided: bool = False


def value(rule: Any, name: str, default: Any = None) -> Any:
    """Field `name` of a rule, from META (a mapping) or from the spec model (attributes)."""
    if isinstance(rule, Mapping):
        return rule.get(name, default)
    return getattr(rule, name, default)


def fmt(shape: Shape) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def listed(names) -> str:
    """`a`, `a and b`, `a, b and c`."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


class RuleKind:
    """One kind of rule. Subclasses set the class attributes and override the facets they use."""

    # -- the spec language (codegen/model.py builds the pydantic model from these)
    name: ClassVar[str]  # its YAML spelling, `kind: <name>`
    model: ClassVar[str]  # the name of its spec model (the JSON Schema's title)
    doc: ClassVar[str | None] = None  # the model's description
    kind_doc: ClassVar[str]  # the description of its `kind` key
    fields: ClassVar[tuple[Field, ...]]
    conditional: ClassVar[bool] = True  # whether a `when` may limit it
    example: ClassVar[Mapping[str, Any]]  # its fields in one rule over tensors a, b, c, w (tests)

    # -- how other facts relate to it
    relation: ClassVar[str]  # what it relates: one of RELATIONS (the page audit compares hints by it)
    promotes_inputs: ClassVar[bool] = False  # the dtype check reads its inputs' promoted dtype
    shapes_across_families: ClassVar[bool] = False  # over every family at once, its output shape wins
    cases: ClassVar[tuple[str, ...]] = ()  # the planned cases (core/planning.py) that probe it
    accepted_change: ClassVar[Mapping[str, str]] = {}  # audit: case seen accepted -> profile action
    row_phrases: ClassVar[tuple[str, ...]] = ()  # importer: words of a return-code row about it
    row_precedence: ClassVar[int] = 100  # importer: lower is tried first (a narrower phrase first)
    row_condition: ClassVar[str | None] = None  # importer: the condition text it drafts, "{}" = params
    note_pattern: ClassVar[str | None] = None  # importer: a regex of a parameter's usage note about it

    def __repr__(self) -> str:
        return f"<rule kind {self.name}>"

    # -- facets over the spec (generator)

    def named(self, rule: Any) -> list[tuple[tuple, str]]:
        """Every parameter the rule names, with its location inside the rule, in field order."""
        found: list[tuple[tuple, str]] = []
        for f in self.fields:
            if f.type == "param list":
                found += [((f.name, i), n) for i, n in enumerate(value(rule, f.name) or ())]
            elif f.type in PARAM_TYPES and isinstance(value(rule, f.name), str):
                found.append(((f.name,), value(rule, f.name)))
        return found

    def names(self, rule: Any) -> list[str]:
        return [n for _, n in self.named(rule)]

    def spec_problems(self, rule: Any) -> list[tuple[tuple, str]]:
        """Cross-field problems of one rule: (location inside the rule, message)."""
        if rule_when(rule) and not self.conditional:
            return [(("when",), f"a {self.name} rule cannot be conditional")]
        return []

    def sentence(self, rule: Any) -> str:
        """What the rule says, as a sentence of the op's docs (without its releases)."""
        raise NotImplementedError(self.name)

    # -- facets at run time (call path, planner)

    def checker(self, rule: Mapping) -> Callable[[Info, Contiguous], Violation | None] | None:
        """The run-time check of one META rule: a function of the tensors present giving the
        first violation, or None when the rule checks nothing."""
        return None

    def output_shape(self, rule: Mapping, name: str, known: Mapping[str, Shape], strict: bool) -> Shape | None:
        """The shape output `name` has by this rule, from the shapes known so far, or None."""
        return None

    def output_dtype(self, rule: Mapping, name: str, known: Mapping[str, str], strict: bool) -> str | None:
        """The dtype name output `name` has by this rule, from the dtype names known, or None."""
        return None

    def broadcasting(self, rule: Mapping) -> tuple[str, ...]:
        """The tensors the rule lets take a shape that merely broadcasts to the others' (the
        planner's "broadcast" case picks one)."""
        return ()

    def per_channel_tensors(self, rule: Any) -> tuple[str, ...]:
        """The tensors the rule holds to one element per channel of dim 1, or one (the compiled
        kernels read these per channel: codegen/formula_c.py, runtime/sim/compiled.py)."""
        return ()

    def shape_fixed(self, rule: Mapping) -> tuple[str, ...]:
        """The tensors whose shape the rule fixes from the others' (the planner's
        "shape-mismatch" case gives an output of these a wrong one)."""
        return ()

    def dtype_fixed(self, rule: Mapping) -> tuple[str, ...]:
        """The tensors whose dtype the rule fixes from the others' (the planner's "output-dtype"
        case gives an output of these another dtype of its own list)."""
        return ()

    def dtypes_break(self, rule: Mapping, dtypes: Mapping[str, str], changed: str) -> bool:
        """Whether tensors of these dtype names break the rule, `changed` being the one whose
        dtype differs from the others' (the planner's "mixed-dtype" and "output-dtype" cases)."""
        return False

    def breaks(self, rule: Mapping, shapes: Mapping[str, Shape], layout: str) -> bool:
        """Whether a planned case with these shapes and layout breaks the rule by the way (the
        planner expects the rule's status when it does)."""
        return False

    def drafts(self, params: list[Mapping[str, Any]], related: Mapping[str, list[set[str]]]) -> list[dict[str, Any]]:
        """The importer's hint from a draft's parameters (name, role, dtypes as drafted): the rules
        of this kind they imply; `related` holds, per relation (RELATIONS), the tensors each rule
        drafted so far relates."""
        return []

    def provoke(self, rules: list[Mapping], param: str, shape: Shape, dtype: str) -> Provocation:
        """How to break the rule on `param` (of `shape` and dtype name `dtype`), for a return-code
        row of this kind; `rules` are the op's rules of this kind."""
        raise NotImplementedError(self.name)


def rule_when(rule: Any) -> Mapping:
    return value(rule, "when") or {}


def first_violation(rule: Mapping, check: Callable[[Info], Violation | None]):
    """A checker that ignores the contiguity look (most kinds)."""

    def run(info: Info, contiguous: Contiguous) -> Violation | None:
        return check(info)

    return run
