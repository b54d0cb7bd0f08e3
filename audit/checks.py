"""What the audit checks for one op, and which sources can answer each check.

Parameter checks and return codes are the library's to answer (`sim`, `cann`), never PyTorch's:
torch accepts float64, rank 9 and broadcasting where aclnn does not, and that is not a finding.
Numerics and the page's formula are answered by `torch` (or `cann`, on real data). Recorded page
defects come from the spec itself (`spec`).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Mapping

import numpy as np

from aclnngen.core.formats import FORMATS, ND
from aclnngen.core.meta import op_meta
from aclnngen.core.rules import supported_dtypes, supported_families
from aclnngen.core import planning, sweeps
from aclnngen.core.kinds import cases_probing
from aclnngen.verify import cases, opcheck

from .findings import Finding
from .probe import ProbeError, bound_op, first_phase, on_source, probe_snippet

# check -> the sources that can answer it
ANSWERED_BY = {
    "dtype": ("sim", "cann"),
    "shape": ("sim", "cann"),
    "return_code": ("sim", "cann"),
    "numerics": ("torch", "cann"),
    "formula": ("torch",),
    "defect": ("spec",),
}

# shape case -> the spec checks (rule kinds) that decide it: a finding of the case is about them
CASE_CHECKS = cases_probing()


@dataclass
class OpAudit:
    """The findings of one op on one source, and how many claims were checked."""

    op: str
    source: str
    findings: list[Finding] = field(default_factory=list)
    checked: int = 0
    claims: int = 0
    matrix: dict = field(default_factory=dict)  # family -> dtype -> one of the four OpInfo sets
    # family -> dtype -> what the dtype works with only (partial support): "only when threshold=0",
    # "not with non-contiguous", ...
    partial: dict = field(default_factory=dict)
    conditions: dict = field(default_factory=dict)  # family -> dtype -> the `when` it works under only
    errors: list[str] = field(default_factory=list)  # probes that could not reach the library
    # dtype -> counts of log10 relative error of the opmath reference against the float64 golden on
    # benign data, in HISTOGRAM_EDGES bins (for the report's error-distribution picture)
    error_histogram: dict = field(default_factory=dict)
    release: str = ""  # the CANN release audited (the spec's facts and the library's, at it)
    socs: dict = field(default_factory=dict)  # family -> the SoC it was probed as


def _op(snake: str) -> opcheck.OpUnderTest:
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    reference = importlib.import_module(f"aclnngen.generated.reference.{snake}")
    binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake)
    return opcheck.OpUnderTest(meta, reference=reference, binding=binding, version=str(_newest(meta)))


def _newest(meta: Mapping) -> str:
    from aclnngen.core.releases import known_releases

    return str(known_releases(meta)[-1])


def audit_op(snake: str, source: str, *, profile: str | None = None, family: str | None = None) -> OpAudit:
    """Every check `source` can answer, for op `snake` of the generated package."""
    return audit(_op(snake), bound_op(snake), source, profile=profile, family=family)


def audit(
    op: opcheck.OpUnderTest, call, source: str, *, profile: str | None = None, family: str | None = None
) -> OpAudit:
    """Every check `source` can answer: the claims are `op.meta`'s (the spec's), the behaviour is
    the library's through `call` (a bound op) and the oracle's."""
    result = OpAudit(op.name, source, release=str(op.version))
    if source in ("sim", "cann"):
        _library_checks(call, op, source, profile, result, only_family=family)
    if source in ("torch", "cann"):
        _numeric_checks(op, source, result)
    return result


# --- what the library accepts ------------------------------------------------------------------


def _library_checks(call, op, source: str, profile: str | None, result: OpAudit, only_family: str | None) -> None:
    meta, version = op.meta, op.version
    typed = op_meta(meta)
    snake = typed.snake
    families = [p.family for p in typed.products]
    if only_family is not None:
        families = [f for f in families if f == only_family]
    supported = supported_families(meta, version)

    def probe(values, family):
        return first_phase(call, meta, values)

    def repro(values, family):
        return probe_snippet(snake, meta, values, family, version, profile, source)

    for family in families:
        with on_source(source, family, version, profile):
            result.socs[family] = _soc_name()
            sets = result.matrix.setdefault(family, {})
            for dtype, claimed in planning.dtype_cases(meta, family, version):
                # every dtype is a claim: listed (it works) or not listed (it is refused)
                values = cases.make_values(meta, "contiguous", dtype, version=version, family=family)
                status = _counted(probe, values, family, result)
                if status is None:
                    continue
                works = status == 0
                sets[dtype] = (
                    "claimed, works"
                    if claimed and works
                    else "claimed, rejected"
                    if claimed
                    else "not claimed, works"
                    if works
                    else "not claimed, rejected"
                )
                if claimed != works:
                    result.findings.append(
                        Finding(
                            op.name,
                            "dtype",
                            f"{dtype} on {family}",
                            "mismatch" if claimed else "undocumented",
                            source,
                            family,
                            "supported" if claimed else "not listed",
                            "accepted" if works else f"rejected with {status}",
                            repro(values, family),
                            checks=("dtype",),
                        )
                    )
            if family not in supported:
                continue
            _partial_support(op, family, sets, probe, repro, source, result)
            home = (
                "float32"
                if "float32" in supported_dtypes(meta, typed.by_role("input")[0].name, family, version)
                else (supported_dtypes(meta, typed.by_role("input")[0].name, family, version) or ("float32",))[0]
            )
            for kind, expected in planning.applicable_cases(meta, version, family=family, dtype=home):
                values = _broadcast_outputs(
                    meta, cases.make_values(meta, kind, home, version=version, family=family), kind
                )
                status = _counted(probe, values, family, result)
                if status is None:
                    continue
                if (status == 0) != (expected == 0):
                    result.findings.append(
                        Finding(
                            op.name,
                            "shape",
                            f"{kind} on {family}",
                            "mismatch" if expected == 0 else "undocumented",
                            source,
                            family,
                            "accepted" if expected == 0 else f"rejected with {expected}",
                            "accepted" if status == 0 else f"rejected with {status}",
                            repro(values, family),
                            checks=CASE_CHECKS.get(kind, ()),
                        )
                    )
            base = cases.make_values(meta, "contiguous", home, version=version, family=family)
            _null_defaults(call, op, base, family, source, result)
            _formats(call, op, base, family, profile, source, result)
            for index, row in enumerate(typed.return_codes):
                if not row.holds_at(version):
                    continue
                for param in row.params:
                    if row.check == "null_pointer" and param in typed.outputs:
                        continue  # the binding allocates an output it is not given: no NULL reaches the library
                    result.claims += 1
                    try:
                        values = opcheck._violate(op, dict(base), row.check, param, family)
                        status = probe(values, family)
                    except (ProbeError, AssertionError, StopIteration, ValueError, IndexError) as exc:
                        result.errors.append(f"row {index} ({row.check}: {param}): {exc}")
                        continue
                    result.checked += 1
                    if status != row.status:
                        result.findings.append(
                            Finding(
                                op.name,
                                "return_code",
                                f"row {index} ({row.check}: {param}) on {family}",
                                "mismatch",
                                source,
                                family,
                                f"status {row.status}",
                                "accepted" if status == 0 else f"status {status}",
                                repro(values, family),
                                checks=(row.check,),
                            )
                        )


def _soc_name() -> str:
    from aclnngen.runtime import session

    return session.soc_name() or "unknown"


def _counted(probe, values: dict, family: str, result: OpAudit) -> int | None:
    """The probe's status, counted as one claim checked; None (and an error noted, the claim
    counted but not checked) when the probe could not reach the library."""
    result.claims += 1
    try:
        status = probe(values, family)
    except ProbeError as exc:
        result.errors.append(str(exc))
        return None
    result.checked += 1
    return status


def condition_text(when: Mapping) -> str:
    """A `when` condition as the report writes it: `threshold=0`."""
    return ", ".join(f"{k}={v}" for k, v in when.items())


def _conditional_claims(meta: Mapping, family: str, version: str) -> dict[str, list[dict]]:
    """dtype -> the `when` conditions under which every tensor's page list has it (conditional
    rows, `when: {threshold: 0}`), for dtypes the unconditional lists lack."""
    tensors = op_meta(meta).tensors
    found: dict[str, list[dict]] = {}
    for p in tensors:
        for row in p.dtypes:
            if row.when and family in row.families and row.holds_at(version):
                for dtype in row.dtypes:
                    if row.when not in found.setdefault(dtype, []):
                        found[dtype].append(dict(row.when))
    return {
        d: whens
        for d, whens in found.items()
        if all(
            d in supported_dtypes(meta, t.name, family, version)
            or any(d in r.dtypes and r.when for r in t.dtypes if family in r.families)
            for t in tensors
        )
    }


def _partial_support(op, family: str, sets: dict, probe, repro, source: str, result: OpAudit) -> None:
    """Partial support: a dtype the page claims only under a condition is probed with the
    condition holding; a dtype that works on contiguous data is probed with every other shape
    case the page accepts for it. A dtype that works with some and not others is recorded in
    `result.partial`; where that contradicts the page, it is a finding."""
    meta, version = op.meta, op.version
    notes = result.partial.setdefault(family, {})
    for dtype, whens in _conditional_claims(meta, family, version).items():
        for when in whens:
            values = cases.make_values(meta, "contiguous", dtype, version=version, family=family)
            values.update(when)
            status = _counted(probe, values, family, result)
            if status is None:
                continue
            condition = condition_text(when)
            if status == 0 and sets.get(dtype, "").endswith("rejected"):
                notes[dtype] = f"works only when {condition}"
                result.conditions.setdefault(family, {})[dtype] = dict(when)
            elif status != 0:
                result.findings.append(
                    Finding(
                        op.name,
                        "dtype",
                        f"{dtype} on {family} when {condition}",
                        "mismatch",
                        source,
                        family,
                        "supported",
                        f"rejected with {status}",
                        repro(values, family),
                        checks=("dtype",),
                    )
                )
    for dtype, verdict in sets.items():
        if verdict != "claimed, works":
            continue
        rejected = []
        for kind, expected in planning.applicable_cases(meta, version, family=family, dtype=dtype):
            if kind == "contiguous" or expected != 0:
                continue
            values = _broadcast_outputs(
                meta, cases.make_values(meta, kind, dtype, version=version, family=family), kind
            )
            status = _counted(probe, values, family, result)
            if status:
                rejected.append(kind)
                result.findings.append(
                    Finding(
                        op.name,
                        "dtype",
                        f"{dtype} on {family}, {kind}",
                        "mismatch",
                        source,
                        family,
                        "accepted",
                        f"rejected with {status}",
                        repro(values, family),
                        checks=("dtype",) + CASE_CHECKS.get(kind, ()),
                    )
                )
        if rejected:
            notes[dtype] = "not with " + ", ".join(rejected)


def _formats(call, op, base: dict, family: str, profile: str | None, source: str, result: OpAudit) -> None:
    """Each tensor in each format its spec accepts on the family (but ND, which every other probe
    uses) must be accepted, and in the first format it does not accept, refused with 161002."""
    typed = op_meta(op.meta)
    for param in typed.tensors:
        claimed = param.formats_at(family, op.version)
        unclaimed = next(f for f in FORMATS if f not in claimed)
        for fmt, expected in [(f, 0) for f in claimed if f != ND] + [(unclaimed, 161002)]:
            formats = {param.py: fmt}
            result.claims += 1
            try:
                status = first_phase(call, op.meta, base, formats)
            except ProbeError as exc:
                result.errors.append(str(exc))
                continue
            result.checked += 1
            if (status == 0) != (expected == 0):
                result.findings.append(
                    Finding(
                        op.name,
                        "format",
                        f"{param.name} in {fmt} on {family}",
                        "mismatch" if expected == 0 else "undocumented",
                        source,
                        family,
                        "accepted" if expected == 0 else f"rejected with {expected}",
                        "accepted" if status == 0 else f"rejected with {status}",
                        probe_snippet(typed.snake, op.meta, base, family, op.version, profile, source, formats),
                        checks=("format",),
                    )
                )


def _null_defaults(call, op, base: dict, family: str, source: str, result: OpAudit) -> None:
    """A NULL optional scalar behaves as its documented default: the same call made both ways
    (both phases, on the same data) gives the same bits."""
    typed = op_meta(op.meta)
    for p in typed.by_role("optional_scalar"):
        outputs = []
        for value in (None, p.default):
            values = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in base.items()}
            values[p.name] = value
            try:
                got = call(*[values.get(q.name) for q in typed.params], validate=False)
            except Exception as exc:  # a library error is an answer too: the two ways must agree
                got = (f"{type(exc).__name__}: {getattr(exc, 'status', '')}",)
            outputs.append(got if isinstance(got, tuple) else (got,))
        result.checked += 1
        result.claims += 1
        same = all(_same(a, b) for a, b in zip(*outputs))
        if not same:
            result.findings.append(
                Finding(
                    op.name,
                    "default",
                    f"{p.name} NULL on {family}",
                    "mismatch",
                    source,
                    family,
                    f"NULL means {p.default!r}",
                    "NULL gives another result than the documented default",
                    _default_snippet(op.meta, p.name, p.default, family, op.version),
                )
            )


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray):
        return opcheck.same_bits(a, b)
    return type(a) is type(b) and not isinstance(a, np.ndarray) and a == b


def _default_snippet(meta: Mapping, name: str, default, family: str, version: str) -> str:
    snake = op_meta(meta).snake
    return (
        "\n".join(
            [
                "import numpy as np",
                "from aclnngen.audit.probe import bound_op",
                "from aclnngen.runtime import session",
                "from aclnngen.verify import cases",
                "from aclnngen.verify.opcheck import same_bits",
                f"from aclnngen.generated.meta.{snake} import META",
                "",
                f"with session.simulated(family={family!r}, version={version!r}):",
                f"    base = cases.make_values(META, 'contiguous', 'float32', version={version!r}, family={family!r})",
                "    results = []",
                f"    for value in (None, {default!r}):",
                f"        values = {{k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in {{**base, {name!r}: value}}.items()}}",
                f"        results.append(bound_op({snake!r})(*[values.get(p['name']) for p in META['params']], validate=False))",
                "    print('same' if same_bits(np.asarray(results[0]), np.asarray(results[1])) else 'differ')",
            ]
        )
        + "\n"
    )


def _broadcast_outputs(meta: Mapping, values: dict, kind: str) -> dict:
    """For "broadcast-rejected" (inputs that broadcast, which the page forbids) the outputs get the
    broadcast shape: the probe then asks only whether the library broadcasts the inputs."""
    if kind != "broadcast-rejected":
        return values
    typed = op_meta(meta)
    shapes = [np.shape(values[p.name]) for p in typed.by_role("input") if values.get(p.name) is not None]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        return values
    for name in typed.outputs:
        if isinstance(values.get(name), np.ndarray) and values[name].shape != shape and values[name].size:
            values[name] = np.zeros(shape, dtype=values[name].dtype)
    return values


def _holds(entry: Mapping, version: str) -> bool:
    from aclnngen.core.releases import holds_at

    return holds_at(entry.get("since"), entry.get("until"), version)


# --- what the library computes -------------------------------------------------------------------


def _numeric_claim(
    op,
    source: str,
    result: OpAudit,
    dtype: str,
    subject: str,
    claim: str,
    *,
    data: str = "random",
    overrides=None,
    histogram: bool = False,
) -> None:
    """One claim of the spec's formula, checked against the oracle on `data`: a finding with a
    reproducer when they disagree."""
    values = opcheck.adversarial_values(op, dtype, data, overrides=overrides)
    result.checked += 1
    result.claims += 1
    if histogram:
        result.error_histogram[dtype] = _error_histogram(op, values)
    problem = _against_oracle(op, dtype, values, result if histogram else None)
    if problem:
        snippet = _numeric_snippet(op, dtype, "spec", overrides, data)
        result.findings.append(Finding(op.name, "numerics", subject, "mismatch", source, None, claim, problem, snippet))


def _numeric_checks(op, source: str, result: OpAudit) -> None:
    meta, version = op.meta, op.version
    families = supported_families(meta, version)
    first = op_meta(meta).by_role("input")[0].name
    dtypes = sorted({d for f in families for d in supported_dtypes(meta, first, f, version)})
    for dtype in dtypes:
        _numeric_claim(op, source, result, dtype, f"spec formula, {dtype}", "the spec's formula", histogram=True)
        # NaN, infinities, signed zeros, subnormals and extremes, in the inputs and the gradient
        _numeric_claim(
            op,
            source,
            result,
            dtype,
            f"special values, {dtype}",
            "the spec's formula at NaN, inf, -0.0, subnormal and extreme inputs",
            data="special-values",
        )
    for name, value in sweeps.scalar_points(meta, version):
        overrides = sweeps.overrides_for(meta, version, name, value)
        dtype = "float32" if "float32" in dtypes else dtypes[0]
        _numeric_claim(
            op, source, result, dtype, f"{name} = {value!r}", f"the formula at {name} = {value!r}", overrides=overrides
        )
    for key in op.reference.FORMULAS:
        if not key.startswith("claimed:"):
            continue
        dtype = "float32" if "float32" in dtypes else dtypes[0]
        result.checked += 1
        result.claims += 1
        # the default values, then each sweep point: a printed formula may be wrong on one branch only
        points = [None] + [sweeps.overrides_for(meta, version, n, v) for n, v in sweeps.scalar_points(meta, version)]
        problem = None
        for overrides in points:
            values = opcheck.adversarial_values(op, dtype, "random", overrides=overrides)
            problem = _against_oracle(op, dtype, values, None, formula=key)
            if problem:
                problem = f"{problem} (at {overrides})" if overrides else problem
                break
        if problem:  # the page's printed formula is not the gradient: the recorded defect, seen
            result.findings.append(
                Finding(
                    op.name,
                    "formula",
                    f"the page's formula ({key})",
                    "page_defect",
                    "torch",
                    None,
                    "the printed formula is the op's gradient",
                    problem,
                    _numeric_snippet(op, dtype, key, None),
                    defect=int(key.split(":")[1]),
                )
            )
        else:
            result.findings.append(
                Finding(
                    op.name,
                    "formula",
                    f"the page's formula ({key})",
                    "mismatch",
                    "torch",
                    None,
                    "the spec records the printed formula as wrong",
                    "it agrees with torch's gradient",
                    _numeric_snippet(op, dtype, key, None),
                )
            )


HISTOGRAM_EDGES = tuple(range(-12, 1))  # log10 of the relative error; below 1e-12 counts in the first bin


def _error_histogram(op, values: dict) -> list[int]:
    """Counts of log10 |opmath - golden| / |golden| over the first output's finite elements."""
    opmath = np.asarray(op.run_reference(values)[0])
    golden = np.asarray(op.run_reference(values, mode="golden")[0])
    if golden.dtype.kind == "c" or opmath.dtype.kind == "c":  # judged on magnitudes, never cast to real
        opmath, golden = np.abs(opmath), np.abs(golden)
    opmath, golden = opmath.astype(np.float64), golden.astype(np.float64)
    finite = np.isfinite(opmath) & np.isfinite(golden)
    with np.errstate(divide="ignore", invalid="ignore"):
        relative = np.abs(opmath - golden)[finite] / np.maximum(np.abs(golden[finite]), np.finfo(np.float64).tiny)
        logs = np.log10(np.maximum(relative, 10.0 ** HISTOGRAM_EDGES[0]))
    counts, _ = np.histogram(np.minimum(logs, HISTOGRAM_EDGES[-1]), bins=HISTOGRAM_EDGES)
    return [int(c) for c in counts]


def _against_oracle(op, dtype: str, values: dict, result: OpAudit | None, formula: str = "spec") -> str | None:
    """None when the reference (by `formula`) agrees with torch under the precision policy, else
    the first line of the disagreement."""
    ours = op.run_reference(values, formula=formula)
    typed = op_meta(op.meta)
    by_py = {p.py: values.get(p.name) for p in typed.params if p.role != "output"}
    for p in typed.by_role("input"):
        if isinstance(by_py.get(p.py), np.generic):
            by_py[p.py] = np.asarray(by_py[p.py])
    if op.outside_oracle_domain(by_py) is not None:
        return None  # the spec says the vendor differs from PyTorch there on purpose
    theirs = op.run_oracle(by_py, [a.dtype for a in ours])
    for (py, kind), a, b in zip(typed.formula.outputs.items(), ours, theirs):
        try:
            opcheck.compare_within_policy(op, values, py, kind, dtype, a, b, None)
        except AssertionError as exc:
            return str(exc).splitlines()[0]
    return None


def _numeric_snippet(op, dtype: str, formula: str, overrides, data: str = "random") -> str:
    snake = op_meta(op.meta).snake
    return (
        "\n".join(
            [
                "from aclnngen.audit.checks import _op, _against_oracle",
                "from aclnngen.verify import opcheck",
                "",
                f"op = _op({snake!r})",
                f"values = opcheck.adversarial_values(op, {dtype!r}, {data!r}, overrides={overrides!r})",
                f"print(_against_oracle(op, {dtype!r}, values, None, formula={formula!r}) or 'agrees with torch')",
            ]
        )
        + "\n"
    )


def spec_defects(snake: str) -> list:
    """The spec's `defects` entries (codegen.model.Defect), in the spec's order."""
    from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products, load_spec

    return list(load_spec(DEFAULT_SPECS_DIR / "ops" / f"{snake}.yaml", load_products()).spec.defects)


def recorded_defects(snake: str, op_name: str) -> list[Finding]:
    """Every defect the spec records, as a page-defect finding of source `spec`."""
    return [
        Finding(
            op_name,
            "defect",
            f"{d.kind} #{i}",
            "page_defect",
            "spec",
            None,
            "the page",
            " ".join(d.note.split()),
            defect=i,
        )
        for i, d in enumerate(spec_defects(snake))
    ]


def explanations(findings: list[Finding], defects: list, release: str) -> dict[str, dict]:
    """finding id -> the spec's `defects` entry that records it (`{"defect": index, "kind",
    "note"}`): the entry the finding shows (`Finding.defect`), else the first entry holding at
    `release` whose `checks` name a check the finding is about. A finding no entry explains is
    absent."""
    found = {}
    for f in findings:
        index = f.defect
        if index is None and f.checks:
            index = next(
                (i for i, d in enumerate(defects) if d.holds_at(release) and set(d.checks) & set(f.checks)), None
            )
        if index is not None and 0 <= index < len(defects):
            d = defects[index]
            found[f.id] = {"defect": index, "kind": d.kind, "note": " ".join(d.note.split())}
    return found
