"""Defect kinds are one table (aclnngen/core/defects.py): the spec model accepts exactly its kinds,
the op page titles each entry by it, and the audit report names it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from packages import generate
from repo_paths import REPO
from aclnngen.audit import report
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.core.defects import DEFECT_KINDS

ROOT = REPO
SPECS = ROOT / "specs"
PLAIN = [k for k in DEFECT_KINDS if k.formula is None]


def _any_spec() -> Path:
    return sorted((SPECS / "ops").glob("*.yaml"))[0]


def _with_defects(tmp_path: Path, defects: list[dict]) -> Path:
    specs = tmp_path / "specs"
    shutil.copytree(SPECS, specs, ignore=shutil.ignore_patterns("schema"))
    for path in (specs / "ops").glob("*.yaml"):
        if path.name != _any_spec().name:
            path.unlink()
    path = specs / "ops" / _any_spec().name
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["defects"] = list(data.get("defects") or []) + defects
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False), encoding="utf-8")
    return path


def test_the_op_page_titles_every_kind(tmp_path):
    notes = [{"kind": k.name, "note": f"made-up note for {k.name}"} for k in PLAIN]
    spec = _with_defects(tmp_path, notes)
    out = generate(spec.parent.parent, tmp_path / "pkg" / "defect_ops")
    page = (out / "docs" / f"{spec.stem}.md").read_text(encoding="utf-8")
    for k in PLAIN:
        assert f"- **{k.title}**" in page and f"made-up note for {k.name}" in page, k.name


@pytest.mark.parametrize("kind", [k for k in DEFECT_KINDS if k.formula])
def test_a_formula_field_belongs_to_its_kind_only(tmp_path, kind):
    other = next(k for k in DEFECT_KINDS if k.formula and k.formula != kind.formula)
    spec = _with_defects(tmp_path, [{"kind": other.name, "note": "n", kind.formula: {"outputs": {"x": "1"}}}])
    with pytest.raises(SpecError) as err:
        load_spec(spec, load_products(spec.parent.parent / "products.yaml"))
    assert kind.formula in str(err.value) and f"{spec.name}:" in str(err.value)


def test_an_unknown_kind_is_refused_naming_the_known_ones(tmp_path):
    spec = _with_defects(tmp_path, [{"kind": "made_up_kind", "note": "n"}])
    with pytest.raises(SpecError) as err:
        load_spec(spec, load_products(spec.parent.parent / "products.yaml"))
    assert "made_up_kind" in str(err.value) and all(k.name in str(err.value) for k in PLAIN)


@pytest.mark.parametrize("kind", DEFECT_KINDS, ids=lambda k: k.name)
def test_the_audit_report_names_a_recorded_defects_kind(kind):
    finding = {"status": "recorded", "check": "defect", "recorded": {"defect": 3, "kind": kind.name, "note": "n"}}
    cell = report._status(finding)
    assert cell.startswith("recorded: defects #3 (") and kind.title.lower() in cell.lower()
