"""The committed vendor catalog (specs/catalog/<repo>/<category>/<api>.yaml, written by `aclnngen
catalog --history --specs-out specs/catalog`): every spec validates, is binding tier, and sits where its
name, repository and category say (its `source.url` is the page's path in the repository)."""

from __future__ import annotations

import functools

import pytest

from repo_paths import CATALOG_SPECS
from aclnngen.codegen import catalog
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import load_products, load_spec

PRODUCTS = load_products()
SPEC_PATHS = sorted(CATALOG_SPECS.rglob("*.yaml"))


@functools.cache
def _loaded(path):
    """One load per spec per worker, at run time: loading the ~800 specs costs seconds, and at
    collection every worker would pay it."""
    return load_spec(path, PRODUCTS)


@pytest.mark.skipif(not SPEC_PATHS, reason="no catalog specs under specs/catalog")
def test_every_catalog_spec_validates_as_binding_tier_where_its_name_says():
    problems = []
    for path in SPEC_PATHS:
        where = path.relative_to(CATALOG_SPECS)
        try:
            spec = _loaded(path).spec
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


@pytest.mark.slow(reason="imports every page of both vendor repositories at HEAD and its release tags (about 40 s)")
def test_the_committed_catalog_is_what_the_importer_writes_from_the_mirrors(tmp_path):
    import os
    from pathlib import Path

    mirrors = [Path(p) for p in os.environ.get("ACLNNGEN_VENDOR_MIRRORS", "").split(os.pathsep) if p]
    if not mirrors or not all(m.is_dir() for m in mirrors):
        pytest.skip("no vendor mirrors: set ACLNNGEN_VENDOR_MIRRORS (not available in CI)")
    release = load_spec(SPEC_PATHS[0], PRODUCTS).spec.cann_version
    catalog.survey(mirrors, "HEAD", PRODUCTS, tmp_path, release, history=[])
    written = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*.yaml")}
    committed = {p.relative_to(CATALOG_SPECS): p.read_bytes() for p in SPEC_PATHS}
    stale = sorted(str(p) for p in written.keys() | committed.keys() if written.get(p) != committed.get(p))
    assert not stale, (
        f"run `aclnngen catalog --history --specs-out specs/catalog`: {len(stale)} differ, e.g. {stale[:5]}"
    )


# The newer products' narrow dtypes, as pages spell them -> the spec name, its aclDataType value.
NARROW = {
    "INT4": ("int4", 29),
    "HIFLOAT8": ("hifloat8", 34),
    "FLOAT8_E5M2": ("float8_e5m2", 35),
    "FLOAT8_E4M3FN": ("float8_e4m3fn", 36),
    "FLOAT8_E8M0": ("float8_e8m0fnu", 37),
    "FLOAT4_E2M1": ("float4_e2m1fn", 40),
    "FLOAT4_E1M2": ("float4_e1m2", 41),
}


@pytest.mark.parametrize("page_name", sorted(NARROW))
def test_a_narrow_dtype_is_read_from_a_page_and_passed_as_its_acl_data_type(page_name):
    import numpy as np

    from aclnngen.codegen.importer.facts import page_dtypes
    from aclnngen.core import dtypes
    from aclnngen.runtime.arrays import acl_dtype
    from aclnngen.runtime.shapes import NUMPY_DTYPES, dtype_name_of
    from aclnngen.verify.cases import _data, _junk, _place

    name, value = NARROW[page_name]
    assert page_dtypes(f"支持FLOAT16、{page_name}") == ["float16", name]
    assert name in dtypes.ALL_DTYPES and dtypes.promote_names([name, "float32"]) is None
    storage = NUMPY_DTYPES[name]
    assert storage.itemsize == 1 and dtype_name_of(storage) == name and storage != np.dtype(np.uint8)
    assert acl_dtype(storage) == value
    from aclnngen.codegen.abi import load_abi

    assert load_abi().dtype_for_acl(value).numpy_dtype() == storage  # the ABI table builds the same dtype
    data = _data(np.random.default_rng(0), (2, 3), storage, weight=False)
    assert data.dtype == storage and _place(data, "strided", 0, _junk(storage)).shape == (2, 3)


def _integer_scalar_ops():
    return [
        path
        for path in SPEC_PATHS
        if any(p.scalar_dtype in ("int8", "int16", "int32", "int64", "uint8") for p in _loaded(path).spec.parameters)
    ]


def test_an_integer_scalar_gets_whole_planned_values_and_its_importer_draft_an_integer_dtype():
    from aclnngen.codegen import metadata
    from aclnngen.core import planning

    integer_scalar_ops = _integer_scalar_ops()
    if not integer_scalar_ops:
        pytest.skip("no catalog spec with an integer scalar")
    wrong = []
    for path in integer_scalar_ops:
        spec = _loaded(path).spec
        values = planning.scalar_values(metadata.build(spec))
        for p in spec.parameters:
            if p.scalar_dtype and p.scalar_dtype.startswith(("int", "uint")):
                value = values[p.name]
                if any(not float(v).is_integer() for v in (value if isinstance(value, list) else [value])):
                    wrong.append(f"{spec.name}.{p.name} ({p.scalar_dtype}): {value!r}")
    assert not wrong, "\n".join(wrong)


def test_an_api_without_a_header_is_told_apart_when_the_build_writes_it():
    listed = [
        "math/abs/op_host/abs_def.cpp",  # defined, header written by the build
        "math/add/op_host/add_def.cpp",
        "math/add/op_host/op_api/aclnn_add.h",  # defined and with its own header (for Add, not AddV3)
        "math/gone/docs/aclnnGone.md",  # neither
    ]
    assert catalog.built_header_folders(listed) == {"math/abs", "math/add"}
    report = catalog.CatalogReport("HEAD")
    proto = (
        "aclnnStatus aclnn{}GetWorkspaceSize(const aclTensor* self, uint64_t* workspaceSize, aclOpExecutor** executor)"
    )
    for api, folder in (("Abs", "abs"), ("Add", "add"), ("Gone", "gone"), ("AddV3", "add")):
        report.results.append(
            catalog.ApiResult(
                "ops-math", f"math/{folder}/docs/aclnn{api}.md", api, "math", "valid", prototype=proto.format(api)
            )
        )
    headers = {"ops-math": {"aclnnAddGetWorkspaceSize": catalog.normalize_prototype(proto.format("Add"))}}
    catalog.compare_headers(report, headers, {"ops-math": catalog.built_header_folders(listed)})
    # AddV3: its folder's header declares Add only, so the build writes AddV3's from the definition
    assert [r.header for r in report.results] == [catalog.BUILT, "equal", "absent", catalog.BUILT]


def test_each_op_verdict_is_read_from_the_junit_report_of_its_generated_tests():
    from aclnngen.codegen import catalog_tests

    report = """<testsuites><testsuite>
      <testcase classname="tests.test_abs" name="test_binding[a]" file="tests/test_abs.py"/>
      <testcase classname="tests.test_abs" name="test_binding[b]" file="tests/test_abs.py"><skipped/></testcase>
      <testcase classname="tests.test_add" name="test_binding[a]" file="tests/test_add.py"/>
      <testcase classname="tests.test_add" name="test_binding[b]" file="tests/test_add.py">
        <failure message="AssertionError: status 161002">trace</failure></testcase>
      <testcase classname="tests.test_add" name="test_null" file="tests/test_add.py"><error message="boom"/></testcase>
    </testsuite></testsuites>"""
    found = catalog_tests.verdicts(report, ["abs", "add", "mul"])
    assert found["abs"] == catalog_tests.OpVerdict(1, 0, None)
    assert found["add"] == catalog_tests.OpVerdict(1, 2, "test_binding[b]: AssertionError: status 161002")
    assert found["mul"] == catalog_tests.OpVerdict(0, 0, None)


def test_an_api_two_pages_document_has_each_spec_tested(monkeypatch):
    from aclnngen.codegen import catalog_tests

    batches = []

    def run(specs):
        batches.append(dict(specs))
        return {snake: catalog_tests.OpVerdict(1, 0, None) for snake in specs}

    monkeypatch.setattr(catalog_tests, "run", run)
    report = catalog.CatalogReport("HEAD")
    for page, text in (("index/demo/docs/aclnnDemo.md", "one"), ("index/demo_v2/docs/aclnnDemo.md", "two")):
        report.results.append(catalog.ApiResult("ops-nn", page, "Demo", "index", "generated", spec_text=text))
    report.results.append(catalog.ApiResult("ops-nn", "index/x/docs/aclnnOther.md", "Other", "index", "generated"))
    catalog.mark_tested(report)
    assert [r.stage for r in report.results] == ["tested", "tested", "tested"]
    assert batches == [{"demo": "one", "other": None}, {"demo": "two"}]
