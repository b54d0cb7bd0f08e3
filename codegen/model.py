"""The spec model: what one aclnn doc page claims, as frozen, strictly parsed pydantic models.

Every entity is a frozen model with `extra="forbid"` and strict types, so an unknown key, a
missing key or a wrong type is an error. Dumping a model (`dump_spec`) gives back exactly the data
it was parsed from. Cross-field checks that need the whole op (a rule naming a parameter the op
does not have, a prototype that disagrees with the parameter table) live in `OpSpec`'s validator
and raise `FieldProblem` with the location from the document root, which the loader turns into
`file:line`.

Facts that changed across CANN releases carry `since` (inclusive) and `until` (exclusive); a
spec's unversioned facts are those of its own page's release (`cann_version`).
"""

from __future__ import annotations

import keyword
import math
import re
from typing import Annotated, Any, Literal, Union

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, WithJsonSchema, model_validator

from . import names
from .errors import FieldProblem
from aclnngen.runtime.shapes import ALL_DTYPES
from aclnngen.runtime.versions import VERSION_HELP, holds_at, is_version

C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SNAKE_CASE = re.compile(r"^[a-z_][a-z0-9_]*$")
STATUS_CODES = {161001: "ACLNN_ERR_PARAM_NULLPTR", 161002: "ACLNN_ERR_PARAM_INVALID"}

# dtype names a spec may use, as NumPy (and ml_dtypes) spell them: one list, the runtime's; the
# ABI data file maps each to its aclDataType, and a test checks the two agree.
DTYPES = ALL_DTYPES

ATTRIBUTE_C_TYPES = ("bool", "int64_t", "double", "char*", "aclIntArray*")


def _c_identifier(value: str) -> str:
    if not C_IDENTIFIER.match(value):
        raise ValueError(f"{value!r} is not a C identifier (letters, digits, underscores; no leading digit)")
    return value


def _python_name(value: str) -> str:
    if not SNAKE_CASE.match(value):
        raise ValueError(f"{value!r} is not a snake_case Python name")
    if keyword.iskeyword(value):
        raise ValueError(f"{value!r} is a Python keyword; pick another name (softshrink uses 'lambd')")
    return value


def _version(value: str) -> str:
    if not is_version(value):
        raise ValueError(f"{value!r} is not {VERSION_HELP}")
    return value


def _dtype(value: str) -> str:
    if value not in DTYPES:
        raise ValueError(f"unknown dtype {value!r}; expected one of {', '.join(DTYPES)}")
    return value


# The JSON Schema carries the same constraints, so an editor flags a mistake as it is typed.
CIdentifier = Annotated[
    str, AfterValidator(_c_identifier), WithJsonSchema({"type": "string", "pattern": C_IDENTIFIER.pattern})
]
PythonName = Annotated[
    str, AfterValidator(_python_name), WithJsonSchema({"type": "string", "pattern": SNAKE_CASE.pattern})
]
# A parameter's Python name: the schema also lists the reserved names (docs/security.md), so an editor
# flags one as it is typed; validation gives the table it clashes with.
ParameterPythonName = Annotated[
    str,
    AfterValidator(_python_name),
    WithJsonSchema({"type": "string", "pattern": SNAKE_CASE.pattern, "not": {"enum": names.reserved_python_names()}}),
]
Version = Annotated[
    str,
    AfterValidator(_version),
    WithJsonSchema({"type": "string", "pattern": r"^\d+\.\d+\.(RC\d+|\d+)(\.alpha\d+)?$"}),
]
DType = Annotated[str, AfterValidator(_dtype), WithJsonSchema({"type": "string", "enum": list(DTYPES)})]
Status = Literal[161001, 161002]
NonEmptyText = Annotated[str, Field(min_length=1)]


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True)


class Versioned(Frozen):
    """A fact that may hold only for some CANN releases."""

    since: Version | None = None
    until: Version | None = None

    def holds_at(self, version: str) -> bool:
        return holds_at(self.since, self.until, version)

    @model_validator(mode="after")
    def _ordered_range(self):
        if self.since is not None and self.until is not None and not holds_at(self.since, None, self.until):
            raise ValueError(f"since {self.since} must be before until {self.until}")
        if self.since is not None and self.until is not None and self.since == self.until:
            raise ValueError("since and until are equal: the fact would hold for no release")
        return self


# --- provenance ------------------------------------------------------------------------------


class Source(Frozen):
    """The doc page a spec was captured from."""

    title: NonEmptyText
    url: str | None = None
    section: str | None = None
    seed: str | None = None  # file name of the scraped page under shared/seeds/, when captured from one


# --- products --------------------------------------------------------------------------------


class ProductSupport(Versioned):
    family: CIdentifier
    supported: bool = True


# --- prototypes ------------------------------------------------------------------------------


class Prototypes(Frozen):
    """Both C prototypes, in canonical form, exactly as the installed header declares them."""

    get_workspace_size: NonEmptyText
    launch: NonEmptyText


class PagePrototypes(Frozen):
    """The prototypes as the doc page prints them, where that differs from the header."""

    get_workspace_size: str | None = None
    launch: str | None = None


# --- parameters ------------------------------------------------------------------------------


class DTypeSupport(Versioned):
    """Dtypes a tensor takes on some families; with `when`, only while each named scalar or
    attribute has the given value (`when: {threshold: 0}`)."""

    families: list[CIdentifier] = Field(min_length=1)
    dtypes: list[DType] = Field(min_length=1)
    when: dict[CIdentifier, bool | int | float | str] = {}


class ScalarConstraint(Versioned):
    """A bound on a scalar's value, and the status a violation gives. With `when`, the bound holds
    only while each named attribute or scalar has the given value (`when: {isResult: true}`)."""

    op: Literal[">=", ">", "<=", "<", "!="]
    value: float | int
    status: Status = 161002
    when: dict[CIdentifier, bool | int | float | str] = {}

    @model_validator(mode="after")
    def _finite(self):
        if isinstance(self.value, float) and not math.isfinite(self.value):
            raise ValueError(f"a constraint's value must be finite, found {self.value!r}")
        return self


Role = Literal["input", "output", "scalar", "optional_scalar", "attribute"]
# What an input tensor means to a backward op, which decides its test data: the incoming gradient,
# the forward function's input, its output (test data must be a value the forward can produce:
# `forward` says how), a per-channel weight, or an input the op requires but does not read.
Meaning = Literal["gradient", "forward_input", "forward_output", "weight", "unused"]


class Parameter(Frozen):
    name: CIdentifier  # the header's name
    py_name: ParameterPythonName
    role: Role
    summary: NonEmptyText
    # tensors: dtypes per product family
    dtypes: list[DTypeSupport] = []
    optional: bool = False  # an optional tensor may be NULL
    # scalars: the aclDataType the binding creates, the value a NULL optional scalar means
    scalar_dtype: DType | None = None
    scalar_dtypes: list[DType] = []  # what the page says the library accepts for this scalar
    default: float | int | bool | str | None = None
    constraints: list[ScalarConstraint] = []
    # input tensors: what the tensor means (test data follows it); for a forward output, the
    # forward function as an expression in `x` (and the op's scalars and attributes)
    meaning: Meaning | None = None
    forward: NonEmptyText | None = None
    # attributes
    c_type: Literal["bool", "int64_t", "double", "char*", "aclIntArray*"] | None = None
    choices: list[str] = []

    @property
    def is_tensor(self) -> bool:
        return self.role in ("input", "output")

    @property
    def is_scalar(self) -> bool:
        return self.role in ("scalar", "optional_scalar")

    @model_validator(mode="after")
    def _fields_fit_role(self):
        tensor_only = {"dtypes": bool(self.dtypes), "optional": self.optional}
        scalar_only = {
            "scalar_dtype": self.scalar_dtype is not None,
            "scalar_dtypes": bool(self.scalar_dtypes),
            "constraints": bool(self.constraints),
        }
        attribute_only = {"c_type": self.c_type is not None, "choices": bool(self.choices)}
        allowed = {
            "input": tensor_only,
            "output": tensor_only,
            "scalar": scalar_only,
            "optional_scalar": scalar_only,
            "attribute": attribute_only,
        }[self.role]
        for group in (tensor_only, scalar_only, attribute_only):
            if group is allowed:
                continue
            for key, present in group.items():
                if present:
                    raise ValueError(f"{key!r} does not apply to a parameter with role {self.role!r}")
        if self.role != "input" and (self.meaning is not None or self.forward is not None):
            raise ValueError(f"'meaning' and 'forward' apply to input tensors, not to a parameter with role {self.role!r}")
        if (self.meaning == "forward_output") != (self.forward is not None):
            raise ValueError("a forward_output input needs 'forward' (the forward function of x), and only it takes one")
        if self.is_tensor and not self.dtypes:
            raise ValueError(f"tensor parameter {self.name!r} needs 'dtypes' (per product family)")
        if self.is_scalar and self.scalar_dtype is None:
            raise ValueError(f"scalar {self.name!r} needs 'scalar_dtype' (the aclDataType the binding creates)")
        if self.role == "optional_scalar" and self.default is None:
            raise ValueError(f"optional scalar {self.name!r} needs 'default': the value a NULL pointer means")
        if self.role == "attribute" and self.c_type is None:
            raise ValueError(f"attribute {self.name!r} needs 'c_type' (one of {', '.join(ATTRIBUTE_C_TYPES)})")
        if self.role == "output" and self.default is not None:
            raise ValueError("an output tensor has no default")
        return self


# --- rules -----------------------------------------------------------------------------------


class RuleBase(Versioned):
    status: Status = 161002


class SameShape(RuleBase):
    """All listed tensors have identical shapes."""

    kind: Literal["same_shape"]
    params: list[CIdentifier] = Field(min_length=2)


class SameDType(RuleBase):
    """All listed tensors have identical dtypes."""

    kind: Literal["same_dtype"]
    params: list[CIdentifier] = Field(min_length=2)


class Broadcast(RuleBase):
    """The inputs broadcast together, and the output has the broadcast shape."""

    kind: Literal["broadcast"]
    inputs: list[CIdentifier] = Field(min_length=2)
    output: CIdentifier


class BroadcastTo(RuleBase):
    """`param` broadcasts to `target`'s shape, and the broadcast result is exactly that shape."""

    kind: Literal["broadcast_to"]
    param: CIdentifier
    target: CIdentifier


class Promote(RuleBase):
    """The inputs' dtypes promote together; the promoted dtype is checked against the support table
    and the output has it."""

    kind: Literal["promote"]
    inputs: list[CIdentifier] = Field(min_length=2)
    output: CIdentifier


class Castable(RuleBase):
    """The dtype of `inputs` (promoted together when there are several) can be cast to `output`'s
    dtype, as torch.can_cast says (never down from complex to float, float to integer, or to bool);
    the output takes the promoted dtype when none is given."""

    kind: Literal["castable"]
    inputs: list[CIdentifier] = Field(min_length=1)
    output: CIdentifier


class MinRank(RuleBase):
    """Each listed tensor has at least `rank` dims."""

    kind: Literal["min_rank"]
    params: list[CIdentifier] = Field(min_length=1)
    rank: int = Field(ge=1)


class PerChannel(RuleBase):
    """`weight` has 1 element or one per channel (`input.shape[1]`; 1 when input has rank <= 1);
    `grad` (the weight's gradient) has weight's shape when weight has 1 element, else shape (C,)."""

    kind: Literal["per_channel"]
    weight: CIdentifier
    input: CIdentifier
    grad: CIdentifier | None = None


class MaxRank(RuleBase):
    kind: Literal["max_rank"]
    params: list[CIdentifier] = Field(min_length=1)
    rank: int = Field(ge=0)


class EmptyTensors(RuleBase):
    """Whether tensors with a zero-sized dim are accepted (the op then does nothing)."""

    kind: Literal["empty"]
    params: list[CIdentifier] = Field(min_length=1)
    allowed: bool


class NonContiguous(RuleBase):
    kind: Literal["non_contiguous"]
    params: list[CIdentifier] = Field(min_length=1)
    allowed: bool


Rule = Annotated[
    Union[SameShape, SameDType, Broadcast, BroadcastTo, Promote, Castable, PerChannel, MaxRank, MinRank, EmptyTensors,
          NonContiguous],
    Field(discriminator="kind"),
]


def rule_params(rule: Any) -> list[tuple[tuple, str]]:
    """Every parameter a rule names, with its location inside the rule."""
    found: list[tuple[tuple, str]] = []
    for field in ("params", "inputs"):
        for index, name in enumerate(getattr(rule, field, None) or []):
            found.append(((field, index), name))
    for field in ("output", "param", "target", "weight", "input", "grad"):
        name = getattr(rule, field, None)
        if isinstance(name, str):
            found.append(((field,), name))
    return found


# --- formula ---------------------------------------------------------------------------------


class FormulaExpr(Frozen):
    """Machine-readable maths: output py_name -> expression in the formula language, with `lets`
    (name -> expression) evaluated first, in order. See docs/formula-language.md."""

    lets: dict[PythonName, NonEmptyText] = {}
    outputs: dict[PythonName, NonEmptyText] = Field(min_length=1)


class Formula(FormulaExpr):
    latex: NonEmptyText  # retyped for the docs; never pasted into code


# --- return codes ----------------------------------------------------------------------------

Check = Literal[
    "null_pointer",
    "dtype",
    "same_dtype",
    "promote",
    "same_shape",
    "broadcast",
    "broadcast_to",
    "max_rank",
    "min_rank",
    "castable",
    "per_channel",
    "empty",
    "non_contiguous",
    "scalar_range",
    "attribute_value",
]


class ReturnCode(Versioned):
    status: Status
    check: Check
    params: list[CIdentifier] = Field(min_length=1)
    condition: NonEmptyText  # in our own words


# --- oracle ----------------------------------------------------------------------------------


class OracleConstant(Frozen):
    """An argument that is the same value on every call: `{const: 1.0}`."""

    const: str | float | int | bool | None


class OracleDTypeOf(Frozen):
    """An argument computed from the data: the torch dtype of a tensor parameter,
    `{dtype_of: grad_output}` (e.g. aten's `input_dtype`)."""

    dtype_of: PythonName


class OracleParam(Frozen):
    """A parameter passed under another keyword: `{param: approximate}`."""

    param: PythonName


# A positional argument: a parameter's py_name, or a constant, or a computed value.
OracleArg = Union[PythonName, OracleConstant, OracleDTypeOf]
# A keyword argument's value: a constant (plain value), a parameter, or a computed value.
OracleKwarg = Union[str, float, int, bool, OracleParam, OracleDTypeOf]


class AtenOracle(Frozen):
    """A direct call of an aten operator on the CPU. `args` are passed by position (parameter names,
    `{const: ...}` or `{dtype_of: ...}`), `kwargs` by keyword (a plain value is a constant,
    `{param: name}` a parameter, `{dtype_of: name}` a tensor's dtype)."""

    kind: Literal["aten"]
    op: CIdentifier
    args: list[OracleArg]
    kwargs: dict[PythonName, OracleKwarg] = {}
    disable_mkldnn: bool = False  # the oneDNN path rejects broadcasting and rounds differently
    outputs: list[PythonName] = Field(min_length=1)


class RecipeOracle(Frozen):
    """A named recipe in runtime/oracle.py (autograd, reshapes, sums)."""

    kind: Literal["recipe"]
    recipe: CIdentifier
    args: list[PythonName]
    outputs: list[PythonName] = Field(min_length=1)


Oracle = Annotated[Union[AtenOracle, RecipeOracle], Field(discriminator="kind")]


# --- defects ---------------------------------------------------------------------------------


class Defect(Versioned):
    """Where the page contradicts itself, the header or the library's behaviour."""

    kind: Literal[
        "wrong_formula", "formula_divergence", "prototype", "name", "rule", "dtype", "product", "return_code", "other"
    ]
    note: NonEmptyText
    claimed: FormulaExpr | None = None  # the page's (wrong) formula, evaluable by the audit
    observed: FormulaExpr | None = None  # what the library is known to compute instead, where that differs

    @model_validator(mode="after")
    def _formulas_only_for_formula_defects(self):
        if self.claimed is not None and self.kind != "wrong_formula":
            raise ValueError("'claimed' is the page's wrong formula: it belongs to a defect of kind 'wrong_formula'")
        if self.observed is not None and self.kind != "formula_divergence":
            raise ValueError("'observed' is what the library computes instead: it belongs to kind 'formula_divergence'")
        if self.kind == "wrong_formula" and self.claimed is None:
            raise ValueError("a 'wrong_formula' defect needs 'claimed': the page's formula as an expression")
        if self.kind == "formula_divergence" and self.observed is None:
            raise ValueError("a 'formula_divergence' defect needs 'observed': what the library computes instead")
        return self


# --- the op ----------------------------------------------------------------------------------


class OpSpec(Frozen):
    name: CIdentifier  # without the aclnn prefix: SwishBackward
    summary: NonEmptyText
    source: Source
    cann_version: Version  # the release the page describes
    library: CIdentifier = "opapi"  # op library stem, for custom ops e.g. cust_opapi
    products: list[ProductSupport] = Field(min_length=1)
    prototypes: Prototypes
    page_prototypes: PagePrototypes | None = None
    parameters: list[Parameter] = Field(min_length=1)
    rules: list[Rule] = []
    formula: Formula
    return_codes: list[ReturnCode] = Field(min_length=1)
    oracle: Oracle
    defects: list[Defect] = []

    # -- lookups

    def parameter(self, name: str) -> Parameter:
        for p in self.parameters:
            if p.name == name:
                return p
        raise KeyError(name)

    def by_role(self, *roles: str) -> list[Parameter]:
        return [p for p in self.parameters if p.role in roles]

    @property
    def snake_name(self) -> str:
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.name).lower()

    @property
    def symbol(self) -> str:
        return f"aclnn{self.name}"

    # -- cross-field checks (absolute locations, so the loader can point at the line)

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo):
        context = info.context or {}
        from .consistency import check_op  # deferred: consistency imports the model

        check_op(self, context)
        return self


def dump_spec(spec: BaseModel) -> Any:
    """The data a spec was parsed from: only the keys that were set, in model field order."""
    return spec.model_dump(mode="python", exclude_unset=True)


__all__ = [
    "OpSpec",
    "Parameter",
    "Rule",
    "ReturnCode",
    "Defect",
    "Formula",
    "FormulaExpr",
    "DTYPES",
    "STATUS_CODES",
    "FieldProblem",
    "dump_spec",
    "rule_params",
]
