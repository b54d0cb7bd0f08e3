"""Importing the real pages: the seed pages (external material, ACLNNGEN_SEEDS) and the vendor's
Markdown pages at release tags (a git mirror of hicann/ops-nn named by ACLNNGEN_OPS_NN_GIT; not in
CI, so those tests only skip). Each draft must agree with the curated spec at the page's release
in op name, parameters (name, role, C type), products and dtypes per family, except where the spec
records the page's defect."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from external import external
from aclnngen.codegen.importer.agree import disagreements
from aclnngen.codegen.importer.draft import build_draft
from aclnngen.codegen.importer.pages import read_page
from aclnngen.core.releases import release_of
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products, spec_paths
from aclnngen.codegen.yamlio import read_yaml

PRODUCTS = load_products()
SPECS = spec_paths(DEFAULT_SPECS_DIR)
MIRROR_ENV = "ACLNNGEN_OPS_NN_GIT"


def _spec(path: Path) -> dict:
    return read_yaml(path)[0]


def _draft(page: Path, release: str) -> dict:
    return build_draft(read_page(page, PRODUCTS, release), PRODUCTS)


@pytest.mark.parametrize("spec_path", SPECS, ids=lambda p: p.stem)
def test_each_seed_page_imports_and_agrees_with_its_spec(forked_cli, spec_path, tmp_path):
    spec = _spec(spec_path)
    seed = spec.get("source", {}).get("seed")
    if not seed:
        pytest.skip(f"{spec_path.name} was not captured from a seed page")
    page = external("seeds", seed)
    draft = _draft(page, spec["cann_version"])
    assert draft["name"] == spec["name"]
    unexcused, excused = disagreements(spec, draft, spec["cann_version"])
    assert unexcused == [], [str(c) for c in unexcused]
    # `diff SPEC DRAFT` lists what curation corrected: every excused difference is among its lines
    result = forked_cli("import", str(page), "-o", str(tmp_path), "--release", spec["cann_version"], timeout=120)
    assert result.returncode == 0, result.stderr
    shown = forked_cli("diff", str(spec_path), str(tmp_path / spec_path.name), timeout=120)
    assert "Traceback" not in shown.stderr and shown.returncode in (0, 1), shown.stderr
    for change in excused:
        assert change.message in shown.stdout, (change.message, shown.stdout)


def _mirror() -> str:
    git_dir = os.environ.get(MIRROR_ENV, "")
    if not git_dir or not Path(git_dir).exists():
        pytest.skip(f"no vendor mirror: set {MIRROR_ENV} to a git directory of hicann/ops-nn (not available in CI)")
    return git_dir


def _vendor_page(git_dir: str, tag: str, op: str, tmp_path: Path) -> Path:
    names = subprocess.run(
        ["git", f"--git-dir={git_dir}", "ls-tree", "-r", "--name-only", tag], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    found = [n for n in names if n.endswith(f"/docs/aclnn{op}.md") and not n.startswith("experimental/")]
    assert len(found) == 1, found
    page = tmp_path / f"aclnn{op}.md"
    page.write_bytes(
        subprocess.run(
            ["git", f"--git-dir={git_dir}", "show", f"{tag}:{found[0]}"], capture_output=True, check=True
        ).stdout
    )
    return page


@pytest.mark.parametrize("spec_path", SPECS, ids=lambda p: p.stem)
def test_each_spec_agrees_with_its_vendor_page_at_the_newest_tag(spec_path, tmp_path):
    git_dir = _mirror()
    spec = _spec(spec_path)
    release = release_of("v9.2.0-beta.1")
    draft = _draft(_vendor_page(git_dir, "v9.2.0-beta.1", spec["name"], tmp_path), release)
    unexcused, _ = disagreements(spec, draft, release)
    assert unexcused == [], [str(c) for c in unexcused]


@pytest.mark.parametrize("spec_path", SPECS, ids=lambda p: p.stem)
def test_merging_the_page_a_spec_agrees_with_changes_no_fact(forked_cli, spec_path, tmp_path):
    """`import --into` of the newest vendor page into a spec that already agrees with it: no
    versioned fact is added (a person's curation is never taken for a release change)."""
    git_dir = _mirror()
    spec = _spec(spec_path)
    copy = tmp_path / spec_path.name
    copy.write_text(spec_path.read_text())
    page = _vendor_page(git_dir, "v9.2.0-beta.1", spec["name"], tmp_path)
    done = forked_cli("import", "--into", str(copy), "--release", "v9.2.0-beta.1", str(page), timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 change(s), 0 breaking" in done.stdout, done.stdout
    assert copy.read_text() == spec_path.read_text()
