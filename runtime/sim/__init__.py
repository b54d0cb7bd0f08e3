"""The simulator: a C library (the *.c and *.h beside this file) that exports CANN's symbols with
CANN's signatures, compiled on first use (build.py), with Python kernels behind its op entry
points (kernels.py) and its own controls (controls.py).

Importing this package plugs it into the call path, which never imports it itself:
- `backend.register_backend("sim", SimBackend)`: the session creates the simulator through the
  backend registry, which imports this package by name when the simulator is chosen;
- `bound_ops.on_bind(kernels.register_op)`: every op bound before or after (a generated binding's
  `bind(META)`) gets its kernel, and a stand-alone package's C sources join the build.
"""

from __future__ import annotations

from aclnngen.runtime import backend as _backend
from aclnngen.runtime import bound_ops as _bound_ops

from . import kernels
from .backend import SIM_LIB_NAMES, SimBackend

__all__ = ["SimBackend", "SIM_LIB_NAMES", "kernels"]

_backend.register_backend("sim", SimBackend)
_bound_ops.on_bind(kernels.register_op)
