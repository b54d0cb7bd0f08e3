"""The ground floor, aclnngen.core, computes without NumPy what the verdict used NumPy for: these
check the pure versions against NumPy itself, and the names the generator checks specs against
against the code that implements them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from catalog import loaded_specs
from hypothesis import given, settings
from hypothesis import strategies as st

from aclnngen.codegen.metadata import build
from aclnngen.core import externs, planning, scalar_values, sweeps
from aclnngen.core.rules import infer_output_names
from aclnngen.verify import cases, oracle

finite = st.floats(allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=400, deadline=None)
@given(finite)
def test_value_id_spells_a_float_as_numpy_positional_does(value):
    expected = np.format_float_positional(value, trim="-").replace("-", "minus").replace(".", "p")
    assert sweeps.value_id(value) == expected


@pytest.mark.parametrize("value", [0.0, -0.0, 1.0, -2.5, 1e-7, 1e16, 1e300, 5e-324, 0.1 + 0.2, 123456789.125])
def test_value_id_of_edge_values(value):
    expected = np.format_float_positional(value, trim="-").replace("-", "minus").replace(".", "p")
    assert sweeps.value_id(value) == expected
    assert "e" not in sweeps.value_id(value)  # positional, never 1e-07


@settings(max_examples=400, deadline=None)
@given(finite, st.sampled_from(["float16", "float32", "float64", "bfloat16", "int32", None, "complex64"]))
def test_a_swept_value_is_rounded_as_numpy_rounds_to_the_scalar_dtype(value, dtype):
    from aclnngen.runtime.shapes import NUMPY_DTYPES

    np_dtype = NUMPY_DTYPES.get(dtype or "float32")
    with np.errstate(over="ignore"):
        expected = float(np_dtype.type(value)) if np_dtype.kind == "f" else float(value)
    got = sweeps._exact(value, dtype)
    assert got == expected and math.copysign(1, got) == math.copysign(1, expected), (value, dtype, got, expected)


@pytest.mark.parametrize("value", [65504.0, 65519.99, 65520.0, -70000.0, 3.5e38, -1e39, 6e-8, 2.0**-25])
@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_rounding_at_the_ends_of_the_range(value, dtype):
    with np.errstate(over="ignore"):
        expected = float(np.dtype(dtype).type(value))
    assert sweeps._exact(value, dtype) == expected


@pytest.mark.parametrize("count", range(2, 40))
def test_scalar_picks_are_spaced_as_numpy_linspace_spaces_them(count):
    assert scalar_values._spaced(-1.0, 1.0, count) == [float(v) for v in np.linspace(-1.0, 1.0, count)]


SPECS = [ls.spec for ls in loaded_specs()]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: s.snake_name)
def test_planned_shapes_are_the_shapes_of_the_built_arrays(spec):
    """codegen/docs.py shows the planned shapes in each page's example; the tests build arrays of them."""
    meta = build(spec)
    version = spec.cann_version
    for case, _ in planning.applicable_cases(meta, version):
        shapes = planning.case_shapes(meta, case, version)
        values = cases.make_values(meta, case, "float32", version=version)
        assert shapes == {name: values[name].shape for name in shapes}, case
        tensors = [p["name"] for p in meta["params"] if p["role"] in ("input", "output")]
        assert sorted(shapes) == sorted(tensors)


def test_case_shapes_refuses_an_unknown_or_inapplicable_case():
    meta = build(SPECS[0])
    with pytest.raises(ValueError, match="unknown case 'sideways'"):
        planning.case_shapes(meta, "sideways", SPECS[0].cann_version)


def test_output_inference_over_names_needs_no_arrays():
    meta = {
        "name": "Synthetic",
        "rules": [
            {"kind": "broadcast", "inputs": ["a", "b"], "output": "out", "status": 161002},
            {"kind": "promote", "inputs": ["a", "b"], "output": "out", "status": 161002},
        ],
        "params": [{"name": "a", "role": "input"}, {"name": "b", "role": "input"}, {"name": "out", "role": "output"}],
        "outputs": ["out"],
    }
    got = infer_output_names(meta, {"a": (2, 3, 4), "b": (3, 1)}, {"a": "float16", "b": "bfloat16"}, "8.5.0")
    assert got == {"out": ((2, 3, 4), "float32")}


def test_the_oracle_recipes_core_names_are_those_the_verdict_implements():
    assert set(externs.ORACLE_RECIPES) == set(oracle.RECIPES)


def test_a_recipe_core_does_not_name_is_refused():
    with pytest.raises(ValueError, match="not in aclnngen.core.externs.ORACLE_RECIPES"):
        oracle.recipe("made_up")
