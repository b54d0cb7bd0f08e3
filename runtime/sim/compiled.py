"""The simulator's compiled kernels: each op's formula rendered into C (codegen/formula_c.py,
generated into `<package>/c/sim_kernels.c`), a rendering independent of the NumPy reference.

The run hook (kernels.py) asks `run(...)` first; it computes the launch straight into simulated
device memory when the call qualifies and returns True, else False and the hook evaluates the
reference as before. A call qualifies when the op has a compiled kernel (the generated file lists
the ops that have none, and why: `fallbacks()`), every tensor of the op is present, C-contiguous,
of one float storage dtype (float16, bfloat16, float32, float64) and of one shape (a tensor a
per_channel rule names: one element per channel of dim 1, or one), the outputs either
are the inputs' very memory or overlap none of it, the compute dtype the spec's arithmetic gives
is float32 or float64, and the scalars and attributes are plain values. Everything else (a
broadcast, a strided view, mixed or integer dtypes, complex data) runs the reference.

What qualifies and how to launch is decided once per call signature (`_signature`: the op's
registration, the core, the kernels' source, the family, each argument's kind, layout, dtype and
value) and remembered as a `_Plan`; a call of a known signature only reads its tensors' addresses,
checks them for partial overlap and launches.

A plan of fewer than MIN_PARALLEL elements (one piece on any number of threads) is also handed to
the simulator's C core (`run(..., keep=)`, kernels.py), which then runs the signature's later
launches itself, in one piece (sim_memo.c); `stats()` counts those too.

The kernels run through cffi, which releases the GIL, in pieces across threads
(ACLNNGEN_REFERENCE_THREADS, default every core) on calls of MIN_PARALLEL elements or more.

The library of a package's kernels is built on first use with the simulator's build
(build.build_simulator, linked against the loaded core like an op library) and cached like it. When
it cannot be built, every op runs the reference and `status()` says why.

$ACLNNGEN_SIM_KERNELS: `auto` (default) as above; `reference` never runs a compiled kernel;
`compiled` makes a call that cannot run one fail (507015 at synchronisation) with the reason, so a
test can prove which path computed its result.
"""

from __future__ import annotations

import functools
import importlib
import math
import os
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Mapping

if TYPE_CHECKING:
    from concurrent.futures import ThreadPoolExecutor

import numpy as np

from aclnngen.core import arithmetic as arithmetic_facts
from aclnngen.core.meta import op_meta
from aclnngen.generated.ffi import _sim_kernels
from aclnngen.runtime.shapes import NUMPY_DTYPES, dtype_name_of

from .build import SimulatorBuildError, build_simulator

__all__ = ["MODE_ENV", "MODES", "mode", "run", "fallbacks", "status", "stats", "CompiledKernelError"]

MODE_ENV = "ACLNNGEN_SIM_KERNELS"
MODES = ("auto", "compiled", "reference")
KERNELS_LIB_NAME = "libaclsim_kernels.so"
FALLBACKS_ONLY = ""  # `library`'s op for a build of the tables alone (no kernel compiled)
MIN_PARALLEL = 1 << 17  # elements from which a call is split across threads
_PIECE_ALIGN = 64  # elements: pieces start on cache-line multiples

_lock = threading.Lock()
_LIBRARIES: dict[tuple[str, str, str | None], "_Library"] = {}  # (package, core, op or None) -> kernels
_POOL: ThreadPoolExecutor | None = None
_STATS = {"compiled": 0, "reference": 0}


class CompiledKernelError(RuntimeError):
    """$ACLNNGEN_SIM_KERNELS=compiled and a call could not run a compiled kernel."""


def mode() -> str:
    """$ACLNNGEN_SIM_KERNELS (auto, compiled or reference); anything else is a ValueError naming it."""
    value = os.environ.get(MODE_ENV, "").strip().lower() or "auto"
    if value not in MODES:
        raise ValueError(f"${MODE_ENV}={value!r} is not one of {', '.join(MODES)}")
    return value


# counters of launches the simulator's core ran from memory (kernels.py registers its own): the
# compiled kernel a plan left it, run without this module
REMEMBERED_COUNTS: list[Callable[[], int]] = []


def stats() -> dict[str, int]:
    """Launches computed by a compiled kernel (here, or by the core from memory) and by the
    reference, in this process."""
    with _lock:
        found = dict(_STATS)
    found["compiled"] += sum(count() for count in REMEMBERED_COUNTS)
    return found


def kernel_ffi():
    """The FFI the kernels' table and each plan's argument arrays are made with."""
    return _sim_kernels.ffi


def _cffi():
    """The kernel table's declarations (codegen/ffi_modules.py's KERNEL_TABLE_CDEF, pre-parsed)."""
    return _sim_kernels.ffi


@dataclass
class _Library:
    """One package's kernels: (symbol, storage, compute) -> C function, or why there are none."""

    kernels: dict[tuple[str, str, str], Any] = field(default_factory=dict)
    listed: set[str] = field(default_factory=set)  # every op symbol with kernels, built here or not
    fallbacks: dict[str, str] = field(default_factory=dict)
    error: str | None = None
    handle: Any = None  # keeps the library loaded


def kernels_source(package: str) -> Path | None:
    """`<package>/c/sim_kernels.c`, when the package has one."""
    module = sys.modules.get(package) or importlib.import_module(package)
    where = getattr(module, "__file__", None)
    if not where:
        return None
    path = Path(where).resolve().parent / "c" / "sim_kernels.c"
    return path if path.is_file() else None


_SOURCES: dict[str, Path] = {}  # package -> a kernels source used instead of its own (tests)
SOURCE_CHANGED: list[Callable[[], None]] = []  # told when use_source changes a package's kernels


def use_source(package: str, path: str | os.PathLike | None) -> None:
    """Builds `package`'s kernels from `path` instead of its generated file (None: its own again);
    for tests that render a deliberately wrong kernel."""
    with _lock:
        if path is None:
            _SOURCES.pop(package, None)
        else:
            _SOURCES[package] = Path(path).resolve()
        for key in [k for k in _LIBRARIES if k[0] == package]:
            del _LIBRARIES[key]
        _PLANS.clear()  # (their keys hold the source too; this frees the old libraries)
    for forget in SOURCE_CHANGED:  # the simulator's core remembers launches of the old kernels
        forget()


def library(package: str, core: str, op: str | None = None) -> _Library:
    """The kernels of `package`, built (once per process) against the simulator core `core`: the op
    `op`'s alone (its snake name; the generated file's ACLK_ONE_OP build, so a call pays for its
    own op's kernels, not for every op of the package), none (FALLBACKS_ONLY: the tables, for the
    fallbacks' reasons) or, with None, every op's."""
    key = (package, core, op)
    with _lock:
        found = _LIBRARIES.get(key)
        source = _SOURCES.get(package)
    if found is not None:
        return found
    lib = _Library()
    try:
        source = source or kernels_source(package)
        if source is None:
            lib.error = f"{package} has no c/sim_kernels.c (generated before compiled kernels existed)"
        else:
            one_op = {} if op is None else {"ACLK_ONE_OP": None, **({f"ACLK_OP_{op}": None} if op else {})}
            defines = {**one_op, **host_defines()}
            path = build_simulator([source], defines=defines, lib_names=(KERNELS_LIB_NAME,), link_core=core)
            ffi = _cffi()
            lib.handle = ffi.dlopen(str(path))
            entries = lib.handle.aclk_entries()
            i = 0
            while entries[i].symbol != ffi.NULL:
                e = entries[i]
                names = (ffi.string(e.symbol).decode(), ffi.string(e.storage).decode(), ffi.string(e.compute).decode())
                lib.listed.add(names[0])
                if e.fn != ffi.NULL:  # (NULL: an op this build left out, listed only)
                    lib.kernels[names] = e.fn
                i += 1
            falls = lib.handle.aclk_fallbacks()
            i = 0
            while falls[i].symbol != ffi.NULL:
                lib.fallbacks[ffi.string(falls[i].symbol).decode()] = ffi.string(falls[i].reason).decode()
                i += 1
    except (SimulatorBuildError, OSError, ImportError) as exc:
        lib.error = f"the compiled kernels could not be built or loaded: {exc}"
    with _lock:
        return _LIBRARIES.setdefault(key, lib)


@functools.cache
def host_defines() -> dict[str, None]:
    """Defines for a kernel build on this CPU: ACLK_HOST_AVX2 where Linux says it has AVX2, so each
    kernel is compiled for AVX2 alone, not also for the baseline (sim_kernels.c.j2). The define is
    part of the build's cache key: a CPU without AVX2 never loads such a build from a shared cache."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        flags = []
    return {"ACLK_HOST_AVX2": None} if "avx2" in flags and sys.platform.startswith("linux") else {}


def _threads() -> int:
    # deferred: the evaluator loads when a call is large enough to split (or falls back)
    from aclnngen.evaluate import chunking

    return chunking.threads()  # the reference's own setting


def _pool(size: int) -> ThreadPoolExecutor:
    from concurrent.futures import ThreadPoolExecutor  # with the first pool: a small call needs none

    global _POOL
    with _lock:
        if _POOL is None or _POOL._max_workers != size:
            if _POOL is not None:
                _POOL.shutdown(wait=False)
            _POOL = ThreadPoolExecutor(max_workers=size, thread_name_prefix="aclnngen-kernel")
        return _POOL


def _channel_tensors(op) -> frozenset[str]:
    """The tensors a per_channel rule names (its weight and the weight's gradient): one element per
    channel of dim 1, or one; codegen/formula_c.py renders exactly these as per-channel operands."""
    return frozenset(name for rule in op.rules for name in rule.kind.per_channel_tensors(rule.data))


def _why_not(tensors, storage, channel=frozenset()) -> str | None:
    """Why these tensors (ViewArgs of every input and output) cannot go to a compiled kernel: every
    one present, contiguous, of `storage`, of the full tensors' shape, or (`channel`) one element
    per channel of it or one."""
    full = next((a.shape for a in tensors if a.name not in channel), None)
    if channel:
        from aclnngen.core.kinds.per_channel import weight_layout  # deferred: only ops with per-channel tensors
    for a in tensors:
        if a.is_null:
            return f"tensor {a.name} is absent"
        if not isinstance(a.dtype, np.dtype) or a.dtype != storage:
            return f"tensor {a.name} is {a.dtype}, not {storage} like the first"
        if a.name in channel:
            if weight_layout(a.shape, full) is None:
                return f"tensor {a.name} has shape {a.shape}: not one element per channel of {full} nor one"
        elif a.shape != full:
            return f"tensor {a.name} has shape {a.shape}, not {full} (a broadcast)"
        if not a.contiguous:
            return f"tensor {a.name} is not contiguous"
    return None


def _overlap(tensors, addresses, sizes, outputs) -> str | None:
    """A partial overlap of an output with another tensor (an exact alias is elementwise-safe)."""
    for out, start, size in zip(tensors, addresses, sizes):
        if out.name not in outputs:
            continue
        for other, other_start, other_size in zip(tensors, addresses, sizes):
            if (
                other is not out
                and (other_start != start or other_size != size)
                and start < other_start + other_size
                and other_start < start + size
            ):
                return f"output {out.name} partly overlaps {other.name}"
    return None


def run(backend, entry, args, family: str | None, keep: Callable[["_Plan"], None] | None = None) -> bool:
    """Computes the launch of `entry` (kernels.OpEntry) over the executor `args` (ViewArgs) with its
    compiled kernel and returns True; False when the call does not qualify (the reference runs).
    `keep(plan)` is told the plan of a launch made in one piece (the simulator's core may then run
    the signature's later launches itself)."""
    which = mode()
    if which == "reference":
        return _counted(False)
    reason = _compute(backend, entry, args, family, keep)
    if reason is None:
        return _counted(True)
    if which == "compiled":
        raise CompiledKernelError(f"no compiled kernel ran ({MODE_ENV}=compiled): {reason}")
    return _counted(False)


def _counted(compiled: bool) -> bool:
    with _lock:
        _STATS["compiled" if compiled else "reference"] += 1
    return compiled


def _compute(backend, entry, args, family, keep=None) -> str | None:
    """Runs the kernel; None when it ran, else why it could not. What a call's signature decides
    (the kernel, its scalars, attributes and shape, or why none runs) is planned once per
    signature (_plan); a call then only checks its addresses for overlap and launches."""
    core = backend.libraries["nnopbase"]
    key = _signature(entry, args, family, core)
    plan = None if key is None else _PLANS.get(key)
    if plan is None or plan[0] is not entry:
        plan = (entry, _plan(core, entry, args, family))
        if key is not None:
            with _lock:
                if len(_PLANS) >= _PLANS_SIZE:
                    _PLANS.clear()
                _PLANS[key] = plan
    plan = plan[1]
    if isinstance(plan, str):
        return plan
    problem = plan.launch(args)
    # the core runs what it keeps in one piece on the calling thread: only a call that is one
    # piece on any number of threads (a large call launched on one thread, with
    # ACLNNGEN_REFERENCE_THREADS=1, would otherwise stay on one thread when given every core)
    if problem is None and keep is not None and plan.n < MIN_PARALLEL:
        keep(plan)
    return problem


_PLANS_SIZE = 512  # call signatures remembered per process
_PLANS: dict = {}  # _signature -> (entry, _Plan or why no kernel runs)


def _signature(entry, args, family, core) -> tuple | None:
    """Everything of a call `_plan` reads except the tensors' addresses: the op (its entry's
    identity, checked on use), the library it is built from, the family, and each argument's
    kind, presence, shape, strides, dtype and value; None when a value cannot be a key."""
    try:
        key = (
            id(entry),
            entry.package,
            core,
            _SOURCES.get(entry.package),
            family,
            tuple(a.signature() for a in args),
        )
        hash(key)
    except TypeError:
        return None
    return key


@dataclass
class _Plan:
    """One call signature's launch: the kernel, its argument arrays (built once) and, per call,
    the tensors' addresses."""

    fn: Any
    tensors: tuple[int, ...]  # positions in the executor's args, in the kernel's order
    outputs: frozenset[str]
    itemsize: int
    sizes: tuple[int, ...]  # bytes of each tensor, in the kernel's order
    n: int
    c_doubles: Any
    c_ints: Any
    c_strings: Any
    keep: list
    kept: Any = None  # what kernels.py handed the simulator's core of this plan, made once

    def launch(self, args) -> str | None:
        tensors = [args[i] for i in self.tensors]
        itemsize = self.itemsize
        addresses = [a.data + a.offset * itemsize for a in tensors]
        problem = _overlap(tensors, addresses, self.sizes, self.outputs)
        if problem is not None:
            return problem
        ffi = _cffi()
        owned = ffi.new("uintptr_t[]", addresses)  # a cast owns nothing: this keeps the array alive
        pointers = ffi.cast("void *const *", owned)
        n = self.n
        pieces = _pieces(n)
        if len(pieces) == 1:  # no thread pool for a small call
            self.fn(pointers, 0, n, self.c_doubles, self.c_ints, self.c_strings)
        else:
            done = [
                _pool(len(pieces)).submit(self.fn, pointers, s, c, self.c_doubles, self.c_ints, self.c_strings)
                for s, c in pieces
            ]
            for future in done:
                future.result()
        del owned  # (only now: every piece has read the addresses)
        return None


def _plan(core, entry, args, family) -> "_Plan | str":
    """The launch of a call signature, or why no compiled kernel can run it."""
    op = op_meta(entry.meta)
    if entry.package is None:
        return "the op belongs to no package"
    lib = library(entry.package, core, op.snake)
    if lib.error is not None:
        return lib.error
    if op.symbol in lib.fallbacks:
        return lib.fallbacks[op.symbol]
    position = {a.name: i for i, a in enumerate(args)}
    tensor_params = [p for p in op.params if p.role in ("input", "output")]
    if any(p.name not in position for p in tensor_params):
        return "a tensor parameter is missing from the executor"
    tensors = [args[position[p.name]] for p in tensor_params]
    storage = tensors[0].dtype
    if not isinstance(storage, np.dtype) or storage.kind != "f" and dtype_name_of(storage) != "bfloat16":
        return f"tensor {tensors[0].name} is {storage}: compiled kernels take float data"
    channel = _channel_tensors(op)
    problem = _why_not(tensors, storage, channel)
    if problem is not None:
        return problem
    values = {a.name: (None if a.is_null else a.value) for a in args if not a.is_tensor}
    if any(p.is_scalar for p in op.params):
        # the scalars in the compute dtype, as the reference holds them: the evaluator's to say
        reference = entry.reference()
        if not _formula_reference(reference):
            return "the op's reference is a hand-written function"
        try:
            compute, scalars = _kernel_inputs(reference, values, storage, family)
        except (TypeError, ValueError) as exc:
            return f"its scalars: {exc}"
    else:
        # no scalar: the compute dtype alone, read from the spec without loading the evaluator
        # (a package's kernels and its reference's formula bodies are rendered from one spec)
        compute, scalars = compute_dtype(op, storage, family), {}
    fn = lib.kernels.get((op.symbol, dtype_name_of(storage), dtype_name_of(compute)))
    if fn is None:
        return f"no compiled kernel for {dtype_name_of(storage)} data computed in {compute}"
    ffi = _cffi()
    doubles, ints, strings, keep = [], [], [], [lib]  # the library stays loaded with its plans
    for p in op.params:
        if p.role in ("scalar", "optional_scalar"):
            doubles.append(float(scalars[p.py]))
        elif p.role == "attribute":
            value = values.get(p.name)
            if p.attr_type == "double":
                if not isinstance(value, (int, float)):
                    return f"attribute {p.name} is {value!r}"
                doubles.append(float(value))
            elif p.attr_type in ("bool", "int64_t"):
                if not isinstance(value, (bool, int)):
                    return f"attribute {p.name} is {value!r}"
                ints.append(int(value))
            elif p.attr_type == "char*":
                if not isinstance(value, str):
                    return f"attribute {p.name} is {value!r}"
                text = ffi.new("char[]", value.encode("utf-8"))
                keep.append(text)
                strings.append(text)
    # the shape after the attributes (formula_c's ABI): the rank, the full tensors' dims, each
    # tensor's element count
    full = next(a.shape for a in tensors if a.name not in channel)
    ints += [len(full), *full, *(math.prod(a.shape) for a in tensors)]
    return _Plan(
        fn=fn,
        tensors=tuple(position[p.name] for p in tensor_params),
        outputs=frozenset(p.name for p in tensor_params if p.role == "output"),
        itemsize=storage.itemsize,
        sizes=tuple(math.prod(a.shape) * storage.itemsize for a in tensors),
        n=math.prod(full),
        c_doubles=ffi.new("double[]", doubles or [0.0]),
        c_ints=ffi.new("int64_t[]", ints),
        c_strings=ffi.new("const char *[]", strings or [ffi.NULL]),
        keep=keep,
    )


def _formula_reference(reference) -> bool:
    """Whether the reference evaluates the generated formula bodies (evaluate.Reference), whose
    arithmetic the compiled kernel follows."""
    from aclnngen.evaluate.reference import Reference  # deferred: only ops with scalars ask

    return isinstance(reference, Reference)


def compute_dtype(op, storage: np.dtype, family: str | None) -> np.dtype:
    """The dtype an op without scalars computes in for float data stored as `storage` on `family`:
    the spec's arithmetic where it states one (core/arithmetic.py), else opmath's default model,
    float64 for float64 data and float32 for narrower floats (evaluate/numerics.py compute_dtype;
    tests/runtime/test_sim_run_imports.py checks that the two agree for every op)."""
    named = arithmetic_facts.compute_dtype(op.arithmetic, dtype_name_of(storage), family)
    if named:
        return NUMPY_DTYPES[named]
    return np.dtype(np.float64 if storage == np.float64 else np.float32)


_INPUTS_CACHE_SIZE = 256  # scalar settings remembered per process (a call's cost is mostly Python)
_inputs_cache: dict = {}


def _kernel_inputs(reference, values: Mapping, storage: np.dtype, family):
    """reference.kernel_inputs, remembered per (reference, storage, family, scalar values)."""
    try:
        key = (id(reference), storage, family, tuple(sorted((k, type(v), v) for k, v in values.items())))
        hash(key)
    except TypeError:
        return reference.kernel_inputs(values, storage, family)
    found = _inputs_cache.get(key)
    if found is None or found[0] is not reference:
        if len(_inputs_cache) >= _INPUTS_CACHE_SIZE:
            _inputs_cache.clear()
        found = _inputs_cache[key] = (reference, reference.kernel_inputs(values, storage, family))
    return found[1]


def _pieces(n: int) -> list[tuple[int, int]]:
    """(start, count) per thread: one piece below MIN_PARALLEL elements."""
    threads = _threads() if n >= MIN_PARALLEL else 1
    if threads <= 1:
        return [(0, n)]
    step = -(-n // threads)
    step = -(-step // _PIECE_ALIGN) * _PIECE_ALIGN
    return [(s, min(step, n - s)) for s in range(0, n, step)]


def fallbacks(package: str, core: str) -> dict[str, str]:
    """Op symbol -> why it has no compiled kernel, for `package`; every op when the library cannot
    be built ("*" -> the reason)."""
    lib = library(package, core, FALLBACKS_ONLY)
    return {"*": lib.error} if lib.error is not None else dict(lib.fallbacks)


def status(package: str, core: str) -> Mapping[str, Any]:
    """For `aclnngen info`: the mode, the ops with compiled kernels, and the ops that fall back with
    why; read from the tables alone (FALLBACKS_ONLY), so `info` compiles no kernel: each op's are
    built on its first call."""
    lib = library(package, core, FALLBACKS_ONLY)
    return {
        "setting": MODE_ENV,
        "mode": mode(),
        "error": lib.error,
        "ops": sorted(lib.listed),
        "fallbacks": dict(lib.fallbacks),
    }
