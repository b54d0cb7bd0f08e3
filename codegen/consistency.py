"""Checks across the fields of one op spec. Each failure names its location from the document root."""

from __future__ import annotations

import difflib
import math
from typing import TYPE_CHECKING, Any, Iterable

from . import arithmetic, cdecl, formula, names
from .errors import FieldProblem
from aclnngen.core.attribute_types import ATTRIBUTE_TYPES, POINTER_C_TYPES
from aclnngen.core.attribute_types import misfit as attribute_misfit
from aclnngen.core.externs import ORACLE_RECIPES
from aclnngen.core.externs import oracle_domain_source as oracle_domain_source_of
from aclnngen.core.tiers import NUMERIC_KEYS, REQUIRED_NUMERIC_KEYS
from aclnngen.core.kinds import BY_NAME, kind_of
from aclnngen.core.releases import CannVersion

# The two statuses every spec's return-code table must have a row for (the model re-exports it).
STATUS_CODES = {161001: "ACLNN_ERR_PARAM_NULLPTR", 161002: "ACLNN_ERR_PARAM_INVALID"}


if TYPE_CHECKING:  # pragma: no cover - type names only: the model imports this module, not the reverse
    from .model import OpSpec, Parameter

# The C type each role has in the header's first-phase prototype (pointer depth 1 everywhere).
_ROLE_BASE = {"input": "aclTensor", "output": "aclTensor", "scalar": "aclScalar", "optional_scalar": "aclScalar"}
_TRAILING = (("workspaceSize", "uint64_t", 1), ("executor", "aclOpExecutor", 2))
_LAUNCH = (("void", 1), ("uint64_t", 0), ("aclOpExecutor", 1), ("aclrtStream", 0))


def check_op(spec: "OpSpec", context: dict) -> None:
    families = context.get("families")
    if families is None:
        raise FieldProblem((), "an op spec must be loaded through aclnngen.codegen.loader (it needs the product table)")
    _unique_names(spec)
    _has_output(spec)
    _reserved(spec)
    _defaults(spec)
    _prototypes(spec)
    _products(spec, families)
    _dtypes(spec, families)
    _formats(spec, families)
    _rules(spec, families)
    _tier(spec)
    _lists(spec)
    if spec.computes:
        _formula(spec)
    _return_codes(spec)
    if spec.computes:
        _oracle(spec)
    _conditions(spec)
    _dims(spec)
    _defects(spec)


def _has_output(spec: "OpSpec") -> None:
    """A binding returns its outputs: an op must write at least one tensor."""
    if not spec.by_role("output") and not any(p.inplace for p in spec.parameters):
        raise FieldProblem(
            ("parameters",),
            "the op writes no tensor: it needs an output (role: output) or an in-place input (inplace: true)",
        )


def _unique_names(spec: "OpSpec") -> None:
    seen_c: dict[str, int] = {}
    seen_py: dict[str, int] = {}
    for i, p in enumerate(spec.parameters):
        if p.name in seen_c:
            raise FieldProblem(
                ("parameters", i, "name"), f"parameter {p.name!r} is listed twice (first as #{seen_c[p.name]})"
            )
        if p.py_name in seen_py:
            raise FieldProblem(("parameters", i, "py_name"), f"Python name {p.py_name!r} is used twice")
        seen_c[p.name] = i
        seen_py[p.py_name] = i


def _reserved(spec: "OpSpec") -> None:
    """No name of the spec clashes with a name generated code uses (codegen/names.py)."""
    problem = names.op_clash(spec.name, spec.snake_name)
    if problem:
        raise FieldProblem(("name",), f"op name {spec.name!r} is {problem}")
    for i, p in enumerate(spec.parameters):
        problem = names.c_clash(p.name)
        if problem:
            raise FieldProblem(("parameters", i, "name"), f"C name {p.name!r} is {problem}")
        problem = names.python_clash(p.py_name, output=p.role == "output")
        if problem:
            raise FieldProblem(("parameters", i, "py_name"), f"Python name {p.py_name!r} is {problem}")
    for section, expr in _formula_exprs(spec):
        for name in expr.lets:
            problem = names.python_clash(name)
            if problem:
                raise FieldProblem(section + ("lets", name), f"let name {name!r} is {problem}")


class _DefaultProblem(Exception):
    pass


def _defaults(spec: "OpSpec") -> None:
    for i, p in enumerate(spec.parameters):
        if p.default is not None:
            try:
                _check_default(p)
            except _DefaultProblem as exc:
                raise FieldProblem(("parameters", i, "default"), str(exc)) from None


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_default(p: "Parameter") -> None:
    """A default is rendered as a Python literal: it must be a finite value of the parameter's type."""
    value = p.default
    t = ATTRIBUTE_TYPES.get(p.c_type or "")
    if p.is_scalar or (t is not None and t.element in ("int", "float") and not t.is_array):
        if not _is_number(value):
            raise _DefaultProblem(f"{p.name!r} default must be a number, found {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise _DefaultProblem(f"{p.name!r} default must be finite, found {value!r}")
        if t is not None and attribute_misfit(t.c_type, value) is not None:
            raise _DefaultProblem(f"{p.name!r} default must be a value of {t.c_type}, found {value!r}")
    elif p.c_type == "bool" and not isinstance(value, bool):
        raise _DefaultProblem(f"{p.name!r} default must be true or false, found {value!r}")
    elif p.c_type == "char*" and not isinstance(value, str):
        raise _DefaultProblem(f"{p.name!r} default must be a string, found {value!r}")
    elif t is not None and t.is_array:
        raise _DefaultProblem(f"{p.name!r}: an {t.c_type} attribute has no default")


def _tier(spec: "OpSpec") -> None:
    """A full-tier spec has its numerics; a binding-tier spec has none (aclnngen/core/tiers.py)."""
    if spec.computes:
        missing = [key for key in REQUIRED_NUMERIC_KEYS if getattr(spec, key) is None]
        if missing:
            raise FieldProblem(
                (missing[0],),
                f"a full-tier spec needs {' and '.join(missing)}; a spec without numerics says `tier: binding`",
            )
        return
    for key in NUMERIC_KEYS:
        if getattr(spec, key) is not None:
            raise FieldProblem(
                (key,), f"a binding-tier spec has no {key}; to upgrade it to full tier, remove `tier: binding`"
            )
    for i, defect in enumerate(spec.defects):
        for which in ("claimed", "observed"):
            if getattr(defect, which) is not None:
                raise FieldProblem(
                    ("defects", i, which), f"a binding-tier spec has no formulas, so no {which} formula of a defect"
                )


def _formula_exprs(spec: "OpSpec"):
    if spec.formula is not None:
        yield ("formula",), spec.formula
    for i, defect in enumerate(spec.defects):
        for which in ("claimed", "observed"):
            if getattr(defect, which) is not None:
                yield ("defects", i, which), getattr(defect, which)


def _parse_page_prototype(text: str, loc: tuple):
    try:
        return cdecl.parse_prototype(text)
    except FieldProblem as exc:
        raise FieldProblem(loc, exc.message) from None


def _prototypes(spec: "OpSpec") -> None:
    loc = ("prototypes", "get_workspace_size")
    gws = cdecl.CFunction.parse_canonical(spec.prototypes.get_workspace_size, loc=loc)
    launch = cdecl.CFunction.parse_canonical(spec.prototypes.launch, loc=("prototypes", "launch"))
    if gws.name != f"{spec.symbol}GetWorkspaceSize":
        raise FieldProblem(
            loc, f"the first-phase function must be named {spec.symbol}GetWorkspaceSize, found {gws.name}"
        )
    if launch.name != spec.symbol:
        raise FieldProblem(
            ("prototypes", "launch"), f"the second-phase function must be named {spec.symbol}, found {launch.name}"
        )
    for fn, where in ((gws, loc), (launch, ("prototypes", "launch"))):
        if str(fn.returns) != "aclnnStatus":
            raise FieldProblem(where, f"{fn.name} must return aclnnStatus, found {fn.returns}")

    params = list(gws.params)
    expected_count = len(spec.parameters) + len(_TRAILING)
    if len(params) != expected_count:
        raise FieldProblem(
            loc,
            f"the prototype has {len(params)} parameters but the parameter table lists {len(spec.parameters)} "
            f"plus workspaceSize and executor ({expected_count}); they must agree one to one, in order",
        )
    for i, (c_param, p) in enumerate(zip(params, spec.parameters)):
        ploc = ("parameters", i, "name")
        if c_param.name != p.name:
            raise FieldProblem(ploc, f"parameter #{i} is {c_param.name!r} in the prototype but {p.name!r} in the table")
        _check_role_type(c_param, p, ("parameters", i))
    # by type: a header may name them otherwise (`opExecutor`), which the ABI does not see
    for (name, base, depth), c_param in zip(_TRAILING, params[len(spec.parameters) :]):
        if c_param.type.base != base or c_param.type.pointer_depth != depth:
            raise FieldProblem(
                loc,
                f"the last two parameters must be uint64_t* workspaceSize, aclOpExecutor** executor; found {c_param}",
            )
    if len(launch.params) != len(_LAUNCH) or any(
        (cp.type.base, cp.type.pointer_depth) != want for cp, want in zip(launch.params, _LAUNCH)
    ):
        raise FieldProblem(
            ("prototypes", "launch"),
            "the second phase takes (void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)",
        )
    if spec.page_prototypes is not None:
        for field, header in (("get_workspace_size", gws), ("launch", launch)):
            text = getattr(spec.page_prototypes, field)
            if text is None:
                continue
            page = _parse_page_prototype(text, ("page_prototypes", field))
            if not cdecl.diff_prototypes(header, page):
                raise FieldProblem(
                    ("page_prototypes", field),
                    "the page's prototype does not differ from the header's; record page prototypes only where they differ",
                )


def _check_role_type(c_param, p: "Parameter", loc: tuple) -> None:
    t = c_param.type
    if p.role == "attribute":
        want_type = ATTRIBUTE_TYPES[p.c_type]
        if (t.base, t.pointer_depth) != (want_type.base, want_type.pointer_depth):
            raise FieldProblem(loc + ("c_type",), f"c_type {p.c_type} does not match the prototype's {t}")
        return
    want = _ROLE_BASE[p.role]
    if p.is_list:
        want += "List"  # aclTensorList, aclScalarList
    if t.base != want or t.pointer_depth != 1:
        raise FieldProblem(
            loc + ("role",), f"role {p.role!r} means a {want}* parameter, but the prototype declares {t} {p.name}"
        )
    # a scalar is never written: a header that omits its const (`aclScalar* alpha`) declares the
    # same ABI, so only a tensor's const-ness tells an input from an output
    if p.role == "input" and not t.is_const and not p.inplace:
        raise FieldProblem(loc + ("role",), f"an input ({p.role}) is declared const in the header; found {t} {p.name}")


def _products(spec: "OpSpec", families: Iterable[str]) -> None:
    families = set(families)
    for i, product in enumerate(spec.products):
        if product.family not in families:
            raise FieldProblem(("products", i, "family"), _unknown("product family", product.family, families))
    for version in _checkpoints(spec):
        seen: dict[str, int] = {}
        for i, product in enumerate(spec.products):
            if not product.holds_at(version):
                continue
            if product.family in seen:
                raise FieldProblem(
                    ("products", i, "family"),
                    f"family {product.family!r} is listed twice for CANN {version} (entries #{seen[product.family]} and #{i}); "
                    "give them disjoint since/until ranges",
                )
            seen[product.family] = i
    if not supported_families(spec, spec.cann_version):
        raise FieldProblem(
            ("products",), f"no product family supports the op at its page's release (CANN {spec.cann_version})"
        )


def supported_families(spec: "OpSpec", version: str) -> list[str]:
    return [p.family for p in spec.products if p.holds_at(version) and p.supported]


def _dtypes(spec: "OpSpec", families: Iterable[str]) -> None:
    families = set(families)
    for i, p in enumerate(spec.parameters):
        for j, entry in enumerate(p.dtypes):
            for k, family in enumerate(entry.families):
                if family not in families:
                    raise FieldProblem(
                        ("parameters", i, "dtypes", j, "families", k), _unknown("product family", family, families)
                    )
            if len(set(entry.dtypes)) != len(entry.dtypes):
                raise FieldProblem(("parameters", i, "dtypes", j, "dtypes"), "a dtype is listed twice")
    for version in _checkpoints(spec):
        supported = supported_families(spec, version)
        for i, p in enumerate(spec.parameters):
            if not p.is_tensor:
                continue
            owner: dict[str, int] = {}
            for j, entry in enumerate(p.dtypes):
                if not entry.holds_at(version) or entry.when:  # a conditional entry adds to the plain one
                    continue
                for family in entry.families:
                    if family in owner:
                        raise FieldProblem(
                            ("parameters", i, "dtypes", j),
                            f"{p.name}: dtypes for family {family!r} are given twice for CANN {version}",
                        )
                    owner[family] = j
            missing = [f for f in supported if f not in owner]
            if missing:
                raise FieldProblem(
                    ("parameters", i, "dtypes"),
                    f"{p.name}: no dtypes for supported famil{'y' if len(missing) == 1 else 'ies'} "
                    f"{', '.join(missing)} at CANN {version}",
                )


def _formats(spec: "OpSpec", families: Iterable[str]) -> None:
    """Formats name known families, each format once per row, each family once per release."""
    families = set(families)
    for i, p in enumerate(spec.parameters):
        for j, entry in enumerate(p.formats):
            for k, family in enumerate(entry.families):
                if family not in families:
                    raise FieldProblem(
                        ("parameters", i, "formats", j, "families", k), _unknown("product family", family, families)
                    )
            if len(set(entry.formats)) != len(entry.formats):
                raise FieldProblem(("parameters", i, "formats", j, "formats"), "a format is listed twice")
    for version in _checkpoints(spec):
        for i, p in enumerate(spec.parameters):
            owner: set[str] = set()
            for j, entry in enumerate(p.formats):
                if not entry.holds_at(version):
                    continue
                twice = owner.intersection(entry.families)
                if twice:
                    raise FieldProblem(
                        ("parameters", i, "formats", j),
                        f"{p.name}: formats for family {sorted(twice)[0]!r} are given twice for CANN {version}",
                    )
                owner.update(entry.families)


def _checkpoints(spec: "OpSpec") -> list[str]:
    """Releases at which the set of holding facts can change: the page's own and every boundary."""
    points = {spec.cann_version}
    for entity in versioned_facts(spec):
        for v in (entity.since, entity.until):
            if v is not None:
                points.add(v)
    return sorted(points, key=CannVersion)


def versioned_facts(spec: "OpSpec"):
    yield from spec.products
    yield from spec.rules
    yield from spec.return_codes
    for p in spec.parameters:
        yield from p.dtypes
        yield from p.formats
        yield from p.constraints


def _rules(spec: "OpSpec", families: Iterable[str]) -> None:
    tensors = {p.name for p in spec.parameters if p.is_tensor}
    all_names = {p.name for p in spec.parameters}
    listed = {p.family for p in spec.products}
    for i, rule in enumerate(spec.rules):
        for sub, message in kind_of(rule).spec_problems(rule):
            raise FieldProblem(("rules", i) + sub, message)
        _condition(spec, rule.when, ("rules", i, "when"), None)
        roles = {f.name: f.role for f in kind_of(rule).fields if f.role}  # the fields that demand one
        for j, family in enumerate(rule.families):
            if family not in listed:
                raise FieldProblem(
                    ("rules", i, "families", j), _unknown("product family of this op", family, sorted(listed))
                )
        for sub, name in rule_params(rule):
            if name not in all_names:
                raise FieldProblem(("rules", i) + sub, _unknown("parameter", name, all_names))
            if name not in tensors:
                raise FieldProblem(
                    ("rules", i) + sub,
                    f"rule {rule.kind!r} applies to tensors; {name!r} is a {spec.parameter(name).role}",
                )
            want = roles.get(sub[0])
            if want is not None and spec.parameter(name).role != want:
                raise FieldProblem(
                    ("rules", i) + sub,
                    f"{sub[0]!r} of a {rule.kind} rule names an {want} tensor; {name!r} is an "
                    f"{spec.parameter(name).role}",
                )


def program_names(spec: "OpSpec") -> dict[str, str]:
    # a list has no formula-language value yet: a formula or oracle naming one names no parameter
    return {p.py_name: p.role for p in spec.parameters if not p.is_list}


def inplace_names(spec: "OpSpec") -> list[str]:
    """Python names of the inputs the op also writes, in prototype order: results of its formula."""
    return [p.py_name for p in spec.parameters if p.inplace]


# the return-code checks a list parameter may be named in (each element is checked alike)
_LIST_CHECKS = ("null_pointer", "dtype")


def _lists(spec: "OpSpec") -> None:
    """Tensor and scalar lists travel through the binding, the validator and the simulator; rules,
    return-code rows other than null pointers and dtypes, and formulas do not read them yet."""
    lists = {p.name for p in spec.parameters if p.is_list}
    if not lists:
        return
    for i, p in enumerate(spec.parameters):
        if p.is_list and (p.role == "output" or p.inplace) and spec.computes:
            raise FieldProblem(
                ("parameters", i, "list"), f"{p.name!r}: a formula cannot compute a tensor list it writes yet"
            )
    for i, rule in enumerate(spec.rules):
        for loc, name in rule_params(rule):
            if name in lists:
                raise FieldProblem(("rules", i) + loc, f"{name!r} is a list; a rule cannot name a list yet")
    for i, row in enumerate(spec.return_codes):
        for j, name in enumerate(row.params):
            if name in lists and row.check not in _LIST_CHECKS:
                raise FieldProblem(
                    ("return_codes", i, "params", j),
                    f"{name!r} is a list; only {' and '.join(_LIST_CHECKS)} rows may name a list",
                )


def _formula(spec: "OpSpec") -> None:
    # an in-place input's new value is a result of the formula too
    outputs = {p.py_name for p in spec.parameters if p.role == "output" or p.inplace}
    declared = set(spec.formula.outputs)
    if declared != outputs:
        missing, extra = sorted(outputs - declared), sorted(declared - outputs)
        detail = "; ".join(
            x for x in (f"missing {missing}" if missing else "", f"not outputs: {extra}" if extra else "") if x
        )
        raise FieldProblem(
            ("formula", "outputs"), f"formula outputs must be exactly the output tensors {sorted(outputs)}: {detail}"
        )
    program = formula.parse_program(
        spec.formula.outputs, program_names(spec), lets=spec.formula.lets, loc=("formula",), inplace=inplace_names(spec)
    )
    arithmetic.check(spec, program)
    for i, p in enumerate(spec.parameters):
        if p.forward is not None:
            forward_program(spec, p, loc=("parameters", i, "forward"))


FORWARD_VARIABLE = "x"  # the forward function's input in a `forward` expression


def forward_names(spec: "OpSpec", p) -> dict[str, str]:
    """Names a `forward` expression may use: `x`, the op's scalars and attributes, and the tensor
    itself as the expression's output."""
    names = {q.py_name: q.role for q in spec.parameters if q.role in ("scalar", "optional_scalar", "attribute")}
    names[FORWARD_VARIABLE] = "input"
    names[p.py_name] = "output"
    return names


def forward_program(spec: "OpSpec", p, loc: tuple):
    return formula.parse_program({p.py_name: p.forward}, forward_names(spec, p), loc=loc[:-1] + ("forward",))


def _return_codes(spec: "OpSpec") -> None:
    names = {p.name for p in spec.parameters}
    missing = sorted(set(STATUS_CODES) - {row.status for row in spec.return_codes})
    # every page's table has both (a NULL tensor, an invalid parameter); a full-tier spec states
    # both, a binding-tier one the rows its page states in a form the importer reads
    if missing and spec.computes:
        raise FieldProblem(
            ("return_codes",),
            f"the return codes need a row for {', '.join(f'{s} ({STATUS_CODES[s]})' for s in missing)}",
        )
    for i, row in enumerate(spec.return_codes):
        for j, name in enumerate(row.params):
            if name not in names:
                raise FieldProblem(("return_codes", i, "params", j), _unknown("parameter", name, names))
        if row.check == "null_pointer":
            if row.status != 161001:
                raise FieldProblem(
                    ("return_codes", i, "status"), "a null pointer gives 161001 (ACLNN_ERR_PARAM_NULLPTR)"
                )
            for j, name in enumerate(row.params):
                p = spec.parameter(name)
                pointer_attribute = p.role == "attribute" and p.c_type in POINTER_C_TYPES and p.default is None
                if p.role == "optional_scalar" or (p.role == "attribute" and not pointer_attribute) or p.optional:
                    raise FieldProblem(
                        ("return_codes", i, "params", j), f"{name!r} may be NULL; it cannot be in a null-pointer row"
                    )
        elif row.check == "dtype":  # provoked by giving the tensor a dtype outside its list
            for j, name in enumerate(row.params):
                if not spec.parameter(name).is_tensor:
                    raise FieldProblem(
                        ("return_codes", i, "params", j),
                        f"{name!r} is not a tensor (role {spec.parameter(name).role}): a dtype row names tensors, whose dtype lists it tests",
                    )
        elif row.check == "scalar_range":
            for j, name in enumerate(row.params):
                if not spec.parameter(name).constraints:
                    raise FieldProblem(
                        ("return_codes", i, "params", j), f"{name!r} has no constraints for a scalar_range row to test"
                    )
        elif row.check == "attribute_value":
            for j, name in enumerate(row.params):
                if not (spec.parameter(name).choices or spec.parameter(name).dim_of):
                    raise FieldProblem(
                        ("return_codes", i, "params", j),
                        f"{name!r} has no 'choices' or 'dim_of' for an attribute_value row to test",
                    )
        elif row.check in BY_NAME:  # a rule kind: a rule of that kind names each parameter
            covered = {n for r in spec.rules if r.kind == row.check for _, n in rule_params(r)}
            if not any(r.kind == row.check for r in spec.rules):
                raise FieldProblem(
                    ("return_codes", i, "check"), f"no rule of kind {row.check!r} backs this row; add one under 'rules'"
                )
            for j, name in enumerate(row.params):
                if name not in covered:
                    raise FieldProblem(("return_codes", i, "params", j), f"no {row.check!r} rule names {name!r}")


def _dims(spec: "OpSpec") -> None:
    """A `dim_of` names a tensor parameter; a default dim is one every rank from 0 accepts (0 or -1)."""
    tensors = [q.name for q in spec.parameters if q.is_tensor]
    for i, p in enumerate(spec.parameters):
        if p.dim_of is None:
            continue
        if p.dim_of not in tensors:
            raise FieldProblem(("parameters", i, "dim_of"), _unknown("tensor parameter", p.dim_of, tensors))
        if p.default is not None and p.default not in (0, -1):
            raise FieldProblem(
                ("parameters", i, "default"),
                f"{p.name!r} default {p.default!r} is not a dim of every rank; use 0 or -1",
            )


def _conditions(spec: "OpSpec") -> None:
    """A constraint's `when` names other scalars or attributes, with a value each can take."""
    for i, p in enumerate(spec.parameters):
        conditional = [("constraints", j, c) for j, c in enumerate(p.constraints)]
        conditional += [("dtypes", j, d) for j, d in enumerate(p.dtypes)]
        for field, j, c in conditional:
            _condition(spec, c.when, ("parameters", i, field, j, "when"), p.name)


def _condition(spec: "OpSpec", when: dict, loc: tuple, owner: str | None) -> None:
    """Each key of a `when` names another scalar or attribute, with a value it can take."""
    names = {
        q.name for q in spec.parameters if q.role in ("scalar", "optional_scalar", "attribute") and q.name != owner
    }
    for key, value in when.items():
        if key not in names:
            raise FieldProblem(loc + (key,), _unknown("scalar or attribute", key, names))
        other = spec.parameter(key)
        if other.c_type == "bool" and not isinstance(value, bool):
            raise FieldProblem(
                loc + (key,), f"{key!r} is a bool attribute; the condition needs true or false, found {value!r}"
            )
        if other.choices and value not in other.choices:
            raise FieldProblem(loc + (key,), f"{value!r} is not one of {key!r}'s choices {other.choices}")


def _oracle(spec: "OpSpec") -> None:
    py = {p.py_name for p in spec.parameters}
    outputs = [p.py_name for p in spec.by_role("output")] + [p.py_name for p in spec.parameters if p.inplace]
    tensors = {p.py_name for p in spec.parameters if p.is_tensor and p.role != "output"}
    if spec.oracle.kind == "steps":
        # an in-place input is read by the steps and is also one of their results
        _oracle_steps(spec, spec.oracle, py - {p.py_name for p in spec.by_role("output")}, tensors)
    else:
        if spec.oracle.kind == "recipe":
            if spec.oracle.recipe not in ORACLE_RECIPES:
                raise FieldProblem(
                    ("oracle", "recipe"),
                    _unknown("recipe of verify/oracle.py", spec.oracle.recipe, sorted(ORACLE_RECIPES)),
                )
        for j, arg in enumerate(spec.oracle.args):
            _oracle_ref(spec, arg, ("oracle", "args", j), py, tensors)
        for key, arg in getattr(spec.oracle, "kwargs", {}).items():
            _oracle_ref(spec, arg, ("oracle", "kwargs", key), py, tensors)
    oracle_domain_program(spec)  # a condition over scalars and attributes only
    if sorted(spec.oracle.outputs) != sorted(outputs):
        raise FieldProblem(("oracle", "outputs"), f"the oracle must produce the outputs {outputs}")


def _oracle_steps(spec: "OpSpec", oracle, py: set, tensors: set) -> None:
    """Each step names parameters or earlier results; names are new; every output is a result."""
    known, results = set(py), set()
    for i, step in enumerate(oracle.steps):
        loc = ("oracle", "steps", i)
        for j, arg in enumerate(step.args):
            _oracle_ref(spec, arg, loc + ("args", j), known, tensors | results)
        for key, arg in step.kwargs.items():
            _oracle_ref(spec, arg, loc + ("kwargs", key), known, tensors | results)
        for name in step.names:
            # an in-place input's new value is named as the input, once: later steps read it
            if name in known and not (name in inplace_names(spec) and name not in results):
                raise FieldProblem(
                    loc + ("name",), f"step result {name!r} reuses the name of a parameter or an earlier step"
                )
            known.add(name)
            results.add(name)
    for j, name in enumerate(oracle.outputs):
        if name not in results:
            raise FieldProblem(("oracle", "outputs", j), _unknown("step result", name, results))


def _oracle_ref(spec: "OpSpec", arg, loc: tuple, py: set, tensors: set) -> None:
    """An oracle argument names a parameter that exists (a dtype, an input tensor)."""
    if isinstance(arg, str) and loc[-2] == "args":
        if arg not in py:
            raise FieldProblem(loc, _unknown("parameter", arg, py))
    elif getattr(arg, "param", None) is not None and arg.param not in py:
        raise FieldProblem(loc + ("param",), _unknown("parameter", arg.param, py))
    elif getattr(arg, "dtype_of", None) is not None and arg.dtype_of not in tensors:
        raise FieldProblem(loc + ("dtype_of",), _unknown("input tensor", arg.dtype_of, tensors))
    elif getattr(arg, "expr", None) is not None:
        oracle_expression(spec, arg.expr, loc + ("expr",))


ORACLE_EXPRESSION_RESULT = "value"  # the one output of an oracle argument's expression program


def oracle_expression(spec: "OpSpec", source: str, loc: tuple):
    """An oracle argument's `expr` as a program over the op's scalars and attributes only."""
    names = {p.py_name: p.role for p in spec.parameters if p.role in ("scalar", "optional_scalar", "attribute")}
    if ORACLE_EXPRESSION_RESULT in names:
        raise FieldProblem(loc, f"a scalar or attribute named {ORACLE_EXPRESSION_RESULT!r} clashes with the result")
    names[ORACLE_EXPRESSION_RESULT] = "output"
    return formula.parse_program({ORACLE_EXPRESSION_RESULT: source}, names, loc=loc)


def oracle_domain_source(spec: "OpSpec") -> str | None:
    """The oracle's domain condition as the number the evaluator computes (1 inside, 0 outside)."""
    domain = spec.oracle.domain if spec.oracle is not None else None
    return None if domain is None else oracle_domain_source_of(domain.where)


def oracle_domain_program(spec: "OpSpec"):
    """The oracle's domain condition, parsed (None without a domain)."""
    source = oracle_domain_source(spec)
    return None if source is None else oracle_expression(spec, source, ("oracle", "domain", "where"))


def oracle_expressions(spec: "OpSpec") -> list[str]:
    """Every oracle argument's `expr`, in the order they appear, once each, then the domain."""
    oracle = spec.oracle
    if oracle is None:
        return []
    found: list[str] = [] if oracle_domain_source(spec) is None else [oracle_domain_source(spec)]
    calls = oracle.steps if oracle.kind == "steps" else [oracle] if oracle.kind == "aten" else []
    for call in calls:
        for arg in [*call.args, *call.kwargs.values()]:
            if getattr(arg, "expr", None) is not None and arg.expr not in found:
                found.append(arg.expr)
    return found


def _defects(spec: "OpSpec") -> None:
    for i, defect in enumerate(spec.defects):
        for field in ("claimed", "observed"):
            expr = getattr(defect, field)
            if expr is not None:
                formula.parse_program(
                    expr.outputs,
                    program_names(spec),
                    lets=expr.lets,
                    loc=("defects", i, field),
                    inplace=inplace_names(spec),
                )


def _unknown(what: str, name: str, known: Iterable[str]) -> str:
    known = sorted(known)
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"unknown {what} {name!r}{hint} (known: {', '.join(known)})"


def rule_params(rule: Any) -> list[tuple[tuple, str]]:
    """Every parameter a rule names, with its location inside the rule."""
    return kind_of(rule).named(rule)
