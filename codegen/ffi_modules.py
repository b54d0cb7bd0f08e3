"""Out-of-line cffi modules: C declarations pre-parsed into plain Python, rendered with the rest.

cffi's out-of-line ABI mode (`set_source(name, None)`) turns a cdef into a module holding cffi's
own tables of the declared types and functions. Importing it needs `_cffi_backend` alone, not
pycparser, so the first call of a binding parses no C (it parsed ~60 ms of it before). The
rendered modules:

- `generated/ffi/_acl_runtime.py`: the runtime and tensor API (generated/c/acl_runtime.h);
- `generated/ffi/_sim_controls.py`: the simulator's controls (runtime/sim/aclsim_controls.h);
- `generated/ffi/_sim_kernels.py`: the table of the compiled simulator kernels (`KERNEL_TABLE_CDEF`);
- `generated/ffi/_callplan.py`: the call plans' C helper (runtime/callplan_c/callplan.h);
- `<package>/ffi/<op>.py`: one op's two prototypes (its META's "cdef").

The simulator's and the ops' modules `include` the runtime's, so a handle such as `aclTensor *`
is one type across them. cffi writes the tables in a fixed order: the text depends only on the
declarations and on cffi's version.
"""

from __future__ import annotations

import io
from functools import lru_cache
from pathlib import Path

RUNTIME_MODULE = "aclnngen.generated.ffi._acl_runtime"
SIM_CONTROLS_MODULE = "aclnngen.generated.ffi._sim_controls"
SIM_KERNELS_MODULE = "aclnngen.generated.ffi._sim_kernels"
CALLPLAN_MODULE = "aclnngen.generated.ffi._callplan"

# The ABI of generated/c/sim_kernels.c's table of kernels, as runtime/sim/compiled.py reads it
# (the C side is the template sim_kernels.c.j2).
KERNEL_TABLE_CDEF = """\
typedef void (*aclk_fn)(void *const *tensors, int64_t start, int64_t count, const double *doubles,
                        const int64_t *ints, const char *const *strings);
struct aclk_entry { const char *symbol; const char *storage; const char *compute; aclk_fn fn; };
struct aclk_fallback { const char *symbol; const char *reason; };
const struct aclk_entry *aclk_entries(void);
const struct aclk_fallback *aclk_fallbacks(void);
int aclk_math_f(const char *name, const float *x, float *y, int64_t n);
"""


def sim_controls_header() -> str:
    """runtime/sim/aclsim_controls.h: the simulator's controls, plain cdef text (read, not imported:
    the generator stands beside the call path)."""
    return (Path(__file__).resolve().parent.parent / "runtime" / "sim" / "aclsim_controls.h").read_text(
        encoding="utf-8"
    )


def callplan_header() -> str:
    """runtime/callplan_c/callplan.h: the call plans' C helper (read, like the controls' header)."""
    return (Path(__file__).resolve().parent.parent / "runtime" / "callplan_c" / "callplan.h").read_text(
        encoding="utf-8"
    )


def module_name(package: str, op: str) -> str:
    """The out-of-line module of one op of `package`."""
    return f"{package}.ffi.{op}"


@lru_cache(maxsize=4)
def _runtime(runtime_cdef: str):
    import cffi  # deferred: only `generate` needs cffi's parser

    ffi = cffi.FFI()
    ffi.cdef(runtime_cdef)
    ffi.set_source(RUNTIME_MODULE, None)
    return ffi


def emit(cdef: str, module: str, runtime_cdef: str | None = None) -> str:
    """The Python text of the out-of-line module `module` declaring `cdef`; with `runtime_cdef`,
    it includes the runtime's module (whose declarations `cdef` may use)."""
    import cffi  # deferred: only `generate` needs cffi's parser
    from cffi.recompiler import make_py_source

    if module == RUNTIME_MODULE:
        ffi = _runtime(cdef)
    else:
        ffi = cffi.FFI()
        if runtime_cdef is not None:
            ffi.include(_runtime(runtime_cdef))
        ffi.cdef(cdef)
        ffi.set_source(module, None)
    out = io.StringIO()
    make_py_source(ffi, module, out)
    lines = out.getvalue().splitlines()
    # cffi's first line says "auto-generated file": the template's header says by what
    return "\n".join(line for line in lines if line != "# auto-generated file") + "\n"
