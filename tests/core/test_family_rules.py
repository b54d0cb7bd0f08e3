"""Rules that hold on some product families only (`families:` on any rule): the validator applies
them on those families alone, output inference follows the family's rules, and the generated tests
check both sides (the shape cases run on each family whose rules differ; a return-code row backed by
such a rule is provoked on a family where it holds). The op is a synthetic fixture."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aclnngen.codegen import metadata, testplan
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.shapes import infer_outputs
from aclnngen.runtime.validation import validate
from repo_paths import CUSTOM_SPECS

BASE = (CUSTOM_SPECS / "ops" / "sloped_step_backward.yaml").read_text(encoding="utf-8")
BROADCAST_RULE = "  - {kind: broadcast, inputs: [gradOutput, self], output: gradInput, families: [a3]}\n"


def _spec(tmp_path: Path, text: str = BASE):
    path = tmp_path / "sloped_step_backward.yaml"
    path.write_text(text, encoding="utf-8")
    return load_spec(path, load_products()).spec


@pytest.fixture(scope="module")
def spec(tmp_path_factory):
    assert BROADCAST_RULE in BASE, "the fixture states a broadcast rule for A3 only"
    return _spec(tmp_path_factory.mktemp("family-rules"))


def _values(g_shape, x_shape, out_shape):
    return {
        "gradOutput": np.ones(g_shape, np.float32),
        "self": np.ones(x_shape, np.float32),
        "negativeSlope": 0.5,
        "selfIsResult": False,
        "gradInput": np.empty(out_shape, np.float32),
    }


def test_the_validator_applies_a_rule_only_on_its_families(spec):
    meta = metadata.build(spec)
    broadcasting = _values((3, 1), (2, 3, 4), (2, 3, 4))
    validate(meta, broadcasting, family="a3", version="8.5.0")
    for family in ("a2", "training"):
        with pytest.raises(AclnnValidationError) as info:
            validate(meta, broadcasting, family=family, version="8.5.0")
        assert info.value.status == 161002 and "shape" in str(info.value)
    with pytest.raises(AclnnValidationError):  # and on A3 the broadcast rule itself is enforced
        validate(meta, _values((2, 5, 4), (2, 3, 4), (2, 3, 4)), family="a3", version="8.5.0")


def test_output_inference_follows_the_family(spec):
    meta = metadata.build(spec)
    values = _values((3, 1), (2, 3, 4), (2, 3, 4))
    del values["gradInput"]
    assert infer_outputs(meta, values, "8.5.0", family="a3")["gradInput"][0] == (2, 3, 4)
    assert infer_outputs(meta, values, "8.5.0", family="a2")["gradInput"][0] == (3, 1)  # refused later
    assert infer_outputs(meta, values, "8.5.0")["gradInput"][0] == (2, 3, 4)  # no family: the broadcast


def test_the_generated_tests_check_both_sides(spec):
    plan = testplan.build(spec, load_products())
    shapes = {(c["family"], c["kind"]): c["status"] for c in plan["shapes"]}
    assert shapes[("a3", "broadcast")] == 0  # A3 broadcasts ...
    assert ("a2", "broadcast") not in shapes and shapes[("a2", "broadcast-rejected")] == 161002  # ... A2 refuses
    rows = {c["check"]: c["family"] for c in plan["return_codes"]}
    assert rows["broadcast"] == "a3" and rows["same_shape"] == "a2"
    layouts = {(c["family"], c["layout"]) for c in plan["binding"]}
    assert ("a3", "broadcast") in layouts and ("a2", "broadcast") not in layouts


def test_a_rule_names_only_families_of_the_op(tmp_path):
    with pytest.raises(SpecError, match="unknown product family of this op 'ascend950'") as info:
        _spec(tmp_path, BASE.replace("families: [a3]}", "families: [ascend950]}"))
    assert "sloped_step_backward.yaml:" in str(info.value)


RANK_RULE = "  - {kind: max_rank, params: [gradOutput, self, gradInput], rank: 8}\n"


def test_a_rule_may_hold_only_for_an_attribute_value(tmp_path):
    """`when` on a rule: the rule binds only while the named attribute has the value."""
    assert RANK_RULE in BASE
    text = BASE.replace(
        RANK_RULE, RANK_RULE + "  - {kind: max_rank, params: [self], rank: 2, when: {selfIsResult: true}}\n"
    )
    meta = metadata.build(_spec(tmp_path, text))
    values = _values((2, 3, 4), (2, 3, 4), (2, 3, 4))
    validate(meta, {**values, "selfIsResult": False}, family="a2", version="8.5.0")
    with pytest.raises(AclnnValidationError, match="self") as info:
        validate(meta, {**values, "selfIsResult": True}, family="a2", version="8.5.0")
    assert info.value.status == 161002
    validate(meta, {**_values((3, 4), (3, 4), (3, 4)), "selfIsResult": True}, family="a2", version="8.5.0")


@pytest.mark.parametrize(
    "rule,message",
    [
        (
            "  - {kind: max_rank, params: [self], rank: 2, when: {noSuchFlag: true}}\n",
            "unknown scalar or attribute 'noSuchFlag'",
        ),
        ("  - {kind: max_rank, params: [self], rank: 2, when: {selfIsResult: 1}}\n", "needs true or false"),
        (
            "  - {kind: promote, inputs: [gradOutput, self], output: gradInput, when: {selfIsResult: true}}\n",
            "cannot be conditional",
        ),
    ],
)
def test_a_bad_rule_condition_is_refused_at_its_line(tmp_path, rule, message):
    with pytest.raises(SpecError, match=message) as info:
        _spec(tmp_path, BASE.replace(RANK_RULE, RANK_RULE + rule))
    assert "sloped_step_backward.yaml:" in str(info.value)
