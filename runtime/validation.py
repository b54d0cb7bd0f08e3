"""Validation of an op's arguments against its doc page, driven only by META (codegen/metadata.py).

`validate(meta, values, family=..., version=..., formats=...)` checks, by default in this order
(the steps of aclnngen.core.checks), and raises `AclnnValidationError` with the status the page
documents at the first violation:

1. null_pointer: a required tensor (inputs and outputs; the binding allocates outputs before
   validating) or a required scalar that is None or absent -> 161001. Optional tensors and
   optional scalars may be None; so may a parameter a behaviour profile says the implementation
   never null-checks (META "unchecked_nulls": what happens then is the caller's to model);
2. early_return: a behaviour profile's early return (META "early_returns"): when one of its
   tensors is empty on a family it holds on, nothing after this step is checked and `validate`
   returns the `EarlyReturn` (success with no work); it returns None otherwise;
3. product: the op is supported on `family` at `version` (from META "products") -> 161002;
4. dtype: every tensor's dtype is in its list for the family at `version`. For the inputs of a
   `promote` rule the promoted dtype is checked instead, and the rule's output must have the
   promoted dtype;
5. format: every tensor's format (`formats`: C name -> a name of aclnngen.core.formats; ND when
   absent) is one its spec accepts on the family at `version` (ND when it states none) -> 161002;
6. rules: every rule that holds at `version`, in spec order, by its kind's check
   (aclnngen/core/kinds) -> the rule's status;
7. scalars: a real number that fits the dtype of its aclScalar (`scalar_misfit`: 1e300 for a
   float32 scalar would become inf) -> 161002; constraints that hold at `version` (NaN satisfies
   no bound) -> the constraint's status;
8. attributes: type and `choices` -> 161002.

A behaviour profile may state another order (META "check_order"), naming a rule kind to run its
rules at that place instead of in step 6.

Everything that depends only on (META, family, version) is computed once and cached, so a repeated
call does nothing but the checks on the actual values. Values are looked up by C name; tensors are
anything with `.shape` and `.dtype`.
"""

from __future__ import annotations

import math
import numbers
import operator
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping

import numpy as np

from aclnngen.core import checks as steps
from aclnngen.core.attribute_types import ATTRIBUTE_TYPES, POINTER_C_TYPES
from aclnngen.core.attribute_types import misfit as attribute_misfit
from aclnngen.core.dtypes import CATEGORY, promote_names
from aclnngen.core.formats import ND
from aclnngen.core.kinds import kind_of
from aclnngen.core.meta import EarlyReturn, op_meta
from aclnngen.core.releases import CannVersion
from aclnngen.core.rules import (
    MetaCache,
    families_at,
    status_of,
    version_key,
)

from .errors import TENSOR_TYPES, AclnnArgumentTypeError, AclnnValidationError
from .shapes import DEFAULT_SCALAR_DTYPE, NUMPY_DTYPES, dtype_name, is_contiguous, shape_of

__all__ = ["validate", "clear_cache", "EarlyReturn"]

_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    ">=": operator.ge,
    ">": operator.gt,
    "<=": operator.le,
    "<": operator.lt,
    "!=": operator.ne,
}
_POINTER_ATTRIBUTES = POINTER_C_TYPES


# --- the plan (what a META says at one (family, version): aclnngen.core.rules) ----------------- -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Plan:
    op: str
    family: str
    version: str
    required: tuple[tuple[str, str], ...]  # (C name, "tensor" | "scalar" | "attribute")
    null_status: int
    families: tuple[str, ...]
    supported: bool
    tensors: tuple[str, ...]
    allowed: dict[str, tuple[str, ...]]
    dtype_status: int
    promotes: tuple[Mapping, ...]  # the rules whose inputs' promoted dtype the dtype check reads
    plain_dtype_params: tuple[str, ...]  # tensors whose own dtype is checked against their list
    lists: frozenset[str]  # tensor and scalar lists (aclTensorList*, aclScalarList*): sequences
    rule_checks: tuple[tuple[Callable, tuple], ...]  # (a kind's checker, its `when` as (name, value, default))
    formats: Mapping[str, tuple[str, ...]]  # tensor -> the formats it accepts on the family
    early_returns: tuple[EarlyReturn, ...]  # those that hold on the family
    order: tuple[str, ...]  # the steps (aclnngen.core.checks), rule kinds among them
    scalars: tuple[tuple[str, str], ...]  # (C name, the dtype its aclScalar is created with)
    conditional_dtypes: Mapping[str, tuple]  # name -> ((when, dtypes),): dtypes allowed only while `when` holds
    constraints: tuple[tuple[str, str, Any, int, Callable, tuple], ...]  # ..., when: ((name, value, default),)
    attributes: tuple[tuple[str, str | None, tuple[str, ...], bool], ...]

    def fail(self, status, param, check, detail, found=None, allowed=None, error=AclnnValidationError):
        raise error(
            status=status,
            op=self.op,
            param=param,
            family=self.family,
            version=self.version,
            check=check,
            detail=detail,
            found=found,
            allowed=allowed,
        )


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _fmt(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"


def _names(names) -> str:
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _build_plan(meta: Mapping, family: str, version: str) -> _Plan:
    op = op_meta(meta)
    tensors = tuple(p.name for p in op.tensors)
    required = []
    for p in op.params:
        if p.name in op.unchecked_nulls:
            continue  # the implementation never checks it: a NULL one goes through
        if p.is_tensor and not p.optional:
            required.append((p.name, "tensor"))
        elif p.role == "scalar":
            required.append((p.name, "scalar"))
        elif p.role == "attribute" and p.attr_type in _POINTER_ATTRIBUTES and p.default is None:
            required.append((p.name, "attribute"))
    families = families_at(meta, version)

    def when_of(when) -> tuple:  # (name, value, the default standing in for None)
        return tuple((k, v, op.default_of(k)) for k, v in (when or {}).items())

    conditional_dtypes = {
        p.name: tuple(
            (when_of(e.when), e.dtypes) for e in p.dtypes if e.when and family in e.families and e.holds_at(version)
        )
        for p in op.tensors
    }
    rules = op.rules_at(version, family)
    promotes = tuple(r.data for r in rules if r.kind.promotes_inputs)
    promoted_inputs = {name for r in promotes for name in r["inputs"]}
    plan_fields = dict(
        op=op.name,
        family=family,
        version=version,
        required=tuple(required),
        null_status=status_of(meta, "null_pointer", version, 161001),
        families=families,
        supported=family in families,
        tensors=tensors,
        allowed={p.name: p.dtypes_at(family, version) for p in op.tensors},
        conditional_dtypes=conditional_dtypes,
        dtype_status=status_of(meta, "dtype", version, 161002),
        promotes=promotes,
        plain_dtype_params=tuple(t for t in tensors if t not in promoted_inputs),
        lists=frozenset(p.name for p in op.params if p.is_list),
        scalars=tuple((p.name, p.scalar_dtype or DEFAULT_SCALAR_DTYPE) for p in op.params if p.is_scalar),
        constraints=tuple(
            (p.name, c.op, c.value, c.status, _COMPARE[c.op], when_of(c.when))
            for p in op.params
            if p.is_scalar
            for c in p.constraints
            if c.holds_at(version)
        ),
        attributes=tuple(
            (p.name, p.attr_type, p.choices, p.default is not None, p.dim_of)
            for p in op.params
            if p.role == "attribute"
        ),
        formats={p.name: p.formats_at(family, version) for p in op.tensors},
        early_returns=tuple(e for e in op.early_returns if e.holds_on(family)),
        order=op.check_order,
    )
    context = _Plan(rule_checks=(), **plan_fields)
    checks: list[tuple[Callable, tuple]] = []
    for rule in rules:
        check = rule.kind.checker(rule.data)
        if check is not None:
            checks.append(((rule.kind, check), when_of(rule.when)))
    return replace(context, rule_checks=tuple(checks))


_PLANS = MetaCache(_build_plan)


def clear_cache() -> None:
    """Forget every cached plan (for tests that build many throwaway METAs)."""
    _PLANS.clear()


def _allowed(plan, name: str, get) -> tuple[str, ...]:
    """The dtypes `name` may have: the plain list plus those whose condition holds for the values."""
    allowed = plan.allowed[name]
    for when, dtypes in plan.conditional_dtypes.get(name, ()):
        if all((default if get(k) is None else get(k)) == v for k, v, default in when):
            allowed = allowed + tuple(d for d in dtypes if d not in allowed)
    return allowed


# --- values -------------------------------------------------------------------------------------


def _tensor_info(plan: _Plan, name: str, value: Any):
    try:
        shape = shape_of(value)
        dtype = dtype_name(value)
    except Exception:
        plan.fail(
            161002,
            name,
            "tensor",
            f"{name} must be a tensor: {TENSOR_TYPES}; got {type(value).__name__} {_short(value)}",
            found=type(value).__name__,
            allowed=TENSOR_TYPES,
            error=AclnnArgumentTypeError,
        )
    return (shape, dtype, value)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real)


def scalar_misfit(value: Any, dtype: str) -> str | None:
    """Why the real number `value` cannot be written into an aclScalar of `dtype` ("float16",
    "int64", ...) without changing it, or None when it fits. A finite float that would become
    inf, an integer out of range or with a fraction, do not fit; NaN and +-inf are float values
    and fit any float dtype."""
    target = NUMPY_DTYPES.get(dtype) or np.dtype(dtype)
    try:
        text = repr(value)
    except ValueError:  # an int too long for str()
        text = f"<an integer of {int(value).bit_length()} bits>"
    shown = text if len(text) <= 40 else f"{text[:37]}..."
    if target.kind == "b":
        return None if value in (0, 1) else f"= {shown} does not fit the scalar's dtype {dtype} (0 or 1)"
    if target.kind == "f":
        try:
            as_float = float(value)
        except OverflowError:
            as_float = None
        if as_float is not None and (math.isnan(as_float) or math.isinf(as_float)):
            return None
        with np.errstate(over="ignore"):
            if as_float is None or np.isinf(np.asarray(as_float).astype(target)):
                limit = float(np.finfo(target).max)
                return f"= {shown} does not fit the scalar's dtype {dtype} (finite values up to +-{limit:.8g})"
        return None
    if target.kind in "iu":
        info = np.iinfo(target)
        if isinstance(value, (float, np.floating)):
            if not math.isfinite(value) or not float(value).is_integer():
                return f"= {shown} does not fit the scalar's dtype {dtype} (an integer)"
        if not info.min <= int(value) <= info.max:
            return f"= {shown} does not fit the scalar's dtype {dtype} ({info.min}..{info.max})"
        return None
    return None


def _check_attribute(plan: _Plan, name: str, c_type: str | None, choices: tuple[str, ...], value: Any):
    why = attribute_misfit(c_type, value) if c_type in ATTRIBUTE_TYPES else None
    if why is not None:
        plan.fail(
            161002,
            name,
            "attribute",
            f"{name} = {value!r} is not a valid {c_type}: {why}",
            found=value,
            allowed=c_type,
        )
    if choices and value not in choices:
        plan.fail(
            161002,
            name,
            "attribute",
            f"{name} = {value!r} is not one of {', '.join(map(repr, choices))}",
            found=value,
            allowed=choices,
        )


def _check_dim(plan: _Plan, name: str, value: Any, tensor: str, array: Any):
    """A dimension attribute lies in [-rank, rank-1] of its tensor (a 0-d tensor has -1 and 0)."""
    if value is None or array is None:
        return  # the default (0 or -1) fits every rank; a NULL tensor was refused above
    rank = len(np.shape(array))
    span = max(rank, 1)
    if not -span <= value < span:
        plan.fail(
            161002,
            name,
            "attribute",
            f"{name} = {value!r} is not a dim of {tensor} (rank {rank}); allowed {-span}..{span - 1}",
            found=value,
            allowed=f"{-span}..{span - 1}",
        )


def validate(
    meta: Mapping,
    values: Mapping[str, Any],
    *,
    family: str,
    version: str | CannVersion,
    formats: Mapping[str, str] | None = None,
) -> EarlyReturn | None:
    """Check `values` (C name -> array-like, number, attribute or None) against the op's META on
    product `family` at CANN `version`, each tensor in its format of `formats` (C name -> format
    name; ND when absent); raise AclnnValidationError at the first violation. Returns the
    `EarlyReturn` that ended the checks (a behaviour profile's), else None."""
    plan: _Plan = _PLANS.get(meta, family, version_key(version))
    get = values.get
    if plan.order == steps.STEPS:
        _check_null_pointers(plan, get)  # 1
        early = _early_return(plan, get)  # 2
        if early is not None:
            return early
        _check_family(plan)  # 3
        info = _check_dtypes(plan, get)  # 4
        _check_formats(plan, get, formats)  # 5
        _check_rules(plan, get, info)  # 6
        _check_scalars(plan, get, info)  # 7
        _check_scalar_ranges(plan, get)  # 7
        _check_attributes(plan, get)  # 8
        return None
    return _checked_in_order(plan, get, formats)


def _checked_in_order(plan: _Plan, get: Callable[[str], Any], formats) -> EarlyReturn | None:
    """The checks in a behaviour profile's order; a rule kind named there runs its rules at its
    place, the `rules` step the others."""
    placed = {s for s in plan.order if s not in steps.STEPS}
    read: dict = {}  # the tensors given, read once by the first step that needs them

    def tensors() -> dict:
        if "info" not in read:
            read["info"] = _tensors(plan, get)
        return read["info"]

    for step in plan.order:
        if step == steps.NULL_POINTER:
            _check_null_pointers(plan, get)
        elif step == steps.EARLY_RETURN:
            early = _early_return(plan, get)
            if early is not None:
                return early
        elif step == steps.PRODUCT:
            _check_family(plan)
        elif step == steps.DTYPE:
            read["info"] = _check_dtypes(plan, get)
        elif step == steps.FORMAT:
            _check_formats(plan, get, formats)
        elif step == steps.RULES:
            _check_rules(plan, get, tensors(), lambda kind: kind.name not in placed)
        elif step == steps.SCALARS:
            _check_scalars(plan, get, tensors())
            _check_scalar_ranges(plan, get)
        elif step == steps.ATTRIBUTES:
            _check_attributes(plan, get)
        else:  # a rule kind: its rules here
            _check_rules(plan, get, tensors(), lambda kind, step=step: kind.name == step)
    return None


def _early_return(plan: _Plan, get: Callable[[str], Any]) -> EarlyReturn | None:
    """2. The first early return whose tensors include an empty one."""
    for early in plan.early_returns:
        for name in early.params:
            value = get(name)
            try:
                empty = value is not None and 0 in shape_of(value)
            except Exception:  # noqa: BLE001 - not a tensor: the dtype step says so
                empty = False
            if empty:
                return early
    return None


def _check_formats(plan: _Plan, get: Callable[[str], Any], formats: Mapping[str, str] | None) -> None:
    """5. Each tensor given is in a format its spec accepts on the family (ND when unstated)."""
    for name in plan.tensors:
        if get(name) is None:
            continue
        found = (formats or {}).get(name, ND)
        allowed = plan.formats[name]
        if found not in allowed:
            plan.fail(
                161002,
                name,
                "format",
                f"{name} has format {found}, which is not accepted on family {plan.family!r}; "
                f"allowed: {', '.join(allowed)}",
                found=found,
                allowed=allowed,
            )


def _check_null_pointers(plan: _Plan, get: Callable[[str], Any]) -> None:
    """1. A required tensor, scalar or pointer attribute is not None (unless never checked)."""
    for name, what in plan.required:
        if get(name) is None:
            plan.fail(
                plan.null_status,
                name,
                "null_pointer",
                f"{name} is None (a NULL {what}); it is required",
                found=None,
                allowed=f"a {what}",
            )


def _check_family(plan: _Plan) -> None:
    """3. The op is supported on the product family at the release."""
    if not plan.supported:
        supported = ", ".join(plan.families) if plan.families else "none"
        plan.fail(
            161002,
            None,
            "product",
            f"the op is not supported on product family {plan.family!r} at CANN {plan.version}; "
            f"supported families: {supported}",
            found=plan.family,
            allowed=plan.families,
        )


def _tensors(plan: _Plan, get: Callable[[str], Any]) -> dict:
    """name -> (shape, dtype, value) of the tensors given; a value that is no tensor -> 161002."""
    info = {}
    for name in plan.tensors:
        value = get(name)
        if value is None:
            continue
        if name in plan.lists:  # each element as "name[k]"
            for k, item in enumerate(_elements(plan, name, value, "tensor")):
                info[f"{name}[{k}]"] = _tensor_info(plan, f"{name}[{k}]", item)
        else:
            info[name] = _tensor_info(plan, name, value)
    return info


def _elements(plan: _Plan, name: str, value: Any, what: str) -> Any:
    """A list parameter's value, which must be a list or tuple (of tensors or of numbers)."""
    if not isinstance(value, (list, tuple)):
        plan.fail(
            161002,
            name,
            what,
            f"{name} must be a list or tuple of {what}s; got {type(value).__name__} {_short(value)}",
            found=type(value).__name__,
            allowed=f"a sequence of {what}s",
            error=AclnnArgumentTypeError,
        )
    return value


def _check_dtypes(plan: _Plan, get: Callable[[str], Any]) -> dict:
    """4. Each tensor given is a tensor of a dtype its family allows (after promotion, for the
    inputs of a `promote` rule). Returns name -> (shape, dtype, value) of the tensors given."""
    info = _tensors(plan, get)
    for rule in plan.promotes:
        present = [(n, info[n][1]) for n in rule["inputs"] if n in info]
        if not present:
            continue
        promoted = promote_names(d for _, d in present)
        if promoted is None:
            _raise(plan, kind_of(rule), kind_of(rule).promotion(rule, info)[1])
        for name, found in present:
            allowed = _allowed(plan, name, get)
            if promoted not in allowed:
                what = f"dtype {found}" if promoted == found else f"dtype {found}, promoted to {promoted},"
                plan.fail(
                    plan.dtype_status,
                    name,
                    "dtype",
                    f"{name} has {what} which is not supported on family {plan.family!r}; "
                    f"allowed: {', '.join(allowed) or 'none'}",
                    found=found,
                    allowed=allowed,
                )
    for name in plan.plain_dtype_params:
        count = len(get(name) or ()) if name in plan.lists else None
        for key in [name] if count is None else [f"{name}[{k}]" for k in range(count)]:
            _check_own_dtype(plan, name, key, info.get(key), get)
    for rule in plan.promotes:
        _raise(plan, kind_of(rule), kind_of(rule).promotion(rule, info)[1])
    return info


def _check_own_dtype(plan: _Plan, name: str, key: str, entry, get: Callable[[str], Any]) -> None:
    """A tensor's own dtype (a list's element `key`) against the dtypes of `name`."""
    if entry is not None:
        allowed = _allowed(plan, name, get)
        if entry[1] not in allowed:
            plan.fail(
                plan.dtype_status,
                key,
                "dtype",
                f"{key} has dtype {entry[1]}, which is not supported on family {plan.family!r}; "
                f"allowed: {', '.join(allowed) or 'none'}",
                found=entry[1],
                allowed=allowed,
            )


def _check_rules(plan: _Plan, get: Callable[[str], Any], info: dict, which: Callable | None = None) -> None:
    """6. The op's rules (shapes, ranks, ...), each while its `when` holds; only those whose kind
    `which` selects, when given."""
    contiguous = _contiguity(info)
    for (kind, check), when in plan.rule_checks:
        if which is not None and not which(kind):
            continue
        # a rule with `when` holds only while each named scalar or attribute has the given value
        if all((get(k) if get(k) is not None else default) == v for k, v, default in when):
            _raise(plan, kind, check(info, contiguous))


def _contiguity(info: dict) -> Callable[[str], bool]:
    def contiguous(name: str) -> bool:
        try:
            return is_contiguous(info[name][2])
        except Exception:
            return False

    return contiguous


def _raise(plan: _Plan, kind, violation) -> None:
    """A kind's violation as the typed error, with the plan's context (op, family, version)."""
    if violation is not None:
        plan.fail(
            violation.status,
            violation.param,
            kind.name,
            violation.message,
            found=violation.found,
            allowed=violation.allowed,
        )


def _check_scalars(plan: _Plan, get: Callable[[str], Any], info: dict) -> None:
    """7. Each scalar given is a real number that fits the dtype of its aclScalar, and a finite
    one when every tensor is of an integer or bool dtype."""
    tensor_dtypes = {entry[1] for entry in info.values()}
    integer_only = bool(tensor_dtypes) and all(CATEGORY.get(d) in ("integer", "bool") for d in tensor_dtypes)
    for list_name, dtype in plan.scalars:
        whole = get(list_name)
        if list_name in plan.lists and whole is not None:  # each element as "name[k]"
            pairs = [(f"{list_name}[{k}]", v) for k, v in enumerate(_elements(plan, list_name, whole, "number"))]
        else:
            pairs = [(list_name, whole)]
        for name, value in pairs:
            _check_scalar(plan, name, dtype, value, integer_only, tensor_dtypes)


def _check_scalar(plan: _Plan, name: str, dtype: str, value: Any, integer_only: bool, tensor_dtypes) -> None:
    """One scalar (or a scalar list's element) is a real number that fits its dtype."""
    if value is not None and not _is_real(value):
        plan.fail(
            161002,
            name,
            "scalar",
            f"{name} = {value!r} is not a real number",
            found=value,
            allowed="a real number",
        )
    misfit = None if value is None else scalar_misfit(value, dtype)
    if misfit is not None:
        plan.fail(161002, name, "scalar_dtype", f"{name} {misfit}", found=value, allowed=dtype)
    if value is not None and integer_only and not math.isfinite(complex(value).real):
        # the op computes in an integer dtype, which has no NaN or inf (torch refuses it too)
        plan.fail(
            161002,
            name,
            "scalar_dtype",
            f"{name} = {value!r} cannot take part in a computation on {_names(sorted(tensor_dtypes))} tensors",
            found=value,
            allowed="a finite number",
        )


def _check_scalar_ranges(plan: _Plan, get: Callable[[str], Any]) -> None:
    """7. Each scalar given satisfies its bounds, each while its `when` holds."""
    for name, op, bound, status, compare, when in plan.constraints:
        value = get(name)
        if value is None:
            continue
        if any((default if get(k) is None else get(k)) != v for k, v, default in when):
            continue  # a conditional bound whose condition does not hold
        if value != value:  # NaN satisfies no bound
            plan.fail(
                status,
                name,
                "scalar_range",
                f"{name} is NaN, which satisfies no bound; it must be {op} {bound}",
                found=value,
                allowed=f"{op} {bound}",
            )
        if not compare(value, bound):
            plan.fail(
                status,
                name,
                "scalar_range",
                f"{name} = {value!r} is out of range; it must be {op} {bound}",
                found=value,
                allowed=f"{op} {bound}",
            )


def _check_attributes(plan: _Plan, get: Callable[[str], Any]) -> None:
    """8. Each attribute is given (or has a default), of its C type, one of its choices, and a
    dimension of its tensor when it names one."""
    for name, c_type, choices, has_default, dim_of in plan.attributes:
        value = get(name)
        if value is None:
            if has_default or c_type in _POINTER_ATTRIBUTES:
                continue  # the binding supplies the default (pointer attributes were checked above)
            plan.fail(
                161002,
                name,
                "attribute",
                f"{name} is None and has no default; a {c_type} is required",
                found=None,
                allowed=c_type,
            )
        _check_attribute(plan, name, c_type, choices, value)
        if dim_of is not None:
            _check_dim(plan, name, value, dim_of, get(dim_of))
