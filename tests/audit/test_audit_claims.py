"""The audit finds a wrong claim from a source that can see it: each test plants one wrong claim in
a copy of an op's META (what the spec says) and audits it against the library (the simulator, which
checks by the real spec) or PyTorch; the finding's reproducer, run alone, shows the behaviour."""

from __future__ import annotations

import copy
import datetime
import json

import catalog
import forkserver
import pytest

from aclnngen.audit import baseline, checks, probe, report
from aclnngen.generated import OPS
from aclnngen.core.rules import supported_dtypes

# planted mutations, and the audit of a spec against itself, need one op per structure
# (tests/catalog.py): the simulator checks by the META, so a renamed copy is audited the same
REPRESENTATIVES = catalog.representatives()

torch = pytest.importorskip("torch", reason="the audit's numerics run PyTorch (CI installs it)")


def _audit(snake: str, meta, source: str, **kw):
    op = checks._op(snake)
    op.meta = meta
    return checks.audit(op, probe.bound_op(snake), source, profile="spec", **kw)


def _family(meta) -> str:
    first = next(p["name"] for p in meta["params"] if p["role"] == "input")
    for family in ("a2", "a3", "training"):
        if supported_dtypes(meta, first, family, checks._newest(meta)):
            return family
    pytest.skip(f"{meta['name']} is on none of the families this test plants claims on")


def _run_snippet(code: str) -> str:
    """A finding's reproducer, run alone in a process of its own, as a user pastes it."""
    done = forkserver.run_script(code)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


@pytest.mark.parametrize("snake", REPRESENTATIVES)
def test_the_spec_audited_against_itself_has_no_library_finding(snake):
    op = checks._op(snake)
    result = _audit(snake, op.meta, "sim")
    assert result.checked > 0 and result.errors == [] and result.findings == [], [f.subject for f in result.findings]


@pytest.mark.parametrize("snake", REPRESENTATIVES)
def test_an_extra_and_a_missing_dtype_are_found(snake):
    original = checks._op(snake).meta
    family = _family(original)
    first = next(p["name"] for p in original["params"] if p["role"] in ("input", "output"))
    listed = set(supported_dtypes(original, first, family, checks._newest(original)))
    meta = copy.deepcopy(original)  # changed before anything reads it: a META once read is never changed
    tensors = [p for p in meta["params"] if p["role"] in ("input", "output")]
    extra = next(d for d in ("complex128", "float64", "int16", "uint64") if d not in listed)
    missing = sorted(listed)[0]
    for p in tensors:
        for entry in p["dtypes"]:
            if family in entry["families"]:
                entry["dtypes"] = [d for d in entry["dtypes"] if d != missing] + [extra]
    result = _audit(snake, meta, "sim", family=family)
    found = {f.subject: f for f in result.findings if f.check == "dtype"}
    assert found[f"{extra} on {family}"].group == "mismatch" and found[f"{extra} on {family}"].observed.startswith(
        "rejected"
    )
    assert (
        found[f"{missing} on {family}"].group == "undocumented"
        and found[f"{missing} on {family}"].observed == "accepted"
    )
    assert result.matrix[family][missing] == "not claimed, works"
    out = _run_snippet(found[f"{extra} on {family}"].repro)
    assert "status 161002" in out


def _has_shape_relation(snake: str) -> bool:
    meta = checks._op(snake).meta
    inputs = {p["name"] for p in meta["params"] if p["role"] == "input"}
    return any(
        r["kind"] == "broadcast" or (r["kind"] == "same_shape" and len(set(r["params"]) & inputs) >= 2)
        for r in meta["rules"]
    )


@pytest.mark.parametrize("snake", [s for s in REPRESENTATIVES if _has_shape_relation(s)])
def test_a_wrong_shape_rule_is_found(snake):
    family = _family(checks._op(snake).meta)  # read before the copy is changed: a META once read is never changed
    meta = copy.deepcopy(checks._op(snake).meta)
    inputs = [p["name"] for p in meta["params"] if p["role"] == "input"]
    kinds = {r["kind"] for r in meta["rules"]}
    if "broadcast" in kinds:  # plant: the page says the shapes must match
        meta["rules"] = [r for r in meta["rules"] if r["kind"] != "broadcast"] + [
            {
                "kind": "same_shape",
                "status": 161002,
                "params": inputs[:2] + meta["outputs"][:1],
                "since": None,
                "until": None,
            }
        ]
        want = ("broadcast-rejected", "undocumented")
    elif any(r["kind"] == "same_shape" and len(set(r["params"]) & set(inputs)) >= 2 for r in meta["rules"]):
        # plant: the page says the inputs broadcast
        meta["rules"] = [r for r in meta["rules"] if r["kind"] != "same_shape"] + [
            {
                "kind": "broadcast",
                "status": 161002,
                "inputs": inputs[:2],
                "output": meta["outputs"][0],
                "since": None,
                "until": None,
            }
        ]
        want = ("broadcast", "mismatch")
    else:
        raise AssertionError(f"{meta['name']} has no shape relation to plant a wrong one for")
    result = _audit(snake, meta, "sim", family=family)
    found = {f.subject: f for f in result.findings if f.check == "shape"}
    assert found[f"{want[0]} on {family}"].group == want[1], sorted(found)
    out = _run_snippet(found[f"{want[0]} on {family}"].repro)
    assert out.startswith("status ")


@pytest.mark.parametrize("snake", REPRESENTATIVES)
def test_a_wrong_return_code_is_found(snake):
    family = _family(checks._op(snake).meta)  # read before the copy is changed: a META once read is never changed
    meta = copy.deepcopy(checks._op(snake).meta)
    # every page's table has a 161002 row besides its null-pointer row; claim 161001 for it instead
    row = next(i for i, r in enumerate(meta["return_codes"]) if r["status"] == 161002)
    meta["return_codes"][row]["status"] = 161001
    result = _audit(snake, meta, "sim", family=family)
    found = [f for f in result.findings if f.check == "return_code"]
    assert found and all(f.claimed == "status 161001" and f.observed == "status 161002" for f in found)
    assert "status 161002" in _run_snippet(found[0].repro)


def test_a_wrong_formula_is_found_by_torch(monkeypatch):
    snake = OPS[0]
    op = checks._op(snake)
    right = op.reference.FORMULAS["spec"]
    monkeypatch.setitem(
        op.reference._REFERENCE.formulas, "spec", lambda m, *a, **k: tuple(o * m.lit(2) for o in right(m, *a, **k))
    )
    result = checks.audit(op, probe.bound_op(snake), "torch")
    wrong = [f for f in result.findings if f.check == "numerics"]
    assert wrong and all(f.group == "mismatch" and f.source == "torch" for f in wrong)
    monkeypatch.setitem(op.reference._REFERENCE.formulas, "spec", right)
    assert not [f for f in checks.audit(op, probe.bound_op(snake), "torch").findings if f.check == "numerics"]


def test_torch_sees_every_recorded_wrong_formula():
    """A page formula the spec records as wrong is wrong by torch too (on some branch); of each
    structure its first op (a renamed copy has the same formula and records)."""
    for snake in REPRESENTATIVES:
        result = checks.audit_op(snake, "torch")
        for f in result.findings:
            if f.check == "formula":
                assert f.group == "page_defect", (f.op, f.observed)


def test_ids_are_stable_and_the_baseline_gates(tmp_path):
    first = checks.audit_op(OPS[0], "sim", profile="vendor")
    again = checks.audit_op(OPS[0], "sim", profile="vendor")
    assert [f.id for f in first.findings] == [f.id for f in again.findings]
    ids = ["a", "b", "c"]
    file = tmp_path / "baseline.yaml"
    file.write_text(
        "- {id: a, reason: known, expires: 2999-01-01}\n- {id: b, reason: old, expires: 2000-01-01}\n"
        "- {id: gone, reason: fixed, expires: 2999-01-01}\n",
        encoding="utf-8",
    )
    judged = baseline.judge(ids, baseline.load(file), datetime.date(2026, 11, 24))
    assert judged.new == ["c"] and judged.expired == ["b"] and judged.accepted == ["a"] and judged.stale == ["gone"]
    assert judged.gates == ["c", "b"] and judged.status("b") == "expired"
    file.write_text("- {id: a, reason: known}\n", encoding="utf-8")
    with pytest.raises(baseline.BaselineError, match="entry 0 needs exactly id, reason and expires"):
        baseline.load(file)


def test_the_command_writes_the_report_gates_and_jobs_give_the_same_report(tmp_path):
    cli = forkserver.run_cli
    out, again_out = tmp_path / "report", tmp_path / "jobs2"
    ops = [OPS[0], OPS[-1]]
    done = cli("audit", "--source", "sim", "--ops", *ops, "--out", out)
    data = json.loads((out / "audit.json").read_text())
    assert data["schema"] == "aclnngen-audit/2" and data["run"]["source"] == "sim"
    text = (out / "audit.md").read_text()
    assert text.startswith("# aclnngen audit") and "Claims checked:" in text and "| op | source | checked |" in text
    assert "### By product family" in text and "| a2 |" not in text.split("### By product family")[0]
    assert done.returncode == (1 if data["new"] or data["expired"] else 0)
    assert any(out.glob("*-support.png"))  # matplotlib is in the test extra
    # accept every finding: the gate opens; two worker processes give the same report as one
    (tmp_path / "b.yaml").write_text(
        "".join(f"- {{id: {i}, reason: test, expires: 2999-01-01}}\n" for i in data["new"])
    )
    again = cli(
        "audit", "--source", "sim", "--ops", *ops, "--out", again_out, "--jobs", "2", "--no-pictures",
        "--baseline", tmp_path / "b.yaml",
    )  # fmt: skip
    assert again.returncode == 0, again.stdout + again.stderr
    reports = [json.loads((o / "audit.json").read_text()) for o in (out, again_out)]
    ids = [([o["op"] for o in r["ops"]], sorted(f["id"] for o in r["ops"] for f in o["findings"])) for r in reports]
    assert ids[0] == ids[1] and ids[0][0] == [checks._op(s).name for s in ops]
    finding = next((f for op in data["ops"] for f in op["findings"] if f["repro"]), None)
    if finding:
        shown = cli("audit", "--out", out, "--repro", finding["id"], timeout=120)
        assert shown.returncode == 0 and shown.stdout == finding["repro"]
    bad = cli("audit", "--jobs", "0")
    assert bad.returncode == 2 and "--jobs takes 1 to 64" in bad.stderr


def _has_optional_scalar(snake: str) -> bool:
    return any(p["role"] == "optional_scalar" for p in checks._op(snake).meta["params"])


@pytest.mark.parametrize("snake", [s for s in REPRESENTATIVES if _has_optional_scalar(s)])
def test_a_wrong_default_is_found(snake):
    """The page's default for an optional scalar is what NULL means to the library: a planted other
    default gives a call with NULL and a call with that value different results."""
    family = _family(checks._op(snake).meta)  # read before the copy is changed: a META once read is never changed
    meta = copy.deepcopy(checks._op(snake).meta)
    planted = [p for p in meta["params"] if p["role"] == "optional_scalar"]
    for p in planted:
        p["default"] = p["default"] + 0.75
    result = _audit(snake, meta, "sim", family=family)
    found = [f for f in result.findings if f.check == "default"]
    assert {f.subject for f in found} == {f"{p['name']} NULL on {family}" for p in planted}
    assert "differ" in _run_snippet(found[0].repro)


def test_some_op_has_an_optional_scalar():
    assert any(_has_optional_scalar(s) for s in OPS), "the wrong-default test would test nothing"


def test_the_error_distribution_is_recorded_and_drawn(tmp_path):
    result = checks.audit_op(OPS[0], "torch")
    assert result.error_histogram, "numerics ran on no dtype"
    for dtype, counts in result.error_histogram.items():
        assert len(counts) == len(checks.HISTOGRAM_EDGES) - 1 and sum(counts) > 0, dtype
        if dtype == "float32":  # one rounding of float32 work: most elements far below 1e-3
            assert sum(counts[:9]) > sum(counts[9:])
    data = report.as_json([result], {"source": "torch"}, baseline.Judgement(), {}, {})
    drawn = report.error_pictures(data, tmp_path)
    assert [p.name for p in drawn] == [f"{result.op}-errors.png"] and drawn[0].stat().st_size > 1000


def test_recorded_fact_threshold_conditional_dtype_claim_is_probed_with_its_condition():
    meta = copy.deepcopy(checks._op("threshold_backward").meta)
    # the real spec: int64 on ascend950 only while threshold is 0, which the simulator honours
    result = _audit("threshold_backward", meta, "sim", family="ascend950")
    assert result.partial["ascend950"]["int64"] == "works only when threshold=0"
    assert not [f for f in result.findings if "when" in f.subject]
    # plant: the page also claims int64 on a2 under that condition; the library rejects it there
    meta = copy.deepcopy(meta)  # a new META: one that has been read is never changed
    for p in meta["params"]:
        if p["role"] in ("input", "output"):
            p["dtypes"].append(
                {"families": ["a2"], "dtypes": ["int64"], "since": None, "until": None, "when": {"threshold": 0}}
            )
    result = _audit("threshold_backward", meta, "sim", family="a2")
    (found,) = [f for f in result.findings if f.subject == "int64 on a2 when threshold=0"]
    assert found.group == "mismatch" and found.observed.startswith("rejected")
    assert "status 161002" in _run_snippet(found.repro)


def test_partial_support_by_shape_is_found_per_dtype():
    snake = catalog.WITH_MAX_RANK
    family = _family(checks._op(snake).meta)  # read before the copy is changed: a META once read is never changed
    meta = copy.deepcopy(checks._op(snake).meta)
    # plant: the page bounds no rank, so rank 9 is claimed for every dtype; the library rejects it
    meta["rules"] = [r for r in meta["rules"] if r["kind"] != "max_rank"]
    result = _audit(snake, meta, "sim", family=family)
    dtypes = supported_dtypes(meta, catalog.names(meta, "input")[-1], family, checks._newest(meta))
    for dtype in dtypes:
        assert result.partial[family][dtype] == "not with rank9"
        assert any(f.subject == f"{dtype} on {family}, rank9" and f.group == "mismatch" for f in result.findings)
