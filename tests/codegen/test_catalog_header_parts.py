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
