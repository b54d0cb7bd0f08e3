"""cffi declarations (out-of-line ABI mode): the runtime's and one FFI per op.

- `runtime_ffi()`: the process-wide FFI of the runtime and tensor API: the generated module
  aclnngen.generated.ffi._acl_runtime, cffi's pre-parsed form of generated/c/acl_runtime.h (the
  text the simulator compiles against), so no C is parsed at run time (codegen/ffi_modules.py).
- `op_ffi(meta, package)`: an FFI for one op's two prototypes (META["cdef"]): the package's
  generated `<package>.ffi.<op>`, which includes the runtime's; for a META without one (a META
  built by hand, or a package generated before these modules existed) the same module is made
  from the cdef at run time, with cffi's parser. Cached per op.
- `dlopen(ffi, path_or_name)`: `ffi.dlopen` that turns loader failures into `OSError` text.
- `lookup(lib, name)`: a symbol of a loaded library, or None when the library does not export it.

Nothing here loads a library by itself; backend.py decides which files to load. The simulator's
own controls have their FFI in aclnngen.runtime.sim.controls.
"""

from __future__ import annotations

import ctypes
import importlib
import io
import os
import threading
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import _cffi_backend

import aclnngen.generated
from aclnngen.core.meta import op_meta

from .errors import BackendError

__all__ = [
    "runtime_cdef_path",
    "runtime_cdef",
    "runtime_ffi",
    "op_ffi",
    "generated_ffi",
    "dlopen",
    "lookup",
]

_lock = threading.Lock()


def runtime_cdef_path() -> Path:
    """generated/c/acl_runtime.h as installed (package data of aclnngen.generated)."""
    # the package's own folder (importlib.resources would import tempfile, shutil and more)
    return Path(aclnngen.generated.__file__).parent / "c" / "acl_runtime.h"


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


RUNTIME_MODULE = "aclnngen.generated.ffi._acl_runtime"
_RUNTIME: Any = None
_OPS: dict[tuple[str | None, str, str], Any] = {}


def runtime_ffi():
    """The FFI of the CANN runtime and tensor API (loaded once per process)."""
    global _RUNTIME
    if _RUNTIME is None:
        with _lock:
            if _RUNTIME is None:
                _RUNTIME = generated_ffi(RUNTIME_MODULE, runtime_cdef(), runtime_cdef_path())
    return _RUNTIME


def generated_ffi(name: str, cdef: str, source: Path | str):
    """The `ffi` of the generated module `name`, which must declare `cdef` (the text of `source`)."""
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        raise BackendError(
            reason=f"cannot import the cffi declarations {name}: {exc}",
            hint="regenerate with `aclnngen generate`, or reinstall aclnngen",
        ) from None
    if getattr(module, "CDEF", None) != cdef:
        raise BackendError(
            reason=f"the cffi declarations {name} do not match {source}",
            hint="regenerate with `aclnngen generate` (`aclnngen check` lists stale files)",
        )
    return module.ffi


def op_ffi(meta: Mapping[str, Any], package: str | None = None):
    """An FFI holding the op's two prototypes, on top of the runtime FFI (cached per package and op:
    an FFI parsed for a META without a package never stands in for a package's own module)."""
    op = op_meta(meta)
    key = (package, op.symbol, op.cdef)
    ffi = _OPS.get(key)
    if ffi is not None:
        return ffi
    base = runtime_ffi()
    with _lock:
        ffi = _OPS.get(key)
        if ffi is None:
            ffi = _package_op_ffi(package, op.snake, op.cdef) or _parsed_op_ffi(base, op)
            _OPS[key] = ffi
    return ffi


def _package_op_ffi(package: str | None, snake: str, cdef: str):
    """`<package>.ffi.<snake>`'s FFI when it exists and declares `cdef`, else None."""
    if package is None:
        return None
    name = f"{package}.ffi.{snake}"
    try:
        module = importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and name.startswith(exc.name):
            return None  # an older package, without the module: parse the cdef instead
        raise
    return module.ffi if getattr(module, "CDEF", None) == cdef else None


@lru_cache(maxsize=1)
def _parser_runtime():
    import cffi  # deferred: cffi's C parser, only for an op without generated declarations

    ffi = cffi.FFI()
    ffi.cdef(runtime_cdef())
    ffi.set_source(RUNTIME_MODULE, None)
    return ffi


def _parsed_op_ffi(base, op):
    """The out-of-line module codegen/ffi_modules.py would render for `op`, made here from its cdef
    and run: it includes the runtime's module, so its types are `base`'s."""
    import cffi  # deferred: cffi's C parser, only for an op without generated declarations
    from cffi.recompiler import make_py_source

    ffi = cffi.FFI()
    ffi.include(_parser_runtime())
    try:
        ffi.cdef(op.cdef)
    except cffi.CDefError as exc:
        raise BackendError(
            reason=f"the declarations of {op.symbol} do not parse: {exc}",
            op=op.name,
            hint="regenerate the bindings with `aclnngen generate`",
        ) from None
    name = f"aclnngen.runtime.ffi_{op.snake}"
    ffi.set_source(name, None)
    text = io.StringIO()
    make_py_source(ffi, name, text)
    namespace: dict[str, Any] = {}
    exec(compile(text.getvalue(), f"<cffi declarations of {op.symbol}>", "exec"), namespace)
    assert namespace["_ffi0"] is base, "the parsed op FFI must include the runtime's"
    return namespace["ffi"]


def dlopen(ffi, path: str | Path):
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
    except (AttributeError, NotImplementedError, _cffi_backend.FFI.error):  # the last: out-of-line
        return None
