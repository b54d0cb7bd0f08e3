"""`aclnngen import`: synthetic pages (tests/data/pages, one per variant of the vendor's pages)
become drafts with the right facts, TODOs and defects; `validate` reports a draft's TODOs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aclnngen.codegen.importer.draft import build_draft
from aclnngen.codegen.importer.pages import read_page
from aclnngen.codegen.importer.text import html_tables
from aclnngen.codegen.loader import load_products
from repo_paths import PAGES

PRODUCTS = load_products()


def draft_of(name: str, release: str | None = None):
    facts = read_page(PAGES / name, PRODUCTS, release)
    return facts, build_draft(facts, PRODUCTS)


def dtypes(draft, param: str) -> dict[str, list[str]]:
    entry = next(p for p in draft["parameters"] if p["name"] == param)
    return {f: g["dtypes"] for g in entry["dtypes"] for f in g["families"]}


def todo_at(draft) -> list[str]:
    return [t["at"] for t in draft["todo"]]


def test_pipe_table_products_with_padding_old_names_and_a_stray_space():
    facts, draft = draft_of("table_variant.md")
    assert facts.form == "markdown" and facts.product_format == "table"
    # the two products only a dtype note names are drafted as supported, with a defect and a TODO
    assert [p["family"] for p in draft["products"]] == ["ascend950", "a3", "a2", "inference", "training"]
    assert any(k == "product" and "inference" in n for k, n in facts.defects)
    assert sum("only named by a dtype note" in t["note"] for t in draft["todo"]) == 2
    # a product the table does not know, marked ×, is reported, not drafted
    assert any("200/300/500" in u for u in facts.unparsed)


def test_a_rowspan_that_overruns_is_a_defect_and_rows_come_from_the_trs():
    facts, draft = draft_of("table_variant.md")
    assert [r["status"] for r in draft["return_codes"]] == [161001, 161002, 161002]
    assert [r["check"] for r in draft["return_codes"]] == ["null_pointer", "dtype", "same_shape"]
    assert draft["return_codes"][0]["params"] == ["gradOutput", "self", "alpha", "out"]
    overruns = [n for k, n in facts.defects if k == "return_code"]
    assert len(overruns) == 1 and 'rowspan="8"' in overruns[0]


def test_html_grid_fills_row_spans_and_clips_an_overrun():
    html = "<table><tr><td rowspan='5'>A</td><td>1</td></tr><tr><td>2</td></tr></table>"
    [(grid, problems)] = html_tables(html)
    assert grid == [["A", "1"], ["A", "2"]]
    assert problems and 'rowspan="5"' in problems[0]


def test_code_fence_lines_are_not_headings_and_prototypes_round_trip():
    facts, draft = draft_of("table_variant.md")
    assert facts.op == "DemoBackward" and not any("not a heading" in u for u in facts.unparsed)
    gws = draft["prototypes"]["get_workspace_size"]
    assert gws.startswith("aclnnStatus aclnnDemoBackwardGetWorkspaceSize(const aclTensor* gradOutput,")
    assert [p["name"] for p in draft["parameters"]] == ["gradOutput", "self", "alpha", "out"]
    assert [p["role"] for p in draft["parameters"]] == ["input", "input", "scalar", "output"]
    assert "\\cdot" in draft["formula"]["latex"] and draft["formula"]["outputs"] == {"out": "TODO"}


def test_plain_note_restricts_the_families_it_names():
    _, draft = draft_of("table_variant.md")
    assert dtypes(draft, "gradOutput") == {
        "ascend950": ["float32", "float16", "bfloat16"],
        "a3": ["float32", "float16", "bfloat16"],
        "a2": ["float32", "float16", "bfloat16"],
        "inference": ["float16", "float32"],
        "training": ["float16", "float32"],
    }


def test_marked_products_and_notes_positive_exclusion_and_free_text():
    facts, draft = draft_of("marker_variant.md")
    assert facts.product_format == "markers"
    assert {p["family"]: p.get("supported", True) for p in draft["products"]} == {
        "ascend950": True,
        "a3": True,
        "a2": True,
        "atlas_200i_500_a2": False,
        "inference": True,
        "training": True,
    }
    got = dtypes(draft, "out")
    assert got["training"] == got["inference"] == ["float16", "float32"]  # positive list
    assert got["a2"] == got["a3"] == ["float32", "float16", "bfloat16"]  # INT32 excluded
    assert got["ascend950"] == ["float32", "float16", "bfloat16", "int32"]
    assert "parameters.4.dtypes" in todo_at(draft)  # the 950 condition is a TODO, not a guess
    assert "atlas_200i_500_a2" not in got


def test_full_width_c_types_doubled_tr_attributes_and_rank_hints():
    facts, draft = draft_of("marker_variant.md")
    assert [p.name for p in facts.params] == ["gradOutput", "self", "alpha", "keepSign", "out"]
    assert facts.unparsed == []  # the doubled <tr> before out leaves no stray row
    alpha = next(p for p in draft["parameters"] if p["name"] == "alpha")
    # plain and conditional bounds, one stated in another parameter's row; `self < 0` in alpha's
    # description is a comparison of self, not a bound of alpha
    assert alpha["constraints"] == [
        {"op": ">=", "value": 0.5},
        {"op": "<", "value": 10, "when": {"keepSign": True}},
        {"op": ">=", "value": 0, "when": {"keepSign": False}},
    ]
    assert not any(t["at"] == "parameters.2.constraints" for t in draft["todo"])
    # a per-product note that lists dtypes per parameter: each parameter takes its own sentence's
    assert {"families": ["inference", "training"], "dtypes": ["float32"]} in alpha["scalar_dtypes"]
    grad = next(p for p in draft["parameters"] if p["name"] == "gradOutput")
    assert {"families": ["inference", "training"], "dtypes": ["float16", "float32"]} in grad["dtypes"]
    keep = next(p for p in draft["parameters"] if p["name"] == "keepSign")
    assert keep["role"] == "attribute" and keep["c_type"] == "bool" and keep["py_name"] == "keep_sign"
    assert any(k == "prototype" and "alpha" in n for k, n in facts.defects)  # table says aclTensor*
    assert {"kind": "max_rank", "params": ["self"], "rank": 6} in draft["rules"]
    assert {"kind": "empty", "params": ["gradOutput"], "allowed": False} in draft["rules"]
    assert {"kind": "same_dtype", "params": ["gradOutput", "self"]} in draft["rules"]
    assert not any(r["kind"] == "same_shape" for r in draft["rules"])
    # a row the draft cannot classify stays a TODO
    assert draft["return_codes"][3] == {"status": 161002, "check": "TODO", "params": "TODO", "condition": "TODO"}
    assert "return_codes.3" in todo_at(draft)


def test_english_headings_and_an_optional_scalars_default():
    facts, draft = draft_of("english_variant.md", "8.5.0")
    assert draft["cann_version"] == "8.5.0" and "cann_version" not in todo_at(draft)
    beta = next(p for p in draft["parameters"] if p["name"] == "betaOptional")
    assert beta["role"] == "optional_scalar" and beta["default"] == 2.5
    assert {p["family"]: p.get("supported", True) for p in draft["products"]} == {"a2": True, "training": False}
    assert draft["return_codes"][0]["params"] == ["gradOutput", "out"]


def test_saved_page_with_scrape_damage():
    facts, draft = draft_of("saved_variant.txt")
    assert facts.form == "saved" and facts.op == "DemoBackward"
    assert dtypes(draft, "gradOutput") == {"training": ["float32", "float16"], "a2": ["float32", "float16", "bfloat16"]}
    beta = next(p for p in draft["parameters"] if p["name"] == "betaOptional")
    assert beta["default"] == 0.5
    assert {"formula.latex", "return_codes", "cann_version"} <= set(todo_at(draft))
    assert any("listed twice" in u for u in facts.unparsed)
    assert any("[object Object]" in u for u in facts.unparsed) and any("undefined" in u for u in facts.unparsed)
    assert any(k == "name" and "aclnnDemoBackwardBackward" in n for k, n in facts.defects)


def test_import_writes_drafts_that_validate_reports_line_by_line(forked_cli, tmp_path):
    result = forked_cli(
        "import", str(PAGES / "marker_variant.md"), "-o", str(tmp_path), "--release", "v9.2.0-beta.1", timeout=120
    )
    assert result.returncode == 0, result.stderr
    draft_path = tmp_path / "demo_backward.yaml"
    assert f"-> {draft_path}" in result.stdout and "TODO:" in result.stdout and "defects: 1" in result.stdout
    draft = yaml.safe_load(draft_path.read_text())
    assert draft["cann_version"] == "9.2.RC1.alpha001"
    check = forked_cli("validate", str(draft_path), timeout=120)
    assert check.returncode == 1 and "Traceback" not in check.stderr
    lines = check.stderr.splitlines()
    assert len([line for line in lines if ": TODO " in line]) == len(draft["todo"])
    summary_line = next(line for line in lines if "TODO summary:" in line)
    assert summary_line.startswith(f"{draft_path}:") and int(summary_line.split(":")[1]) == _line_of(
        draft_path, "summary:"
    )


def _line_of(path: Path, prefix: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if line.startswith(prefix))


def test_import_of_a_missing_page_or_bad_release_is_one_line(forked_cli, tmp_path):
    missing = forked_cli("import", str(tmp_path / "nope.md"), "-o", str(tmp_path), timeout=120)
    assert (
        missing.returncode == 1 and "nope.md: no such doc page" in missing.stderr and "Traceback" not in missing.stderr
    )
    bad = forked_cli("import", str(PAGES / "english_variant.md"), "--release", "nine", timeout=120)
    assert (
        bad.returncode == 1 and "--release 'nine' is not a CANN release" in bad.stderr and "v9.2.0-beta.1" in bad.stderr
    )


@pytest.mark.parametrize(
    "tag,release",
    [("v8.5.0", "8.5.0"), ("v9.2.0-beta.1", "9.2.RC1.alpha001"), ("v9.0.0-rc.1", "9.0.RC1"), ("8.0.RC1", "8.0.RC1")],
)
def test_vendor_tags_become_release_spellings(tag, release):
    from aclnngen.core.releases import release_of

    assert release_of(tag) == release


def test_heading_lines_inside_code_fences_do_not_open_sections():
    from aclnngen.codegen.importer.markdown import sections

    text = "# aclnnX\n\n## 功能说明\n\n```Cpp\n## 函数原型\n#include <x>\n```\nafter\n"
    assert [h for h, _ in sections(text)] == ["", "aclnnX", "功能说明"]


def test_a_non_const_tensor_the_table_calls_an_input_is_an_output_and_a_defect():
    facts = read_page(PAGES / "saved_variant.txt", PRODUCTS)
    next(p for p in facts.params if p.name == "out").direction = "input"
    draft = build_draft(facts, PRODUCTS)
    assert next(p for p in draft["parameters"] if p["name"] == "out")["role"] == "output"
    assert any(k == "prototype" and "calls out an input" in n for k, n in facts.defects)


def test_import_never_overwrites_a_finished_spec_and_a_file_is_no_folder(forked_cli, tmp_path):
    spec = tmp_path / "demo_backward.yaml"
    spec.write_text("# a person's spec\nname: DemoBackward\n")
    refused = forked_cli("import", str(PAGES / "english_variant.md"), "-o", str(tmp_path), timeout=120)
    assert refused.returncode == 1 and "exists and is not a draft" in refused.stderr and "--into" in refused.stderr
    assert spec.read_text() == "# a person's spec\nname: DemoBackward\n"
    spec.unlink()
    for _ in range(2):  # a draft replaces the previous draft
        again = forked_cli("import", str(PAGES / "english_variant.md"), "-o", str(tmp_path), timeout=120)
        assert again.returncode == 0, again.stderr
    blocked = forked_cli("import", str(PAGES / "english_variant.md"), "-o", str(spec), timeout=120)
    assert (
        blocked.returncode == 1 and "cannot create the folder" in blocked.stderr and "Traceback" not in blocked.stderr
    )


def test_sameness_hints_come_from_usage_notes_but_not_from_broadcast_sentences():
    from aclnngen.codegen.importer.draft import _sameness_hints
    from aclnngen.codegen.importer.facts import PageParam

    page = {
        "a": PageParam("a", text="a、b和c的shape一致。"),
        "b": PageParam("b", text="broadcast后的shape与c的shape一致。"),
        "c": PageParam("c", text="数据类型与a相同。"),
    }
    assert _sameness_hints(["a", "b", "c"], page) == [
        {"kind": "same_shape", "params": ["a", "b", "c"]},
        {"kind": "same_dtype", "params": ["a", "c"]},
    ]


from hypothesis import example, given, settings, strategies as st  # noqa: E402

_FIXTURES = {
    name: (PAGES / name).read_text()
    for name in ("table_variant.md", "marker_variant.md", "english_variant.md", "saved_variant.txt")
}


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(_FIXTURES)),
    cut=st.integers(0, 10_000),
    drop=st.sets(st.integers(0, 200), max_size=30),
    noise=st.text(max_size=40),
)
@example(name="english_variant.md", cut=709, drop={1, 2}, noise="<![A:")  # html.parser asserted on this
def test_damaged_pages_still_give_a_draft_never_an_exception(tmp_path_factory, name, cut, drop, noise):
    """Truncated pages, lost lines and stray text (what scrapes and bad merges do) give a draft with
    TODOs, not a traceback."""
    lines = _FIXTURES[name].splitlines()
    damaged = "\n".join(line for i, line in enumerate(lines) if i not in drop)[:cut] + noise
    page = tmp_path_factory.mktemp("damaged") / name
    page.write_text(damaged, encoding="utf-8")
    facts = read_page(page, PRODUCTS)
    draft = build_draft(facts, PRODUCTS)
    assert draft["todo"] and "name" in draft
    from aclnngen.codegen.importer.writer import draft_text

    assert yaml.safe_load(draft_text(draft, facts))["todo"]


def test_a_draft_whose_todos_are_done_is_a_valid_spec(tmp_path):
    """A draft is in the spec language: writing what the TODOs ask for, and nothing else, gives a
    spec that loads (so the readers' output and the model never drift apart)."""
    from aclnngen.codegen.loader import load_spec

    _, draft = draft_of("english_variant.md", "8.5.0")
    draft.pop("todo")
    draft["summary"] = "A demo op."
    for param in draft["parameters"]:
        param["summary"] = "A demo parameter."
    draft["formula"]["outputs"] = {"out": "grad_output * beta_optional"}
    draft["oracle"] = {"kind": "aten", "op": "mul", "args": ["grad_output", "beta_optional"], "outputs": ["out"]}
    for row in draft["return_codes"]:  # which check a row's condition is, where the reader could not tell
        if row.get("check") == "TODO":
            row["check"] = "dtype"
    path = tmp_path / "demo_backward.yaml"
    path.write_text(yaml.safe_dump(draft, sort_keys=False, allow_unicode=True))
    spec = load_spec(path, PRODUCTS).spec
    assert spec.name == "DemoBackward" and [p.role for p in spec.parameters] == ["input", "optional_scalar", "output"]
    assert spec.return_codes[0].status == 161001


def test_a_char_pointer_attributes_choices_are_the_quoted_words_of_its_text():
    from aclnngen.codegen.importer.draft import _choices  # deferred: a unit of the draft, only this test needs it

    assert _choices('支持"none"和“tanh”两种取值，默认"none"') == ["none", "tanh"]
    assert _choices("a flag with no quoted values") == []  # the draft makes this a TODO


@pytest.mark.parametrize(
    "out_note,kind",
    [
        ("数据类型需要是gradOutput与self推导之后可转换的数据类型。", "castable"),
        ("数据类型与gradOutput和self推导后的数据类型一致。", "promote"),
    ],
)
def test_broadcast_promote_castable_and_min_rank_hints(tmp_path, out_note, kind):
    """Usage notes saying the inputs broadcast and promote become draft rules to the one output; the
    output's note decides promote (equal to the promoted dtype) or castable; "1-6" dims a min_rank."""
    text = (PAGES / "marker_variant.md").read_text(encoding="utf-8")
    text = text.replace(
        "<li>和self的数据类型一致。</li>",
        "<li>shape需要与self满足broadcast关系。</li><li>数据类型与self满足推导关系。</li>",
    )
    text = text.replace(
        "<td>演示输入。</td>\n      <td>-</td>",
        "<td>演示输入。</td>\n      <td>shape需要与gradOutput满足广播关系。数据类型与gradOutput满足推导关系。</td>",
    )
    text = text.replace("<td>演示结果。</td>\n      <td>-</td>", f"<td>演示结果。</td>\n      <td>{out_note}</td>")
    assert "broadcast关系" in text and "广播关系" in text and out_note in text  # every edit took
    page = tmp_path / "marker_variant.md"
    page.write_text(text, encoding="utf-8")
    draft = build_draft(read_page(page, PRODUCTS, None), PRODUCTS)
    rules = draft["rules"]
    assert {"kind": "broadcast", "inputs": ["gradOutput", "self"], "output": "out"} in rules
    assert {"kind": kind, "inputs": ["gradOutput", "self"], "output": "out"} in rules
    assert {"kind": "min_rank", "params": ["self"], "rank": 1} in rules
    assert "rules" in todo_at(draft)  # hints, for a person to confirm


@pytest.mark.parametrize(
    "c_type,note,row,expected",
    [
        ("bool", "开关，默认值为true。", None, {"default": True}),
        ("double", "系数，默认值为0.25。", None, {"default": 0.25}),
        ("int64_t", "要归约的维度，默认值为-1。", "keepSign超出self的维度范围。", {"default": -1, "dim_of": "self"}),
        ("int64_t", "次数。", None, {}),  # nothing stated: nothing guessed
    ],
)
def test_attribute_defaults_and_dimension_ranges(tmp_path, c_type, note, row, expected):
    """bool, double and int64_t attributes: the default the page states, typed by the C type, and an
    int64_t bounded by a tensor's dims (in its row or the return-code table) as `dim_of`, with the
    row an attribute_value check; an attribute the page says nothing about gets neither."""
    text = (PAGES / "marker_variant.md").read_text(encoding="utf-8")
    text = text.replace("bool keepSign", f"{c_type} keepSign").replace("keepSign（bool）", f"keepSign（{c_type}）")
    text = text.replace("<td>开关。</td>", f"<td>{note}</td>")
    if row:
        text = text.replace("<td>某个演示条件不成立。</td>", f"<td>{row}</td>")
    page = tmp_path / "marker_variant.md"
    page.write_text(text, encoding="utf-8")
    draft = build_draft(read_page(page, PRODUCTS, None), PRODUCTS)
    keep = next(p for p in draft["parameters"] if p["name"] == "keepSign")
    assert keep["c_type"] == c_type
    assert {k: keep[k] for k in ("default", "dim_of") if k in keep} == expected
    if "dim_of" in expected:
        assert {
            "status": 161002,
            "check": "attribute_value",
            "params": ["keepSign"],
            "condition": "keepSign is outside the values it may take.",
        } in draft["return_codes"]
        assert any(t["at"] == "parameters.3.dim_of" for t in draft["todo"])


def test_a_dtype_row_names_only_the_tensors_it_mentions(tmp_path):
    """A page's dtype row that also mentions a scalar or attribute: the draft's row names the
    tensors only (`validate` refuses a non-tensor in a dtype row: its test changes a dtype)."""
    text = (PAGES / "marker_variant.md").read_text(encoding="utf-8")
    row = "<td>gradOutput的数据类型不在支持的范围之内。</td>"
    assert row in text
    page = tmp_path / "marker_variant.md"
    page.write_text(text.replace(row, "<td>gradOutput、keepSign的数据类型不在支持的范围之内。</td>"), encoding="utf-8")
    draft = build_draft(read_page(page, PRODUCTS, None), PRODUCTS)
    assert "keepSign" in [p["name"] for p in draft["parameters"]]
    dtype_rows = [r for r in draft["return_codes"] if r["check"] == "dtype"]
    assert dtype_rows and all(r["params"] == ["gradOutput"] for r in dtype_rows), dtype_rows


def test_a_page_without_a_formula_gets_a_no_formula_defect(tmp_path):
    text = (PAGES / "table_variant.md").read_text(encoding="utf-8")
    start, end = text.index("- 计算公式："), text.index("## 函数原型")
    page = tmp_path / "aclnnNoFormula.md"
    page.write_text(text[:start] + text[end:], encoding="utf-8")
    facts = read_page(page, PRODUCTS, None)
    draft = build_draft(facts, PRODUCTS)
    assert [d["kind"] for d in draft["defects"]].count("no_formula") == 1 and "defects" in todo_at(draft)
    _, with_formula = draft_of("table_variant.md")
    assert "no_formula" not in [d["kind"] for d in with_formula["defects"]]


def test_the_format_column_becomes_formats_and_nd_alone_stays_unsaid(tmp_path):
    text = (PAGES / "marker_variant.md").read_text()
    cells = text.split("<td>ND</td>")
    assert len(cells) == 4  # gradOutput, self, out
    page = tmp_path / "formats.md"
    page.write_text(
        cells[0] + "<td>ND</td>" + cells[1] + "<td>ND、NCHW、NZ</td>" + cells[2] + "<td>ND、XYZ</td>" + cells[3]
    )
    facts = read_page(page, PRODUCTS, None)
    draft = build_draft(facts, PRODUCTS)
    by_name = {p["name"]: p for p in draft["parameters"]}
    assert "formats" not in by_name["gradOutput"]  # ND alone: what a spec without formats means
    supported = [f for f, ok in facts.products.items() if ok]
    assert by_name["self"]["formats"] == [{"families": supported, "formats": ["ND", "NCHW", "FRACTAL_NZ"]}]
    assert "formats" not in by_name["out"]  # ND, and a word that names no format: a TODO
    out_at = f"parameters.{list(by_name).index('out')}.formats"
    assert any(t["at"] == out_at and "XYZ" in t["note"] for t in draft["todo"])


def test_the_catalogs_c_types_become_list_parameters_and_attributes(tmp_path):
    """Tensor and scalar lists take their element's role with `list: true`; int8_t, int32_t, float
    and the float and bool arrays become attributes of that c_type (aclnngen/core/attribute_types.py)."""
    text = (PAGES / "saved_variant.txt").read_text(encoding="utf-8")
    extra = (
        "const aclTensorList *xs, aclTensorList *ys, const aclScalarList *wsOptional, int8_t k, "
        "int32_t n, float eps, const aclFloatArray *fs, const aclBoolArray *bs, "
    )
    page = tmp_path / "lists.txt"
    page.write_text(
        text.replace("aclTensor *out, uint64_t *workspaceSize", extra + "aclTensor *out, uint64_t *workspaceSize")
    )
    facts = read_page(page, PRODUCTS)
    params = {p["name"]: p for p in build_draft(facts, PRODUCTS)["parameters"]}
    assert (params["xs"]["role"], params["xs"].get("list")) == ("input", True)
    assert (params["ys"]["role"], params["ys"].get("list")) == ("output", True)
    assert (params["wsOptional"]["role"], params["wsOptional"].get("list")) == ("scalar", True)
    for name, c_type in [
        ("k", "int8_t"),
        ("n", "int32_t"),
        ("eps", "float"),
        ("fs", "aclFloatArray*"),
        ("bs", "aclBoolArray*"),
    ]:
        assert (params[name]["role"], params[name]["c_type"]) == ("attribute", c_type), name
    assert "list" not in params["gradOutput"] and "list" not in params["out"]
