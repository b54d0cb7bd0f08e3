"""docs/catalog.md says where a page's first-phase prototype parts from its header's, so a reader
tells a misreading by the importer from the page's own disagreement with the header."""

from __future__ import annotations

import pytest

from aclnngen.codegen import catalog

PROTO = "aclnnStatus aclnnDemoGetWorkspaceSize({}, uint64_t* workspaceSize, aclOpExecutor** executor)"


@pytest.mark.parametrize(
    "page, header, parted",
    [
        (
            "const aclTensor* self, aclTensor* y",
            "const aclTensor* self, aclTensor* out",
            "page `aclTensor* y`, header `aclTensor* out`",
        ),
        (
            "const aclTensorList* out",
            "aclTensorList* out",
            "page `const aclTensorList* out`, header `aclTensorList* out`",
        ),
        (
            "const aclTensor* self",
            "const aclTensor* self, bool keep",
            "page `uint64_t* workspaceSize`, header `bool keep`",
        ),
    ],
)
def test_where_two_prototypes_part(page, header, parted):
    ours, theirs = (catalog.normalize_prototype(PROTO.format(p)) for p in (page, header))
    assert catalog.where_they_part(ours, theirs) == parted


def test_only_one_side_has_the_last_parameters():
    short = "aclnnStatus aclnnDemoGetWorkspaceSize(const aclTensor* self)"
    longer = "aclnnStatus aclnnDemoGetWorkspaceSize(const aclTensor* self, bool keep)"
    assert catalog.where_they_part(longer, short) == "only the page has `bool keep`"
    assert catalog.where_they_part(short, longer) == "only the header has `bool keep`"


def test_a_differing_api_is_listed_with_where_it_parts():
    report = catalog.CatalogReport("HEAD")
    mine = PROTO.format("const aclTensor* self, aclTensor* y")
    report.results.append(
        catalog.ApiResult("ops-math", "math/demo/docs/aclnnDemo.md", "Demo", "math", "valid", prototype=mine)
    )
    headers = {
        "ops-math": {
            "aclnnDemoGetWorkspaceSize": catalog.normalize_prototype(
                PROTO.format("const aclTensor* self, aclTensor* out")
            )
        }
    }
    catalog.compare_headers(report, headers)
    assert report.results[0].header == "differs"
    assert "| ops-math | Demo | differs | page `aclTensor* y`, header `aclTensor* out` |" in catalog.markdown(report)


def test_a_page_that_parted_from_the_header_it_gave_way_to_is_listed():
    report = catalog.CatalogReport("HEAD")
    result = catalog.ApiResult("ops-math", "math/demo/docs/aclnnDemo.md", "Demo", "math", "valid", header="equal")
    result.page_parted = "page `aclTensor* y`, header `aclTensor* out`"
    report.results.append(result)
    text = catalog.markdown(report)
    assert "| ops-math | Demo | page `aclTensor* y`, header `aclTensor* out` |" in text
    assert "1 pages print a prototype that parts from the header's" in text


def test_the_report_states_the_three_counts_with_their_share():
    report = catalog.CatalogReport("HEAD", tested=True)
    stages = [("tested", "equal", None), ("tested", BUILT_, "agrees"), ("valid", BUILT_, "differs"), (None, None, None)]
    for i, (stage, header, definition) in enumerate(stages):
        report.results.append(
            catalog.ApiResult(
                "ops-nn", f"a/b{i}/docs/aclnnX{i}.md", f"X{i}", "a", stage, header=header, definition=definition
            )
        )
    assert report.prototypes_held() == 2
    assert report.summary() == (
        "Of 4 APIs: 3 imported (75.0%); 2 pass every generated test on the simulator (50.0%); "
        "2 have the vendor's prototype (header equal, or op definition agreeing) (50.0%)"
    )
    assert report.summary() + "." in catalog.markdown(report)


BUILT_ = catalog.BUILT


def test_a_one_phase_api_is_told_apart_from_a_page_without_prototypes():
    from aclnngen.codegen.importer.facts import PageFacts, PageParam

    facts = PageFacts("a/b/docs/aclnnSize.md", "markdown", op="Size", params=[PageParam("shape")])
    facts.prototypes = {"launch": "aclnnStatus aclnnSize(const aclIntArray* shape, uint64_t* size)"}
    assert catalog._not_imported(facts).startswith("a one-phase API")
    facts.prototypes = {}
    assert catalog._not_imported(facts) == "the page prints no prototype pair"
