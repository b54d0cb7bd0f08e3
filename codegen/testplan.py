"""Which generated test cases an op gets, with readable ids: computed once, from the spec, at generation.

The plan itself is aclnngen.core.planning and core.sweeps; the generated test module only lists
these cases and hands each to aclnngen.verify.opcheck, which builds the data and checks it.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from aclnngen.core import planning
from aclnngen.core import sweeps
from aclnngen.core.dtypes import sort_key
from aclnngen.core import dtype_combinations
from aclnngen.core.kinds import BY_NAME, kind_of
from aclnngen.core.meta import op_meta
from aclnngen.core.releases import CannVersion, newest_documented
from aclnngen.core.rules import rules_at, supported_families

from . import formula, metadata
from .consistency import oracle_domain_program, versioned_facts
from .model import OpSpec
from .products import ProductTable
from .resolve import ResolvedOp, resolve

# Data sets for the reference against the oracle; shape sets join when the op's rules allow them.
DATA_KINDS = ("adversarial", "special-values", "random")
LAYOUTS = ("contiguous", "broadcast", "non-contiguous", "offset", "empty", "rank0")
REFERENCE_LAYOUTS = ("broadcast", "rank0", "empty")  # shape sets the reference is compared on


def newest_version(spec: OpSpec) -> str:
    """The newest release the spec documents: its tests check the facts that hold then."""
    versions = [CannVersion(spec.cann_version)]
    for entity in versioned_facts(spec):
        if entity.since is not None:
            versions.append(CannVersion(entity.since))
    return str(max(versions))


def _outside_oracle_domain(spec: OpSpec, meta: dict):
    """A function of a sweep point's overrides (C names) giving its id's suffix: "" inside the
    oracle's domain (or where the generator cannot tell), else "-no-oracle-" and the reason's first
    words, so the test id says why that point is not compared with PyTorch (the test skips it)."""
    program = oracle_domain_program(spec)
    if program is None:
        return lambda overrides: ""
    condition = program.outputs[0][1].tree.args[0]  # where(condition, 1, 0)
    py = {p.name: p.py_name for p in spec.parameters}
    base = planning.scalar_values(meta)
    words = re.findall(r"[a-z0-9]+", spec.oracle.domain.reason.lower())[:6]
    suffix = "-no-oracle-" + "-".join(words)

    def outside(overrides: dict) -> str:
        values = {py[c]: v for c, v in {**base, **overrides}.items() if c in py}
        return suffix if formula.value_at(condition, values) is False else ""

    return outside


def _case(id_: str, **values) -> dict:
    return {"id": id_, **values}


def _home(families: list[str]) -> str:
    """The family the shape, scalar and null-pointer cases run on."""
    return "a2" if "a2" in families else families[0]


def _null_cases(meta: dict, home: str, label: dict[str, str]) -> list[dict]:
    return [_case(f"{label[home]}-{name}-null", family=home, param=name) for name in planning.null_cases(meta)]


def null_plan(meta: dict, products: ProductTable) -> dict:
    """The version and null-pointer cases `build` plans, from the op's META alone (a check of every
    catalog op's null pointers needs only these, and no spec loaded)."""
    version = str(newest_documented(meta))
    families = supported_families(meta, version)
    home = _home([f.id for f in products.families if f.id in families])
    return {"version": version, "nulls": _null_cases(meta, home, {f.id: f.label for f in products.families})}


def build(
    spec: OpSpec, products: ProductTable, *, meta: dict | None = None, resolved: ResolvedOp | None = None
) -> dict:
    """The cases of the op's generated tests; `meta` and `resolved` (its facts at its newest
    documented release) when already derived (codegen/view.py), else derived here."""
    meta = meta if meta is not None else metadata.build(spec)
    op = resolved if resolved is not None else resolve(spec, newest_version(spec))
    version = op.version
    label = {f.id: f.label for f in products.families}
    families = [f.id for f in products.families if f.id in op.families]
    home = _home(families)
    home_dtype = "float32"

    # a dtype every input takes on some family: the cases where all inputs have one dtype; the
    # dtypes only some inputs take join them in mixed combinations (reference_mixed)
    shared = sorted({d for family in families for d in _shared_dtypes(spec, op, family)}, key=sort_key)
    applicable = dict(planning.applicable_cases(meta, version))
    # the layouts only some family accepts feed reference cases alone: a binding-tier op has none
    layouts_anywhere = _FamilyLayouts(meta, version, families, home) if spec.computes else None

    reference = [
        _case(f"{dtype}-{data}", dtype=dtype, data=data)
        for dtype in shared
        for data in DATA_KINDS + tuple(k for k in REFERENCE_LAYOUTS if applicable.get(k) == 0)
    ]
    reference_mixed = _reference_mixed(meta, version, families, home, label, layouts_anywhere, applicable, shared)
    dtype_cases = [
        _case(f"{label[f.id]}-{dtype}-{'accepted' if ok else 'rejected'}", family=f.id, dtype=dtype, accepted=ok)
        for f in products.families
        for dtype, ok in planning.dtype_cases(meta, f.id, version)
    ]
    # Shape cases run on the home family, and on each family whose rules differ from it (a rule
    # a page states for some products only), so both sides of such a rule are tested.
    shape_cases = [
        _case(
            f"{label[family]}-{kind}-{'accepted' if status == 0 else status}",
            family=family,
            dtype=home_dtype,
            kind=kind,
            status=status,
        )
        for family in _rule_families(meta, version, families, home)
        for kind, status in planning.applicable_cases(meta, version, family=family)
    ]
    null_cases = _null_cases(meta, home, label)
    scalar_cases = [
        _case(
            f"{label[home]}-{param}-{_value_id(value)}",
            family=home,
            param=param,
            value=value,
            status=status,
            context={},
        )
        for param, value, status in planning.scalar_violations(meta, version)
    ] + [
        _case(
            f"{label[home]}-{param}-{_value_id(value)}-when-{'-'.join(f'{k}-{sweeps.value_id(v)}' for k, v in when.items())}",
            family=home,
            param=param,
            value=value,
            status=status,
            context=when,
        )
        for param, value, status, when in planning.conditional_violations(meta, version)
    ]
    home_supported = op.dtypes_of(_first_input(spec), home)
    sweep_dtype = home_dtype if home_dtype in home_supported else sorted(home_supported, key=sort_key)[0]
    outside = _outside_oracle_domain(spec, meta) if spec.computes else (lambda overrides: "")
    sweep_cases = [
        _case(
            f"{label[home]}-{param}-{sweeps.value_id(value)}{outside(overrides)}",
            family=home,
            dtype=sweep_dtype,
            overrides=overrides,
        )
        for param, value in sweeps.scalar_points(meta, version)
        for overrides in [sweeps.overrides_for(meta, version, param, value)]
    ]
    conditional = [
        _case(
            f"{label[family]}-{dtype}-when-{'-'.join(f'{k}-{sweeps.value_id(v)}' for k, v in entry.when.items())}",
            family=family,
            dtype=dtype,
            context=dict(entry.when),
        )
        for entry in _conditional_entries(spec, version)
        for family in entry.families
        if family in families
        for dtype in entry.dtypes
    ]
    return_codes = []
    for index, row in enumerate(spec.return_codes):
        if not row.holds_at(version):
            continue
        for param in row.params:
            family = _row_family(meta, version, row.check, param, families, home)
            return_codes.append(
                _case(
                    f"row{index}-{row.check}-{param}",
                    family=family,
                    row=index,
                    check=row.check,
                    param=param,
                    status=row.status,
                )
            )
    layouts = _Layouts(meta, version)
    by_family = lambda c: label[c["family"]]  # noqa: E731 - a group's id: its family's label
    binding = [
        _case(f"{label[family]}-{dtype}-{layout}", family=family, dtype=dtype, layout=layout)
        for family in families
        for dtype in op.dtypes_of(_first_input(spec), family)
        if _accepted_together(meta, dtype, version, family)
        for layout in layouts.of(family)
    ]
    if not spec.computes:  # binding tier: nothing to compare with an oracle (aclnngen/core/tiers.py)
        reference, sweep_cases = [], []
    return {
        "version": version,
        "reference": reference,
        "reference_mixed": reference_mixed if spec.computes else [],
        "binding_mixed": [
            _case(f"{c['combo']}-mixed", family=c["family"], dtypes=c["dtypes"], outputs=c["outputs"])
            for c in _unique([dict(c, id=c["combo"]) for c in reference_mixed if c["mixed"]])
        ],
        "dtypes": dtype_cases,
        "shapes": shape_cases,
        "nulls": null_cases,
        "scalars": scalar_cases,
        "sweeps": sweep_cases,
        "conditional_dtypes": _unique(conditional),
        "return_codes": return_codes,
        "binding": binding,
        # one pytest item per family (the binding's: per family and dtype), its cases looped in
        # the test (opcheck.check_group): pytest's cost per item, not the checks, dominated these
        "groups": {
            "dtypes": _grouped(dtype_cases, by_family, ("family",), ("dtype", "accepted")),
            "shapes": _grouped(shape_cases, by_family, ("family",), ("dtype", "kind", "status")),
            "nulls": _grouped(null_cases, by_family, ("family",), ("param",)),
            "return_codes": _grouped(return_codes, by_family, ("family",), ("row", "check", "param", "status")),
            "binding": _grouped(
                binding, lambda c: f"{label[c['family']]}-{c['dtype']}", ("family", "dtype"), ("dtype", "layout")
            ),
        },
    }


def _accepted_together(meta: dict, dtype: str, version: str, family: str) -> bool:
    """Whether a case asking for `dtype` (each input of its own list, the outputs as inferred,
    core/dtype_combinations.py) is accepted on `family`: a binding call is only planned for one
    that is (a page listing a dtype for an input that its output's list lacks on the family has
    no accepted call in it; the dtype tests check the lists themselves)."""
    combo = dtype_combinations.Combination(dtype_combinations.combination(meta, dtype, version, family))
    return dtype_combinations.combination_status(meta, combo, family, version) == 0


def _grouped(cases: list[dict], name: Callable[[dict], str], keys: tuple, fields: tuple) -> list[dict]:
    """`cases` as groups sharing the values of `keys`, in first-seen order, each named by `name`
    of its first case, with one row per case: (its id, its dtype for the directives, then the
    `fields` its check takes after the family)."""
    groups: dict[tuple, dict] = {}
    for case in cases:
        key = tuple(case[k] for k in keys)
        group = groups.get(key)
        if group is None:  # named and keyed once, by its first case
            group = groups[key] = {"id": name(case), "dtype": None, "rows": []}
            group.update(zip(keys, key))  # the dtype too, where the group is one dtype's
        group["rows"].append((case["id"], case.get("dtype"), *(case[f] for f in fields)))
    return list(groups.values())


def _rules_on(meta: dict, version: str, family: str) -> list[dict]:
    return list(rules_at(meta, version, family))


def _rule_names(rule: dict) -> list[str]:
    """The tensors a META rule names, whatever fields its kind uses."""
    return kind_of(rule).names(rule)


def _rule_families(meta: dict, version: str, families: list[str], home: str) -> list[str]:
    """The home family, then each family whose rules at `version` differ from every one listed."""
    chosen, seen = [home], [_rules_on(meta, version, home)]
    for family in families:
        rules = _rules_on(meta, version, family)
        if rules not in seen:
            chosen.append(family)
            seen.append(rules)
    return chosen


def _row_family(meta: dict, version: str, check: str, param: str, families: list[str], home: str) -> str:
    """Where a return-code row can be provoked: the home family, unless the rule behind the row
    holds only on other families (then the first of those)."""
    typed = op_meta(meta)
    kind = BY_NAME.get(check)
    for family in [home] + [f for f in families if f != home]:
        if not any(r.kind is kind for r in typed.rules) or any(
            r.kind is kind and param in r.kind.names(r.data) for r in typed.rules_at(version, family)
        ):
            return family
    return home


class _Layouts:
    """The layouts each family's rules accept, worked out once per distinct set of rules."""

    def __init__(self, meta: dict, version: str):
        self.meta, self.version, self.known = meta, version, {}

    def of(self, family: str) -> list[str]:
        key = tuple(id(r) for r in rules_at(self.meta, self.version, family))
        if key not in self.known:
            applicable = dict(planning.applicable_cases(self.meta, self.version, family=family))
            self.known[key] = [layout for layout in LAYOUTS if applicable.get(layout) == 0]
        return self.known[key]


def _shared_dtypes(spec: OpSpec, op: ResolvedOp, family: str) -> list[str]:
    """The dtypes every input tensor takes on `family`."""
    lists = [op.dtypes_of(p.name, family) for p in spec.parameters if p.role == "input"]
    return [d for d in (lists[0] if lists else ()) if all(d in other for other in lists[1:])]


def _dtype_families(meta: dict, version: str, families: list[str], home: str) -> list[str]:
    """The home family, then each family whose dtype lists or rules differ from every one listed."""
    chosen, seen = [], []
    for family in [home] + [f for f in families if f != home]:
        facts = (dtype_combinations.tensor_lists(meta, version, family), _rules_on(meta, version, family))
        if facts not in seen:
            chosen.append(family)
            seen.append(facts)
    return chosen


class _FamilyLayouts:
    """For each reference layout (broadcast, rank0, empty), the first family whose rules accept it."""

    def __init__(self, meta: dict, version: str, families: list[str], home: str):
        self.first: dict[str, str] = {}
        for family in [home] + [f for f in families if f != home]:
            for kind, status in planning.applicable_cases(meta, version, family=family):
                if kind in REFERENCE_LAYOUTS and status == 0:
                    self.first.setdefault(kind, family)


def _reference_mixed(meta, version, families, home, label, layouts, applicable, shared) -> list[dict]:
    """Reference-vs-oracle cases run on a family: each mixed dtype combination the family's rules
    accept (core/dtype_combinations.py) on every data set, and the layouts only some family
    accepts (which the cases without a family cannot build) with the dtypes every input takes
    (`layouts`: None for a binding-tier op, whose binding cases take the mixed ones only)."""
    found, seen = [], set()
    for family in _dtype_families(meta, version, families, home):
        for combo in dtype_combinations.mixed_combinations(meta, version, family):
            # one case per combination and the output dtypes it gets: a family whose rules give
            # the outputs other dtypes gets its own
            key = tuple(sorted(dtype_combinations.resolved(meta, combo, version, family).items()))
            if key in seen:
                continue
            seen.add(key)
            for data in DATA_KINDS:
                found.append(_mixed_case(label, family, combo, data, mixed=True))
    for kind, family in layouts.first.items() if layouts is not None else ():
        if applicable.get(kind) == 0:
            continue  # planned without a family, in the uniform reference cases
        on_family = [d for d in shared if d in dtype_combinations.tensor_lists(meta, version, family)[_first(meta)]]
        for dtype in on_family:
            combo = dtype_combinations.Combination(dtype_combinations.combination(meta, dtype, version, family))
            found.append(_mixed_case(label, family, combo, kind, mixed=False))
    return found


def _first(meta: dict) -> str:
    return op_meta(meta).by_role("input")[0].name


def _mixed_case(label, family, combo, data, mixed: bool) -> dict:
    return _case(
        f"{label[family]}-{combo.label()}-{data}",
        family=family,
        dtype=next(iter(combo.inputs.values())),
        dtypes=dict(combo.inputs),
        outputs=dict(combo.outputs),
        data=data,
        combo=f"{label[family]}-{combo.label()}",
        mixed=mixed,
    )


def _conditional_entries(spec: OpSpec, version: str):
    """Dtype entries of the first input that hold only under a condition (`when`)."""
    first = spec.parameter(_first_input(spec))
    return [e for e in first.dtypes if e.when and e.holds_at(version)]


def _unique(found: list[dict]) -> list[dict]:
    seen, out = set(), []
    for case in found:
        if case["id"] not in seen:
            seen.add(case["id"])
            out.append(case)
    return out


def _first_input(spec: OpSpec) -> str:
    return spec.lead_tensor


def _value_id(value) -> str:
    text = repr(value)
    return {"nan": "nan", "inf": "inf", "-inf": "minus-inf"}.get(text, text.replace("-", "minus").replace(".", "p"))
