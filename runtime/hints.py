"""Type hints of the generated bindings: what a tensor argument may be, and what comes back.

A tensor argument is a NumPy array, an aclnngen DeviceArray, or any object NumPy can read through
the array interface (`__array_interface__`, `__array__`) or DLPack (`__dlpack__`), such as a
PyTorch CPU tensor (bfloat16 included: runtime/dlpack.py). Results are NumPy arrays, or
DeviceArrays when the inputs were on the device.
"""

from __future__ import annotations

from typing import Any, Protocol, Union, runtime_checkable

import numpy as np

from .arrays import DeviceArray


@runtime_checkable
class SupportsArray(Protocol):
    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray: ...


@runtime_checkable
class SupportsDLPack(Protocol):
    def __dlpack__(self, *args: Any, **kwargs: Any) -> Any: ...


# on the host: the call copies in and returns NumPy arrays (a binding's first overload)
HostArray = Union[np.ndarray, SupportsArray, SupportsDLPack]
TensorLike = Union[HostArray, DeviceArray]
Result = Union[np.ndarray, DeviceArray]

ACCEPTED = (
    "a NumPy array, an aclnngen DeviceArray, or an object exposing __array_interface__, __array__ "
    "or __dlpack__ on the CPU (e.g. a PyTorch CPU tensor)"
)

__all__ = ["ACCEPTED", "DeviceArray", "HostArray", "Result", "SupportsArray", "SupportsDLPack", "TensorLike"]
