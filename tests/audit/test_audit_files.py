"""What the audit reads and writes: the report and a saved profile are written atomically (a kill
leaves the old file, never an empty one); a baseline, a report read back by --repro and a cache
record are read as bounded regular files and guarded YAML; every bad one is one line, exit 2,
found before the audit runs."""

from __future__ import annotations

import json
import os
import subprocess
import time

import forkserver
import pytest

from aclnngen import files
from aclnngen.audit import checks, observed, probe, report


def _audit(*argv, cwd) -> subprocess.CompletedProcess:
    return forkserver.run_cli("audit", *argv, cwd=cwd, timeout=300)


def _one_line_failure(done: subprocess.CompletedProcess, *, code: int = 2) -> str:
    assert done.returncode == code, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    return done.stderr


def _kill_at_rename(monkeypatch):
    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # as a SIGKILL between the temporary's write and the rename

    monkeypatch.setattr(files.os, "replace", killed)


def test_a_report_write_killed_at_the_rename_leaves_the_old_report(tmp_path, monkeypatch):
    out = tmp_path / "report"
    out.mkdir()
    (out / "audit.json").write_text('{"old": true}\n')
    (out / "audit.md").write_text("# old\n")
    _kill_at_rename(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        report.write({"ops": [], "record": {}}, out)
    assert (out / "audit.json").read_text() == '{"old": true}\n' and (out / "audit.md").read_text() == "# old\n"
    assert sorted(p.name for p in out.iterdir()) == ["audit.json", "audit.md"]


def test_a_profile_save_killed_at_the_rename_leaves_the_saved_profile(tmp_path, monkeypatch):
    from aclnngen.generated import OPS

    snake = sorted(OPS)[0]
    op = checks._op(snake)
    seen = checks.audit(op, probe.bound_op(snake), "sim", profile="vendor")
    data = observed.observed(seen, op.meta, checks._newest(op.meta), source="sim", null_out_pointers="checked")
    path = observed.write(data, tmp_path, "observed", snake, source="sim")
    before = path.read_bytes()
    _kill_at_rename(monkeypatch)
    with pytest.raises(KeyboardInterrupt):
        observed.write({**data, "notes": ["a later run"]}, tmp_path, "observed", snake, source="sim")
    monkeypatch.undo()
    assert path.read_bytes() == before
    # and the next save still recognises the file as its own
    observed.write(data, tmp_path, "observed", snake, source="sim")


BAD_BASELINES = {
    "impossible date": "- id: x\n  reason: r\n  expires: 2030-02-30\n",
    "time of day": "- id: x\n  reason: r\n  expires: 2030-01-01 10:00:00\n",
    "alias bomb": "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]\n" for i in range(1, 9)),
    "not a list": "id: x\n",
}


@pytest.mark.parametrize("case", sorted(BAD_BASELINES))
def test_a_bad_baseline_is_one_line_before_the_audit_runs(tmp_path, case):
    (tmp_path / "baseline.yaml").write_text(BAD_BASELINES[case])
    forkserver.run_script("pass")  # the fork server is up: what is timed is the command alone
    started = time.monotonic()
    err = _one_line_failure(_audit("--baseline", "baseline.yaml", cwd=tmp_path))
    assert time.monotonic() - started < 20 and "baseline.yaml" in err
    assert not (tmp_path / "audit-report").exists()


@pytest.mark.parametrize("kind", ["fifo", "missing", "folder"])
def test_a_baseline_that_is_no_file_is_named(tmp_path, kind):
    path = tmp_path / "baseline.yaml"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "folder":
        path.mkdir()
    err = _one_line_failure(_audit("--baseline", str(path), cwd=tmp_path))
    assert str(path) in err


def test_out_naming_a_file_is_refused_before_the_audit(tmp_path):
    (tmp_path / "afile").write_text("mine\n")
    started = time.monotonic()
    err = _one_line_failure(_audit("--out", "afile", cwd=tmp_path))
    assert time.monotonic() - started < 20 and "afile" in err and (tmp_path / "afile").read_text() == "mine\n"


@pytest.mark.parametrize("content", ['{"ops": [1]}', "[]", "{not json", '{"ops": [{"findings": [{"no_id": 1}]}]}'])
def test_repro_on_a_malformed_report_is_one_line(tmp_path, content):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "audit.json").write_text(content)
    err = _one_line_failure(_audit("--out", "r", "--repro", "x", cwd=tmp_path))
    assert "audit.json" in err


def test_an_empty_repro_id_runs_nothing_and_overwrites_nothing(tmp_path):
    (tmp_path / "audit-report").mkdir()
    (tmp_path / "audit-report" / "audit.json").write_text(json.dumps({"ops": []}))
    err = _one_line_failure(_audit("--repro", "", cwd=tmp_path))
    assert "--repro" in err and (tmp_path / "audit-report" / "audit.json").read_text() == json.dumps({"ops": []})
    assert sorted(p.name for p in (tmp_path / "audit-report").iterdir()) == ["audit.json"]
