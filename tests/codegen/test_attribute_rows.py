"""Return-code rows about attributes: a `char*` attribute without a default may sit in a
null-pointer row, and an `attribute_value` row needs an attribute with `choices`; the generated
return-code test provokes it with a value outside the choices."""

from __future__ import annotations

from pathlib import Path

import pytest

from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.verify import opcheck
from repo_paths import CUSTOM_SPECS

BASE = (CUSTOM_SPECS / "ops" / "sloped_step_backward.yaml").read_text(encoding="utf-8")
BOOL_ATTR = "    c_type: bool\n    default: false\n"
ENUM_ATTR = "    c_type: char*\n    choices: [plain, result]\n"
ROWS = "return_codes:\n"
VALUE_ROW = (
    "return_codes:\n  - status: 161002\n    check: attribute_value\n    params: [selfIsResult]\n"
    "    condition: selfIsResult is not one of its values.\n"
)


def _spec(tmp_path: Path, text: str):
    path = tmp_path / "sloped_step_backward.yaml"
    path.write_text(text, encoding="utf-8")
    return load_spec(path, load_products()).spec


def _enum(text: str = BASE) -> str:
    assert BOOL_ATTR in text and "bool selfIsResult" in text
    return text.replace(BOOL_ATTR, ENUM_ATTR).replace("bool selfIsResult", "char* selfIsResult")


def test_a_pointer_attribute_without_default_may_be_in_a_null_row(tmp_path):
    text = _enum().replace(
        "params: [gradOutput, self, negativeSlope, gradInput]",
        "params: [gradOutput, self, negativeSlope, selfIsResult, gradInput]",
    )
    spec = _spec(tmp_path, text)
    assert "selfIsResult" in spec.return_codes[0].params


def test_a_bool_attribute_may_not_be_in_a_null_row(tmp_path):
    text = BASE.replace(
        "params: [gradOutput, self, negativeSlope, gradInput]",
        "params: [gradOutput, self, negativeSlope, selfIsResult, gradInput]",
    )
    with pytest.raises(SpecError, match="may be NULL"):
        _spec(tmp_path, text)


def test_an_attribute_value_row_needs_choices(tmp_path):
    assert _spec(tmp_path, _enum().replace(ROWS, VALUE_ROW)).return_codes[0].check == "attribute_value"
    with pytest.raises(SpecError, match="no 'choices'"):
        _spec(tmp_path, BASE.replace(ROWS, VALUE_ROW))


def test_the_violation_is_a_value_outside_the_choices():
    meta = {"name": "ModeProbe", "params": [{"name": "mode", "role": "attribute", "choices": ["a", "b"]}]}
    op = opcheck.OpUnderTest(meta, reference=None, binding=None, version="8.5.0")
    values = opcheck._violate(op, {"mode": "a"}, "attribute_value", "mode")
    assert isinstance(values["mode"], str) and values["mode"] not in ("a", "b")
