"""The simulator's own declarations: its controls FFI and the generated op entry points.

- `sim_ffi()`: the simulator-only controls (runtime/sim/aclsim_controls.h), in an FFI that
  `include`s the runtime FFI (aclnngen.runtime.ffi), so handles and callbacks share one type system.
- `sim_ops_path()`: generated/c/sim_ops.c, the simulator entry points of aclnngen.generated's ops.
"""

from __future__ import annotations

import threading
from importlib import resources
from pathlib import Path

import cffi

from aclnngen.runtime.ffi import runtime_ffi

from .build import sim_header_text

__all__ = ["sim_ffi", "sim_ops_path"]

_lock = threading.Lock()
_SIM: cffi.FFI | None = None


def sim_ops_path() -> Path:
    """generated/c/sim_ops.c: the simulator entry points of the ops in aclnngen.generated."""
    return Path(str(resources.files("aclnngen.generated") / "c" / "sim_ops.c"))


def sim_ffi() -> cffi.FFI:
    """The FFI of the simulator's own controls (hooks, SoC name, version, counters, view)."""
    global _SIM
    if _SIM is None:
        base = runtime_ffi()
        with _lock:
            if _SIM is None:
                ffi = cffi.FFI()
                ffi.include(base)
                ffi.cdef(sim_header_text("aclsim_controls.h"))
                _SIM = ffi
    return _SIM
