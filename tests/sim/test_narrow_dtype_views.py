"""The run hook's NumPy view of a tensor in device memory (ViewArg.array) holds every spec dtype,
the narrow ones too: ml_dtypes' float8_e5m2 has NumPy kind 'f', which `as_strided` cannot rebuild
from its array interface, and the raw-byte dtypes (hifloat8) are records."""

from __future__ import annotations

import cffi
import numpy as np
import pytest

from aclnngen.core.dtypes import NARROW
from aclnngen.runtime.shapes import NUMPY_DTYPES
from aclnngen.runtime.sim.kernels import TENSOR_KINDS, ViewArg

FFI = cffi.FFI()


@pytest.mark.parametrize("name", sorted(NARROW))
def test_a_strided_offset_view_of_a_narrow_dtype_reads_and_writes_device_memory(name):
    dtype = NUMPY_DTYPES[name]
    memory = bytearray(range(1, 17))
    pointer = FFI.cast("uintptr_t", FFI.from_buffer(memory))
    arg = ViewArg(
        kind=TENSOR_KINDS[0],
        name="x",
        is_null=False,
        shape=(2, 3),
        strides=(6, 2),
        offset=1,
        dtype=dtype,
        data=int(pointer),
        _ffi=FFI,
    )
    view = arg.array()
    assert view.dtype == dtype and view.shape == (2, 3)
    assert view.view(np.uint8).tolist() == [[2, 4, 6], [8, 10, 12]]
    view[0, 0] = view[1, 2]
    assert memory[1] == 12
