"""`aclnngen audit --page PAGE`: a page read through the importer and set against its spec. On the
seed pages (external material) the specs' recorded defects account for every difference, and a
wrong claim planted in a copy of the spec shows as a mismatch; the command wires it in."""

from __future__ import annotations

import copy
import json

import pytest

from aclnngen.audit.page import page_findings
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products
from aclnngen.codegen.yamlio import read_yaml

from external import external

PRODUCTS = load_products()
SEEDED = [
    p for p in sorted((DEFAULT_SPECS_DIR / "ops").glob("*.yaml")) if (read_yaml(p)[0].get("source") or {}).get("seed")
]


def _spec(path):
    return read_yaml(path)[0]


@pytest.mark.parametrize("path", SEEDED, ids=lambda p: p.stem)
def test_a_seed_page_against_its_spec_has_no_mismatch(path):
    spec = _spec(path)
    found, checked = page_findings(external("seeds", spec["source"]["seed"]), spec, spec["cann_version"], PRODUCTS)
    assert checked > 0
    assert [f.subject for f in found if f.group == "mismatch"] == []


@pytest.mark.parametrize("path", SEEDED, ids=lambda p: p.stem)
def test_a_planted_dtype_claim_is_a_mismatch(path):
    spec = copy.deepcopy(_spec(path))
    first = next(p for p in spec["parameters"] if p["role"] == "input")
    entry = first["dtypes"][0]
    dropped = entry["dtypes"][0]
    entry["dtypes"] = entry["dtypes"][1:] or ["complex128"]
    found, _ = page_findings(external("seeds", spec["source"]["seed"]), spec, spec["cann_version"], PRODUCTS)
    mismatches = [f for f in found if f.group == "mismatch"]
    assert any(first["name"] in f.subject and dropped in f.observed for f in mismatches), [
        f.subject for f in mismatches
    ]


def test_the_command_takes_a_page(forked_cli, tmp_path):
    # a seed page the importer finds something on (a difference the spec records, a defect)
    chosen = None
    for path in SEEDED:
        spec = _spec(path)
        page = external("seeds", spec["source"]["seed"])
        found, _ = page_findings(page, spec, spec["cann_version"], PRODUCTS)
        if found:
            chosen = (path, spec, page, {f.id for f in found})
            break
    assert chosen, "no seed page shows any difference from its spec"
    path, spec, page, ids = chosen
    out = tmp_path / "report"
    done = forked_cli(
        "audit",
        "--source",
        "torch",
        "--ops",
        path.stem,
        "--page",
        str(page),
        "--release",
        spec["cann_version"],
        "--out",
        str(out),
        "--no-pictures",
        timeout=600,
    )
    assert done.returncode in (0, 1), done.stderr
    data = json.loads((out / "audit.json").read_text())
    assert ids <= {f["id"] for op in data["ops"] for f in op["findings"]}
    other = next(p for p in SEEDED if _spec(p)["name"] != spec["name"])
    wrong = forked_cli(
        "audit", "--source", "torch", "--ops", other.stem, "--page", str(page), "--out", str(out), timeout=600
    )
    assert wrong.returncode == 2 and "not among the audited ops" in wrong.stderr
