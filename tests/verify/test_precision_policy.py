"""The tolerance policy for outputs of several roundings ("arithmetic"): the vendor's MERE/MARE
standard per dtype, an absolute bound on results near zero, exact agreement on inf and NaN."""

from __future__ import annotations

import numpy as np
import pytest

from aclnngen.verify import opcheck

META = {
    "name": "Probe",
    "params": [{"name": "g", "py": "g", "role": "input"}, {"name": "x", "py": "x", "role": "input"}],
    "formula": {"outputs": {"y": "arithmetic"}},
}
OP = opcheck.OpUnderTest(META, reference=None, binding=None, version="8.5.0")


def _check(dtype, ours, theirs, g=None):
    theirs = np.asarray(theirs, dtype=np.float64)
    values = {"g": np.ones_like(theirs) if g is None else g, "x": np.ones_like(theirs)}
    opcheck.compare_within_policy(OP, values, "y", "arithmetic", dtype, np.asarray(ours, np.float64), theirs, None)


def _data(n=1000, seed=0):
    return np.random.default_rng(seed).uniform(0.5, 2.0, n)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_a_few_ulps_off_everywhere_passes(dtype):
    b = _data()
    _check(dtype, b * (1 + 2 * opcheck.UNIT_ROUNDOFF[dtype]), b)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_a_mean_error_above_the_threshold_fails(dtype):
    b = _data()
    with pytest.raises(AssertionError, match="MERE"):
        _check(dtype, b * (1 + 2 * opcheck.MERE_THRESHOLD[dtype]), b)


def test_one_element_far_off_fails_the_largest_error():
    b = _data()
    a = b.copy()
    a[7] *= 1 + 20 * opcheck.MERE_THRESHOLD["float32"]  # the mean stays small; the maximum does not
    with pytest.raises(AssertionError, match="MARE"):
        _check("float32", a, b)


def test_results_near_zero_are_judged_by_absolute_error():
    b = np.array([1e-9, -1e-8, 1.0])
    _check("float32", b + np.array([3e-7, -3e-7, 0.0]), b)  # cancellation: huge relative, tiny absolute
    with pytest.raises(AssertionError, match="small results"):
        _check("float32", b + np.array([1e-3, 0.0, 0.0]), b)


def test_a_non_finite_result_where_the_other_is_finite_fails():
    _check("float32", [np.inf, np.nan, 1.0], [np.inf, np.nan, 1.0])
    with pytest.raises(AssertionError, match="inf/NaN"):
        _check("float32", [np.inf, 1.0, 1.0], [2.0, 1.0, 1.0])
    with pytest.raises(AssertionError, match="inf/NaN"):
        _check("float32", [np.nan, 1.0, 1.0], [2.0, 1.0, 1.0])
