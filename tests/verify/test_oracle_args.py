"""The oracle description maps spec parameters onto any aten signature, as data: positional
parameters, constants, keywords bound to parameters, plain constant keywords, and computed values
(a tensor's dtype); the spec is checked so each one names something that exists."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import catalog
import pytest
import yaml

from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products, load_spec
from aclnngen.verify import oracle

pytestmark = pytest.mark.needs_torch
# an op with a scalar (tests/catalog.py) whose spec takes the oracles written here; names in the
# formula language are the parameters' Python names
OP = catalog.WITH_OPTIONAL_SCALAR
_META = catalog.meta(OP)
G, X = (catalog.py_name(_META, n) for n in catalog.names(_META, "input"))
S = catalog.py_name(_META, catalog.names(_META, "optional_scalar")[0])
OUT = catalog.py_name(_META, _META["outputs"][0])


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
    """The op's spec with its oracle replaced by `oracle_text`."""
    data = yaml.safe_load((DEFAULT_SPECS_DIR / "ops" / f"{OP}.yaml").read_text(encoding="utf-8"))
    data["oracle"] = {"outputs": data["oracle"]["outputs"], **yaml.safe_load(oracle_text)["oracle"]}
    path = tmp_path / f"{OP}.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), encoding="utf-8")
    return load_spec(path, load_products()).spec


def test_a_spec_can_state_every_argument_form(tmp_path):
    spec = _load(
        tmp_path,
        f"oracle:\n  kind: aten\n  op: mul\n  args: [{G}, {{const: 2.0}}]\n"
        f"  kwargs: {{out_dtype: {{dtype_of: {X}}}, scale: {{param: {S}}}, mode: fast}}\n",
    )
    assert spec.oracle.args[1].const == 2.0 and spec.oracle.kwargs["scale"].param == S


@pytest.mark.parametrize(
    "text, pattern",
    [
        (f"  args: [{G}, {{const: 2.0}}]\n  kwargs: {{scale: {{param: nothing}}}}\n", r"unknown parameter 'nothing'"),
        (f"  args: [{G}, {{dtype_of: {S}}}]\n", rf"unknown input tensor '{S}'"),
        (f"  args: [{G}, {{dtype_of: {OUT}}}]\n", rf"unknown input tensor '{OUT}'"),
        (f"  args: [{G}, {{consts: 1}}]\n", r"consts"),
    ],
)
def test_an_argument_naming_nothing_is_an_error_at_its_line(tmp_path, text, pattern):
    with pytest.raises(SpecError, match=pattern) as info:
        _load(tmp_path, "oracle:\n  kind: aten\n  op: mul\n" + text)
    assert f"{OP}.yaml:" in str(info.value)
