"""Call plans: a binding call of a known signature made by ONE call of a C helper.

The first successful call of a signature (each argument's type, shape, dtype and layout, scalar and
attribute values; `BoundOp.plan_key`) goes the Python way (runtime/call.py: inference, validation,
conversions). From what it did, `make_plan` fixes everything that does not change between calls
of that signature: the descriptors' dims, strides, storage and dtypes, the scalars' bytes, the
attributes' values, the SoC name and CANN version it was validated for. Later calls of the
signature hand only the data addresses to `aclnngen_call` (runtime/callplan_c/callplan.c), which
allocates, copies in (NumPy arrays), creates the descriptors, calls GetWorkspaceSize, allocates the
workspace, launches, destroys the descriptors, synchronises, copies out and frees; the output is
the only object a call makes in Python.

The helper receives every runtime function as a pointer taken from the loaded library
(`ffi.addressof` of the backend's own cffi library), so it runs against real CANN as against the
simulator and links to neither. Its op-specific part, the call of GetWorkspaceSize with the
prototype's C types, is rendered per argument-type signature ("pppp": four pointers) and compiled
with the helper by the build of runtime/cbuild.py into the user's cache (the same trust rules,
atomic writes and locks as the simulator's). When the helper cannot be built (no C compiler) or
an argument's C type is not one it renders, calls go the Python way; `status()` says which, for
`aclnngen info`. `ACLNNGEN_CALL_PATH=python` (or `set_mode("python")`) turns plans off.

The helper fails where the Python path would: it stops at the same step, destroys and frees what
it made, reads aclGetRecentErrMsg() at once, and the caller raises the error the Python path
raises for that step (`raise_failure`). When the SoC or the version the library reports is no
longer the plan's, the helper does nothing and the call goes the Python way, which decides again.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import numpy as np

from aclnngen.core.attribute_types import ATTRIBUTE_TYPES

from . import acl
from .arrays import ACL_MEM_MALLOC_HUGE_FIRST, DeviceArray, DeviceBuffer, acl_dtype, contiguous_strides
from .backend import VERSION_BUFFER, VERSION_PACKAGES
from .errors import AclnnStatusError, AclRuntimeError
from .ffi import generated_ffi

empty = np.empty

__all__ = ["MODE_ENV", "CALLPLAN_DIR", "mode", "set_mode", "status", "classes_of", "trampoline_source", "Plan"]

MODE_ENV = "ACLNNGEN_CALL_PATH"
MODES = ("auto", "python")
#: runtime/callplan_c: the helper's C source and its header (package data of aclnngen.runtime)
CALLPLAN_DIR = Path(__file__).resolve().parent / "callplan_c"
HEADER = CALLPLAN_DIR / "callplan.h"
MODULE = "aclnngen.generated.ffi._callplan"
MAX_ITEMS = 64  # callplan.c's MAX_ITEMS

# stages of callplan.h's enum aclnngen_stage
(
    DONE,
    STALE,
    MALLOC,
    COPY_IN,
    CREATE_TENSOR,
    CREATE_SCALAR,
    GET_WORKSPACE_SIZE,
    WORKSPACE,
    LAUNCH,
    SYNCHRONIZE,
    COPY_OUT,
) = range(11)
INPUT, OUTPUT, SCALAR = range(3)  # enum aclnngen_kind

ACLNN_ERR_INNER_NULLPTR = acl.status_code("ACLNN_ERR_INNER_NULLPTR")
H2D = acl.enum_value("ACL_MEMCPY_HOST_TO_DEVICE")
D2H = acl.enum_value("ACL_MEMCPY_DEVICE_TO_HOST")

# the runtime functions, in the order of callplan.h's enum aclnngen_fn
FUNCTIONS = (
    "aclCreateTensor",
    "aclDestroyTensor",
    "aclCreateScalar",
    "aclDestroyScalar",
    "aclDestroyAclOpExecutor",
    "aclrtMalloc",
    "aclrtFree",
    "aclrtMemcpy",
    "aclrtSynchronizeStream",
    "aclGetRecentErrMsg",
    "aclrtGetSocName",
    "aclsysGetVersionStr",
)

# C type of a GetWorkspaceSize argument (as cffi names it) -> (letter, C type, union member)
_CLASSES = {
    "int64_t": ("q", "int64_t", "i"),
    "long": ("q", "int64_t", "i"),
    "long long": ("q", "int64_t", "i"),
    "int32_t": ("i", "int32_t", "i"),
    "int": ("i", "int32_t", "i"),
    "int16_t": ("h", "int16_t", "i"),
    "int8_t": ("c", "int8_t", "i"),
    "uint64_t": ("Q", "uint64_t", "i"),
    "uint32_t": ("I", "uint32_t", "i"),
    "uint16_t": ("H", "uint16_t", "i"),
    "uint8_t": ("C", "uint8_t", "i"),
    "_Bool": ("b", "bool", "i"),
    "double": ("d", "double", "d"),
    "float": ("f", "float", "d"),
}
_LETTERS = {letter: (ctype, member) for letter, ctype, member in _CLASSES.values()}
_LETTERS["p"] = ("void *", "p")

_mode = os.environ.get(MODE_ENV, "").strip() or "auto"
_lock = threading.Lock()
_LIBRARIES: dict[str, Any] = {}  # argument classes -> the loaded helper, or the reason there is none
_FFI: Any = None


def mode() -> str:
    return _mode


def set_mode(value: str) -> None:
    """ "auto" (plans where the helper builds) or "python" (every call the Python way)."""
    global _mode
    if value not in MODES:
        raise ValueError(f"{MODE_ENV}: {value!r} is not one of {', '.join(MODES)}")
    _mode = value


def enabled() -> bool:
    if _mode not in MODES:
        raise ValueError(f"${MODE_ENV}={_mode!r} is not one of {', '.join(MODES)}")
    return _mode == "auto"


def _ffi():
    global _FFI
    if _FFI is None:
        _FFI = generated_ffi(MODULE, HEADER.read_text(encoding="utf-8"), HEADER)
    return _FFI


def classes_of(ffi, get_workspace_size) -> str | None:
    """The argument classes of an op's GetWorkspaceSize without its last two (workspaceSize and
    executor pointers): one letter per argument ("p" a pointer, "q" an int64_t, "d" a double,
    ...); None when an argument has a C type the helper does not render."""
    args = ffi.typeof(get_workspace_size).args
    letters = []
    for t in args[:-2]:
        if t.kind == "pointer":
            letters.append("p")
        elif t.kind == "primitive" and t.cname in _CLASSES:
            letters.append(_CLASSES[t.cname][0])
        else:
            return None
    return "".join(letters)


def trampoline_source(classes: str) -> str:
    """C of `aclnngen_get_workspace_size` for GetWorkspaceSize functions of these argument classes."""
    params = ", ".join([*(_LETTERS[c][0] for c in classes), "uint64_t *", "void **"])
    args = ", ".join(
        [
            *(f"a[{k}].p" if c == "p" else f"({_LETTERS[c][0]})a[{k}].{_LETTERS[c][1]}" for k, c in enumerate(classes)),
            "workspace_size",
            "executor",
        ]
    )
    return (
        f"/* aclnngen_get_workspace_size for the argument classes {classes!r} (runtime/callplan.py) */\n"
        '#include <stdbool.h>\n#include <stdint.h>\n\n#include "callplan.h"\n\n'
        f"typedef int32_t (*get_workspace_size_fn)({params});\n\n"
        "int32_t aclnngen_get_workspace_size(void *fn, const aclnngen_value *a, uint64_t *workspace_size,\n"
        "                                    void **executor) {\n"
        f"    return ((get_workspace_size_fn)fn)({args});\n"
        "}\n"
    )


def _source(classes: str) -> Path:
    """The helper's C source for these argument classes, kept in the user's cache (`callplan/`
    beside the builds; a private temporary folder when the cache is not the user's own): written
    once, then found as it is, so a process's first call writes no file and makes no folder. The
    build key names it by its folder's place and its name (runtime/cbuild.py), as before."""
    # deferred: the cache's tools load with the first plan, not on the import path
    from aclnngen.cachedir import cache_root, make_private, private_temporary, trusted
    from aclnngen.files import write_atomic

    base = cache_root()
    if not trusted(base, what="call plans' cache"):
        base = private_temporary()
    folder = make_private(base / "callplan")
    path = folder / f"call_{classes}.c"
    write_atomic(path, trampoline_source(classes), what="call plans' helper source", durable=False)
    return path


def _build(classes: str) -> Path:
    # deferred: the build (subprocess, locks) loads at the first plan, not on the import path
    from .cbuild import build_simulator

    return build_simulator([_source(classes)], core_dir=CALLPLAN_DIR, lib_names=(f"libaclnngen_call_{classes}.so",))


def helper(classes: str):
    """The loaded helper for these argument classes, or a string saying why there is none."""
    found = _LIBRARIES.get(classes)
    if found is not None:
        return found
    with _lock:
        found = _LIBRARIES.get(classes)
        if found is None:
            try:
                ffi = _ffi()
                found = ffi.dlopen(str(_build(classes)))
            except Exception as exc:  # noqa: BLE001 - no compiler, a failed build: the Python path calls
                found = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            _LIBRARIES[classes] = found
    return found


def status() -> dict:
    """For `aclnngen info`: the setting, and the helpers built or why not."""
    built = {c: (h if isinstance(h, str) else "built") for c, h in sorted(_LIBRARIES.items())}
    return {"setting": MODE_ENV, "mode": _mode, "helpers": built}


def probe() -> str | None:
    """Builds (or finds in the cache) the helper of the commonest signature (all pointers): None
    when it works, else why the Python path calls instead."""
    found = helper("ppp")
    return found if isinstance(found, str) else None


class Plan:
    """One signature of one op, fixed in C structures; calling it makes the call (see the module
    docstring). Built by `make_plan`; `validated`: whether the signature passed validation."""

    def __init__(self, op, backend, lib, validated: bool):
        self.op = op
        self.backend = backend
        self.lib = lib
        self.validated = validated
        self.keep: list = []  # cffi memory the plan points into
        self.outputs: list[tuple[int, tuple, np.dtype, tuple, int]] = []  # item, shape, dtype, strides, size
        # per item, where its data is: the argument of that index (>= 0), output -2 - i (< -1; the
        # call allocates it), or none (-1: a scalar)
        self.data: list[int] = []

    def __call__(self, args, host: bool):
        # per call only what changes: the data addresses and the outputs (see _finish for the rest)
        if host:
            from_buffer, null = self.from_buffer, self.null
            outs = [empty(shape, dtype) for shape, dtype in self.host_outputs]
            # item k's host buffer: an input argument (i >= 0), output -2 - i, or NULL (a scalar);
            # cffi turns the list into the C array of pointers for the call itself
            stage = self.call(
                self.plan,
                [
                    from_buffer(args[i]) if i >= 0 else (from_buffer(outs[-2 - i]) if i < -1 else null)
                    for i in self.data
                ],
                null,
            )
            if stage:
                return self._failed(stage)
            return outs[0] if self.single else tuple(outs)
        b = self.backend
        addresses = []
        for i in self.data:
            if i < 0:
                addresses.append(0)
                continue
            buffer = args[i].buffer
            if buffer.backend is not b:
                return STALE  # another backend's memory: the Python path says so
            addresses.append(buffer.address)
        data = self.new(self.u64, addresses)
        stage = self.call(self.plan, self.null, data)
        if stage:
            return self._failed(stage)
        adopt, of = DeviceBuffer.adopt, DeviceArray._of
        if self.single:  # most ops: no list, no tuple
            item, shape, dtype, strides, size, nbytes = self.device_outputs[0]
            return of(adopt(b, nbytes, data[item]), shape, dtype, strides, 0, size)
        return tuple(
            of(adopt(b, nbytes, data[item]), shape, dtype, strides, 0, size)
            for item, shape, dtype, strides, size, nbytes in self.device_outputs
        )

    def _failed(self, stage: int):
        """STALE for the Python path to decide again, else raises the failure of `stage`."""
        if stage == STALE:
            return STALE
        raise_failure(self, self.lib.aclnngen_last_result())


def raise_failure(plan: Plan, r) -> None:
    """Raises what the Python path raises at the step where the helper stopped."""
    op = plan.op
    text = plan.ffi.string(r.message).decode("utf-8", "replace").strip()
    stage, status = r.stage, r.status
    if stage in (MALLOC, WORKSPACE):
        raise AclRuntimeError(status=status, function="aclrtMalloc", detail=text or None)
    if stage in (COPY_IN, COPY_OUT):
        raise AclRuntimeError(status=status, function="aclrtMemcpy", detail=text or None)
    if stage == SYNCHRONIZE:
        raise AclRuntimeError(status=status, function="aclrtSynchronizeStream", detail=text or None)
    if stage in (CREATE_TENSOR, CREATE_SCALAR):
        function = "aclCreateTensor" if stage == CREATE_TENSOR else "aclCreateScalar"
        raise AclnnStatusError(
            status=ACLNN_ERR_INNER_NULLPTR,
            op=op.name,
            function=function,
            recent_message=text or f"{function} returned NULL for {plan.names[r.item]}",
        )
    function = op.gws_name if stage == GET_WORKSPACE_SIZE else op.symbol
    raise AclnnStatusError(status=status, op=op.name, function=function, recent_message=text or None)


def make_plan(op, backend, values: dict, args, host: bool, validated: bool, output_specs) -> Plan | None:
    """The plan of the signature a call just made successfully (`values`: C name -> what the
    Python path called with: arrays, output specs, scalar and attribute values); None when the
    helper is unavailable or the signature is not one it makes."""
    functions = op.functions(backend)
    get_workspace_size, launch = functions[0], functions[1]
    b_ffi = backend.ffi
    classes = classes_of(b_ffi, get_workspace_size)
    if classes is None or len(op.params) > MAX_ITEMS:
        return None
    lib = helper(classes)
    if isinstance(lib, str):
        return None
    soc = backend.api.aclrtGetSocName()
    if soc == b_ffi.NULL:
        return None
    ffi = _ffi()
    plan = Plan(op, backend, lib, validated)
    plan.ffi, plan.call = ffi, lib.aclnngen_call
    plan.new, plan.from_buffer, plan.null, plan.u64 = ffi.new, ffi.from_buffer, ffi.NULL, ffi.typeof("uint64_t[]")
    keep = plan.keep
    c = ffi.new("struct aclnngen_plan *")
    keep.append(c)
    for k, name in enumerate(FUNCTIONS):
        fn = getattr(backend.api, name, None)
        if fn is None and name != "aclsysGetVersionStr":
            return None
        c.fns[k] = ffi.NULL if fn is None else ffi.cast("void *", b_ffi.cast("uintptr_t", fn))
    c.get_workspace_size = ffi.cast("void *", b_ffi.cast("uintptr_t", get_workspace_size))
    c.launch = ffi.cast("void *", b_ffi.cast("uintptr_t", launch))
    c.soc = _text(ffi, keep, b_ffi.string(soc))
    if not _stamp_version(ffi, keep, backend, c):
        return None
    c.host = 1 if host else 0
    c.malloc_policy = ACL_MEM_MALLOC_HUGE_FIRST
    c.memcpy_to_device, c.memcpy_to_host = H2D, D2H
    cargs = ffi.new("aclnngen_value[]", max(1, len(op.params)))
    keep.append(cargs)
    items = []
    names = []
    for p in op.params:
        value = values[p.name]
        letter = classes[p.index]
        if p.kind == "tensor":
            if value is None:
                cargs[p.index].p = ffi.NULL
                continue
            spec = output_specs.get(p.name)
            if spec is not None:
                shape, dtype = spec
                strides, size = contiguous_strides(shape), int(np.prod(shape, dtype=np.int64))
                if not size:
                    return None  # an empty output is never allocated: the Python path's alone
                items.append((p, OUTPUT, dtype, shape, strides, 0, size, size * dtype.itemsize, None))
                plan.data.append(-2 - len(plan.outputs))
                plan.outputs.append((len(items) - 1, shape, dtype, strides, size))
            elif host:
                shape = value.shape
                items.append(
                    (p, INPUT, value.dtype, shape, contiguous_strides(shape), 0, value.size, value.nbytes, None)
                )
                plan.data.append(p.index)
            else:
                items.append(
                    (
                        p,
                        INPUT,
                        value.dtype,
                        value.shape,
                        value.strides,
                        value.offset,
                        value.storage_size,
                        value.storage_size * value.dtype.itemsize,
                        None,
                    )
                )
                plan.data.append(p.index)
        elif p.kind == "scalar":
            if value is None:
                cargs[p.index].p = ffi.NULL
                continue
            raw = np.asarray(value).astype(p.scalar_np).tobytes()
            buf = ffi.new("uint8_t[]", raw)
            keep.append(buf)
            items.append((p, SCALAR, None, (), (), 0, 0, 0, buf))
            plan.data.append(-1)
        else:
            if not _attribute(ffi, keep, cargs[p.index], letter, p, value):
                return None
    citems = ffi.new("struct aclnngen_item[]", max(1, len(items)))
    keep.append(citems)
    for k, (p, kind, dtype, shape, strides, offset, storage, nbytes, buf) in enumerate(items):
        it = citems[k]
        it.param, it.kind = p.index, kind
        names.append(p.name)
        if kind == SCALAR:
            it.dtype, it.value = p.scalar_acl, buf
            continue
        it.dtype, it.format = acl_dtype(dtype), ND_FORMAT
        it.ndim = len(shape)
        dims = ffi.new("int64_t[]", list(shape) or [0])
        cstrides = ffi.new("int64_t[]", list(strides) or [0])
        cstorage = ffi.new("int64_t[]", [storage])
        keep.extend((dims, cstrides, cstorage))
        it.dims, it.strides, it.offset, it.storage, it.nbytes = dims, cstrides, offset, cstorage, nbytes
    c.nargs, c.nitems, c.items, c.args = len(op.params), len(items), citems, cargs
    plan.names, plan.single = names, len(plan.outputs) == 1
    plan.device_outputs = [(*o, o[4] * o[2].itemsize) for o in plan.outputs]
    plan.host_outputs = [(shape, dtype) for _item, shape, dtype, _strides, _size in plan.outputs]
    plan.plan = c
    return plan


ND_FORMAT = acl.enum_value("ACL_FORMAT_ND")


def _text(ffi, keep: list, raw: bytes):
    buf = ffi.new("char[]", raw)
    keep.append(buf)
    return buf


def _stamp_version(ffi, keep: list, backend, c) -> bool:
    """Records the packages the Python path asks for the version, in its order, and what the first
    that answered said (the helper asks again before every call); False when none answers (no
    plan is made)."""
    fn = getattr(backend.api, "aclsysGetVersionStr", None)
    if fn is None:
        c.npackages = 0
        return True
    b_ffi = backend.ffi
    buf = b_ffi.new("char[]", VERSION_BUFFER)
    for package in VERSION_PACKAGES:
        if fn(package, buf) == 0 and b_ffi.string(buf).decode("utf-8", "replace").strip():
            names = [_text(ffi, keep, name) for name in VERSION_PACKAGES]
            packages = ffi.new("char *[]", names)
            keep.append(packages)
            c.npackages, c.version_packages = len(names), packages
            c.version = _text(ffi, keep, b_ffi.string(buf))
            return True
    backend.recent_error()
    return False


def _attribute(ffi, keep: list, slot, letter: str, p, value) -> bool:
    """Fixes an attribute's argument as the Python path passes it; False for one the plan does
    not carry (an array attribute)."""
    if value is None:
        value = p.default
    t = ATTRIBUTE_TYPES.get(p.attr_type or "")
    if t is None or t.is_array:
        return False
    if value is None:
        if t.is_pointer:
            slot.p = ffi.NULL
        else:
            slot.i = 0
        return True
    if t.c_type == "char*":
        slot.p = _text(ffi, keep, value.encode())
        return True
    if letter == "p":
        return False
    if _LETTERS[letter][1] == "d":
        slot.d = float(value)
    else:
        slot.i = int(value)
    return True
