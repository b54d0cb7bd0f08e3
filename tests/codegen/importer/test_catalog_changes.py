"""The release view of the catalog (codegen/catalog_changes.py, `aclnngen diff --since`): what two
pages of one API say differently is reported only where it is a fact of the pages, not of how each
page is written; and docs/catalog-changes.md puts what breaks first. Made-up pages and drafts; the last
test reads the vendor's pages at two tags and skips naming ACLNNGEN_VENDOR_MIRRORS without them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from aclnngen.codegen import catalog, catalog_changes, specdiff
from aclnngen.codegen.catalog import ApiResult, CatalogReport
from aclnngen.codegen.importer.draft import build_draft
from aclnngen.codegen.importer.markdown import read_markdown_apis
from aclnngen.codegen.importer.writer import block_yaml
from aclnngen.codegen.loader import load_products

PRODUCTS = load_products()
MIRRORS = "ACLNNGEN_VENDOR_MIRRORS"
A2 = "<term>Atlas A2 训练系列产品/Atlas A2 推理系列产品</term>"
A3 = "<term>Atlas A3 训练系列产品/Atlas A3 推理系列产品</term>"

# A newer page's form, in our own words: a parameter table, then a product's extra dtypes as
# sub-bullets under the product's name.
NEWER_PAGE = f"""# aclnnDemoScale

## 产品支持情况

| 产品 | 是否支持 |
| :--- | :---: |
| {A3} | √ |
| {A2} | √ |

## 函数原型

```cpp
aclnnStatus aclnnDemoScaleGetWorkspaceSize(const aclTensor* self, aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor)
aclnnStatus aclnnDemoScale(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)
```

## aclnnDemoScaleGetWorkspaceSize

- **参数说明：**

  <table><thead><tr><th>参数名</th><th>输入/输出</th><th>描述</th><th>使用说明</th><th>数据类型</th><th>数据格式</th><th>维度(shape)</th><th>非连续Tensor</th></tr></thead>
  <tbody>
  <tr><td>self (aclTensor*)</td><td>输入</td><td>演示输入。</td><td>-</td><td>FLOAT、FLOAT16</td><td>ND</td><td>-</td><td>√</td></tr>
  <tr><td>out (aclTensor*)</td><td>输出</td><td>演示输出。</td><td>-</td><td>FLOAT、FLOAT16</td><td>ND</td><td>-</td><td>√</td></tr>
  </tbody></table>

  - {A3}：
    - self数据类型额外支持BFLOAT16、INT8；
    - out数据类型额外支持BFLOAT16。

## aclnnDemoScale
"""

# An older page's form: parameters as bullets, each with its own per-product dtypes below it.
OLDER_PAGE = f"""# aclnnDemoMax

## 产品支持情况

| 产品 | 是否支持 |
| :--- | :---: |
| {A2} | √ |

## 函数原型

- `aclnnStatus aclnnDemoMaxGetWorkspaceSize(const aclTensor* self, aclTensor* out, aclTensor* indices, uint64_t* workspaceSize, aclOpExecutor** executor)`
- `aclnnStatus aclnnDemoMax(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)`

## aclnnDemoMaxGetWorkspaceSize

- **参数说明：**

  - self(aclTensor*, 计算输入)：演示输入。
     * {A2}：FLOAT、FLOAT16、BFLOAT16
  - out(aclTensor*, 计算输出)：演示输出。
     * {A2}：数据类型支持FLOAT、FLOAT16、BFLOAT16
  - indices(aclTensor*, 计算输出)：演示下标，数据类型支持INT32。
  - workspaceSize(uint64_t*, 出参)：工作区大小。
  - executor(aclOpExecutor**, 出参)：执行器。

## aclnnDemoMax
"""


def _dtypes(page: str) -> dict[str, object]:
    (facts,) = read_markdown_apis(page, "p.md", PRODUCTS)
    draft = build_draft(facts, PRODUCTS, tier="binding")
    return {p["name"]: p.get("dtypes") for p in draft["parameters"]}


def test_a_products_extra_dtypes_under_its_name_add_to_the_tables():
    dtypes = _dtypes(NEWER_PAGE)
    by_family = {g["families"][0]: g["dtypes"] for g in dtypes["self"] for _ in g["families"]}
    assert dtypes["self"] == [
        {"families": ["a3"], "dtypes": ["float32", "float16", "bfloat16", "int8"]},
        {"families": ["a2"], "dtypes": ["float32", "float16"]},
    ], by_family
    assert dtypes["out"][0] == {"families": ["a3"], "dtypes": ["float32", "float16", "bfloat16"]}


def test_conditions_under_a_product_are_not_read_as_its_dtypes():
    page = NEWER_PAGE.replace("self数据类型额外支持BFLOAT16、INT8", "不支持BFLOAT16数据类型").replace(
        "out数据类型额外支持BFLOAT16", "当输入数据类型为FLOAT32时不支持cubeMathType=0"
    )
    assert _dtypes(page)["self"] == [{"families": ["a3", "a2"], "dtypes": ["float32", "float16"]}]


def test_an_older_pages_per_parameter_dtypes_stay_that_parameters():
    dtypes = _dtypes(OLDER_PAGE)
    assert dtypes["self"] == [{"families": ["a2"], "dtypes": ["float32", "float16", "bfloat16"]}]
    assert dtypes["indices"] == [{"families": ["a2"], "dtypes": ["int32"]}]


def _spec(**changes) -> dict:
    data = {
        "name": "DemoScale",
        "products": [{"family": "a2"}],
        "parameters": [
            {"name": "self", "role": "input", "c_type": "const aclTensor*", "dtypes": [{"families": ["a2"], "dtypes": ["float32"]}]},
            {"name": "out", "role": "output", "c_type": "aclTensor*", "dtypes": [{"families": ["a2"], "dtypes": ["float32"]}]},
        ],
        "rules": [],
        "return_codes": [{"status": 161001, "check": "null_pointer", "params": ["self", "out"], "condition": "x"}],
    }  # fmt: skip
    data.update(changes)
    return data


def _report(tag: str, **changes) -> CatalogReport:
    proto = changes.pop("prototype", "aclnnStatus aclnnDemoScaleGetWorkspaceSize(const aclTensor* self, aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor)")  # fmt: skip
    result = ApiResult("ops-demo", "p.md", "DemoScale", "math", "valid", None, block_yaml(_spec(**changes)), proto)
    return CatalogReport(tag, {"ops-demo": 1}, [result])


def test_a_section_one_page_could_not_read_is_no_change():
    unread = _report("v2", return_codes="TODO")
    unread_dtypes = _report("v2")
    spec = _spec()
    spec["parameters"][0]["dtypes"] = "TODO"
    unread_dtypes.results[0].spec_text = block_yaml(spec)
    for new in (unread, unread_dtypes):
        assert catalog_changes.compare(_report("v1"), new).changed == []
    # the same sections read at both tags and different are changes
    fewer = _report("v2", return_codes=[])
    (change,) = catalog_changes.compare(fewer, _report("v1")).changed
    assert [(c.kind, c.what) for c in change.changes] == [(specdiff.BREAKING, "return_code")]


def test_a_rule_difference_is_a_hint_not_a_break():
    ruled = _report("v2", rules=[{"kind": "same_shape", "params": ["self", "out"]}])
    (change,) = catalog_changes.compare(_report("v1"), ruled).changed
    assert [c.kind for c in change.changes] == [catalog_changes.HINT] and not change.breaking


def test_a_prototype_change_is_named_and_abi_neutral_const_is_none():
    assert (
        catalog_changes.prototype_change(
            "aclnnStatus f(const bool a, aclTensor* b)", "aclnnStatus f(bool a, aclTensor *b)"
        )
        is None
    )
    assert catalog_changes.prototype_change(
        "aclnnStatus f(const aclTensor* a, int64_t b)", "aclnnStatus f(aclTensor* a, int64_t c)"
    ) == ("a: `const aclTensor*` -> `aclTensor*`; b renamed c")
    assert catalog_changes.prototype_change("aclnnStatus f(int64_t a)", "aclnnStatus f(int64_t a, bool b)") == "b added"


def test_changes_md_puts_what_breaks_first_one_row_per_api_with_counts():
    old = _report("v1")
    old.results.append(ApiResult("ops-demo", "q.md", "Gone", "math", "valid", None, block_yaml(_spec()), None))
    spec = _spec()
    spec["parameters"][0]["dtypes"] = [{"families": ["a2"], "dtypes": ["float16"]}]
    spec["products"].append({"family": "a3"})
    spec["parameters"][0]["dtypes"][0]["families"].append("a3")
    new = _report("v2", prototype="aclnnStatus aclnnDemoScaleGetWorkspaceSize(const aclTensor* x, aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor)")  # fmt: skip
    new.results[0].spec_text = block_yaml(spec)
    text = catalog_changes.markdown(catalog_changes.compare(old, new))
    assert "| **with a breaking change** | **2** |" in text and "| removed | 1 |" in text
    breaking, gained = text.index("## Breaking"), text.index("## Gained")
    assert breaking < text.index("| `aclnnGone` | ops-demo | removed |") < gained
    row = next(line for line in text.splitlines() if line.startswith("| `aclnnDemoScale` |") and "prototype" in line)
    assert "prototype: self renamed x" in row and "self on a2: float32 removed" in row
    assert text.index(row) < gained < text.index("a3 supported")


@pytest.mark.skipif(
    not os.environ.get(MIRRORS), reason=f"no vendor mirrors: set {MIRRORS} to the vendor git directories"
)
def test_the_vendors_pages_of_one_api_at_two_tags_lose_no_dtype_by_their_format():
    """aclnnAcosh: the v8.5.0 page lists A3's dtypes under each parameter, the v9.2.0-beta.1 page
    in a table plus A3's extras under the product; the extras are the same."""
    git_dir = next(Path(p) for p in os.environ[MIRRORS].split(os.pathsep) if "ops-math" in p)
    path = "math/acosh/docs/aclnnAcosh&aclnnInplaceAcosh.md"
    results = {}
    for tag in ("v8.5.0", "v9.2.0-beta.1"):
        text = catalog.read_blobs(git_dir, tag, [path])[path]
        (facts, *_) = read_markdown_apis(text, path, PRODUCTS)
        facts.release = tag
        draft = build_draft(facts, PRODUCTS, tier="binding")
        results[tag] = ApiResult("ops-math", path, "Acosh", "math", "valid", None, block_yaml(draft), None)
    old, new = (CatalogReport(t, {"ops-math": 1}, [r]) for t, r in results.items())
    changes = catalog_changes.compare(old, new).changed
    lost = [c.message for change in changes for c in change.of_kind(specdiff.BREAKING) if c.what == "dtype"]
    assert lost == []


def test_a_prototype_change_says_which_side_is_a_pages_and_not_a_headers():
    renamed = "aclnnStatus aclnnDemoScaleGetWorkspaceSize(const aclTensor* x, aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor)"  # fmt: skip
    old, new = _report("v1"), _report("v2", prototype=renamed)
    old.results[0].header = new.results[0].header = "equal"
    (change,) = catalog_changes.compare(old, new).changed
    assert change.prototype_note == "self renamed x"  # both the headers': the ABI's own change
    old.results[0].header = "header written by the build"
    (change,) = catalog_changes.compare(old, new).changed
    assert change.prototype_note == "self renamed x (the page's prototype at v1: no header there to take it from)"
