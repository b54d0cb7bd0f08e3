"""The audit as a CI gate: recorded defects are not new, one cause is one finding, a clean
checkout passes, a baseline can be written and must be completed, expired entries say so, the
report says what was audited and keeps notes whole, `--repro` finds the report it printed, and
every failure honours --json (with one exit code for a missing CANN)."""

from __future__ import annotations

import datetime
import json
import shlex
import shutil

import pytest

from aclnngen import cachedir
from aclnngen.audit import baseline, checks, findings
from aclnngen.codegen import cli
from aclnngen.codegen.commands.jsonout import EXIT_NO_CANN

HARDTANH = "hardtanh_backward"  # the vendor profile shows four causes its spec's defects explain, on six families


def _audit(capsys, *argv) -> tuple[int, str, str]:
    """The command in this process (so a test can take the spec's defects away); code, out, err."""
    code = cli.main(["audit", "--source", "sim", "--ops", HARDTANH, "--no-pictures", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def no_defects(monkeypatch):
    """The op's spec as if it recorded no defects: what the vendor's code does is then new."""
    monkeypatch.setattr(checks, "spec_defects", lambda snake: [])


def test_recorded_fact_a_clean_checkout_passes_with_the_recorded_defects(forked_cli, tmp_path):
    out = tmp_path / "report"
    done = forked_cli(
        "audit", "--source", "sim", "--ops", HARDTANH, "swish_backward", "--no-pictures", "--json", "--out", str(out)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads(done.stdout)
    assert summary["ok"] is True and summary["new"] == [] and summary["recorded"]
    data = json.loads((out / "audit.json").read_text())
    defects = {s: checks.spec_defects(s) for s in (HARDTANH, "swish_backward")}
    library = [f for op in data["ops"] for f in op["findings"] if f["source"] == "sim"]
    assert library, "the vendor profile shows nothing any more: pick an op whose spec records vendor behaviour"
    for f in library:
        entry = f["recorded"]
        snake = HARDTANH if f["op"] == "HardtanhBackward" else "swish_backward"
        assert f["status"] == "recorded" and entry["note"] == " ".join(defects[snake][entry["defect"]].note.split())
        assert set(defects[snake][entry["defect"]].checks) & set(f["checks"])
        assert len(f["families"]) > 1, f  # one cause, every family it shows on
    subjects = [(f["op"], f["check"], f["subject"]) for f in library]
    assert len(subjects) == len(set(subjects))


def test_findings_of_one_cause_on_several_families_are_one():
    def seen(family, observed="accepted", subject="rank9"):
        return findings.Finding(
            "Op",
            "shape",
            f"{subject} on {family}",
            "undocumented",
            "sim",
            family,
            "rejected with 161002",
            observed,
            f"repro {family}",
            checks=("max_rank",),
        )

    merged = findings.by_cause(
        [
            seen("a2"),
            seen("a3"),
            seen("a2", subject="empty"),
            seen("training", "rejected with 161001"),
            findings.Finding("Op", "defect", "rule #0", "page_defect", "spec", None, "the page", "note"),
        ]
    )
    assert [(f.subject, f.families) for f in merged] == [
        ("rank9 on a2, a3", ("a2", "a3")),
        ("empty", ("a2",)),
        ("rank9 on training", ("training",)),
        ("rule #0", ()),
    ]
    assert merged[0].repro == "repro a2" and merged[0].checks == ("max_rank",)
    # the id of a cause does not change with the families audited
    assert findings.by_cause([seen("a2")])[0].id == findings.by_cause([seen("a3"), seen("a2")])[0].id


def test_an_unexplained_finding_is_new_and_one_per_cause_on_hardtanh(capsys, tmp_path, no_defects):
    code, out, err = _audit(capsys, "--out", str(tmp_path / "r"), "--json")
    summary = json.loads(out)  # progress goes to stderr, stdout stays one JSON object
    assert code == 1 and summary["ok"] is False and len(summary["new"]) == 4 and summary["recorded"] == []
    assert "audit: op 1/1 HardtanhBackward" in err
    data = json.loads((tmp_path / "r" / "audit.json").read_text())
    found = data["ops"][0]["findings"]
    assert {f["status"] for f in found} == {"new"} and all(len(f["families"]) == 6 for f in found), found


def test_write_baseline_then_fill_it_in_then_let_it_expire(capsys, tmp_path, no_defects):
    file, out = tmp_path / "baseline.yaml", str(tmp_path / "r")
    code, _, err = _audit(capsys, "--out", out, "--write-baseline", str(file))
    assert code == 1 and "4 entries to fill in" in err
    text = file.read_text()
    assert text.count("- id: ") == 4 and text.count(baseline.PLACEHOLDER_REASON) == 5  # and the header's
    # an entry not filled in is refused, naming it (and --json gives the failure object)
    code, out_json, err = _audit(capsys, "--out", out, "--baseline", str(file), "--json")
    first = text.split("- id: ")[1].split()[0]
    assert code == 2 and f"entry 0 ({first})" in err and "placeholder" in err
    assert json.loads(out_json)["ok"] is False and "placeholder" in json.loads(out_json)["error"]
    filled = text.replace(f"'{baseline.PLACEHOLDER_REASON}'", "known vendor behaviour")
    file.write_text(filled.replace(baseline.PLACEHOLDER_EXPIRES, "2999-01-01"))
    code, _, err = _audit(capsys, "--out", out, "--baseline", str(file))
    assert code == 0, err
    # an acceptance past its date says so, and gates
    yesterday = (datetime.date.today() - datetime.timedelta(days=1)).isoformat()
    placeholder = f"expires: {baseline.PLACEHOLDER_EXPIRES}"
    file.write_text(filled.replace(placeholder, f"expires: {yesterday}", 1).replace(placeholder, "expires: 2999-01-01"))
    code, _, err = _audit(capsys, "--out", out, "--baseline", str(file))
    data = json.loads((tmp_path / "r" / "audit.json").read_text())
    assert code == 1 and data["expired"] == [first] and data["new"] == [] and f"{first} expired on {yesterday}" in err
    (mine,) = [f for f in data["ops"][0]["findings"] if f["id"] == first]
    assert mine["status"] == "expired" and mine["baseline"] == {
        "reason": "known vendor behaviour",
        "expires": yesterday,
    }
    markdown = (tmp_path / "r" / "audit.md").read_text()
    assert f"expired: expired on {yesterday}" in markdown and "## Expired baseline entries" in markdown


def test_the_report_says_what_was_audited_and_keeps_notes_whole(capsys, tmp_path):
    code, _, _ = _audit(capsys, "--out", str(tmp_path / "r"))
    data = json.loads((tmp_path / "r" / "audit.json").read_text())
    run, op = data["run"], data["ops"][0]
    assert run["profile"] == "vendor" and run["cann"] == op["release"] and op["release"]
    assert set(op["socs"]) == set(op["support"]) and all(soc in run["soc"] for soc in op["socs"].values())
    markdown = (tmp_path / "r" / "audit.md").read_text()
    assert f"| cann | {op['release']} |" in markdown and "| soc | " in markdown
    notes = [" ".join(d.note.split()) for d in checks.spec_defects(HARDTANH)]
    assert max(map(len, notes)) > 160  # a note the report used to cut
    for note in notes:
        assert note in markdown and any(f["observed"] == note for f in op["findings"])
    assert "..." not in markdown


def test_repro_finds_the_report_written_with_out_as_the_footer_says(forked_cli, tmp_path):
    env = {"ACLNNGEN_CACHE_DIR": str(tmp_path / "cache")}
    # a cache of its own for the newest-report record; the simulators built already come along
    # (this test is about the report, not the build: ~1 CPU-s of compiling)
    built = cachedir.cache_root() / "sim"
    if built.is_dir():
        shutil.copytree(built, tmp_path / "cache" / "sim", symlinks=True)
    out = tmp_path / "elsewhere" / "report"
    done = forked_cli("audit", "--source", "sim", "--ops", HARDTANH, "--no-pictures", "--out", str(out), env=env)
    data = json.loads((out / "audit.json").read_text())
    finding = next(f for op in data["ops"] for f in op["findings"] if f["repro"])
    footer = (out / "audit.md").read_text().rsplit("`aclnngen audit", 1)[1].split("`")[0]
    command = shlex.split("audit" + footer.replace("ID", finding["id"]))
    for argv in (command, ["audit", "--repro", finding["id"]]):  # as printed; and from the newest report
        shown = forked_cli(*argv, env=env, cwd=tmp_path)
        assert shown.returncode == 0 and shown.stdout == finding["repro"], (argv, shown.stderr, done.stderr)
    missing = forked_cli("audit", "--repro", "Nope-shape-00000000", "--json", env=env, cwd=tmp_path)
    assert missing.returncode == 2 and json.loads(missing.stdout)["ok"] is False and "Nope" in missing.stderr


def test_no_cann_is_one_exit_code_and_json_in_every_command(forked_cli):
    # (both variables are read when a command picks its backend, not at import: a forked run sees them)
    env = {"ACLNNGEN_BACKEND": "cann", "ASCEND_HOME_PATH": "/nonexistent/cann"}
    audit = forked_cli("audit", "--source", "cann", "--json", env=env)
    failure = json.loads(audit.stdout)
    assert audit.returncode == EXIT_NO_CANN and failure["command"] == "audit" and failure["ok"] is False
    assert "--source sim" in failure["error"] and "ACLNNGEN_BACKEND" not in failure["error"]
    assert "CANN was not found" in audit.stderr and "Traceback" not in audit.stderr
    for command in ("run", "info"):
        done = forked_cli(command, "--json", env=env)
        assert done.returncode == EXIT_NO_CANN and json.loads(done.stdout)["ok"] is False, (command, done.stderr)
