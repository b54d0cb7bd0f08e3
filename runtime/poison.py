"""The outputs of a binding-tier op (aclnngen/core/tiers.py): not computed, so the simulator fills
them with one recognisable byte, and the verdict checks that it did (no stale or zeroed memory
passes for a result)."""

from __future__ import annotations

import numpy as np

from aclnngen.core.tiers import POISON_BYTE


def poison_value(dtype: np.dtype) -> np.generic:
    """One element of `dtype` whose every byte is the poison byte (bool reads as True)."""
    dtype = np.dtype(dtype)
    return np.frombuffer(bytes([POISON_BYTE]) * dtype.itemsize, dtype=dtype)[0]


def fill_poison(array: np.ndarray) -> None:
    """Writes the poison pattern into every element of `array` (any strides)."""
    if array.size:
        array[...] = poison_value(array.dtype)


def is_poisoned(array: np.ndarray) -> bool:
    """Whether every element of `array` holds the poison pattern, bit for bit."""
    want = np.full(array.shape, poison_value(array.dtype), dtype=array.dtype)
    return np.ascontiguousarray(array).tobytes() == want.tobytes()
