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

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    WithJsonSchema,
    create_model,
    model_validator,
)

from . import names
from .consistency import STATUS_CODES, check_op, rule_params  # defined there, exported here too
from .errors import FieldProblem, non_ascii
from aclnngen.core import defects as defect_kinds
from aclnngen.core.arithmetic import DEFAULT_TO_INTEGER, TO_INTEGER
from aclnngen.core.attribute_types import ATTRIBUTE_C_TYPES
from aclnngen.core.dtypes import ALL_DTYPES
from aclnngen.core.formats import FORMATS
from aclnngen.core.kinds import KIND_NAMES, KINDS, RuleKind
from aclnngen.core.kinds import Field as RuleField
from aclnngen.core.releases import RELEASE_PATTERN, VERSION_HELP, as_release, holds_at
from aclnngen.core.tiers import DEFAULT_TIER, TIERS, computes

C_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SNAKE_CASE = re.compile(r"^[a-z_][a-z0-9_]*$")

# dtype names a spec may use, as NumPy (and ml_dtypes) spell them: one list, the runtime's; the
# ABI data file maps each to its aclDataType, and a test checks the two agree.
DTYPES = ALL_DTYPES


def _c_identifier(value: str) -> str:
    if not C_IDENTIFIER.match(value):
        raise ValueError(
            f"{value!r} is not a C identifier (letters, digits, underscores; no leading digit){non_ascii(value)}"
        )
    return value


# Python keywords: no Python name of a spec may be one (the validator and the JSON Schema read this
# tuple). A parameter's py_name is also checked against the whole reserved-name table (codegen/names.py).
RESERVED_PY_NAMES: tuple[str, ...] = tuple(sorted(keyword.kwlist))


def _python_name(value: str) -> str:
    if not SNAKE_CASE.match(value):
        raise ValueError(f"{value!r} is not a snake_case Python name")
    if value in RESERVED_PY_NAMES:
        raise ValueError(f"{value!r} is a Python keyword; pick another name (softshrink uses 'lambd')")
    return value


def _version(value: str) -> str:
    """Either spelling of a release (aclnngen/core/releases.py); kept in the internal spelling."""
    release = as_release(value)
    if release is None:
        raise ValueError(f"{value!r} is not {VERSION_HELP}")
    return release


def _dtype(value: str) -> str:
    if value not in DTYPES:
        raise ValueError(f"unknown dtype {value!r}; expected one of {', '.join(DTYPES)}")
    return value


# The JSON Schema carries the same constraints, so an editor flags a mistake as it is typed.
CIdentifier = Annotated[
    str, AfterValidator(_c_identifier), WithJsonSchema({"type": "string", "pattern": C_IDENTIFIER.pattern})
]
PythonName = Annotated[
    str,
    AfterValidator(_python_name),
    WithJsonSchema({"type": "string", "pattern": SNAKE_CASE.pattern, "not": {"enum": list(RESERVED_PY_NAMES)}}),
]
# A product family's id; the generator turns FAMILY_MARK into an enum of products.yaml's families.
FAMILY_MARK = "x-aclnngen-product-family"
FamilyId = Annotated[
    str,
    AfterValidator(_c_identifier),
    WithJsonSchema({"type": "string", "pattern": C_IDENTIFIER.pattern, FAMILY_MARK: True}),
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
    WithJsonSchema({"type": "string", "pattern": RELEASE_PATTERN}),
]
DType = Annotated[str, AfterValidator(_dtype), WithJsonSchema({"type": "string", "enum": list(DTYPES)})]


def _format(value: str) -> str:
    if value not in FORMATS:
        raise ValueError(f"unknown tensor format {value!r}; expected one of {', '.join(FORMATS)}")
    return value


# A tensor format: an aclFormat member's name without its prefix (aclnngen.core.formats).
Format = Annotated[str, AfterValidator(_format), WithJsonSchema({"type": "string", "enum": list(FORMATS)})]
Status = Literal[161001, 161002]
DEFECT_KIND_NAMES = defect_kinds.NAMES
NonEmptyText = Annotated[str, Field(min_length=1)]


class Frozen(BaseModel):
    # use_attribute_docstrings: each field's docstring is its description in the JSON Schema
    model_config = ConfigDict(frozen=True, extra="forbid", strict=True, use_attribute_docstrings=True)


class Versioned(Frozen):
    """A fact that may hold only for some CANN releases."""

    since: Version | None = None
    """First CANN release at which this fact holds (inclusive); absent: since any release."""
    until: Version | None = None
    """First CANN release at which this fact no longer holds (exclusive); absent: still holds."""

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
    """Title of the doc page the spec was captured from."""
    url: str | None = None
    """Address of the doc page."""
    section: str | None = None
    """Section of the doc page, when the op is part of a larger page."""
    seed: str | None = None
    """File name of the scraped page under the seed pages (shared/seeds/), when captured from one; optional."""


# --- products --------------------------------------------------------------------------------


class ProductSupport(Versioned):
    family: FamilyId
    """A product family of specs/products.yaml."""
    supported: bool = True
    """Whether the page says the family supports the op (false: listed as unsupported)."""


# --- prototypes ------------------------------------------------------------------------------


class Prototypes(Frozen):
    """Both C prototypes, in canonical form, exactly as the installed header declares them."""

    get_workspace_size: NonEmptyText
    """The first-phase C prototype, aclnnXxxGetWorkspaceSize, in canonical form as the header declares it."""
    launch: NonEmptyText
    """The second-phase C prototype, aclnnXxx(workspace, workspaceSize, executor, stream), in canonical form."""


class PagePrototypes(Frozen):
    """The prototypes as the doc page prints them, where that differs from the header."""

    get_workspace_size: str | None = None
    """The first-phase prototype as the page prints it, where that differs from the header."""
    launch: str | None = None
    """The second-phase prototype as the page prints it, where that differs from the header."""


# --- parameters ------------------------------------------------------------------------------


class DTypeSupport(Versioned):
    """Dtypes a tensor takes on some families; with `when`, only while each named scalar or
    attribute has the given value (`when: {threshold: 0}`)."""

    families: list[FamilyId] = Field(min_length=1)
    """Product families these dtypes apply to."""
    dtypes: list[DType] = Field(min_length=1)
    """The dtypes the page lists for the parameter on those families."""
    when: dict[CIdentifier, bool | int | float | str] = {}
    """Only while each named scalar or attribute (C name) has the given value."""


class FormatSupport(Versioned):
    """Formats a tensor takes on some families (`formats: [ND, NCHW]`); a tensor with no entry
    for a family takes ND alone there."""

    families: list[FamilyId] = Field(min_length=1)
    """Product families these formats apply to."""
    formats: list[Format] = Field(min_length=1)
    """The formats the page lists for the tensor on those families (aclFormat names without ACL_FORMAT_)."""


class ScalarConstraint(Versioned):
    """A bound on a scalar's value, and the status a violation gives. With `when`, the bound holds
    only while each named attribute or scalar has the given value (`when: {isResult: true}`)."""

    op: Literal[">=", ">", "<=", "<", "!="]
    """Comparison the scalar's value must satisfy against `value`."""
    value: float | int
    """The bound the scalar is compared with."""
    status: Status = 161002
    """Status a violation gives (161002)."""
    when: dict[CIdentifier, bool | int | float | str] = {}
    """Only while each named attribute or scalar (C name) has the given value."""

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
    name: CIdentifier
    """The parameter's name in the C header."""
    py_name: ParameterPythonName
    """The keyword name in the Python binding: snake_case, not a Python keyword or reserved name."""
    role: Role
    """input / output tensor, scalar (aclScalar*), optional_scalar (may be NULL) or attribute (plain C value)."""
    summary: NonEmptyText
    """One line on what the parameter is, in our own words."""
    # tensors: dtypes per product family
    dtypes: list[DTypeSupport] = []
    """Tensors: the dtypes per product family (and per release with since/until)."""
    optional: bool = False
    """Tensors: whether the tensor may be NULL."""
    # spelt `list` in a spec; `is_list` here, as `list` would hide the builtin in the class body
    is_list: bool = Field(default=False, alias="list")
    """Tensors and scalars: a list of them (aclTensorList*, aclScalarList*): a sequence in Python, each element of the parameter's dtypes."""
    inplace: bool = False
    """Input tensors: the op also writes it (a vendor `...Ref` parameter, `aclTensor*`); the binding writes the result into the caller's array."""
    formats: list[FormatSupport] = []
    """Tensors: the formats per product family (the page's format column); absent: ND on every family."""
    # scalars: the aclDataType the binding creates, the value a NULL optional scalar means
    scalar_dtype: DType | None = None
    """Scalars: the aclDataType the binding creates the aclScalar with."""
    scalar_dtypes: list[DType] | list[DTypeSupport] = []
    """Scalars: the dtypes the page says the library accepts for this scalar: one list, or entries per product family."""
    default: float | int | bool | str | None = None
    """Optional scalars and attributes: the value a NULL (or an omitted argument) means."""
    constraints: list[ScalarConstraint] = []
    """Scalars: bounds on the value, each with the status a violation gives."""
    meaning: Meaning | None = None
    """Input tensors: what the tensor means (gradient, forward_input, forward_output, weight, unused); test data follows it."""
    forward: NonEmptyText | None = None
    """Forward outputs: the forward function as an expression in `x` (and the op's scalars and attributes)."""
    # attributes
    c_type: Literal[ATTRIBUTE_C_TYPES] | None = None  # type: ignore[valid-type]
    """Attributes: the C type (bool, int8_t, int32_t, int64_t, float, double, char*, aclIntArray*, aclFloatArray*, aclBoolArray*)."""
    choices: list[str] = []
    """Attributes of type char*: the allowed values."""
    dim_of: CIdentifier | None = None
    """int64_t attributes naming a dimension of this tensor (C name): valid from -rank to rank-1 (a 0-d tensor: -1 and 0)."""

    @property
    def is_tensor(self) -> bool:
        return self.role in ("input", "output")

    @property
    def is_scalar(self) -> bool:
        return self.role in ("scalar", "optional_scalar")

    @model_validator(mode="after")
    def _fields_fit_role(self):
        tensor_only = {"dtypes": bool(self.dtypes), "optional": self.optional, "formats": bool(self.formats)}
        scalar_only = {
            "scalar_dtype": self.scalar_dtype is not None,
            "scalar_dtypes": bool(self.scalar_dtypes),
            "constraints": bool(self.constraints),
        }
        attribute_only = {
            "c_type": self.c_type is not None,
            "choices": bool(self.choices),
            "dim_of": self.dim_of is not None,
        }
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
            raise ValueError(
                f"'meaning' and 'forward' apply to input tensors, not to a parameter with role {self.role!r}"
            )
        if (self.meaning == "forward_output") != (self.forward is not None):
            raise ValueError(
                "a forward_output input needs 'forward' (the forward function of x), and only it takes one"
            )
        if self.is_tensor and not self.dtypes:
            raise ValueError(f"tensor parameter {self.name!r} needs 'dtypes' (per product family)")
        if self.is_scalar and self.scalar_dtype is None:
            raise ValueError(f"scalar {self.name!r} needs 'scalar_dtype' (the aclDataType the binding creates)")
        if self.role == "optional_scalar" and self.default is None:
            raise ValueError(f"optional scalar {self.name!r} needs 'default': the value a NULL pointer means")
        if self.role == "attribute" and self.c_type is None:
            raise ValueError(f"attribute {self.name!r} needs 'c_type' (one of {', '.join(ATTRIBUTE_C_TYPES)})")
        if self.dim_of is not None and self.c_type != "int64_t":
            raise ValueError(f"'dim_of' applies to an int64_t attribute, not to a {self.c_type}")
        if self.inplace and (self.role != "input" or self.optional):
            raise ValueError("'inplace' applies to a required input tensor or tensor list (a vendor ...Ref parameter)")
        if self.is_list and self.role in ("optional_scalar", "attribute"):
            raise ValueError(
                f"'list' applies to tensors (aclTensorList*) and scalars (aclScalarList*), not to a parameter with role {self.role!r}"
            )
        if self.is_list and self.is_scalar and (self.default is not None or self.constraints):
            raise ValueError("a scalar list takes no 'default' or 'constraints'")
        if self.role == "output" and self.default is not None:
            raise ValueError("an output tensor has no default")
        return self


# --- rules -----------------------------------------------------------------------------------


class RuleBase(Versioned):
    status: Status = 161002
    """Status a violation of the rule gives."""
    families: list[FamilyId] = []
    """Product families the rule holds on (a page's "only on Ascend 950"); absent: every family."""
    when: dict[CIdentifier, bool | int | float | str] = {}
    """Only while each named scalar or attribute (C name) has the given value."""


_DTypePair = Annotated[list[DType], Field(min_length=2, max_length=2)]


def _rule_field(f: RuleField) -> tuple[Any, Any]:
    """A kind's field declaration (aclnngen/core/kinds) as a pydantic (type, FieldInfo)."""
    if f.type == "param list":
        return list[CIdentifier], Field(min_length=f.min_items, description=f.doc)
    if f.type == "param":
        return CIdentifier, Field(description=f.doc)
    if f.type == "optional param":
        return CIdentifier | None, Field(default=None, description=f.doc)
    if f.type == "int":
        return int, Field(ge=f.minimum, description=f.doc)
    if f.type == "bool":
        return bool, Field(description=f.doc)
    if f.type == "dtype pair list":
        return list[_DTypePair], Field(min_length=f.min_items, description=f.doc)
    if f.type == "optional dtype pair list":
        return list[_DTypePair] | None, Field(default=None, min_length=f.min_items, description=f.doc)
    if f.type == "optional dtype":
        return DType | None, Field(default=None, description=f.doc)
    raise AssertionError(f.type)  # pragma: no cover - Field checks its type


class _DeclaredRule(RuleBase):
    # A kind's fields carry their descriptions (Field(description=...)): looking for attribute
    # docstrings in the source of a model create_model builds reads this module's source once per
    # kind, a quarter of the generator's import time.
    model_config = ConfigDict(use_attribute_docstrings=False)


def _rule_model(kind: RuleKind) -> type[RuleBase]:
    """The spec model of one rule kind, built from its declarations."""
    fields = {"kind": (Literal[kind.name], Field(description=kind.kind_doc))}
    fields.update({f.name: _rule_field(f) for f in kind.fields})
    return create_model(kind.model, __base__=_DeclaredRule, __doc__=kind.doc, __module__=__name__, **fields)


# One model per registered kind, in registry order; `Rule` is their discriminated union.
RULE_MODELS: dict[str, type[RuleBase]] = {kind.name: _rule_model(kind) for kind in KINDS}
Rule = Annotated[Union[tuple(RULE_MODELS.values())], Field(discriminator="kind")]


# --- formula ---------------------------------------------------------------------------------


class FormulaExpr(Frozen):
    """Machine-readable maths: output py_name -> expression in the formula language, with `lets`
    (name -> expression) evaluated first, in order. See docs/formula-language.md."""

    lets: dict[PythonName, NonEmptyText] = {}
    """Named intermediate expressions, in the formula language (docs/formula-language.md)."""
    outputs: dict[PythonName, NonEmptyText] = Field(min_length=1)
    """One expression per output tensor (Python names), in the formula language."""


class Formula(FormulaExpr):
    latex: NonEmptyText
    """The formula in LaTeX, retyped for the docs; never pasted into code."""


# --- arithmetic ------------------------------------------------------------------------------


class ComputeRow(Frozen):
    """The dtype the library computes in for inputs stored in one of `storage` (their promoted dtype)."""

    storage: list[DType] = Field(min_length=1)
    """The inputs' dtypes this row is about."""
    compute: DType
    """The dtype the kernel computes in (a float dtype)."""
    families: list[FamilyId] = []
    """The product families it holds on; empty: every family."""


class ScalarRounding(Frozen):
    """The precision the library rounds each scalar to, for data stored in one of `storage`."""

    storage: list[DType] = Field(min_length=1)
    """The inputs' dtypes this row is about."""
    round_to: DType
    """The dtype each scalar is rounded to before computing."""
    families: list[FamilyId] = []
    """The product families it holds on; empty: every family."""


class Arithmetic(Frozen):
    """How the library computes: the compute dtype per input dtype (and family), how a float result
    becomes an integer output, and the precision scalars are rounded to. Absent: float16 and
    bfloat16 compute in float32, other dtypes in themselves (docs/formula-language.md)."""

    compute: list[ComputeRow] = []
    """Compute dtypes by input dtype; the first matching row wins."""
    to_integer: Literal[TO_INTEGER] = DEFAULT_TO_INTEGER  # type: ignore[valid-type]
    """How a float result becomes an integer output: truncate, nearest_even or floor."""
    scalars: list[ScalarRounding] = []
    """Scalar rounding by input dtype; the first matching row wins."""


# --- return codes ----------------------------------------------------------------------------

# What a return-code row is about: a pointer, a dtype, a scalar's range, an attribute's value or a
# rule kind (the registry's names, in its order).
CHECKS: tuple[str, ...] = ("null_pointer", "dtype", *KIND_NAMES, "scalar_range", "attribute_value")
Check = Literal[CHECKS]


class ReturnCode(Versioned):
    status: Status
    """161001 (a NULL pointer) or 161002 (an invalid parameter)."""
    check: Check
    """Which check gives the status: null_pointer, dtype, scalar_range or a rule kind."""
    params: list[CIdentifier] = Field(min_length=1)
    """The parameters (C names) the row is about."""
    condition: NonEmptyText
    """The condition, in our own words."""


# --- oracle ----------------------------------------------------------------------------------


class OracleConstant(Frozen):
    """An argument that is the same value on every call: `{const: 1.0}` (a list of ints for dims)."""

    const: str | float | int | bool | list[int] | None
    """The value passed on every call."""


class OracleDTypeOf(Frozen):
    """An argument computed from the data: the torch dtype of a tensor parameter,
    `{dtype_of: grad_output}` (e.g. aten's `input_dtype`)."""

    dtype_of: PythonName
    """The tensor parameter (Python name) whose torch dtype is passed."""


class OracleDType(Frozen):
    """A dtype constant: `{dtype: float32}` passes torch.float32 (e.g. aten's `input_dtype`)."""

    dtype: DType
    """The dtype passed on every call."""


class OracleExpr(Frozen):
    """An argument computed from the op's scalars and attributes, in the formula language:
    `{expr: "maximum(threshold, 0)"}` passes a number (where the vendor clamps a scalar, say)."""

    expr: NonEmptyText
    """An expression over scalars, optional scalars and attributes (docs/formula-language.md)."""


class OracleParam(Frozen):
    """A parameter passed under another keyword: `{param: approximate}`."""

    param: PythonName
    """The parameter (Python name) whose value is passed."""


# A positional argument: a parameter's py_name, or a constant, or a computed value.
OracleArg = Union[PythonName, OracleConstant, OracleDTypeOf, OracleDType, OracleExpr]
# A keyword argument's value: a constant (plain value), a parameter, or a computed value.
OracleKwarg = Union[str, float, int, bool, OracleParam, OracleDTypeOf, OracleDType, OracleExpr]


class OracleDomain(Frozen):
    """Where the oracle is consulted: `where` holds for the call's scalars and attributes. Outside
    it the vendor's op differs from PyTorch's on purpose and no single call states how."""

    where: NonEmptyText
    """A condition over scalars, optional scalars and attributes, in the formula language."""
    reason: NonEmptyText
    """Why the oracle is not consulted outside it (shown in the test ids and skip messages)."""


class AtenOracle(Frozen):
    """A direct call of an aten operator on the CPU. `args` are passed by position (parameter names,
    `{const: ...}` or `{dtype_of: ...}`), `kwargs` by keyword (a plain value is a constant,
    `{param: name}` a parameter, `{dtype_of: name}` a tensor's dtype)."""

    kind: Literal["aten"]
    """aten: call an aten operator on the CPU."""
    op: CIdentifier
    """The aten operator's name."""
    args: list[OracleArg]
    """Positional arguments: parameter names, `{const: ...}` or `{dtype_of: ...}`."""
    kwargs: dict[PythonName, OracleKwarg] = {}
    """Keyword arguments: a plain value is a constant, `{param: name}` a parameter, `{dtype_of: name}` a dtype."""
    disable_mkldnn: bool = False
    """Run with oneDNN disabled (its path rejects broadcasting and rounds differently)."""
    compute: DType | None = None
    """Compute in this dtype: input tensors are cast to it, results to the outputs' dtypes (by the
    spec's `arithmetic.to_integer` for integer outputs); absent: aten's own dtypes."""
    domain: OracleDomain | None = None
    """Where the oracle is consulted (a condition over scalars and attributes); absent: everywhere."""
    outputs: list[PythonName] = Field(min_length=1)
    """The outputs (Python names) the call returns, in order."""


class RecipeOracle(Frozen):
    """A named recipe in verify/oracle.py (autograd, reshapes, sums)."""

    kind: Literal["recipe"]
    """recipe: a named recipe of verify/oracle.py."""
    recipe: CIdentifier
    """The recipe's name."""
    args: list[PythonName]
    """Arguments: Python names of the op's parameters."""
    domain: OracleDomain | None = None
    """Where the oracle is consulted (a condition over scalars and attributes); absent: everywhere."""
    outputs: list[PythonName] = Field(min_length=1)
    """The outputs (Python names) the recipe returns, in order."""


class OracleStep(Frozen):
    """One aten call of a `steps` oracle; its result is named for the steps after it."""

    name: PythonName | list[PythonName]
    """The name of the result (a list of names when the aten op returns a tuple)."""
    op: CIdentifier
    """The aten operator's name."""
    args: list[OracleArg] = []
    """Positional arguments: parameters, earlier steps' results, `{const: ...}` or `{dtype_of: ...}`."""
    kwargs: dict[PythonName, OracleKwarg] = {}
    """Keyword arguments, as in an aten oracle (`{param: name}` may name an earlier result too)."""

    @property
    def names(self) -> list[str]:
        return [self.name] if isinstance(self.name, str) else list(self.name)


class StepsOracle(Frozen):
    """A composition of aten calls, as data: each step calls one aten operator on the op's
    parameters, constants and the results of earlier steps; `outputs` names the results returned."""

    kind: Literal["steps"]
    """steps: several aten calls in order."""
    steps: list[OracleStep] = Field(min_length=1)
    """The calls, in order."""
    disable_mkldnn: bool = False
    """Run with oneDNN disabled."""
    compute: DType | None = None
    """Compute every step in this dtype (tensors cast to it; results rounded once, at the end, to
    the outputs' dtypes); absent: each step at aten's own dtypes."""
    domain: OracleDomain | None = None
    """Where the oracle is consulted (a condition over scalars and attributes); absent: everywhere."""
    outputs: list[PythonName] = Field(min_length=1)
    """The op's outputs (Python names), each the name of a step's result."""


Oracle = Annotated[Union[AtenOracle, RecipeOracle, StepsOracle], Field(discriminator="kind")]


# --- defects ---------------------------------------------------------------------------------


class Defect(Versioned):
    """Where the page contradicts itself, the header or the library's behaviour."""

    kind: Literal[DEFECT_KIND_NAMES]  # type: ignore[valid-type]
    """What the page gets wrong (aclnngen/core/defects.py lists the kinds)."""
    note: NonEmptyText
    """What is wrong and how we know, in our own words."""
    claimed: FormulaExpr | None = None
    """The page's (wrong) formula, evaluable by the audit."""
    observed: FormulaExpr | None = None
    """What the library is known to compute instead, where that differs."""
    checks: list[Check] = []
    """The checks the implementation makes otherwise than the page says (rule kinds, `dtype`,
    `null_pointer`, ...): an audit finding about one of them is reported as recorded by this entry,
    not as new."""

    @model_validator(mode="after")
    def _formulas_only_for_formula_defects(self):
        needs = defect_kinds.kind(self.kind).formula
        for field, owner in _FORMULA_FIELD_OWNERS.items():
            if getattr(self, field) is not None and field != needs:
                raise ValueError(f"{field!r} belongs to a defect of kind {owner!r}, not {self.kind!r}")
        if needs is not None and getattr(self, needs) is None:
            raise ValueError(f"a {self.kind!r} defect needs {needs!r}: the formula as an expression")
        return self


_FORMULA_FIELD_OWNERS = {k.formula: k.name for k in defect_kinds.DEFECT_KINDS if k.formula}


# --- the op ----------------------------------------------------------------------------------


class OpSpec(Frozen):
    name: CIdentifier
    """The op's name without the aclnn prefix, e.g. SwishBackward; the file is its snake_case name."""
    summary: NonEmptyText
    """One line on what the op computes."""
    source: Source
    """The doc page the spec records."""
    cann_version: Version
    """The CANN release the page describes; unversioned facts hold at it."""
    tier: Literal[TIERS] = DEFAULT_TIER  # type: ignore[valid-type]
    """full (default): the spec has its numerics, `formula` and `oracle`; binding: everything but
    the numerics, the outputs are not computed (aclnngen/core/tiers.py)."""
    library: CIdentifier = "opapi"
    """Stem of the op library (libopapi.so: opapi; custom ops e.g. cust_opapi)."""
    products: list[ProductSupport] = Field(min_length=1)
    """Product families the page lists, supported or not, per release."""
    prototypes: Prototypes
    """Both C prototypes exactly as the installed header declares them."""
    page_prototypes: PagePrototypes | None = None
    """The prototypes as the page prints them, where that differs from the header."""
    parameters: list[Parameter] = Field(min_length=1)
    """Every parameter of the first-phase prototype before workspaceSize and executor, in C order."""
    rules: list[Rule] = []
    """Shape and dtype rules, each a named kind."""
    formula: Formula | None = None
    """What the op computes: machine-readable expressions and LaTeX (full tier only, required there)."""
    arithmetic: Arithmetic | None = None
    """How the library computes (compute dtypes, integer rounding, scalar precision); optional."""
    return_codes: list[ReturnCode] = Field(min_length=1)
    """The page's return-code table: which condition gives 161001, which 161002."""
    oracle: Oracle | None = None
    """The PyTorch operation (or recipe) that checks the references (full tier only, required there)."""
    defects: list[Defect] = []
    """Where the page contradicts itself, the header or the library; optional."""

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

    @property
    def lead_tensor(self) -> str:
        """The tensor whose dtypes a test case or an example picks from: the first input, else (an
        op that only writes, in place or a fill) the first output."""
        tensors = self.by_role("input") or self.by_role("output")
        return tensors[0].name

    @property
    def computes(self) -> bool:
        """Whether the spec has numerics (full tier): a formula, an oracle, a reference."""
        return computes(self.tier)

    # -- cross-field checks (absolute locations, so the loader can point at the line)

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo):
        context = info.context or {}
        check_op(self, context)
        return self


def dump_spec(spec: BaseModel) -> Any:
    """The data a spec was parsed from: only the keys that were set, in model field order."""
    return spec.model_dump(mode="python", exclude_unset=True, by_alias=True)


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
