"""Dtype relations the importer drafts stay within the tensors' own dtype lists: a same_dtype hint
keeps the tensors whose lists hold the same dtype categories as most it names (not an index named
beside float data), and a promotion note drafts no promote rule onto an output whose list lacks a
category every promoting input takes (an index output)."""

from __future__ import annotations

from aclnngen.codegen.importer.draft import _relation_hints, _sameness_hints
from aclnngen.codegen.importer.facts import PageParam

FLOATS = [{"families": ["a2"], "dtypes": ["float32", "float16"]}]
INDICES = [{"families": ["a2"], "dtypes": ["int32", "int64"]}]


def test_a_same_dtype_hint_leaves_out_a_tensor_of_disjoint_dtypes():
    page = {"self": PageParam("self", text="self、out和indices的数据类型一致。")}
    lists = {"self": {"float32", "float16"}, "out": {"float32", "float16"}, "indices": {"int64"}}
    assert _sameness_hints(["self", "out", "indices"], page, lists) == [
        {"kind": "same_dtype", "params": ["self", "out"]}
    ]
    # without lists (or with overlapping ones) every tensor the note names stays
    assert _sameness_hints(["self", "out", "indices"], page) == [
        {"kind": "same_dtype", "params": ["self", "out", "indices"]}
    ]


def test_a_same_dtype_hint_on_the_index_row_keeps_the_data_tensors():
    page = {"index": PageParam("index", text="self、index和out的数据类型一致。")}
    data = {"float32", "int32", "bool"}
    lists = {"self": data, "index": {"int32", "int64"}, "out": data}
    assert _sameness_hints(["self", "index", "out"], page, lists) == [{"kind": "same_dtype", "params": ["self", "out"]}]


def _params(out_dtypes):
    return [
        {"name": "sorted", "role": "input", "dtypes": FLOATS},
        {"name": "self", "role": "input", "dtypes": FLOATS},
        {"name": "out", "role": "output", "dtypes": out_dtypes},
    ]


PROMOTING = {
    "sorted": PageParam("sorted", text="数据类型与self满足数据类型推导规则。"),
    "self": PageParam("self", text="数据类型与sorted满足数据类型推导规则。"),
    "out": PageParam("out", text=""),
}


def test_a_promotion_note_drafts_no_promote_onto_an_index_output():
    assert _relation_hints(_params(INDICES), PROMOTING) == []
    mixed = [{"families": ["a2"], "dtypes": ["float32", "int32", "int64"]}]
    params = [dict(p, dtypes=mixed) if p["role"] == "input" else p for p in _params(INDICES)]
    assert _relation_hints(params, PROMOTING) == []  # shares int32 and int64, still no float


def test_a_promotion_note_drafts_a_promote_onto_an_output_of_the_inputs_dtypes():
    assert _relation_hints(_params(FLOATS), PROMOTING) == [
        {"kind": "promote", "inputs": ["sorted", "self"], "output": "out"}
    ]
