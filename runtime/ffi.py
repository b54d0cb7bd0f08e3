"""cffi declarations (ABI mode): the runtime cdef, the simulator's controls and one FFI per op.

- `runtime_ffi()`: one process-wide `cffi.FFI` whose cdef is the generated
  generated/c/acl_runtime.h, read as text (the same text the simulator compiles against).
- `op_ffi(meta)`: an FFI for one op's two prototypes (META["cdef"]), including the runtime FFI;
  parsed on first use of the op and cached.
- `dlopen(ffi, path_or_name)`: `ffi.dlopen` that turns loader failures into `OSError` text.
- `lookup(lib, name)`: a symbol of a loaded library, or None when the library does not export it.

Nothing here loads a library by itself; backend.py decides which files to load. The simulator's
own controls have their FFI in aclnngen.runtime.sim.controls.
"""

from __future__ import annotations

import ctypes
import os
import threading
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Mapping

import cffi

from aclnngen.core.meta import op_meta

from .errors import BackendError

__all__ = [
    "runtime_cdef_path",
    "runtime_cdef",
    "runtime_ffi",
    "op_ffi",
    "dlopen",
    "lookup",
]

_lock = threading.Lock()


def runtime_cdef_path() -> Path:
    """generated/c/acl_runtime.h as installed (package data of aclnngen.generated)."""
    return Path(str(resources.files("aclnngen.generated") / "c" / "acl_runtime.h"))


@lru_cache(maxsize=None)
def runtime_cdef() -> str:
    path = runtime_cdef_path()
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BackendError(
            reason=f"cannot read the runtime declarations {path}: {exc.strerror or exc}",
            hint="reinstall aclnngen (the file is package data of aclnngen.generated)",
        ) from None


_RUNTIME: cffi.FFI | None = None
_OPS: dict[tuple[str, str], cffi.FFI] = {}


def runtime_ffi() -> cffi.FFI:
    """The FFI of the CANN runtime and tensor API (created once per process)."""
    global _RUNTIME
    if _RUNTIME is None:
        with _lock:
            if _RUNTIME is None:
                ffi = cffi.FFI()
                ffi.cdef(runtime_cdef())
                _RUNTIME = ffi
    return _RUNTIME


def op_ffi(meta: Mapping[str, Any]) -> cffi.FFI:
    """An FFI holding the op's two prototypes, on top of the runtime FFI (cached per op)."""
    op = op_meta(meta)
    key = (op.symbol, op.cdef)
    ffi = _OPS.get(key)
    if ffi is not None:
        return ffi
    base = runtime_ffi()
    with _lock:
        ffi = _OPS.get(key)
        if ffi is None:
            ffi = cffi.FFI()
            ffi.include(base)
            try:
                ffi.cdef(op.cdef)
            except cffi.CDefError as exc:
                raise BackendError(
                    reason=f"the declarations of {op.symbol} do not parse: {exc}",
                    op=op.name,
                    hint="regenerate the bindings with `aclnngen generate`",
                ) from None
            _OPS[key] = ffi
    return ffi


def dlopen(ffi: cffi.FFI, path: str | Path):
    """`ffi.dlopen(path)`; OSError with the loader's message when it fails."""
    text = str(path)
    if os.sep not in text:
        # A bare name: the dynamic loader's search only. cffi retries a failure with
        # ctypes.util.find_library, which runs ldconfig and the compiler (tens of ms per name,
        # on every first call where CANN is absent); ask the loader alone first.
        try:
            ctypes.CDLL(text)
        except OSError as exc:
            raise OSError(f"cannot load library {text!r}: {exc}") from None
    try:
        return ffi.dlopen(text)
    except OSError:
        raise
    except Exception as exc:  # cffi raises OSError for loader errors; be defensive anyway
        raise OSError(str(exc)) from None


def lookup(lib, name: str):
    """The function `name` of a cffi library object, or None if the library does not export it."""
    try:
        return getattr(lib, name)
    except (AttributeError, NotImplementedError):
        return None
