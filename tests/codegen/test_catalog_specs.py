"""The committed vendor catalog (specs/catalog/<repo>/<category>/<api>.yaml, written by `aclnngen
catalog --specs-out specs/catalog`): every spec validates, is binding tier, and sits where its
name, repository and category say (its `source.url` is the page's path in the repository)."""

from __future__ import annotations

import pytest

from repo_paths import CATALOG_SPECS
from aclnngen.codegen import catalog
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import load_products, load_spec

PRODUCTS = load_products()
SPEC_PATHS = sorted(CATALOG_SPECS.rglob("*.yaml"))


@pytest.mark.skipif(not SPEC_PATHS, reason="no catalog specs under specs/catalog")
def test_every_catalog_spec_validates_as_binding_tier_where_its_name_says():
    problems = []
    for path in SPEC_PATHS:
        where = path.relative_to(CATALOG_SPECS)
        try:
            spec = load_spec(path, PRODUCTS).spec
        except SpecError as exc:
            problems.append(f"{where}: {exc.problems[0].message}")
            continue
        repo, category = where.parts[0], where.parts[1]
        if spec.computes:
            problems.append(f"{where}: full tier; a catalog spec is binding tier (upgrade it in specs/ops)")
        if path.stem != catalog.spec_stem(spec.name):
            problems.append(f"{where}: named {spec.name}, file should be {catalog.spec_stem(spec.name)}.yaml")
        if not (spec.source.url or "").startswith(f"{category}/"):
            problems.append(f"{where}: page {spec.source.url} is not under {repo}/{category}")
    assert not problems, f"{len(problems)} of {len(SPEC_PATHS)} specs:\n" + "\n".join(problems)


@pytest.mark.slow(reason="imports every page of both vendor repositories (about 15 s)")
def test_the_committed_catalog_is_what_the_importer_writes_from_the_mirrors(tmp_path):
    import os
    from pathlib import Path

    mirrors = [Path(p) for p in os.environ.get("ACLNNGEN_VENDOR_MIRRORS", "").split(os.pathsep) if p]
    if not mirrors or not all(m.is_dir() for m in mirrors):
        pytest.skip("no vendor mirrors: set ACLNNGEN_VENDOR_MIRRORS (not available in CI)")
    release = load_spec(SPEC_PATHS[0], PRODUCTS).spec.cann_version
    catalog.survey(mirrors, "HEAD", PRODUCTS, tmp_path, release)
    written = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*.yaml")}
    committed = {p.relative_to(CATALOG_SPECS): p.read_bytes() for p in SPEC_PATHS}
    stale = sorted(str(p) for p in written.keys() | committed.keys() if written.get(p) != committed.get(p))
    assert not stale, f"run `aclnngen catalog --specs-out specs/catalog`: {len(stale)} differ, e.g. {stale[:5]}"
