"""Vectorised float32 special functions for the opmath references, where SciPy's ufuncs compute
in float64 one element at a time (scipy.special.erf on float32: ~18 ns per element, 10x PyTorch).

`erf_float32`: a rational approximation x * P(x^2) / Q(x^2) on x clamped to [-4, 4] (erf(4)
rounds to 1 in float32), with the monomial coefficients of Eigen's float32 erf. Stated accuracy,
tested in tests/verify/test_fastmath.py against float64: at most 8 float32 ulps (absolute error below
5e-7) everywhere; NaN stays NaN. Written once as ufunc steps: run in pieces into reused buffers
(evaluate/fused.py), and traced into the program of a formula that calls erf.
"""

from __future__ import annotations

import functools

import numpy as np

from . import fused

_P = np.array(
    [
        -2.72614225801306e-10,
        2.77068142495902e-08,
        -2.10102402082508e-06,
        -5.69250639462346e-05,
        -7.34990630326855e-04,
        -2.95459980854025e-03,
        -1.60960333262415e-02,
    ],
    dtype=np.float32,
)
_Q = np.array(
    [-1.45660718464996e-05, -2.13374055278905e-04, -1.68282697438203e-03, -7.37332916720468e-03, -1.42647390514189e-02],
    dtype=np.float32,
)
_LIMIT = np.float32(4.0)
CHUNK = 1 << 15  # elements per pass: a few arrays of 128 KiB stay in L2

# documented bound, checked by the tests
MAX_ULPS = 8


def erf_float32_formula(x):
    """erf in float32 as a chain of ufuncs: of float32 arrays, or of traced Nodes (evaluate/fused.py)
    when a formula calling erf is fused."""
    c = np.minimum(np.maximum(x, -_LIMIT), _LIMIT)
    s = c * c
    p = _P[0] * s + _P[1]
    for coefficient in _P[2:]:
        p = p * s + coefficient
    q = _Q[0] * s + _Q[1]
    for coefficient in _Q[2:]:
        q = q * s + coefficient
    return c * (p / q)  # not (p * c) / q: its product underflows for tiny c, the quotient never does


@functools.lru_cache(maxsize=4)
def _plan(coefficients: bytes):  # keyed by the coefficients a plan holds as constants
    return fused.plan(fused.trace(lambda x: (erf_float32_formula(x),), {"x": np.float32}), [np.dtype(np.float32)])


def erf_float32(x):
    """erf of a float32 array (or scalar), in float32; of a traced Node, its steps."""
    if isinstance(x, fused.Node):
        return erf_float32_formula(x)
    x = np.asarray(x, dtype=np.float32)
    flat = np.ascontiguousarray(x).reshape(-1)
    out = np.empty_like(flat)
    if flat.size:
        fused.run(_plan(_P.tobytes() + _Q.tobytes()), {"x": flat}, [out], CHUNK)
    return out.reshape(x.shape)
