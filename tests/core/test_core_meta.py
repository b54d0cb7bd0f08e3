"""aclnngen/core/meta.py: an op's metadata as frozen typed objects, built once from its data.
Checked on a made-up op (tests/data/kind_specs), not a built-in one."""

from __future__ import annotations

import dataclasses

import pytest

from repo_paths import DATA
from aclnngen.codegen import metadata
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.core.kinds import kind_of
from aclnngen.core.meta import MetaError, OpMeta, op_meta

SPEC = DATA / "kind_specs" / "ops" / "pair_mix_backward.yaml"


@pytest.fixture(scope="module")
def data():
    return metadata.build(load_spec(SPEC, load_products()).spec)


def test_built_once_per_dict_and_frozen(data):
    op = op_meta(data)
    assert isinstance(op, OpMeta) and op_meta(data) is op and op_meta(op) is op
    assert op_meta(dict(data)) is not op  # another dict: its own object
    with pytest.raises(dataclasses.FrozenInstanceError):
        op.name = "Other"
    with pytest.raises(dataclasses.FrozenInstanceError):
        op.params[0].role = "output"


def test_attributes_say_what_the_data_says(data):
    op = op_meta(data)
    assert (op.name, op.snake, op.symbol, op.cann_version) == (
        data["name"],
        data["snake"],
        data["symbol"],
        data["cann_version"],
    )
    assert [p.name for p in op.params] == [p["name"] for p in data["params"]]
    assert [p.py for p in op.params] == [p["py"] for p in data["params"]]
    assert [p.name for p in op.tensors] == ["gradOutput", "self", "gradInput"]
    assert op.param("self").dtypes[0].dtypes == ("float16", "float32", "bfloat16")
    assert op.outputs == ("gradInput",)
    assert [r.check for r in op.return_codes] == [r["check"] for r in data["return_codes"]]
    assert [p.family for p in op.products] == ["a2"]


def test_a_rule_holds_its_kind_and_its_data(data):
    op = op_meta(data)
    assert [r.kind for r in op.rules] == [kind_of(r) for r in data["rules"]]
    assert all(r.data is d for r, d in zip(op.rules, data["rules"]))
    assert op.rules_at("8.5.0", "a2") == op.rules


def test_missing_data_is_a_typed_error_naming_the_op(data):
    broken = {k: v for k, v in data.items() if k != "params"}
    with pytest.raises(MetaError, match="PairMixBackward.*params"):
        op_meta(broken)


def test_an_unknown_parameter_is_a_key_error_naming_the_known_ones(data):
    with pytest.raises(KeyError, match="gradOutput, self, gradInput"):
        op_meta(data).param("weight")
