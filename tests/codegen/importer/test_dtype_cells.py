"""Dtype cells the importer reads: footnote marks flattened into a dtype word ("FLOAT32¹" read as
"FLOAT321"), and cells that give another parameter's dtypes in the page's several phrasings,
resolved along a chain."""

from __future__ import annotations

import pytest

from aclnngen.codegen.importer.facts import PageParam, PageFacts, page_dtypes
from aclnngen.codegen.importer.markdown import _dtypes_by_reference


@pytest.mark.parametrize(
    "cell, dtypes",
    [
        ("FLOAT321、FLOAT8_E8M01、2", ["float32", "float8_e8m0fnu"]),
        ("UINT642、INT642", ["uint64", "int64"]),
        ("INT8、FLOAT16、BFLOAT16", ["int8", "float16", "bfloat16"]),
        ("INT81", ["int8"]),
        ("FLOAT8", []),  # no footnote after a name that ends in a letter: not FLOAT and a mark
        ("INT", []),
    ],
)
def test_dtype_words_with_flattened_footnote_marks(cell, dtypes):
    assert page_dtypes(cell) == dtypes


@pytest.mark.parametrize(
    "cell",
    [
        "与self一致",
        "和self一致",
        "与输入self保持一致",
        "与“self”参数一致。",
        "数据类型与self相同。",
        "与self类型相同",
        "same as self",
    ],
)
def test_a_cell_giving_another_parameters_dtypes(cell):
    facts = PageFacts("made/up.md", "markdown")
    facts.params = [PageParam("self", dtypes=["float32", "float16"]), PageParam("out")]
    _dtypes_by_reference(facts, {"self": "FLOAT32、FLOAT16", "out": cell})
    assert facts.params[1].dtypes == ["float32", "float16"]


def test_a_chain_of_references_resolves_whatever_the_row_order():
    facts = PageFacts("made/up.md", "markdown")
    facts.params = [PageParam("total"), PageParam("weight"), PageParam("self", dtypes=["float32"])]
    _dtypes_by_reference(facts, {"total": "数据类型与weight相同。", "weight": "数据类型和self保持一致。"})
    assert [p.dtypes for p in facts.params] == [["float32"], ["float32"], ["float32"]]


def test_a_shape_sentence_gives_no_dtypes():
    facts = PageFacts("made/up.md", "markdown")
    facts.params = [PageParam("grad"), PageParam("output", dtypes=["float32"])]
    _dtypes_by_reference(facts, {"grad": "shape需要与circular_pad2d正向传播的output一致。"})
    assert facts.params[0].dtypes == []


@pytest.mark.parametrize(
    "cell, dtypes",
    [
        ("FLOAT1", ["float32"]),  # a small mark after a name ending in a letter
        ("BOOL2、INT32", ["bool", "int32"]),
        ("float16/bfloat16", ["float16", "bfloat16"]),  # lower case, as some cells write them
        ("uint8_t", ["uint8"]),  # a C integer type for the dtype
        ("int8/hif8/fp8_e4m3/fp4_e2m1", ["int8", "hifloat8", "float8_e4m3fn", "float4_e2m1fn"]),
        ("-", []),
    ],
)
def test_dtype_cells_in_other_spellings(cell, dtypes):
    from aclnngen.codegen.importer.facts import cell_dtypes

    assert cell_dtypes(cell) == dtypes


def test_a_description_stating_its_own_dtype_gives_it_where_the_cell_gives_none():
    facts = PageFacts("made/up.md", "markdown")
    facts.params = [
        PageParam("self", dtypes=["float32"]),
        PageParam("out", text="一个输出，数据类型为BOOL，形状为[1]。"),
    ]
    _dtypes_by_reference(facts, {"self": "FLOAT32", "out": "-"})
    assert facts.params[1].dtypes == ["bool"]


def test_a_row_one_cell_short_has_its_dtypes_one_cell_early():
    from aclnngen.codegen.importer.markdown import _read_param_table

    facts = PageFacts("made/up.md", "markdown")
    header = ["参数名", "输入/输出", "描述", "使用说明", "数据类型", "数据格式", "维度(shape)", "非连续Tensor"]
    short = ["selfRef（aclTensor*）", "输入/输出", "待写的张量。", "FLOAT16、INT32", "ND", "0-8", "√"]
    full = ["other（aclTensor*）", "输入", "另一个张量。", "-", "FLOAT16", "ND", "0-8", "√"]
    _read_param_table(facts, [header, short, full])
    assert [(p.name, p.dtypes, p.formats, p.dims) for p in facts.params] == [
        ("selfRef", ["float16", "int32"], "ND", "0-8"),
        ("other", ["float16"], "ND", "0-8"),
    ]


@pytest.mark.parametrize(
    "body, mode, dtypes",
    [
        # the product's own list, then a sentence that excludes no dtype: the list, not an exclusion
        ("数据类型支持FLOAT16、FLOAT32。不支持空Tensor。", "only", ["float16", "float32"]),
        # an exclusion, then a condition naming dtypes: only the excluded one
        ("不支持BFLOAT16数据类型。当self为INT8、INT32时最多7维。", "except", ["bfloat16"]),
        ("不支持BFLOAT16。", "except", ["bfloat16"]),
    ],
)
def test_a_product_note_excludes_only_the_dtypes_its_negating_sentences_name(body, mode, dtypes):
    from aclnngen.codegen.importer.text import dtype_note
    from aclnngen.codegen.loader import load_products

    note = dtype_note(load_products(), "", body, npu="310p")
    assert (note.families, note.mode, note.dtypes) == (["inference"], mode, dtypes)
