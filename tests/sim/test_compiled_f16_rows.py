"""The compiled kernels' float16 rows (sim_kernels.c.j2): a float16 kernel computing in float widens
and rounds a row at a time, with the CPU's F16C instructions where it has them. Those give the bit
arithmetic's results: every float16 value widens to the same float (a NaN to a NaN of its sign),
and float32 values (every float16 value, ties and their neighbours, 1M random bit patterns, NaN,
infinities, overflow, subnormals) round to the same float16 bits, NaN included."""

from __future__ import annotations

import cffi
import numpy as np
import pytest

from aclnngen.runtime import session
from aclnngen.runtime.sim import compiled
from aclnngen.runtime.sim.build import build_simulator
from aclnngen.runtime.sim.kernels import BUILTIN_PACKAGE

ROW = 512 + 13  # whole groups of 8 and a tail, as a row of the kernels has


@pytest.fixture(scope="module")
def rows():
    """name -> the row helper over a whole array (aclk_f16_rows), or None where the build lacks it."""
    core = session.backend().libraries["nnopbase"]
    source = compiled.kernels_source(BUILTIN_PACKAGE)
    path = build_simulator(
        [source], defines={"ACLK_ONE_OP": None}, lib_names=(compiled.KERNELS_LIB_NAME,), link_core=core
    )
    ffi = cffi.FFI()
    ffi.cdef("int aclk_f16_rows(const char *name, const void *src, void *dst, int64_t n);")
    lib = ffi.dlopen(str(path))

    def run(name: str, x: np.ndarray, out_dtype) -> np.ndarray | None:
        x = np.ascontiguousarray(x)
        y = np.empty(x.shape, dtype=out_dtype)
        for start in range(0, x.size, ROW):  # row by row, as the kernels call them
            n = min(ROW, x.size - start)
            src, dst = ffi.from_buffer(x[start : start + n]), ffi.from_buffer(y[start : start + n])
            if lib.aclk_f16_rows(name.encode(), src, dst, n) != 0:
                return None
        return y

    return run


def _f16c(rows, name: str, x: np.ndarray, out_dtype) -> np.ndarray:
    got = rows(name, x, out_dtype)
    if got is None:
        pytest.skip("this CPU (or build) has no F16C")
    return got


def test_every_float16_value_widens_as_the_bit_arithmetic_does(rows):
    every = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16)
    want = rows("load_bits", every, np.float32)
    got = _f16c(rows, "load_f16c", every, np.float32)
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan)
    assert np.array_equal(np.signbit(got), np.signbit(want)), "a NaN keeps its sign"
    assert np.array_equal(got[~nan].view(np.uint32), want[~nan].view(np.uint32))
    assert np.array_equal(want[~nan], every.view(np.float16)[~nan].astype(np.float32)), "and as NumPy widens"


def _float32_cases() -> np.ndarray:
    halves = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
    bits = halves.view(np.uint32)
    ties = (bits + (1 << 12)).view(np.float32)  # halfway to the next float16 (normal range)
    neighbours = np.concatenate([(bits + np.uint32((1 << 12) + d)).view(np.float32) for d in (-1, 1)])
    rng = np.random.default_rng(0)
    random = rng.integers(0, 1 << 32, size=1 << 20, dtype=np.uint64).astype(np.uint32).view(np.float32)
    special = np.array([np.nan, -np.nan, np.inf, -np.inf, 65504.0, 65519.99, 65520.0, 1e-8, -6e-8, 0.0, -0.0])
    return np.concatenate([halves, ties, neighbours, random, special.astype(np.float32)])


def test_float32_values_round_to_the_bit_arithmetics_float16(rows):
    x = _float32_cases()
    want = rows("store_bits", x, np.uint16)
    got = _f16c(rows, "store_f16c", x, np.uint16)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(float(x[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]
    finite = ~np.isnan(x)
    with np.errstate(over="ignore"):  # (overflow to infinity is one of the cases)
        numpy = x[finite].astype(np.float16).view(np.uint16)
    assert np.array_equal(want[finite], numpy), "and as NumPy rounds"


def test_an_unknown_row_helper_is_refused(rows):
    assert rows("no_such_row", np.zeros(3, dtype=np.float32), np.float32) is None
