"""The data behind docstrings and reference pages: what to say about an op, not how it looks.

`op_docs` is the one entry: everything the binding's docstring, the op's reference page and its
row of the support matrix say, built once per op from the op's derived view (codegen/view.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from aclnngen.core import defects as defect_kinds
from aclnngen.core import planning
from aclnngen.core.dtypes import PROMOTION
from aclnngen.core.kinds import kind_of
from aclnngen.core.rules import supported_dtypes, supported_families

from . import cdecl
from .model import OpSpec
from .products import ProductTable
from .resolve import ResolvedOp, resolve
from .pysig import binding_signature


@dataclass(frozen=True)
class OpDocs:
    binding: dict  # the binding's docstring (binding.py.j2's `doc`)
    page: dict  # the reference page (op.md.j2's `doc`)
    support: dict  # the op's row of the support matrix (index.md.j2)


def op_docs(spec: OpSpec, products: ProductTable, package: str, meta: dict, op: ResolvedOp, parsed: tuple) -> OpDocs:
    """What the docs say of one op, with `meta` its META, `op` its facts at its newest documented
    release and `parsed` its prototypes; each table is built once, shared by docstring and page."""
    binding = binding_doc(spec, products, op)
    page = reference_page(spec, products, package, binding, meta, op, parsed)
    return OpDocs(binding, page, support_row(spec, products, op))


def _families_table(spec: OpSpec, products: ProductTable, op: ResolvedOp) -> list[dict]:
    rows = []
    for family in products.families:
        if family.id not in op.families:
            continue
        rows.append(
            {
                "label": family.label,
                "params": [
                    {"name": p.name, "dtypes": list(op.dtypes_of(p.name, family.id))}
                    for p in spec.parameters
                    if p.is_tensor
                ],
            }
        )
    return rows


def _formats_text(p) -> str:
    """The formats a tensor takes, per family and release (ND alone where the spec states none)."""
    if not p.is_tensor:
        return "—"
    if not p.formats:
        return "ND"
    parts = []
    for row in p.formats:
        text = f"{', '.join(row.formats)} on {', '.join(row.families)}"
        parts.append(text + (f" ({_versions(row)})" if _versions(row) else ""))
    return "; ".join(parts) + "; ND elsewhere"


def _versions(entity) -> str:
    if entity.since and entity.until:
        return f"CANN {entity.since} to before {entity.until}"
    if entity.since:
        return f"since CANN {entity.since}"
    if entity.until:
        return f"before CANN {entity.until}"
    return ""


def _rule_text(rule, products: ProductTable) -> str:
    """A rule's sentence, qualified by the families it holds on (a rule the page states for some
    products only is never shown as if it held everywhere) and its releases."""
    labels = {f.id: f.label for f in products.families}
    where = f"on {', '.join(labels.get(f, f) for f in rule.families)} only" if rule.families else ""
    qualifiers = "; ".join(q for q in (where, _versions(rule)) if q)
    return kind_of(rule).sentence(rule) + (f" ({qualifiers})" if qualifiers else "")


def _scalars(spec: OpSpec) -> list[dict]:
    rows = []
    for p in spec.parameters:
        if p.role in ("scalar", "optional_scalar", "attribute"):
            rows.append(
                {
                    "name": p.name,
                    "py": p.py_name,
                    "role": p.role,
                    "summary": p.summary,
                    "default": p.default,
                    "when_null": (
                        f"means {p.default}" if p.role == "optional_scalar" else "required: NULL gives 161001"
                    ),
                    "constraints": [
                        f"{p.py_name} {c.op} {c.value}" + (f" ({_versions(c)})" if _versions(c) else "")
                        for c in p.constraints
                    ],
                }
            )
    return rows


def binding_doc(spec: OpSpec, products: ProductTable, op: ResolvedOp) -> dict:
    return {
        "version": op.version,
        "families": _families_table(spec, products, op),
        "rules": [_rule_text(r, products) for r in spec.rules],
        "return_codes": [
            {"status": r.status, "condition": r.condition, "versions": _versions(r)} for r in spec.return_codes
        ],
        "scalars": _scalars(spec),
        # the outputs, then the inputs the op writes in place (as the call returns them)
        "returns": ", ".join(
            [p.py_name for p in spec.by_role("output")] + [p.py_name for p in spec.parameters if p.inplace]
        ),
        "signature": binding_signature(spec),
    }


def promotion_tables(spec: OpSpec, op: ResolvedOp) -> list[dict]:
    """For each promote rule, the table it implies over the dtypes the inputs accept anywhere:
    row dtype x column dtype -> the promoted dtype, marked when no family supports the result."""
    tables = []
    for rule in spec.rules:
        if not kind_of(rule).promotes_inputs:
            continue
        accepted = sorted({d for f in op.families for name in rule.inputs for d in op.dtypes_of(name, f)})
        output_ok = {d for f in op.families for d in op.dtypes_of(rule.output, f)}
        rows = []
        for a in accepted:
            cells = []
            for b in accepted:
                promoted = PROMOTION.get((a, b))
                cells.append(
                    "—" if promoted is None else promoted if promoted in output_ok else f"{promoted} (unsupported)"
                )
            rows.append({"dtype": a, "cells": cells})
        tables.append({"inputs": list(rule.inputs), "output": rule.output, "dtypes": accepted, "rows": rows})
    return tables


def reference_page(
    spec: OpSpec, products: ProductTable, package: str, binding: dict, meta: dict, op: ResolvedOp, parsed: tuple
) -> dict:
    """The page: the binding's docstring data (`binding`) and what only the page shows; `parsed`:
    the header's prototypes, parsed (get_workspace_size, launch)."""
    data = dict(binding)
    data["example"] = python_example(spec, package, meta, binding["signature"], op.version)
    # the page's own release shows its own table; the newest one's is the docstring's
    page_op = op if spec.cann_version == op.version else resolve(spec, spec.cann_version)
    data.update(
        page_families=binding["families"] if page_op is op else _families_table(spec, products, page_op),
        prototypes=[spec.prototypes.get_workspace_size, spec.prototypes.launch],
        page_differences=_page_differences(spec, parsed),
        promotions=promotion_tables(spec, op),
        params=[
            {"name": p.name, "py": p.py_name, "role": p.role, "summary": p.summary, "formats": _formats_text(p)}
            for p in spec.parameters
        ],
        defects=[
            {
                "kind": d.kind,
                "title": defect_kinds.kind(d.kind).title,
                "note": d.note,
                "versions": _versions(d),
                "claimed": d.claimed,
                "observed": d.observed,
            }
            for d in spec.defects
        ],
    )
    return data


def python_example(spec: OpSpec, package: str, meta: dict, signature: dict, version: str) -> list[str]:
    """A short call of the binding (`signature`, pysig.binding_signature), with the shapes, dtype
    and scalar values the generated tests use for the contiguous case (core/planning.py), as lines
    of Python."""
    first = spec.lead_tensor
    families = supported_families(meta, version)
    dtypes = supported_dtypes(meta, first, families[0], version) if families else ()
    dtype = "float32" if "float32" in dtypes else (dtypes[0] if dtypes else "float32")
    shapes = planning.case_shapes(meta, "contiguous", version)
    scalars = planning.scalar_values(meta)
    np_dtype = "ml_dtypes.bfloat16" if dtype == "bfloat16" else f"np.{dtype}"
    lines = ["import numpy as np"] + (["import ml_dtypes"] if dtype == "bfloat16" else [])
    lines += [f"from {package}.ops.{spec.snake_name} import {spec.snake_name}", ""]
    lines.append("rng = np.random.default_rng(0)")
    args = []
    for p in signature["positional"]:
        if p.default is not None:
            continue  # optional: left to its default
        if p.c_name in shapes:
            lines.append(f"{p.name} = rng.standard_normal({shapes[p.c_name]!r}).astype({np_dtype})")
            args.append(p.name)
        else:
            args.append(repr(scalars.get(p.c_name)))
    results = ", ".join(signature["outputs"])
    lines.append(f"{results} = {spec.snake_name}({', '.join(args)})")
    return lines


def _page_differences(spec: OpSpec, parsed: tuple) -> list[str]:
    if spec.page_prototypes is None:
        return []
    out = []
    for field, header in zip(("get_workspace_size", "launch"), parsed):
        text = getattr(spec.page_prototypes, field)
        if text:
            out += cdecl.diff_prototypes(header, cdecl.parse_prototype(text))
    return out


def support_row(spec: OpSpec, products: ProductTable, op: ResolvedOp) -> dict:
    """One op's row of the support matrix: its first input's dtypes per product family, at its
    newest documented release (`op`)."""
    version = op.version
    first_input = spec.parameter(spec.lead_tensor)
    cells = []
    for family in products.families:
        dtypes = op.dtypes_of(first_input.name, family.id) if family.id in op.families else ()
        cells.append(", ".join(dtypes) if dtypes else "—")
    return {"op": spec.name, "snake": spec.snake_name, "version": version, "cells": cells}


def matrix_of(rows: list[dict], products: ProductTable) -> dict:
    """op x product x dtype, from each op's `support_row`."""
    return {"families": [f.label for f in products.families], "rows": rows}
