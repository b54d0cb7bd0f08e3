"""The simulator's own declarations: its controls FFI and the generated op entry points.

- `sim_ffi()`: the simulator-only controls (runtime/sim/aclsim_controls.h): the generated
  out-of-line module aclnngen.generated.ffi._sim_controls, which `include`s the runtime's
  (aclnngen.runtime.ffi), so handles and callbacks share one type system and no C is parsed.
- `sim_ops_path()`: generated/c/sim_ops.c, the simulator entry points of aclnngen.generated's ops.
"""

from __future__ import annotations

import threading
from pathlib import Path

from typing import Any

import aclnngen.generated
from aclnngen.runtime.ffi import generated_ffi, runtime_ffi

from .build import SIM_DIR, sim_header_text

__all__ = ["sim_ffi", "sim_ops_path"]

_lock = threading.Lock()
_SIM: Any = None


def sim_ops_path() -> Path:
    """generated/c/sim_ops.c: the simulator entry points of the ops in aclnngen.generated."""
    return Path(aclnngen.generated.__file__).parent / "c" / "sim_ops.c"


def sim_ffi():
    """The FFI of the simulator's own controls (hooks, SoC name, version, counters, view)."""
    global _SIM
    if _SIM is None:
        runtime_ffi()  # first: the controls' module includes it
        with _lock:
            if _SIM is None:
                _SIM = generated_ffi(
                    "aclnngen.generated.ffi._sim_controls",
                    sim_header_text("aclsim_controls.h"),
                    SIM_DIR / "aclsim_controls.h",
                )
    return _SIM
