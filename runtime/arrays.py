"""Device memory and arrays: `DeviceBuffer` (one aclrtMalloc block) and `DeviceArray` (a strided
view of one), plus the NumPy <-> device copies the bindings use.

Layouts. A tensor reaches C the way op-plugin describes an at::Tensor (cann-abi.md 5.3): view
dims, view strides and offset in ELEMENTS, storage dims = one dim holding the element count of the
whole copied storage, format ND, and the data pointer = the base of that storage (an aclrtMalloc
block, 64-byte aligned). A NumPy input of any layout is copied as the minimal byte range of its
memory that covers the view; when the view starts a little way into its base array (not further
than its own extent), the range starts at the base, so the view keeps its offset. Non-contiguous
views, offset views and the zero strides of `np.broadcast_to` therefore reach C as strided views,
never silently densified. Negative strides (and strides that are not a multiple of the item size)
are copied to a C-contiguous layout first; they never reach C.

Memory. A `DeviceBuffer` is freed deterministically: `free()`, `with`, or the call that owns a
temporary; `__del__` is only the last resort (it frees nothing after the backend's shutdown at
interpreter exit, when the runtime may be finalised). Size 0 is never passed to aclrtMalloc: an empty tensor gets a NULL data pointer.
Allocation policy: ACL_MEM_MALLOC_HUGE_FIRST. A buffer that a launch queued on a stream still uses
refuses to be freed until the stream is synchronised.
"""

from __future__ import annotations

import functools
from typing import Any, Iterable

import numpy as np

from aclnngen.generated import abi

from . import acl, session
from .errors import AclnnError, AclRuntimeError

__all__ = [
    "ACL_MEM_MALLOC_HUGE_FIRST",
    "ArrayError",
    "ArrayTypeError",
    "UnsupportedDtypeError",
    "DeviceBuffer",
    "DeviceArray",
    "acl_dtype",
    "numpy_dtype",
    "contiguous_strides",
    "empty",
    "from_host",
]

ACL_MEM_MALLOC_HUGE_FIRST = acl.enum_value("ACL_MEM_MALLOC_HUGE_FIRST")
H2D = acl.enum_value("ACL_MEMCPY_HOST_TO_DEVICE")
D2H = acl.enum_value("ACL_MEMCPY_DEVICE_TO_HOST")
MAX_BYTES = 2**64 - 1  # the most a size_t (aclrtMalloc's size) holds


class UnsupportedDtypeError(AclnnError, TypeError):
    """A NumPy dtype that has no aclDataType (generated/abi.py DTYPES)."""

    def __init__(self, *, dtype: Any, param: str | None = None, op: str | None = None):
        self.dtype = dtype
        self.param = param
        self.op = op
        known = ", ".join(_abi_dtypes())
        where = f"{param} of {op}: " if param and op else (f"{param}: " if param else "")
        super().__init__(f"{where}dtype {dtype} has no aclDataType; supported: {known}")


class ArrayError(AclnnError, ValueError):
    """An array argument that cannot be used as given (read-only output, freed memory, ...)."""


class ArrayTypeError(ArrayError, TypeError):
    """A value of the wrong Python type where a tensor belongs (with validate=False)."""


def _abi_dtypes():
    return abi.DTYPES


_SHAPES: Any = None


def _shapes():
    """runtime.shapes, imported at first use: this module loads with a binding's import (the
    type hints name DeviceArray), shapes brings the rule machinery and ml_dtypes."""
    global _SHAPES
    if _SHAPES is None:
        from . import shapes  # deferred: not needed to import a binding

        _SHAPES = shapes
    return _SHAPES


@functools.lru_cache(maxsize=None)
def _tables():
    to_acl: dict[np.dtype, int] = {}
    to_np: dict[int, np.dtype] = {}
    numpy_dtypes = _shapes().NUMPY_DTYPES
    for name, (_, value, itemsize, module) in _abi_dtypes().items():
        if name in numpy_dtypes:
            dt = numpy_dtypes[name]
        else:
            try:
                dt = np.dtype(name)
            except TypeError:
                continue
        if dt.itemsize != itemsize:
            continue
        to_acl[dt] = value
        to_np[value] = dt
    return to_acl, to_np


def acl_dtype(dtype: Any, *, param: str | None = None, op: str | None = None) -> int:
    """The aclDataType value of a NumPy dtype; UnsupportedDtypeError when it has none."""
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise UnsupportedDtypeError(dtype=dtype, param=param, op=op) from None
    value = _tables()[0].get(dt)
    if value is None or not dt.isnative:
        raise UnsupportedDtypeError(dtype=dt, param=param, op=op)
    return value


def numpy_dtype(acl: int) -> np.dtype | None:
    """The NumPy dtype of an aclDataType value, or None when NumPy cannot hold it."""
    return _tables()[1].get(int(acl))


def contiguous_strides(shape: Iterable[int]) -> tuple[int, ...]:
    """C-contiguous strides in elements."""
    shape = tuple(shape)
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * max(shape[k + 1], 1)
    return tuple(strides)


def _span(shape, strides) -> int:
    """Elements from the first to one past the last element of a non-empty view."""
    return 1 + sum((d - 1) * s for d, s in zip(shape, strides))


def _session_backend():
    return session.backend()


# --- device memory ---------------------------------------------------------------------------------


def _release(backend, generation: int, address: int) -> int:
    """aclrtFree, if the backend that allocated the block is still the live one; returns its rc."""
    if not backend.alive or backend.generation != generation:
        return 0  # the backend was reset or shut down: the block no longer exists
    try:
        backend.ensure_thread()
    except Exception:  # noqa: BLE001 - best effort from a finaliser
        pass
    ffi = backend.ffi
    return backend.api.aclrtFree(ffi.cast(_VOID_P.get(ffi) or _void_p(ffi), address))


_VOID_P: dict = {}  # FFI -> its `void *` type (a dict read: every free of a device block asks)


def _void_p(ffi):
    """The `void *` type of an FFI, looked up once (a type string is parsed on every cast)."""
    found = _VOID_P.get(ffi)
    if found is None:
        found = _VOID_P[ffi] = ffi.typeof("void *")
    return found


def _finalize_release(backend, generation, address):
    try:
        rc = _release(backend, generation, address)
        if rc != 0:
            backend.recent_error()
    except Exception:  # noqa: BLE001 - a finaliser must never raise
        pass


class DeviceBuffer:
    """One block of device memory from aclrtMalloc (ACL_MEM_MALLOC_HUGE_FIRST), or an empty one
    (NULL, never allocated)."""

    __slots__ = ("backend", "nbytes", "address", "generation", "_owns", "_busy", "__weakref__")

    def __init__(self, backend, nbytes: int):
        self._owns = False  # whether the block is still this buffer's to free (free() or __del__)
        self.backend = backend
        self.nbytes = int(nbytes)
        self.generation = backend.generation
        self.address = 0
        self._busy = 0
        if self.nbytes < 0:
            raise ValueError(f"a device buffer cannot have {nbytes} bytes")
        if self.nbytes > MAX_BYTES:
            raise ArrayError(
                f"a device buffer cannot have {nbytes} bytes: aclrtMalloc takes at most 2**64 - 1 (size_t)"
            )
        if self.nbytes == 0:
            return
        backend.ensure_thread()
        ffi = backend.ffi
        out = ffi.new("void **")
        backend.check("aclrtMalloc", backend.api.aclrtMalloc(out, self.nbytes, ACL_MEM_MALLOC_HUGE_FIRST))
        self.address = int(ffi.cast("uintptr_t", out[0]))
        self._owns = True

    @classmethod
    def adopt(cls, backend, nbytes: int, address: int) -> "DeviceBuffer":
        """A block that was allocated outside this class (aclrtMalloc with the same policy, by the
        call plans' C helper), owned from now on exactly as one allocated here."""
        self = cls.__new__(cls)
        self.backend, self.nbytes, self.generation, self.address, self._busy = (
            backend,
            nbytes,
            backend.generation,
            address,
            0,
        )
        self._owns = True
        return self

    def __del__(self):
        # A buffer dropped without free() gives its block back here: a finaliser as final as
        # weakref.finalize's (cycles included), at a fraction of its cost per buffer. After a reset
        # or at exit the backend is gone or not alive, and nothing is freed (_release).
        if getattr(self, "_owns", False):
            self._owns = False
            try:
                _finalize_release(self.backend, self.generation, self.address)
            except Exception:  # noqa: BLE001 - module globals torn down at exit
                pass

    @property
    def ptr(self):
        """The block as a `void *` cdata (NULL for an empty buffer)."""
        return self.backend.ffi.cast("void *", self.address)

    @property
    def freed(self) -> bool:
        return self.address == 0 and self.nbytes > 0

    @property
    def live(self) -> bool:
        return self.nbytes == 0 or (
            self.address != 0 and self.backend.alive and self.backend.generation == self.generation
        )

    def _stream_hold(self, delta: int) -> None:
        """A stream keeps (+1) or releases (-1) this block for a queued launch (session.Stream)."""
        self._busy += delta

    def free(self) -> None:
        """Frees the block now (idempotent). Refused while a queued launch still uses it."""
        if not self._owns:
            self.address = 0 if self.nbytes else self.address
            return
        if self._busy:
            raise ArrayError(
                "this device buffer is still used by a launch queued on a stream; call "
                "stream.synchronize() before freeing it"
            )
        rc = _release(self.backend, self.generation, self.address)
        if rc != 0:  # still allocated: keep the address and the finalizer, so nothing leaks
            raise AclRuntimeError(status=rc, function="aclrtFree", detail=self.backend.recent_error() or None)
        self._owns = False
        self.address = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __repr__(self) -> str:
        state = "freed" if self.freed else f"0x{self.address:x}"
        return f"DeviceBuffer({self.nbytes} bytes at {state}, {self.backend.kind})"


class _hybridmethod:
    """A method that is a classmethod on the class and an instance method on instances."""

    def __init__(self, on_class, on_instance):
        self.on_class = on_class
        self.on_instance = on_instance
        functools.update_wrapper(self, on_class)

    def __get__(self, obj, objtype=None):
        if obj is None:
            return functools.partial(self.on_class, objtype)
        return functools.partial(self.on_instance, obj)


class DeviceArray:
    """A strided view of device memory.

    shape, strides (in elements), offset (in elements, from the storage base), dtype (NumPy),
    `storage_size` (elements the storage holds, the 1-D storage dim of the aclTensor), and the
    owning `buffer` (None for memory the array borrows, see `wrap`). `address` is the storage base.
    """

    __slots__ = ("shape", "strides", "offset", "dtype", "storage_size", "buffer", "backend", "_address")

    def __init__(
        self,
        buffer: DeviceBuffer | None,
        shape: Iterable[int],
        dtype: Any,
        strides: Iterable[int] | None = None,
        offset: int = 0,
        storage_size: int | None = None,
        *,
        address: int | None = None,
        backend=None,
    ):
        self.shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in self.shape):
            raise ArrayError(f"negative dimension in shape {self.shape}")
        self.dtype = np.dtype(dtype)
        self.strides = tuple(int(s) for s in strides) if strides is not None else contiguous_strides(self.shape)
        if len(self.strides) != len(self.shape):
            raise ArrayError(f"{len(self.strides)} strides for a shape of {len(self.shape)} dims")
        if any(s < 0 for s in self.strides):
            raise ArrayError(f"negative strides {self.strides}: a device view needs strides >= 0")
        self.offset = int(offset)
        if self.offset < 0:
            raise ArrayError(f"negative offset {offset}")
        self.buffer = buffer
        self.backend = buffer.backend if buffer is not None else (backend or _session_backend())
        self._address = None if buffer is not None else int(address or 0)
        needed = self.offset + _span(self.shape, self.strides) if self.size else 0
        self.storage_size = int(storage_size) if storage_size is not None else needed
        if self.size and self.storage_size < needed:
            raise ArrayError(f"storage of {self.storage_size} elements is smaller than the view needs ({needed})")
        if buffer is not None and self.storage_size * self.dtype.itemsize > buffer.nbytes:
            raise ArrayError(
                f"the view needs {self.storage_size * self.dtype.itemsize} bytes but its buffer has {buffer.nbytes}"
            )

    @classmethod
    def _of(
        cls, buffer: DeviceBuffer, shape: tuple, dtype: np.dtype, strides: tuple, offset: int, storage_size: int
    ) -> "DeviceArray":
        """A view whose layout this module computed itself (host_layout, empty): the checks of
        __init__ hold by construction, so they are not run again on every call."""
        self = cls.__new__(cls)
        self.shape, self.dtype, self.strides, self.offset = shape, dtype, strides, offset
        self.storage_size, self.buffer, self.backend, self._address = storage_size, buffer, buffer.backend, None
        return self

    def _stream_hold(self, delta: int) -> None:
        """A stream keeps (+1) or releases (-1) this array's block for a queued launch."""
        if self.buffer is not None:
            self.buffer._stream_hold(delta)

    # -- properties ----------------------------------------------------------------------------
    @property
    def address(self) -> int:
        return self.buffer.address if self.buffer is not None else self._address

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        n = 1
        for d in self.shape:
            n *= d
        return n

    @property
    def itemsize(self) -> int:
        return self.dtype.itemsize

    @property
    def nbytes(self) -> int:
        return self.size * self.itemsize

    @property
    def contiguous(self) -> bool:
        """C-contiguous (size-1 dims ignored; an empty array is contiguous)."""
        return _shapes().c_contiguous(self.shape, self.strides)

    @property
    def acl_dtype(self) -> int:
        return acl_dtype(self.dtype)

    def _check_live(self) -> None:
        if self.buffer is not None and not self.buffer.live:
            raise ArrayError("the device memory of this array was freed (or its backend was reset)")

    # -- construction --------------------------------------------------------------------------
    @classmethod
    def empty(cls, shape, dtype, *, backend=None) -> "DeviceArray":
        """A new C-contiguous array (uninitialised device memory)."""
        backend = backend or _session_backend()
        shape = tuple(int(d) for d in shape)
        dt = np.dtype(dtype)
        n = 1
        for d in shape:
            n *= d
        if any(d < 0 for d in shape):
            raise ArrayError(f"negative dimension in shape {shape}")
        buffer = DeviceBuffer(backend, n * dt.itemsize)
        return cls._of(buffer, shape, dt, contiguous_strides(shape), 0, n)

    @classmethod
    def wrap(cls, address, shape, dtype, strides=None, offset=0, storage_size=None, *, backend=None) -> "DeviceArray":
        """A view of memory this array does not own (`address` an int or a cdata pointer). The
        memory is not checked here: the library checks it (the simulator rejects anything outside
        a live aclrtMalloc block with 161002)."""
        backend = backend or _session_backend()
        if not isinstance(address, int):
            address = int(backend.ffi.cast("uintptr_t", address))
        return cls(None, shape, dtype, strides, offset, storage_size, address=address, backend=backend)

    def _from_host_new(cls, array, *, contiguous: bool = False, backend=None) -> "DeviceArray":
        """A new device array holding a copy of `array`. Its layout is kept (strides and offset
        within the covering storage) unless `contiguous` is true."""
        backend = backend or _session_backend()
        array = np.asarray(array)
        if contiguous and not array.flags.c_contiguous:
            array = array.copy(order="C")
        return upload(backend, array)

    def _from_host_into(self, array) -> "DeviceArray":
        """Copies `array` (same shape; cast to this dtype) into this device array's elements,
        leaving the rest of its storage untouched. Returns self."""
        self._check_live()
        array = np.asarray(array)
        if array.shape != self.shape:
            try:
                array = np.broadcast_to(array, self.shape)
            except ValueError:
                raise ArrayError(
                    f"cannot copy an array of shape {array.shape} into a device array of shape {self.shape}"
                ) from None
        if array.dtype != self.dtype:
            array = array.astype(self.dtype)
        if self.size == 0:
            return self
        backend = self.backend
        backend.ensure_thread()
        span = _span(self.shape, self.strides)
        start = self.address + self.offset * self.itemsize
        if self.contiguous and array.flags.c_contiguous:
            _memcpy(backend, start, array.ctypes.data, self.nbytes, H2D)
            return self
        raw = np.empty(span * self.itemsize, np.uint8)
        _memcpy(backend, raw.ctypes.data, start, raw.nbytes, D2H)
        view = _shapes().strided_elements(raw, self.dtype, self.shape, self.strides)
        view[...] = array
        _memcpy(backend, start, raw.ctypes.data, raw.nbytes, H2D)
        return self

    from_host = _hybridmethod(_from_host_new, _from_host_into)

    # -- copies back -----------------------------------------------------------------------------
    def to_host(self) -> np.ndarray:
        """A new C-contiguous NumPy array with this view's elements (a synchronous copy)."""
        self._check_live()
        if self.size == 0:
            return np.empty(self.shape, self.dtype)
        backend = self.backend
        backend.ensure_thread()
        start = self.address + self.offset * self.itemsize
        if self.contiguous:  # one copy, straight into the result
            out = np.empty(self.shape, self.dtype)
            _memcpy(backend, out.ctypes.data, start, out.nbytes, D2H)
            return out
        span = _span(self.shape, self.strides)
        raw = np.empty(span * self.itemsize, np.uint8)
        _memcpy(backend, raw.ctypes.data, start, raw.nbytes, D2H)
        view = _shapes().strided_elements(raw, self.dtype, self.shape, self.strides, writeable=False)
        return view.copy(order="C")

    def copy_to(self, out: np.ndarray) -> np.ndarray:
        """Writes this view's elements into the NumPy array `out` (any layout; only its elements
        are written). Returns `out`."""
        if out.shape != self.shape:
            raise ArrayError(f"cannot copy a device array of shape {self.shape} into an array of shape {out.shape}")
        if self.size and self.contiguous and out.flags.c_contiguous and out.dtype == self.dtype and out.flags.writeable:
            self._check_live()
            self.backend.ensure_thread()  # one copy, straight into `out`
            _memcpy(self.backend, out.ctypes.data, self.address + self.offset * self.itemsize, self.nbytes, D2H)
            return out
        out[...] = self.to_host()
        return out

    # -- lifetime --------------------------------------------------------------------------------
    def free(self) -> None:
        """Frees the owning buffer now (every view of it becomes unusable)."""
        if self.buffer is not None:
            self.buffer.free()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.free()

    def __repr__(self) -> str:
        where = f"0x{self.address:x}" if self.address else "NULL"
        owned = "" if self.buffer is not None else ", borrowed"
        return (
            f"DeviceArray(shape={self.shape}, dtype={self.dtype}, strides={self.strides}, "
            f"offset={self.offset}, data={where}{owned})"
        )


def _memcpy(backend, dst: int, src: int, nbytes: int, kind: int) -> None:
    ffi = backend.ffi
    rc = backend.api.aclrtMemcpy(ffi.cast("void *", dst), nbytes, ffi.cast("void *", src), nbytes, kind)
    if rc != 0:
        raise AclRuntimeError(status=rc, function="aclrtMemcpy", detail=backend.recent_error() or None)


# --- NumPy views -> device views -------------------------------------------------------------------


def host_layout(array: np.ndarray):
    """How a NumPy array's memory maps onto a device storage.

    Returns (array, start address, storage bytes, strides, offset, storage elements): `array` may
    be a C-contiguous copy (negative or misaligned strides); the storage is the byte range
    [start, start + storage bytes) of host memory; strides and offset are in elements."""
    isz = array.itemsize
    shape = array.shape
    if array.base is None and array.flags.c_contiguous:  # the common case: a whole, dense array
        return array, array.ctypes.data, array.nbytes, contiguous_strides(shape), 0, array.size
    if any((s < 0 or s % isz) and d > 1 for d, s in zip(shape, array.strides)):
        array = array.copy(order="C")
    contiguous = contiguous_strides(shape)
    strides = tuple(s // isz if d > 1 else c for d, s, c in zip(shape, array.strides, contiguous))
    span = _span(shape, strides)
    first = array.ctypes.data
    extent = span * isz
    prefix = 0
    root = array
    while isinstance(root.base, np.ndarray):
        root = root.base
    if root is not array and (root.flags.c_contiguous or root.flags.f_contiguous):
        root_start = root.ctypes.data
        gap = first - root_start
        if 0 < gap <= extent and gap % isz == 0 and first + extent <= root_start + root.nbytes:
            prefix = gap
    offset = prefix // isz
    return array, first - prefix, prefix + extent, strides, offset, offset + span


def upload(backend, array: np.ndarray) -> DeviceArray:
    """A device copy of a NumPy array that keeps its view layout (see the module docstring)."""
    if array.size == 0:
        return DeviceArray(DeviceBuffer(backend, 0), array.shape, array.dtype)
    array, start, nbytes, strides, offset, storage = host_layout(array)
    buffer = DeviceBuffer(backend, nbytes)
    try:
        _memcpy(backend, buffer.address, start, nbytes, H2D)
    except BaseException:
        buffer.free()
        raise
    return DeviceArray._of(buffer, array.shape, array.dtype, strides, offset, storage)


def device_like(backend, array: np.ndarray) -> DeviceArray:
    """Device memory laid out like `array` (nothing copied): for outputs the caller passed."""
    if array.size == 0:
        return DeviceArray(DeviceBuffer(backend, 0), array.shape, array.dtype)
    _, _, nbytes, strides, offset, storage = host_layout(array)
    return DeviceArray._of(DeviceBuffer(backend, nbytes), array.shape, array.dtype, strides, offset, storage)


def empty(shape, dtype, *, backend=None) -> DeviceArray:
    return DeviceArray.empty(shape, dtype, backend=backend)


def from_host(array, *, contiguous: bool = False, backend=None) -> DeviceArray:
    return DeviceArray.from_host(array, contiguous=contiguous, backend=backend)
