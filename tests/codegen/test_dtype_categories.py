"""Dtype categories end to end: a spec whose tensors take float, integer, bool and complex dtypes
generates, and its generated tests (reference against the PyTorch oracle, validator, binding on the
simulator) pass for every one of them; the planner lists them in category order."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest

from aclnngen.core import dtypes
from aclnngen.core.dtypes import ALL_DTYPES
from packages import generate, run_generated_tests
from repo_paths import CATEGORY_SPECS

SPECS = CATEGORY_SPECS
WANTED = ("float64", "int8", "int16", "int32", "int64", "uint8", "bool", "complex64", "complex128")


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    root = tmp_path_factory.mktemp("categories")
    specs = root / "specs"
    shutil.copytree(SPECS, specs)
    return generate(specs, root / "pkg" / "category_ops")


def test_every_dtype_has_one_category_and_a_place():
    assert set(dtypes.CATEGORY) == set(ALL_DTYPES)
    assert set(dtypes.CATEGORY.values()) == set(dtypes.CATEGORIES)
    assert sorted(["complex64", "bool", "int8", "float32", "float16"], key=dtypes.sort_key) == [
        "float16",
        "float32",
        "int8",
        "bool",
        "complex64",
    ]
    with pytest.raises(KeyError, match="float8"):
        dtypes.category("float8")


def test_generated_cases_cover_every_category(package):
    text = (package / "tests" / "test_product_probe.py").read_text(encoding="utf-8")
    for dtype in WANTED:
        assert f"'{dtype}-adversarial'" in text or f'"{dtype}-adversarial"' in text, dtype
        assert re.search(rf"A2-{dtype}-contiguous", text), dtype


def test_generated_tests_pass_on_every_category(package):
    result = run_generated_tests(package, "-W", "error::numpy.exceptions.ComplexWarning")
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert len(result.with_outcome("passed")) > 100, result.stdout[-2000:]


def _import(package: Path, module: str):
    import importlib

    sys.path.insert(0, str(package.parent))
    try:
        return importlib.import_module(f"{package.name}.{module}")
    finally:
        sys.path.remove(str(package.parent))


@pytest.mark.parametrize("dtype", ["float32", "complex64"])
def test_forward_output_data_is_a_value_the_forward_function_produces(package, dtype):
    """The fixture's second input means the forward output tanh(x): test data is tanh of the data
    the forward input would get, not arbitrary numbers (which tanh can never produce)."""
    import numpy as np

    from aclnngen.verify import opcheck

    meta = _import(package, "meta.tanh_probe").META
    reference = _import(package, "reference.tanh_probe")
    op = opcheck.OpUnderTest(meta, reference=reference, binding=None, version="8.5.0")
    values = opcheck.adversarial_values(op, dtype, "random")
    y = values["output"].astype(np.complex128)
    assert values["output"].dtype == np.dtype(dtype)
    if dtype == "float32":
        assert np.all(np.abs(y) <= 1) and np.abs(y).max() > 0.99  # the whole range of tanh
    with np.errstate(divide="ignore", invalid="ignore"):
        x = np.arctanh(y)  # a value tanh produced maps back to its input (|y| = 1 to an infinity)
        np.testing.assert_allclose(np.tanh(x), y, rtol=1e-5, atol=1e-6)
    assert not np.array_equal(values["output"], values["gradOutput"])
