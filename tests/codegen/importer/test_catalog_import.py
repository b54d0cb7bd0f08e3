"""The importer over the whole catalog: shared pages (`aclnnX&aclnnInplaceX.md`) give one spec per
API, C types the spec language does not know are reported per page (importer/ctypes.py), drafts of
binding tier validate and generate, and `aclnngen catalog` counts every page of the vendor's
repositories (with the mirrors; the test skips naming ACLNNGEN_VENDOR_MIRRORS without them)."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from repo_paths import PAGES
from aclnngen.codegen import catalog
from aclnngen.codegen.importer.ctypes import spec_type
from aclnngen.codegen.importer.draft import build_draft
from aclnngen.codegen.importer.markdown import page_apis, read_markdown_apis
from aclnngen.codegen.importer.writer import block_yaml
from aclnngen.codegen.loader import load_products, load_spec

PRODUCTS = load_products()
PAGE = (PAGES / "table_variant.md").read_text(encoding="utf-8")
MIRRORS = "ACLNNGEN_VENDOR_MIRRORS"


def _shared_page() -> str:
    """The made-up page of tests/data/pages turned into a shared page of two APIs: an in-place
    twin whose first phase has no `out` (its `self` is written in place)."""
    text = PAGE.replace("# aclnnDemoBackward\n", "# aclnnDemoBackward&aclnnInplaceDemoBackward\n", 1)
    start = text.index("## aclnnDemoBackwardGetWorkspaceSize")
    end = text.index("## aclnnDemoBackward\n")
    section = text[start:end].replace("DemoBackward", "InplaceDemoBackward")
    twin = (
        "```Cpp\naclnnStatus aclnnInplaceDemoBackwardGetWorkspaceSize(const aclTensor *gradOutput, "
        "aclTensor *self, const aclScalar *alpha, uint64_t *workspaceSize, aclOpExecutor **executor);\n"
        "aclnnStatus aclnnInplaceDemoBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, "
        "aclrtStream stream);\n```\n\n"
    )
    text = text.replace("## aclnnDemoBackwardGetWorkspaceSize", twin + "## aclnnDemoBackwardGetWorkspaceSize", 1)
    return text.replace("## aclnnDemoBackward\n", section + "## aclnnDemoBackward\n", 1)


@pytest.mark.parametrize(
    "c_type,kind",
    [
        ("const aclTensor *", "tensor"),
        ("aclTensor*", "tensor"),
        ("const aclScalar*", "scalar"),
        ("int64_t", "attribute"),
        ("const aclIntArray *", "attribute"),
        ("const aclTensorList *", "tensor"),
        ("aclScalarList*", "scalar"),
        ("int8_t", "attribute"),
        ("const aclBoolArray *", "attribute"),
        ("aclDataType", "attribute"),
        ("int", "attribute"),
        ("uint64_t", "attribute"),
        ("aclOpExecutor**", None),
        ("const aclTensor **", None),
    ],
)
def test_c_type_maps_to_a_spec_form_or_an_unsupported_reason(c_type, kind):
    typed = spec_type(c_type)
    assert typed.kind == kind
    assert (typed.unsupported is None) == (kind is not None)
    if kind is None:
        assert typed.unsupported == f"unsupported type {c_type.replace(' ', '').replace('const', '')}"
    assert typed.is_list == ("List" in c_type)


def test_shared_page_gives_one_facts_per_api_with_its_own_prototypes():
    text = _shared_page()
    assert page_apis(text) == ["DemoBackward", "InplaceDemoBackward"] and page_apis(PAGE) == ["DemoBackward"]
    plain, inplace = read_markdown_apis(text, "activation/demo/docs/x.md", PRODUCTS)
    assert plain.op == "DemoBackward" and inplace.op == "InplaceDemoBackward"
    assert "aclnnDemoBackwardGetWorkspaceSize(" in plain.prototypes["get_workspace_size"]
    assert "aclnnInplaceDemoBackwardGetWorkspaceSize(" in inplace.prototypes["get_workspace_size"]
    assert inplace.prototypes["launch"].startswith("aclnnStatus aclnnInplaceDemoBackward(")
    assert plain.params and inplace.params and plain.products == inplace.products


def test_binding_tier_drafts_of_a_shared_page_validate(tmp_path):
    for facts in read_markdown_apis(_shared_page(), "activation/demo/docs/x.md", PRODUCTS):
        facts.release, facts.category = "v9.2.0-beta.1", "activation"
        draft = build_draft(facts, PRODUCTS, tier="binding")
        assert draft["tier"] == "binding" and "formula" not in draft and "oracle" not in draft
        assert "activation" in draft["summary"] and not any(t["at"] == "summary" for t in draft["todo"])
        draft.pop("todo")
        path = tmp_path / f"{catalog.spec_stem(facts.op)}.yaml"
        path.write_text(block_yaml(draft), encoding="utf-8")
        spec = load_spec(path, PRODUCTS).spec
        assert spec.name == facts.op and not spec.computes


def test_auto_tier_follows_whether_the_page_states_a_formula():
    facts = read_markdown_apis(PAGE, "p.md", PRODUCTS)[0]
    assert "formula" in build_draft(facts, PRODUCTS, tier="auto")
    facts.latex = []
    assert build_draft(facts, PRODUCTS, tier="auto")["tier"] == "binding"


def test_a_page_with_an_unknown_c_type_is_reported_not_crashed():
    text = PAGE.replace("const aclScalar *alpha", "const aclScalar **alpha", 1)
    facts = read_markdown_apis(text, "p.md", PRODUCTS)[0]
    draft = build_draft(facts, PRODUCTS, tier="binding")
    assert facts.unsupported_types == ["unsupported type aclScalar**"]
    assert any(t["note"] == "unsupported type aclScalar**" for t in draft["todo"])


@pytest.mark.parametrize("how", ["ref_name", "page_direction", "api_name"])
def test_a_tensor_the_op_writes_in_place_is_drafted_as_an_in_place_input(tmp_path, how):
    """The vendor declares its `...Ref` tensors const (the handle is, the data is not), and an
    in-place API has no output tensor: the draft marks the tensor `inplace` and it validates."""
    text = _shared_page().replace(
        "aclnnInplaceDemoBackwardGetWorkspaceSize(const aclTensor *gradOutput, aclTensor *self,",
        "aclnnInplaceDemoBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,",
    )
    if how == "ref_name":
        text = re.sub(r"\bself\b", "selfRef", text)
    facts = read_markdown_apis(text, "activation/demo/docs/x.md", PRODUCTS)[1]
    written = "selfRef" if how == "ref_name" else "self"
    if how == "page_direction":
        next(p for p in facts.params if p.name == written).direction = "inout"
    # api_name: aclnnInplaceX writes no output, so it writes `self` (not gradOutput, the first input)
    facts.release, facts.category = "v9.2.0-beta.1", "activation"
    draft = build_draft(facts, PRODUCTS, tier="binding")
    param = next(p for p in draft["parameters"] if p["name"] == written)
    assert param["role"] == "input" and param.get("inplace") is True, param
    draft.pop("todo")
    catalog.keep_readable_rows(draft)
    path = tmp_path / f"{catalog.spec_stem(facts.op)}.yaml"
    path.write_text(block_yaml(draft), encoding="utf-8")
    spec = load_spec(path, PRODUCTS).spec
    assert not spec.by_role("output") and spec.parameter(written).inplace


def _mirrors() -> list[Path]:
    found = [Path(p) for p in os.environ.get(MIRRORS, "").split(os.pathsep) if p and Path(p).is_dir()]
    if not found:
        # like the other vendor-mirror tests: material CI never has, so it skips even under
        # ACLNNGEN_REQUIRE_EXTERNAL (which covers ../shared only), naming the variable
        pytest.skip(
            f"no vendor mirrors: set {MIRRORS} to git directories of hicann/ops-nn and hicann/ops-math "
            "(not available in CI)"
        )
    return found


def test_catalog_counts_every_page_of_the_mirrors(forked_cli, tmp_path):
    mirrors = _mirrors()
    done = forked_cli(
        "catalog", *[a for m in mirrors for a in ("--mirror", str(m))], "--release", "v9.2.0-beta.1", "--json"
    )
    data = json.loads(done.stdout)
    assert sum(data["pages"].values()) > 0 and data["apis"] >= sum(data["pages"].values())
    assert data["imported"] >= data["valid"] >= data["generated"] > 0
    assert sum(data["reasons"].values()) == data["apis"] - data["generated"]


def test_a_dtype_cell_naming_another_parameter_takes_its_dtypes():
    out_row = "<td>演示结果。</td>\n    <td>-</td>\n    <td>FLOAT、FLOAT16、BFLOAT16</td>"
    assert out_row in PAGE
    text = PAGE.replace(out_row, "<td>演示结果。</td>\n    <td>-</td>\n    <td>与gradOutput一致</td>", 1)
    params = {p.name: p for p in read_markdown_apis(text, "p.md", PRODUCTS)[0].params}
    assert params["out"].dtypes == params["gradOutput"].dtypes == ["float32", "float16", "bfloat16"]
    unresolved = text.replace("与gradOutput一致", "与nothing一致", 1)
    assert read_markdown_apis(unresolved, "p.md", PRODUCTS)[0].params[-3].dtypes == []


def test_a_parameter_named_like_generated_code_gets_a_trailing_underscore():
    text = re.sub(r"(?<![A-Za-z])self(?![A-Za-z])", "x", PAGE)  # `x` is a name the generated modules use
    facts = read_markdown_apis(text, "p.md", PRODUCTS)[0]
    py_names = {p["name"]: p["py_name"] for p in build_draft(facts, PRODUCTS, tier="binding")["parameters"]}
    assert py_names["x"] == "x_" and py_names["gradOutput"] == "grad_output" and py_names["out"] == "out"


@pytest.fixture(scope="module")
def made_up_mirror(tmp_path_factory):
    """A git directory laid out as the vendor's repositories are: the made-up shared page under
    activation/demo/docs/, one header that declares the plain API as the page prints it and the
    in-place one with another parameter name."""
    work = tmp_path_factory.mktemp("mirror") / "ops-demo"
    (work / "activation" / "demo" / "docs").mkdir(parents=True)
    (work / "activation" / "demo" / "op_api").mkdir(parents=True)
    (work / "activation" / "demo" / "docs" / "aclnnDemoBackward&aclnnInplaceDemoBackward.md").write_text(
        _shared_page(), encoding="utf-8"
    )
    (work / "activation" / "demo" / "op_api" / "aclnn_demo_backward.h").write_text(
        "/* made up */\n"
        "aclnnStatus aclnnDemoBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,\n"
        "    const aclScalar *alpha, aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor);\n"
        "aclnnStatus aclnnInplaceDemoBackwardGetWorkspaceSize(const aclTensor *grad, aclTensor *self,\n"
        "    const aclScalar *alpha, uint64_t *workspaceSize, aclOpExecutor **executor);\n",
        encoding="utf-8",
    )
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "pages"], ["tag", "v9.2.0-beta.1"]):
        subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True)
    return work / ".git"


def test_catalog_of_a_made_up_mirror_counts_apis_and_compares_headers(made_up_mirror, tmp_path):
    report = catalog.survey([made_up_mirror], "v9.2.0-beta.1", PRODUCTS, spec_out=tmp_path)
    assert report.pages == {"ops-demo": 1}
    assert {r.api: r.stage for r in report.results} == {"DemoBackward": "generated", "InplaceDemoBackward": "generated"}
    # the in-place API's spec takes its header's prototype; the page's stays as a finding
    assert {r.api: r.header for r in report.results} == {"DemoBackward": "equal", "InplaceDemoBackward": "equal"}
    assert [r.page_parted is not None for r in report.results] == [False, True]
    inplace = (tmp_path / "ops-demo/activation/inplace_demo_backward.yaml").read_text(encoding="utf-8")
    assert "GetWorkspaceSize(const aclTensor* grad, aclTensor* self," in inplace and "page_prototypes:" in inplace
    written = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.yaml"))
    assert written == ["ops-demo/activation/demo_backward.yaml", "ops-demo/activation/inplace_demo_backward.yaml"]
    text = catalog.markdown(report)
    assert text == catalog.markdown(catalog.survey([made_up_mirror], "v9.2.0-beta.1", PRODUCTS))  # deterministic
    assert (
        "2 equal" in text
        and "| ops-demo | InplaceDemoBackward | page `const aclTensor* gradOutput`, header `const aclTensor* grad` |"
        in text
    )
    assert "Written by `aclnngen catalog --write docs/catalog.md`" in text  # no tests ran: no --run-tests
    tested = catalog.markdown(dataclasses.replace(report, tested=True))
    assert "Written by `aclnngen catalog --run-tests --write docs/catalog.md`" in tested


# An older page's form, in our own words: prototypes as inline code in bullets, parameters as
# bullets `name (type, direction)：...`, return codes as text in a code block.
OLDER_PAGE = """# aclnnDemoScale

## 产品支持情况

| 产品 | 是否支持 |
| :--- | :---: |
| <term>Atlas A2 训练系列产品/Atlas 800I A2 推理产品/A200I A2 Box 异构组件</term> | √ |

## 函数原型

- `aclnnStatus aclnnDemoScaleGetWorkspaceSize(const aclTensor* self, aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor)`
- `aclnnStatus aclnnDemoScale(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream)`

## aclnnDemoScaleGetWorkspaceSize

- **参数说明：**

  - self (aclTensor\\*, 计算输入)：演示输入，数据类型支持FLOAT、FLOAT16。
  - out (aclTensor\\*, 计算输出)：演示输出，数据类型支持FLOAT、FLOAT16。
  - workspaceSize (uint64_t\\*, 出参)：工作区大小。
  - executor (aclOpExecutor\\**, 出参)：执行器。

- **返回值：**

  ```
  返回161001 (ACLNN_ERR_PARAM_NULLPTR): 1. 传入的self或out是空指针。
  返回161002 (ACLNN_ERR_PARAM_INVALID): 1. self或out的数据类型不在支持的范围之内。
                                       2. self和out的shape不一致。
  ```

## aclnnDemoScale
"""


def test_an_older_page_with_inline_prototypes_bullets_and_text_codes_is_read():
    facts = read_markdown_apis(OLDER_PAGE, "p.md", PRODUCTS)[0]
    assert set(facts.prototypes) == {"get_workspace_size", "launch"}
    assert [(p.name, p.direction, p.dtypes) for p in facts.params[:2]] == [
        ("self", "input", ["float32", "float16"]),
        ("out", "output", ["float32", "float16"]),
    ]
    assert [(c.status, c.name) for c in facts.return_codes] == [
        (161001, "ACLNN_ERR_PARAM_NULLPTR"),
        (161002, "ACLNN_ERR_PARAM_INVALID"),
        (161002, "ACLNN_ERR_PARAM_INVALID"),
    ]
    assert "shape" in facts.return_codes[2].description and "no parameter table" not in " ".join(facts.unparsed)


@pytest.fixture(scope="module")
def two_release_mirror(tmp_path_factory):
    """A made-up vendor repository at two tags: at the newer one the plain API's first tensor
    loses bfloat16 and its prototype renames a parameter, and a second page adds an API."""
    work = tmp_path_factory.mktemp("releases") / "ops-demo"
    docs = work / "activation" / "demo" / "docs"
    docs.mkdir(parents=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"

    def git(*args):
        subprocess.run(["git", *args], cwd=work, env=env, check=True, capture_output=True)

    (docs / "aclnnDemoBackward.md").write_text(PAGE, encoding="utf-8")
    git("init", "-q")
    git("add", "-A")
    git("commit", "-q", "-m", "old")
    git("tag", "v8.5.0")
    newer = PAGE.replace("<td>FLOAT、FLOAT16、BFLOAT16</td>", "<td>FLOAT、FLOAT16</td>", 1)
    newer = newer.replace("const aclScalar *alpha", "const aclScalar *scale")
    (docs / "aclnnDemoBackward.md").write_text(newer, encoding="utf-8")
    (docs / "aclnnOtherBackward.md").write_text(PAGE.replace("DemoBackward", "OtherBackward"), encoding="utf-8")
    git("add", "-A")
    git("commit", "-q", "-m", "new")
    git("tag", "v9.2.0-beta.1")
    return work / ".git"


def test_the_catalog_between_two_tags_names_added_apis_changed_prototypes_and_lost_dtypes(
    two_release_mirror, tmp_path, forked_cli
):
    from aclnngen.codegen import catalog_changes

    old = catalog.survey([two_release_mirror], "v8.5.0", PRODUCTS)
    new = catalog.survey([two_release_mirror], "v9.2.0-beta.1", PRODUCTS)
    changes = catalog_changes.compare(old, new)
    assert changes.added == [("ops-demo", "OtherBackward")] and changes.removed == []
    (demo,) = changes.changed
    assert demo.api == "DemoBackward" and demo.breaking
    assert "alpha" in demo.prototype[0] and "scale" in demo.prototype[1]
    assert any(c.what == "dtype" and "bfloat16 removed" in c.message for c in demo.changes), demo.changes
    assert catalog_changes.compare(new, new).changed == []  # a release against itself changes nothing
    out = tmp_path / "changes.md"
    done = forked_cli(
        "catalog", "--mirror", two_release_mirror, "--tag", "v9.2.0-beta.1", "--since", "v8.5.0",
        "--write-changes", out, "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)["changes"]
    assert data["added"] == ["OtherBackward"] and data["changed"][0]["breaking"] is True
    text = out.read_text(encoding="utf-8")
    assert "prototype: alpha renamed scale" in text and "`aclnnOtherBackward`" in text and "bfloat16 removed" in text
    # `aclnngen diff --since` writes the same release view; without --tag it says what it needs
    again = tmp_path / "again.md"
    done = forked_cli(
        "diff", "--mirror", two_release_mirror, "--since", "v8.5.0", "--tag", "v9.2.0-beta.1", "--write", again
    )
    assert done.returncode == 0 and "1 APIs added" in done.stdout, done.stderr
    assert again.read_text(encoding="utf-8") == text
    done = forked_cli("diff", "--mirror", two_release_mirror, "--since", "v8.5.0")
    assert done.returncode != 0 and "--tag NEW_TAG" in done.stderr and "Traceback" not in done.stderr


def test_a_null_pointer_row_naming_no_parameter_names_every_required_pointer():
    """ "A tensor passed is NULL", with no name: every tensor and scalar NULL cannot be."""
    text = PAGE.replace("gradOutput、self、alpha或out是空指针。", "传入的tensor是空指针。", 1)
    facts = read_markdown_apis(text, "p.md", PRODUCTS)[0]
    rows = build_draft(facts, PRODUCTS, tier="binding")["return_codes"]
    null = next(r for r in rows if r["status"] == 161001)
    assert null["check"] == "null_pointer" and null["params"] == ["gradOutput", "self", "alpha", "out"], null


def test_the_catalog_keeps_of_a_draft_what_the_spec_language_holds():
    """Rules naming a list go (no rule reads a list yet); a row keeps the parameters its check can
    test, its condition rewritten for them; a misread NULL row (not 161001) goes."""
    draft = {
        "parameters": [
            {"name": "xs", "role": "input", "list": True},
            {"name": "y", "role": "input"},
            {"name": "out", "role": "output"},
        ],
        "rules": [
            {"kind": "same_shape", "params": ["xs", "out"]},
            {"kind": "same_dtype", "params": ["y", "out"]},
        ],
        "return_codes": [
            {"status": 161001, "check": "null_pointer", "params": ["xs", "out"], "condition": "c"},
            {"status": 161002, "check": "null_pointer", "params": ["y"], "condition": "c"},
            {"status": 161002, "check": "same_dtype", "params": ["xs", "y"], "condition": "c"},
            {"status": 161002, "check": "same_shape", "params": ["xs", "out"], "condition": "c"},
        ],
    }
    catalog.keep_readable_rows(draft)
    assert draft["rules"] == [{"kind": "same_dtype", "params": ["y", "out"]}]
    assert [(r["check"], r["params"]) for r in draft["return_codes"]] == [
        ("null_pointer", ["xs", "out"]),
        ("same_dtype", ["y"]),
    ]
    assert "xs" not in draft["return_codes"][1]["condition"]


def test_a_row_split_into_an_extra_cell_still_gives_its_dtypes_and_formats():
    text = PAGE.replace(
        "<td><ul><li>支持空Tensor。</li><li>和self的shape一致。</li></ul></td>",
        "<td><ul><li>支持空Tensor。</li></ul></td>\n    <td>和self的shape一致。</td>",
        1,
    )
    grad = next(p for p in read_markdown_apis(text, "p.md", PRODUCTS)[0].params if p.name == "gradOutput")
    assert grad.dtypes == ["float32", "float16", "bfloat16"] and grad.formats == "ND" and grad.dims == "0-8"


def test_a_description_saying_the_dtype_is_anothers_takes_its_dtypes():
    text = PAGE.replace("<td>FLOAT、FLOAT16、BFLOAT16</td>", "<td>-</td>", 1).replace(
        "<td>演示梯度。</td>", "<td>演示梯度，数据类型必须与self相同。</td>", 1
    )
    params = {p.name: p for p in read_markdown_apis(text, "p.md", PRODUCTS)[0].params}
    assert params["gradOutput"].dtypes == params["self"].dtypes == ["float32", "float16", "bfloat16"]


def test_a_binding_tier_scalar_takes_a_float_dtype_its_page_lists():
    text = PAGE.replace(
        "<td>系数，写作\\alpha。</td>\n    <td>-</td>\n    <td>FLOAT</td>",
        "<td>系数，写作\\alpha。</td>\n    <td>-</td>\n    <td>INT32、FLOAT16</td>",
        1,
    )
    facts = read_markdown_apis(text, "p.md", PRODUCTS)[0]
    alpha = next(p for p in build_draft(facts, PRODUCTS, tier="binding")["parameters"] if p["name"] == "alpha")
    assert alpha["scalar_dtype"] == "float16", alpha
    full = next(p for p in build_draft(facts, PRODUCTS, tier="full")["parameters"] if p["name"] == "alpha")
    assert full["scalar_dtype"] == "TODO"  # a person picks it for a full-tier spec
