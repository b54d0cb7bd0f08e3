"""An op spec as the plain data the runtime reads at call time (no YAML, no pydantic at run time).

The shape is documented here once; generated/meta/<op>.py holds one such dict per op, and
readers take it typed: `aclnngen.core.meta.op_meta(META)` builds frozen objects from it once
(each rule holding its kind from aclnngen/core/kinds).

META = {
    "name", "snake", "symbol", "library", "cann_version",
    "cdef": the two prototypes as C declarations,
    "products": [{"family", "supported", "since", "until"}],
    "params": [{"name", "py", "role", "c_type", "optional", "list" (only a list), "inplace" (only an in-place input), "dtypes": [{"families", "dtypes", "since", "until"}],
                "scalar_dtype", "scalar_dtypes", "default", "constraints": [{"op", "value", "status", "since", "until"}],
                "attr_type", "choices", "dim_of" (only a dimension attribute), "meaning",
                "formats" (only where the spec states them): [{"families", "formats", "since", "until"}]}],
    "rules": [{"kind", "status", "since", "until", ...the rule's own fields}],
    "return_codes": [{"status", "check", "params", "condition", "since", "until"}],
    "outputs": [C names of the output tensors, in order],
    "formula": {"outputs": {py name: kind}, "boundaries": [[tensor py name, threshold expression]]},
    "oracle": the oracle recipe as data,
    "arithmetic" (only where the spec states it): {"compute", "to_integer", "scalars"} (core/arithmetic.py),
    a behaviour profile's facts, only in the META runtime/profiles.py `apply` returns:
    "unchecked_nulls": [C names], "early_returns": [{"params", "families"}], "check_order": [steps],
}
"""

from __future__ import annotations

from . import cdecl, formula
from .consistency import inplace_names, program_names
from .model import OpSpec


def _versions(entity) -> dict:
    return {"since": entity.since, "until": entity.until}


def _param(p) -> dict:
    return {
        "name": p.name,
        "py": p.py_name,
        "role": p.role,
        "optional": p.optional,
        **({"list": True} if p.is_list else {}),  # absent: one tensor or scalar
        **({"inplace": True} if p.inplace else {}),  # absent: the op only reads it
        "dtypes": [_dtype_entry(d) for d in p.dtypes],
        "scalar_dtype": p.scalar_dtype,
        "scalar_dtypes": [d if isinstance(d, str) else _dtype_entry(d) for d in p.scalar_dtypes],
        "default": p.default,
        "constraints": [
            {
                "op": c.op,
                "value": c.value,
                "status": c.status,
                **_versions(c),
                **({"when": dict(c.when)} if c.when else {}),
            }
            for c in p.constraints
        ],
        "attr_type": p.c_type,
        "choices": list(p.choices),
        **({"dim_of": p.dim_of} if p.dim_of else {}),  # absent: not a dimension
        **({"meaning": p.meaning} if p.meaning else {}),  # absent: meaning by position
        **({"formats": [_format_entry(f) for f in p.formats]} if p.formats else {}),  # absent: ND
    }


def _format_entry(f) -> dict:
    return {"families": list(f.families), "formats": list(f.formats), **_versions(f)}


def _dtype_entry(d) -> dict:
    return {
        "families": list(d.families),
        "dtypes": list(d.dtypes),
        **_versions(d),
        **({"when": dict(d.when)} if d.when else {}),
    }


def _rule(rule) -> dict:
    data = rule.model_dump(mode="python")
    ordered = {"kind": data.pop("kind"), "status": data.pop("status")}
    since, until = data.pop("since"), data.pop("until")
    ordered.update(data)
    ordered.update(since=since, until=until)
    return ordered


def program(spec: OpSpec, expr) -> "formula.FormulaProgram":
    return formula.parse_program(
        expr.outputs, program_names(spec), lets=expr.lets, loc=("formula",), inplace=inplace_names(spec)
    )


def prototypes(spec: OpSpec) -> tuple:
    """The two prototypes, parsed: (get_workspace_size, launch)."""
    return cdecl.parse_prototype(spec.prototypes.get_workspace_size), cdecl.parse_prototype(spec.prototypes.launch)


def cdef(spec: OpSpec, parsed: tuple | None = None) -> str:
    gws, launch = parsed if parsed is not None else prototypes(spec)
    return f"{gws};\n{launch};\n"


def build(spec: OpSpec, prog: "formula.FormulaProgram | None" = None, parsed: tuple | None = None) -> dict:
    """The META of `spec`. `prog` (its formula) and `parsed` (its prototypes) when already parsed:
    codegen/view.py parses each once per op."""
    if spec.computes:
        prog = prog if prog is not None else program(spec, spec.formula)
    return {
        "name": spec.name,
        "snake": spec.snake_name,
        "symbol": spec.symbol,
        "library": spec.library,
        "cann_version": spec.cann_version,
        "cdef": cdef(spec, parsed),
        "products": [{"family": p.family, "supported": p.supported, **_versions(p)} for p in spec.products],
        "params": [_param(p) for p in spec.parameters],
        "rules": [_rule(r) for r in spec.rules],
        "return_codes": [
            {"status": r.status, "check": r.check, "params": list(r.params), "condition": r.condition, **_versions(r)}
            for r in spec.return_codes
        ],
        "outputs": [p.name for p in spec.by_role("output")],
        **(_numerics(spec, prog) if spec.computes else {"tier": spec.tier}),
        # absent: the default arithmetic (aclnngen/core/arithmetic.py)
        **({"arithmetic": spec.arithmetic.model_dump(mode="python")} if spec.arithmetic else {}),
    }


def _numerics(spec: OpSpec, prog: "formula.FormulaProgram") -> dict:
    """What a full-tier META says of the numerics (a binding-tier META says its tier instead)."""
    return {
        "formula": {
            "outputs": formula.classify(prog),
            "boundaries": [list(b) for b in formula.comparison_boundaries(prog)],
        },
        "oracle": spec.oracle.model_dump(mode="python"),
    }
