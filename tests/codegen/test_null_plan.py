"""`testplan.null_plan`, what a check of every catalog op's null pointers plans from its META alone,
is the version and null-pointer cases the full plan (`testplan.build`) holds for the same op."""

from __future__ import annotations

import catalog
import pytest

from repo_paths import CATALOG_SPECS
from aclnngen.codegen import metadata, testplan
from aclnngen.codegen.loader import load_products, load_spec

PRODUCTS = load_products()
# one built-in op per structure (tests/catalog.py) and every 40th catalog spec: ops with and
# without scalars, attributes, lists
SPECS = sorted(catalog.representative_specs()) + sorted(CATALOG_SPECS.rglob("*.yaml"))[::40]


@pytest.mark.parametrize("path", SPECS, ids=lambda p: p.stem)
def test_the_null_plan_is_the_full_plans_version_and_null_cases(path):
    spec = load_spec(path, PRODUCTS).spec
    meta = metadata.build(spec)
    full = testplan.build(spec, PRODUCTS, meta=meta)
    assert testplan.null_plan(meta, PRODUCTS) == {"version": full["version"], "nulls": full["nulls"]}
