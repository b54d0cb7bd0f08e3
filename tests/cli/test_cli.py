"""Command-line conventions: --version, --json on every command (shapes in docs/cli.md), --cann
limited to the releases the specs describe, and `specs` agreeing with the support matrix."""

from __future__ import annotations

import json
import re
from importlib.metadata import version

import catalog
import pytest

from aclnngen.codegen.cli import COMMANDS, main
from aclnngen.codegen.loader import load_all, spec_paths
from aclnngen.codegen.releases import described
from packages import aclnngen
from repo_paths import REPO


@pytest.fixture(scope="module")
def representatives(tmp_path_factory):
    """A specs folder of one op per structure (tests/catalog.py), for the tests of how `--cann` is
    checked: a renamed op describes no other release. (releases it describes, the folder)"""
    folder = catalog.representative_specs_folder(tmp_path_factory.mktemp("specs"))
    known = sorted(set().union(*(described(ls.spec) for ls in load_all(folder))))
    return known, folder


def _json(capsys, *argv) -> tuple[int, dict]:
    status = main(list(argv))
    return status, json.loads(capsys.readouterr().out)


def test_version_is_the_package_metadata(capsys):
    import aclnngen

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.strip() == f"aclnngen {version('aclnngen')}" == f"aclnngen {aclnngen.__version__}"


def test_every_command_takes_json_and_the_doc_describes_it():
    doc = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    for name in COMMANDS:
        helped = aclnngen(name, "--help")  # the parser's own help, in this process (packages.py)
        assert helped.returncode == 0, (name, helped.stderr)
        assert "--json" in helped.stdout, name
        assert f"### `aclnngen {name} --json`" in doc, f"docs/cli.md does not describe {name} --json"


def test_validate_json_verdicts(capsys, tmp_path):
    status, data = _json(capsys, "validate", "--json")
    assert status == 0 and data["ok"] is True and data["count"] == len(spec_paths()) and data["problems"] == []
    bad = tmp_path / "ops" / "x.yaml"
    bad.parent.mkdir()
    bad.write_text("name: [\n", encoding="utf-8")
    status, data = _json(capsys, "validate", "--json", str(bad))
    assert (
        status == 1
        and data["ok"] is False
        and data["problems"][0]["path"] == str(bad)
        and data["problems"][0]["line"] >= 1
    )


def test_check_generate_and_info_json(capsys):
    status, data = _json(capsys, "check", "--json")
    assert (
        status == 0
        and data["ok"] is True
        and data["files"] > 0
        and data["stale"] == data["missing"] == data["orphaned"] == []
    )
    status, data = _json(capsys, "info", "--json")
    assert status == 0 and {"backend", "soc", "product_family", "cann_version"} <= set(data)


def test_run_json_counts_its_rows(capsys):
    # two ops show the counting; each op's kernels compile on its first call in a cold cache
    two = sorted(p.stem for p in (REPO / "specs" / "ops").glob("*.yaml"))[:2]
    status, data = _json(capsys, "run", "--json", "--one-dtype", "--ops", *two)
    assert {r["op"] for r in data["rows"]} == {catalog.meta(s)["name"] for s in two}
    assert status == 0 and data["ok"] is True and data["failed"] == 0
    assert data["matched"] == sum(1 for r in data["rows"] if r["match"] is True) > 0


def test_a_failure_under_json_is_json(capsys):
    status, data = _json(capsys, "run", "--json", "--ops", "NoSuchOp")
    assert status == 1 and data == {"command": "run", "ok": False, "error": data["error"], "problems": []}
    assert "NoSuchOp" in data["error"]


@pytest.mark.parametrize("release", ["9.0.0", "7.0.0", "8.4.0"])
def test_cann_refuses_a_release_no_spec_describes(capsys, representatives, release):
    known, specs = representatives
    assert main(["specs", "--specs", str(specs), "--cann", release]) == 1
    err = capsys.readouterr().err
    assert f"no spec describes CANN {release}" in err and all(v in err for v in known)


def test_cann_accepts_every_release_a_spec_describes(capsys, representatives):
    known, specs = representatives
    for release in known:
        status, data = _json(capsys, "specs", "--specs", str(specs), "--json", "--cann", release)
        assert status == 0 and data["release"] == release and {r["cann"] for r in data["rows"]} == {release}


def test_specs_and_the_support_matrix_show_the_same_release_and_dtypes(capsys):
    status, data = _json(capsys, "specs", "--json")
    assert status == 0 and data["release"] == "newest"
    index = (REPO / "docs" / "ops" / "index.md").read_text(encoding="utf-8")
    matrix = index[index.index("## Support matrix") :]
    header = next(line for line in matrix.splitlines() if line.startswith("| op | CANN |"))
    labels = [c.strip() for c in header.strip("|").split("|")][2:]
    shown = {}
    for line in matrix.splitlines():
        m = re.match(r"\| \[(\w+)\]\([\w.]+\) \| ([\w.]+) \|(.*)\|$", line)
        if m:
            shown[m.group(1)] = (m.group(2), dict(zip(labels, (c.strip() for c in m.group(3).split("|")))))
    assert shown
    specs = {ls.spec.name: ls.spec for ls in load_all()}
    for row in data["rows"]:
        release, cells = shown[row["op"]]
        first_input = next(p.name for p in specs[row["op"]].parameters if p.role == "input")
        assert row["cann"] == release, row["op"]
        assert cells[row["product"]] == ", ".join(row["dtypes"][first_input]), (row["op"], row["product"])
