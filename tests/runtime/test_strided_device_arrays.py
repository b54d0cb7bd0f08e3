"""A strided device array of any spec dtype copies to and from the host: its elements go through a
view of plain words (runtime/shapes.strided_elements), since `as_strided` cannot name every dtype
(ml_dtypes' float8_e5m2 reads as an unknown '<f1'). The narrow dtypes are the ones that broke."""

from __future__ import annotations

import numpy as np
import pytest

from aclnngen.core.dtypes import NARROW
from aclnngen.runtime.arrays import DeviceArray
from aclnngen.runtime.shapes import NUMPY_DTYPES

NAMES = sorted(NARROW) + ["bfloat16", "float32", "complex128"]


def _bytes(array: np.ndarray) -> bytes:
    return np.ascontiguousarray(array).view(np.uint8).tobytes()


@pytest.mark.parametrize("name", NAMES)
def test_a_strided_device_array_reads_and_writes_its_elements_only(name):
    dtype = NUMPY_DTYPES[name]
    rng = np.random.default_rng(0)
    host = rng.integers(0, 100, size=4 * 6 * dtype.itemsize, dtype=np.uint8).view(dtype).reshape(4, 6)
    device = DeviceArray.from_host(host[:, ::2])  # the layout kept: every other column
    assert not device.contiguous
    assert _bytes(device.to_host()) == _bytes(host[:, ::2])
    device.from_host(np.ascontiguousarray(host[:, 1::2]))
    assert _bytes(device.to_host()) == _bytes(host[:, 1::2])
