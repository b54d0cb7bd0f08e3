"""The ABI comes from the vendor header: where it declares an API, the imported facts take its
prototypes, keep the page's as page prototypes with a defect, and the parameter table follows the
header's names (codegen/importer/header.py)."""

from __future__ import annotations

from aclnngen.codegen.importer.draft import build_draft
from aclnngen.codegen.importer.facts import PageFacts, PageParam
from aclnngen.codegen.importer.header import adopt_header, align_table
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products

GWS = "aclnnStatus aclnnDemoGetWorkspaceSize({}, uint64_t* workspaceSize, aclOpExecutor** executor)"
LAUNCH = "aclnnStatus aclnnDemo(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)"


def _facts(gws: str | None, rows: list[str]) -> PageFacts:
    facts = PageFacts("cat/demo/docs/aclnnDemo.md", "markdown", op="Demo", release="9.0.0")
    facts.products = {"a2": True}
    if gws is not None:
        facts.prototypes = {"get_workspace_size": GWS.format(gws), "launch": LAUNCH}
    facts.params = [PageParam(n, dtypes=["float32"]) for n in rows] + [
        PageParam("workspaceSize"),
        PageParam("executor"),
    ]
    return facts


def test_the_header_prototype_replaces_a_differing_page_one():
    facts = _facts("const aclTensor* self, const aclTensorList* y", ["self", "y"])
    header = {"aclnnDemoGetWorkspaceSize": GWS.format("const aclTensor* self, aclTensorList* out")}
    adopt_header(facts, header)
    assert facts.prototypes["get_workspace_size"] == GWS.format("const aclTensor* self, aclTensorList* out")
    assert facts.page_prototypes == {"get_workspace_size": GWS.format("const aclTensor* self, const aclTensorList* y")}
    assert [p.name for p in facts.params[:2]] == ["self", "out"]  # the row follows the header's name
    (kind, note), *_ = facts.defects
    assert kind == "prototype" and "'out'" in note and "'y'" in note
    draft = build_draft(facts, load_products(DEFAULT_SPECS_DIR), tier="binding")
    assert draft["page_prototypes"]["get_workspace_size"].endswith(
        "const aclTensorList* y, uint64_t* workspaceSize, aclOpExecutor** executor)"
    )
    out = draft["parameters"][1]
    assert (out["name"], out["role"], out["list"]) == ("out", "output", True)  # non-const: written


def test_an_equal_page_prototype_is_kept_without_a_defect():
    facts = _facts("const aclTensor* self, aclTensor* out", ["self", "out"])
    adopt_header(facts, {"aclnnDemoGetWorkspaceSize": GWS.format("const aclTensor *self, aclTensor *out")})
    assert facts.page_prototypes == {} and facts.defects == []


def test_a_missing_page_prototype_is_taken_from_the_header_with_a_defect():
    facts = _facts(None, ["self", "out"])
    adopt_header(
        facts, {"aclnnDemo": LAUNCH, "aclnnDemoGetWorkspaceSize": GWS.format("const aclTensor* self, aclTensor* out")}
    )
    assert set(facts.prototypes) == {"get_workspace_size", "launch"}
    assert facts.page_prototypes == {}
    assert [k for k, _ in facts.defects] == ["prototype", "prototype"]


def test_no_header_leaves_the_page_as_it_is():
    facts = _facts("const aclTensor* self, aclTensor* y", ["self", "y"])
    adopt_header(facts, {})
    assert facts.prototypes["get_workspace_size"] == GWS.format("const aclTensor* self, aclTensor* y")


def test_a_table_row_named_otherwise_than_its_prototype_parameter_takes_the_prototype_name():
    facts = _facts("const aclTensorList* tensors, aclTensor* out", ["self", "out"])
    align_table(facts)
    assert [p.name for p in facts.params] == ["tensors", "out", "workspaceSize", "executor"]
    assert facts.defects == [("name", "the parameter table names 'self' where the prototype has 'tensors'")]


def test_a_table_with_other_rows_than_the_prototype_is_left_alone():
    facts = _facts("const aclTensor* self, aclTensor* out", ["self", "extra", "out"])
    align_table(facts)
    assert [p.name for p in facts.params[:3]] == ["self", "extra", "out"]


def test_a_trailing_pair_named_otherwise_is_no_parameter_of_the_table():
    facts = _facts(None, ["self", "out"])
    facts.prototypes = {
        "get_workspace_size": "aclnnStatus aclnnDemoGetWorkspaceSize(const aclTensor* self, aclTensor* out,"
        " uint64_t* workspaceSize, aclOpExecutor** opExecutor)",
        "launch": LAUNCH,
    }
    facts.params[-1].name = "opExecutor"
    draft = build_draft(facts, load_products(DEFAULT_SPECS_DIR), tier="binding")
    assert [p["name"] for p in draft["parameters"]] == ["self", "out"]
    assert draft["defects"] == []
