"""The vectorised float32 erf keeps its stated accuracy (evaluate/fastmath.py) against float64."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

from aclnngen.evaluate import fastmath


def _ulps(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    return np.abs(got.astype(np.float64) - exact) / np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64)


def test_erf_float32_is_within_its_stated_ulps_everywhere():
    rng = np.random.default_rng(7)
    x = np.concatenate(
        [
            np.linspace(-6, 6, 400_001, dtype=np.float32),
            (rng.standard_normal(200_000) * 3).astype(np.float32),
            np.float32(10.0) ** np.linspace(-38, 0.7, 50_000, dtype=np.float32),  # tiny to large, both signs below
            -(np.float32(10.0) ** np.linspace(-38, 0.7, 50_000, dtype=np.float32)),
            np.array([0.0, -0.0, np.inf, -np.inf, 3.4e38, -3.4e38], dtype=np.float32),
        ]
    )
    got = fastmath.erf_float32(x)
    exact = special.erf(x.astype(np.float64))
    assert got.dtype == np.float32 and got.shape == x.shape
    assert np.max(_ulps(got, exact)) <= fastmath.MAX_ULPS
    assert np.max(np.abs(got.astype(np.float64) - exact)) < 5e-7
    assert np.array_equal(np.sign(got), np.sign(x))  # odd, and exactly 0 at 0


def test_erf_float32_keeps_nan_and_shapes_and_crosses_chunks():
    x = np.full((3, fastmath.CHUNK + 5), 0.5, dtype=np.float32)
    x[1, -1] = np.nan
    got = fastmath.erf_float32(x)
    assert got.shape == x.shape and np.isnan(got[1, -1]) and np.isnan(got).sum() == 1
    assert fastmath.erf_float32(np.float32(0.5)).shape == ()


def test_a_planted_coefficient_error_breaks_the_bound(monkeypatch):
    broken = fastmath._P.copy()
    broken[-1] *= np.float32(1.001)
    monkeypatch.setattr(fastmath, "_P", broken)
    x = np.linspace(-3, 3, 10_001, dtype=np.float32)
    assert np.max(_ulps(fastmath.erf_float32(x), special.erf(x.astype(np.float64)))) > fastmath.MAX_ULPS


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_the_formula_erf_uses_it_for_float32_only(dtype):
    from aclnngen.evaluate.numerics import MODES  # noqa: F401  (the module the formula functions live in)
    import importlib

    ref = importlib.import_module("aclnngen.generated.reference.gelu_backward")
    x = np.linspace(-3, 3, 1001).astype(dtype)
    g = np.ones_like(x)
    out = (
        ref.reference(g, x, mode="opmath" if dtype == "float32" else "golden")[0]
        if isinstance(ref.reference(g, x), tuple)
        else ref.reference(g, x, mode="opmath" if dtype == "float32" else "golden")
    )
    exact = ref.reference(g.astype(np.float64), x.astype(np.float64), mode="golden")
    exact = exact[0] if isinstance(exact, tuple) else exact
    assert np.max(np.abs(np.asarray(out, dtype=np.float64) - exact)) < (2e-6 if dtype == "float32" else 1e-15)
