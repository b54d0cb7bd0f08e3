"""The oracle description maps spec parameters onto any aten signature, as data: positional
parameters, constants, keywords bound to parameters, plain constant keywords, and computed values
(a tensor's dtype); the spec is checked so each one names something that exists."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products, load_spec
from aclnngen.verify import oracle

pytestmark = pytest.mark.needs_torch
BASE = (DEFAULT_SPECS_DIR / "ops" / "swish_backward.yaml").read_text(encoding="utf-8")
RECIPE = "oracle:\n  kind: recipe\n  recipe: swish_autograd\n  args: [grad_output, self, beta]\n"


def test_constants_and_computed_dtypes_in_positions_and_keywords():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    w = np.zeros(1, dtype=np.float64)
    desc = {
        "kind": "aten",
        "op": "sum",
        "args": ["x", {"const": [1]}, {"const": True}],
        "kwargs": {"dtype": {"dtype_of": "w"}},
        "outputs": ["y"],
    }
    (got,) = oracle.run(desc, {"x": x, "w": w})
    assert got.dtype == np.float64 and got.shape == (2, 1) and got.tolist() == [[3.0], [12.0]]


def test_a_keyword_bound_to_a_parameter_takes_its_value():
    a = np.array([1.0, 2.0], np.float32)
    b = np.array([10.0, 20.0], np.float32)
    desc = {"kind": "aten", "op": "add", "args": ["a", "b"], "kwargs": {"alpha": {"param": "k"}}, "outputs": ["y"]}
    assert oracle.run(desc, {"a": a, "b": b, "k": 3.0})[0].tolist() == [31.0, 62.0]
    assert oracle.run(desc, {"a": a, "b": b, "k": -1.0})[0].tolist() == [-9.0, -18.0]
    plain = dict(desc, kwargs={"alpha": 2.0})  # a plain keyword value is a constant
    assert oracle.run(plain, {"a": a, "b": b, "k": 3.0})[0].tolist() == [21.0, 42.0]


def _load(tmp_path: Path, oracle_text: str):
    assert RECIPE in BASE, "the base spec's oracle changed"
    path = tmp_path / "swish_backward.yaml"
    path.write_text(BASE.replace(RECIPE, oracle_text), encoding="utf-8")
    return load_spec(path, load_products()).spec


def test_a_spec_can_state_every_argument_form(tmp_path):
    spec = _load(
        tmp_path,
        "oracle:\n  kind: aten\n  op: mul\n  args: [grad_output, {const: 2.0}]\n"
        "  kwargs: {out_dtype: {dtype_of: self}, scale: {param: beta}, mode: fast}\n",
    )
    assert spec.oracle.args[1].const == 2.0 and spec.oracle.kwargs["scale"].param == "beta"


@pytest.mark.parametrize(
    "text, pattern",
    [
        ("  args: [grad_output, {const: 2.0}]\n  kwargs: {scale: {param: betta}}\n", r"unknown parameter 'betta'"),
        ("  args: [grad_output, {dtype_of: beta}]\n", r"unknown input tensor 'beta'"),
        ("  args: [grad_output, {dtype_of: grad_input}]\n", r"unknown input tensor 'grad_input'"),
        ("  args: [grad_output, {consts: 1}]\n", r"consts"),
    ],
)
def test_an_argument_naming_nothing_is_an_error_at_its_line(tmp_path, text, pattern):
    with pytest.raises(SpecError, match=pattern) as info:
        _load(tmp_path, "oracle:\n  kind: aten\n  op: mul\n" + text)
    assert "swish_backward.yaml:" in str(info.value)
