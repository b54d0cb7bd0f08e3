"""Arrays of other libraries, read through DLPack when NumPy cannot: NumPy's own `from_dlpack`
refuses bfloat16, so a bfloat16 CPU tensor is copied out here into an `ml_dtypes.bfloat16` array.
`unreadable_reason` says why an object that looks like an array could not be read, and what to
do about it (a tensor that requires grad, one on another device, a list), for the binding's
TypeError.

The DLPack structures (dlpack.h, v0.x/1.0 `DLManagedTensor` in a capsule named "dltensor") are
read with ctypes; the capsule is then renamed "used_dltensor" and its deleter called, as the
protocol asks of a consumer.
"""

from __future__ import annotations

import ctypes

import ml_dtypes
import numpy as np

KDL_CPU = 1
KDL_CUDA_HOST = 3  # pinned host memory: readable from the CPU
KDL_BFLOAT = 4


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _Device),
        ("ndim", ctypes.c_int32),
        ("dtype", _DType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _Managed(ctypes.Structure):
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", _Deleter)]


_api = ctypes.pythonapi
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_GetPointer.restype = ctypes.c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, ctypes.c_char_p]


class DLPackError(TypeError):
    """The object's DLPack export is not something aclnngen can read (device, dtype, layout)."""


def bfloat16_from_dlpack(obj) -> np.ndarray | None:
    """A copy of `obj` as an ml_dtypes.bfloat16 array when its DLPack export is a bfloat16 CPU
    tensor; None when it is something else (the caller then says what is accepted)."""
    capsule = obj.__dlpack__()
    if not _api.PyCapsule_IsValid(capsule, b"dltensor"):
        return None
    managed = _Managed.from_address(_api.PyCapsule_GetPointer(capsule, b"dltensor"))
    t = managed.dl_tensor
    if (t.dtype.code, t.dtype.bits, t.dtype.lanes) != (KDL_BFLOAT, 16, 1):
        return None  # the capsule's own destructor frees it
    if t.device.device_type != KDL_CPU:
        raise DLPackError("a bfloat16 tensor on a device other than the CPU; copy it to the CPU first")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = (
        tuple(t.strides[i] for i in range(t.ndim))
        if t.strides
        else tuple(int(s) for s in np.cumprod((1,) + shape[:0:-1])[::-1])
        if shape
        else ()
    )
    count = 0 if 0 in shape else 1 + sum((n - 1) * s for n, s in zip(shape, strides))
    if count:
        flat = np.frombuffer((ctypes.c_uint16 * count).from_address(t.data + t.byte_offset), dtype=np.uint16)
        raw = np.lib.stride_tricks.as_strided(flat, shape, tuple(2 * s for s in strides)).copy()
    else:
        raw = np.zeros(shape, np.uint16)
    _api.PyCapsule_SetName(capsule, b"used_dltensor")
    if managed.deleter:
        managed.deleter(ctypes.addressof(managed))
    return raw.view(ml_dtypes.bfloat16)


def _device_of(obj) -> str | None:
    """The device an array-like object says it lives on when that is not the CPU (a torch
    tensor's `device.type`, or a DLPack device type), else None."""
    device = getattr(obj, "device", None)
    kind = getattr(device, "type", device)
    if isinstance(kind, str):
        return None if kind == "cpu" else kind
    probe = getattr(obj, "__dlpack_device__", None)
    if probe is None:
        return None
    try:
        device_type = int(probe()[0])
    except Exception as exc:  # noqa: BLE001 - a device the exporter itself cannot name
        return str(exc) or type(exc).__name__
    return None if device_type in (KDL_CPU, KDL_CUDA_HOST) else f"DLPack device type {device_type}"


def unreadable_reason(obj, failure: BaseException | None) -> str:
    """Why `obj` cannot be read as a CPU array, with what to do: a phrase that follows "it" in
    the binding's TypeError ("gradOutput must be a tensor: it is a Tensor that requires grad;
    ..."); `failure` is what reading it raised (None when nothing could be tried)."""
    kind = type(obj).__name__
    article = "an" if kind[:1].lower() in "aeiou" else "a"
    if isinstance(obj, (list, tuple)):
        return f"is a Python {kind}, not a tensor; pass np.asarray(...) of it with the dtype you mean"
    if isinstance(obj, (bool, int, float, complex, str, bytes)):
        return f"is a Python {kind}, not a tensor; pass an array (np.asarray(...); 0-d for one value)"
    if getattr(obj, "requires_grad", False) is True:
        return (
            f"is {article} {kind} that requires grad, whose data cannot be read while autograd tracks it; "
            "pass .detach() of it (autograd does not record this call)"
        )
    device = _device_of(obj)
    if device == "meta":
        return f"is {article} {kind} on the meta device, which holds no data; create it on the CPU (or pass .to('cpu') of one with data)"
    if device is not None:
        return f"is {article} {kind} on {device!r}, which this call cannot read; move it to the CPU first (.cpu() for a PyTorch tensor)"
    if failure is not None:
        return f"is {article} {kind} that cannot be read as an array ({type(failure).__name__}: {failure})"
    return f"is {article} {kind}, which exposes neither __array_interface__, __array__ nor __dlpack__"
