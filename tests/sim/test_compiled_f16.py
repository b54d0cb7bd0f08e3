"""The compiled kernels' float16 conversions (sim_kernels.c.j2: bit arithmetic that vectorises,
no libm call per element): every float16 value widens exactly, and float32 values round to the
nearest float16, ties to even, as NumPy rounds them (infinities, NaN, subnormals, overflow)."""

from __future__ import annotations

import numpy as np
import pytest

from aclnngen.runtime import session
from aclnngen.runtime.sim import compiled
from aclnngen.runtime.sim.kernels import BUILTIN_PACKAGE


@pytest.fixture(scope="module")
def round_f16():
    lib = compiled.library(BUILTIN_PACKAGE, session.backend().libraries["nnopbase"], compiled.FALLBACKS_ONLY)
    assert lib.error is None, lib.error
    ffi = compiled._cffi()

    def run(x: np.ndarray) -> np.ndarray:
        x = np.ascontiguousarray(x, dtype=np.float32)
        y = np.empty_like(x)
        rc = lib.handle.aclk_math_f(b"round_f16", ffi.from_buffer("float[]", x), ffi.from_buffer("float[]", y), x.size)
        assert rc == 0
        return y

    return run


def _same(got: np.ndarray, want: np.ndarray) -> None:
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    bad = np.flatnonzero(got[~nan].view(np.uint32) != want[~nan].view(np.uint32))
    assert bad.size == 0, [(float(a), float(b)) for a, b in zip(got[~nan][bad[:5]], want[~nan][bad[:5]])]


def test_every_float16_value_widens_exactly_and_rounds_back_to_itself(round_f16):
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    _same(round_f16(every), every)


def test_float32_values_round_to_the_nearest_float16_ties_to_even(round_f16):
    rng = np.random.default_rng(16)
    bits = rng.integers(0, 1 << 32, 1 << 20, dtype=np.uint64).astype(np.uint32)
    # every float16 value and the midpoints between neighbours (the ties), and their neighbours
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    with np.errstate(all="ignore"):  # the midpoints beside inf and NaN are not numbers
        ties = ((halves[:-1].astype(np.float64) + halves[1:].astype(np.float64)) / 2).astype(np.float32)
    edges = np.array([65504, 65519.996, 65520, 65536, 2.0**-14, 2.0**-24, 2.0**-25, 3 * 2.0**-26], np.float32)
    x = np.concatenate([bits.view(np.float32), ties, np.nextafter(ties, np.inf), np.nextafter(ties, -np.inf), edges])
    x = np.concatenate([x, -x])
    with np.errstate(all="ignore"):
        want = x.astype(np.float16).astype(np.float32)
    _same(round_f16(x), want)
