"""The simulator's kernels: Python prepare/run hooks behind the generated C entry points.

The simulator's C core (runtime/sim) checks what the library itself guarantees (NULL handles,
live descriptors, device memory, the two-phase protocol) and asks two hooks about everything
op-specific. This module provides them.

Ops. An op is its package and its symbol (docs/runtime-limits.md). A hook receives the op's
identity "package:aclnnSwishBackward" (ACLSIM_OP_ID of the entry point that was called) and maps
it to that package's META and reference: an op registered by `bind(meta)` under (package, symbol)
(every generated binding does this at import), else `<package>.meta.<snake>` /
`<package>.reference.<snake>`. An identity without a package (sources built without
ACLSIM_PACKAGE) is looked up by symbol, in the built-in package first, then in packages
registered with `register_package(name)`.

Extra op sources. The simulator is the core with the repository's generated/c/sim_ops.c (package
aclnngen.generated), plus one op library per package of sources in `extra_sources()`: files
registered with `register_sim_sources(path, package=...)` and, automatically, `PKG/c/sim_ops.c`
of a stand-alone generated package (`aclnngen generate --specs D --out PKG`) as soon as one of its
bindings is imported (`bind` finds the package that defines the META). Sources registered after
the simulator was built are compiled in by `session.reset()` (the next call rebuilds); calling
such an op before that raises BackendError saying so.

Profiles. What the prepare hook checks is a behaviour profile, kept apart from the specs' claims.
The profiles are data (runtime/profiles.py over specs/profiles/, rendered to
generated/profiles.py): every name of `profiles.names()` is a profile here.
- "spec" (the default): the spec itself, `validation.validate(meta, values, family=<from the
  SoC>, version=<the simulator's version>)` on descriptors built from the executor view, so a
  binding called with validate=False still gets 161001/161002 from the library as on real CANN;
  NULL workspaceSize/executor pointers give 161001.
- a data profile such as "vendor": `validation.validate(profiles.apply(meta, name, version), ...)`,
  i.e. the rules the implementation is recorded to check at the simulator's CANN version; a NULL
  workspaceSize/executor pointer gives 161001 when `profiles.null_out_pointers_checked(name, op,
  version)`, else the core answers 561103 (the real library would dereference it and crash).
  The data profile may also state parameters it never null-checks (a NULL one passes the
  checks; the hook then answers 561103, the modelled dereference), early returns (an empty tensor
  answered with success before the remaining checks: workspace 0, and the run computes nothing)
  and the order of the checks; the validator reads them from the applied META.
  Each tensor's aclFormat, as its descriptor carries it, is checked against the formats its spec
  accepts on the family (161002 otherwise).
- "lenient": no op-specific checks (only the core's own); for tests and audits.
- a `Profile` object built by hand (tests).
Profiles also announce the workspace: by default 512 bytes for an op with a reduction output (for
example PreluBackward's gradWeight), 0 otherwise, so the workspace path is exercised.
Select with `use_profile(...)`, `set_profile(...)`, `session.simulated(profile=...)` or
$ACLNNGEN_SIM_PROFILE; per op or for all.

The run hook first offers the launch to the op's compiled kernel (compiled.py: the formula rendered
into C, independent of the reference), which computes it when the call qualifies; the generated
reference and the evaluator are imported only when a launch falls back to them (or a compiled
kernel takes its scalars from the reference). Else it builds
NumPy views over the simulated device memory for every tensor (a buffer over
the covering extent, `as_strided` with the view's strides and offset), evaluates the op's generated
formula bodies with the reference evaluator (aclnngen.evaluate) in opmath mode and writes the results into the output views. The reference is
elementwise over any rank, so inputs of more than 8 dims that a profile lets through (the vendor
flattens them) are computed like any other. An output the profile did not check and whose shape
differs from what the kernel computes (the vendor never checks HardtanhBackward's `out`) is not
written: the launch fails at synchronisation (507015) with a message naming the output and both
shapes, instead of writing out of bounds.

Remembered decisions. The simulator's C core (sim_memo.c) hashes each executor's signature; a
hook that offers its answer lets the core answer that signature's later calls itself: the prepare
hook offers a data or lenient profile's answer (success, an early return, or a validation error,
whose message is the signature's), the run hook the compiled plan of a launch made in one piece.
A remembered call enters no Python: its record (`recorded()`) comes from the core. What the core
cannot see (the profile chosen, the registered ops, the kernels' source) empties its table
(`forget_decisions`). Only a backend whose family and version are the library's own state offers
(`remembers_decisions`: SimBackend).

Nothing raised inside a hook reaches C: every exception becomes a status (561000 from prepare,
561000 from run, which the synchronising call reports as 507015) with the message written into the
hook's message buffer.
"""

from __future__ import annotations

import collections
import collections.abc
import contextlib
import dataclasses
import functools
import importlib
import inspect
import os
import re
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from aclnngen.generated import abi
from aclnngen.runtime import acl, profiles
from aclnngen.runtime.arrays import numpy_dtype
from aclnngen.runtime.bound_ops import package_of as _package_of
from aclnngen.runtime.errors import AclnnValidationError, UnknownSocError
from aclnngen.runtime.shapes import c_contiguous, strided_elements
from aclnngen.runtime.validation import validate
from aclnngen.core.formats import name_of_member
from aclnngen.core.meta import EarlyReturn, OpMeta, op_meta
from aclnngen.core.releases import VERSION_HELP, is_version
from aclnngen.runtime.poison import fill_poison

from . import compiled
from .controls import sim_ffi, sim_ops_path

__all__ = [
    "Profile",
    "PROFILES",
    "LENIENT",
    "known_profiles",
    "resolve_profile",
    "DEFAULT_REDUCTION_WORKSPACE",
    "register_op",
    "register_package",
    "register_sim_sources",
    "extra_sources",
    "set_profile",
    "use_profile",
    "profile_for",
    "install",
    "recorded",
    "read_view",
]

PROFILE_ENV = "ACLNNGEN_SIM_PROFILE"
DEFAULT_REDUCTION_WORKSPACE = 512
ACLNN_ERR_PARAM_NULLPTR = acl.status_code("ACLNN_ERR_PARAM_NULLPTR")
ACLNN_ERR_INNER = acl.status_code("ACLNN_ERR_INNER")
ACLNN_ERR_INNER_FIND_KERNEL_ERROR = acl.status_code("ACLNN_ERR_INNER_FIND_KERNEL_ERROR")
ACLNN_ERR_INNER_NULLPTR = acl.status_code("ACLNN_ERR_INNER_NULLPTR")
NULL_WORKSPACE_SIZE_PTR, NULL_EXECUTOR_PTR = 1, 2
TENSOR_KINDS = (0, 1, 2, 3, 19)
OUTPUT_KINDS = (1, 3)
INOUT_KIND = 19  # an input the kernel also writes (a vendor ...Ref parameter)
SCALAR_KINDS = (4, 5)
TENSOR_LIST_KINDS = (15, 16, 17)  # input, output, optional input
SCALAR_LIST_KIND = 18
_SCRIBBLE_LIMIT = 1 << 20
SNAPSHOT_LIMIT = 256  # executor snapshots kept between prepare and run

_lock = threading.RLock()


# --- ops, packages and sources --------------------------------------------------------------------


VALIDATED_CACHE_SIZE = 512  # executor signatures remembered as validated, per op


@dataclass
class OpEntry:
    """A registered op: its META, its package, its reference (made at first use) and the executor
    signatures that passed a data profile's checks."""

    meta: Mapping[str, Any]
    package: str | None  # the package whose meta/ and reference/ hold the op
    _reference: Any = None
    # executor signatures that passed a data profile's checks (see _validation_key) -> the early
    # return that ended them (None: every check ran)
    validated: dict = field(default_factory=dict)

    def remember(self, key: tuple, early: EarlyReturn | None = None) -> None:
        if len(self.validated) >= VALIDATED_CACHE_SIZE:
            self.validated.clear()
        self.validated[key] = early

    @property
    def op(self) -> OpMeta:
        return op_meta(self.meta)

    def reference(self):
        """The callable reference: an `evaluate.Reference` over the generated module's formula
        bodies (values by C name, out_dtypes=, mode=, version=)."""
        if self._reference is None:
            if self.package is None:
                raise LookupError(f"no reference is known for {self.op.symbol} (its META belongs to no package)")
            # deferred: the generated reference and the evaluator load when a launch falls back
            # to them (or a compiled kernel needs its scalars from them), not for every launch
            from aclnngen.evaluate.reference import Reference

            module = importlib.import_module(f"{self.package}.reference.{self.op.snake}")
            formulas = getattr(module, "FORMULAS", None)
            # the generated module holds only the formula bodies: the simulator evaluates them itself
            if formulas is not None:
                ref = Reference(self.meta, formulas, getattr(module, "FORWARDS", {}))
            else:
                ref = _PyNamedReference(self.meta, module.reference)
            self._reference = ref
        return self._reference


class _PyNamedReference:
    """Adapts a module's `reference(*inputs, **scalars, out_dtypes=, mode=)` to C names."""

    def __init__(self, meta, fn):
        self.meta, self.fn = meta, fn

    def __call__(self, values, *, out_dtypes=None, mode="opmath", version=None):
        params = op_meta(self.meta).params
        positional = [values.get(p.name) for p in params if p.role == "input"]
        keywords = {p.py: values.get(p.name) for p in params if p.is_scalar or p.role == "attribute"}
        return self.fn(*positional, **keywords, out_dtypes=out_dtypes, mode=mode)


BUILTIN_PACKAGE = "aclnngen.generated"
_OPS: dict[tuple[str | None, str], OpEntry] = {}  # (package, symbol) -> entry; None: a META of no package
_PACKAGES: list[str] = [BUILTIN_PACKAGE]
_SOURCES: dict[Path, str | None] = {}  # extra C source -> the package it belongs to (None: none)
_PACKAGE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def _snake(symbol: str) -> str:
    name = symbol[len("aclnn") :] if symbol.startswith("aclnn") else symbol
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def split_op_id(op_id: str) -> tuple[str | None, str]:
    """("package", "aclnnXxx") from the C entry points' "package:aclnnXxx" (ACLSIM_OP_ID);
    the package is None when the source was built without one."""
    package, _, symbol = op_id.rpartition(":")
    return (package or None), symbol


_OP_IDS: dict[bytes, tuple[str | None, str]] = {}  # an entry point's op id, as C passes it -> split


def _op_id(ffi, op) -> tuple[str | None, str]:
    """split_op_id of the op id a hook receives, decoded and split once per op id."""
    raw = ffi.string(op)
    found = _OP_IDS.get(raw)
    if found is None:
        found = _OP_IDS[raw] = split_op_id(raw.decode())
    return found


def _package_source(package: str) -> Path | None:
    module = sys.modules.get(package) or importlib.import_module(package)
    files = getattr(module, "__file__", None)
    if not files:
        return None
    path = Path(files).resolve().parent / "c" / "sim_ops.c"
    return path if path.is_file() else None


def register_sim_sources(*paths: str | os.PathLike, package: str | None = None) -> list[Path]:
    """Adds C files with simulator entry points (like generated c/sim_ops.c) to the simulator
    build, as the entry points of `package` (compiled into that package's own op library, so
    its ops never replace another package's; None: an op library of sources of no package,
    whose ops the hooks look up by symbol). Returns the list of extra sources."""
    if package is not None and not _PACKAGE_NAME.fullmatch(package):
        raise ValueError(f"package {package!r} is not a dotted Python module name")
    with _lock:
        for p in paths:
            path = Path(p).resolve()
            if not path.is_file():
                raise FileNotFoundError(f"simulator source {path} does not exist")
            if path in _SOURCES or path == _default_source():
                continue
            _SOURCES[path] = package
        return list(_SOURCES)


def _default_source() -> Path:
    return sim_ops_path().resolve()


def extra_sources() -> list[Path]:
    with _lock:
        return list(_SOURCES)


def sources_by_package() -> dict[str | None, list[Path]]:
    """The extra sources grouped by package, in registration order: one op library each."""
    groups: dict[str | None, list[Path]] = {}
    with _lock:
        for path, package in _SOURCES.items():
            groups.setdefault(package, []).append(path)
    return groups


def register_package(package: str) -> None:
    """Makes a generated package's ops known to the simulator: its `meta`/`reference` modules and
    its `c/sim_ops.c`."""
    with _lock:
        if package not in _PACKAGES:
            _PACKAGES.append(package)
            forget_decisions()  # a symbol without a package may now find another op
        if package != BUILTIN_PACKAGE:
            source = _package_source(package)
            if source is not None:
                register_sim_sources(source, package=package)


def register_op(meta: Mapping[str, Any], *, package: str | None = None) -> OpEntry:
    """Registers the op of `meta` (called by `bind`) under (package, symbol); finds its package
    when not given. Ops of the same symbol in different packages are different ops."""
    with _lock:
        if package is None:
            package = _package_of(meta)
        entry = OpEntry(meta, package)
        _OPS[(package, op_meta(meta).symbol)] = entry
        forget_decisions()  # the op's decisions were its previous META's
        if package is not None and package not in _PACKAGES:
            register_package(package)
        return entry


def entry_for(symbol: str, package: str | None = None) -> OpEntry:
    """The op `symbol` of `package`; without a package (sources built without ACLSIM_PACKAGE),
    the first package in registration order that defines it (the built-in package first)."""
    if package is not None:
        found = _OPS.get((package, symbol))
        if found is not None:
            return found
    packages = [package] if package is not None else list(_PACKAGES)
    snake = _snake(symbol)
    with _lock:
        for name in packages:
            found = _OPS.get((name, symbol))
            if found is not None:
                return found
            try:
                module = importlib.import_module(f"{name}.meta.{snake}")
            except ImportError:
                continue
            meta = getattr(module, "META", None)
            if meta is not None and op_meta(meta).symbol == symbol:
                entry = _OPS[(name, symbol)] = OpEntry(meta, name)
                return entry
        if package is None and (None, symbol) in _OPS:
            return _OPS[(None, symbol)]
    raise LookupError(f"no kernel for {symbol}: no generated META under {', '.join(packages)}")


# --- profiles ---------------------------------------------------------------------------------------


def _spec_check(meta, values, *, family, version, formats=None):
    return validate(meta, values, family=family, version=version, formats=formats)


def default_workspace(meta: Mapping, args: Mapping[str, "ViewArg"]) -> int:
    """512 bytes for an op with a reduction output, else 0."""
    kinds = op_meta(meta).formula.outputs
    return DEFAULT_REDUCTION_WORKSPACE if "reduction" in kinds.values() else 0


@dataclass(frozen=True)
class Profile:
    """What the simulated library checks and announces for an op.

    data: the name of a behaviour profile of runtime/profiles.py ("spec", "vendor", ...). When
        set, the check is `validation.validate(profiles.apply(meta, data, version), ...)` and a
        NULL workspaceSize/executor out-pointer gives 161001 when
        `profiles.null_out_pointers_checked(data, op, version)`, else None; `check` and
        `null_out_pointer_status` are then unused.
    check: `check(meta, values, *, family, version[, formats])` raises AclnnValidationError (its
        status is returned) or returns None (or the EarlyReturn that answered success with no
        work); `formats` (C name -> format name) is passed when it takes it; None = no
        op-specific checks.
    null_out_pointer_status: the status for a NULL workspaceSize/executor out-pointer; None = the
        library does not check them (the core then reports 561103, modelling the null
        dereference of the real library).
    workspace: bytes announced by GetWorkspaceSize, from (meta, arguments).
    """

    name: str
    description: str
    check: Callable[..., None] | None = _spec_check
    null_out_pointer_status: int | None = ACLNN_ERR_PARAM_NULLPTR
    workspace: Callable[[Mapping, Mapping], int] = default_workspace
    data: str | None = None

    def checked_meta(self, meta: Mapping, version: str) -> Mapping:
        """The META the checks read: with a data profile's changes applied."""
        if self.data is None:
            return meta
        return profiles.apply(meta, self.data, _profile_version(self.data, version))

    def validate(
        self, meta: Mapping, values: Mapping, *, family: str, version: str, formats: Mapping[str, str] | None = None
    ) -> EarlyReturn | None:
        """Raises AclnnValidationError when the simulated library rejects `values`; returns the
        early return that answered success before the remaining checks, if one did."""
        if self.data is not None:
            return validate(self.checked_meta(meta, version), values, family=family, version=version, formats=formats)
        if self.check is not None:
            extra = {"formats": formats} if _takes_formats(self.check) else {}
            return self.check(meta, values, family=family, version=version, **extra)
        return None

    @property
    def checks(self) -> bool:
        return self.data is not None or self.check is not None

    def null_status(self, meta: Mapping, version: str) -> int | None:
        """The status for a NULL workspaceSize/executor out-pointer, None when unchecked."""
        if self.data is None:
            return self.null_out_pointer_status
        checked = profiles.null_out_pointers_checked(
            self.data, op_meta(meta).name, _profile_version(self.data, version)
        )
        return ACLNN_ERR_PARAM_NULLPTR if checked else None


@functools.lru_cache(maxsize=64)
def _takes_formats(check: Callable) -> bool:
    """Whether a hand-built check takes the tensors' formats (older ones know only the values)."""
    try:
        parameters = inspect.signature(check).parameters
    except (TypeError, ValueError):
        return False
    return "formats" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


def _profile_version(profile: str, version: str) -> str:
    if profile != profiles.SPEC and not is_version(str(version)):
        raise ValueError(
            f"the simulator's CANN version {version!r} is not {VERSION_HELP}; a behaviour profile "
            "cannot be placed at it (set one with session.simulated(version=...))"
        )
    return str(version)


LENIENT = Profile("lenient", "no op-specific checks beyond the core's (null handles, device memory)", check=None)
_BUILTIN: dict[str, Profile] = {"lenient": LENIENT}
_DATA: dict[str, Profile] = {}


def known_profiles() -> tuple[str, ...]:
    """Every profile name `use_profile` accepts: the data profiles (`profiles.names()`, "spec"
    first) and the built-in "lenient"."""
    return tuple(profiles.names()) + tuple(n for n in _BUILTIN if n not in profiles.names())


def _data_profile(name: str) -> Profile:
    found = _DATA.get(name)
    if found is None:
        if name == profiles.SPEC:
            text = "the spec's own rules (validation.validate); NULL out-pointers -> 161001"
        else:
            text = f"the recorded behaviour {name!r} (specs/profiles/{name}), per op and CANN release"
        found = _DATA.setdefault(name, Profile(name, text, check=None, data=name))
    return found


def _resolve(profile: str | Profile) -> Profile:
    if isinstance(profile, Profile):
        return profile
    if isinstance(profile, str):
        if profiles.is_name(profile):
            return _data_profile(profile)
        if profile in _BUILTIN:
            return _BUILTIN[profile]
    raise ValueError(f"unknown simulator profile {profile!r}; known: {', '.join(known_profiles())}")


def resolve_profile(profile: str | Profile) -> Profile:
    """The Profile a name (or Profile) stands for; ValueError naming the known ones otherwise."""
    return _resolve(profile)


class _ProfileTable(collections.abc.Mapping):
    """name -> Profile for every known profile, read from the profile data on each access."""

    def __getitem__(self, name: str) -> Profile:
        if name not in known_profiles():
            raise KeyError(name)
        return _resolve(name)

    def __iter__(self):
        return iter(known_profiles())

    def __len__(self) -> int:
        return len(known_profiles())

    def __repr__(self) -> str:
        return f"PROFILES({', '.join(known_profiles())})"


PROFILES: Mapping[str, Profile] = _ProfileTable()
_default_profile: str | Profile | None = None
_op_profiles: dict[str, str | Profile] = {}


def set_profile(profile: str | Profile | None, op: str | None = None) -> None:
    """Sets the profile for op `op` (symbol, e.g. "aclnnGeluBackward") or, with op=None, the
    default for all ops; None clears it (back to $ACLNNGEN_SIM_PROFILE, else "spec")."""
    global _default_profile
    if profile is not None:
        _resolve(profile)
    with _lock:
        forget_decisions()
        if op is None:
            _default_profile = profile
        elif profile is None:
            _op_profiles.pop(op, None)
        else:
            _op_profiles[op] = profile


@contextlib.contextmanager
def use_profile(profile: str | Profile, op: str | None = None) -> Iterator[Profile]:
    """Makes `profile` (a name of `known_profiles()`, or a Profile) the one the simulated library
    checks by, for op `op` or for all ops, for the body."""
    resolved = _resolve(profile)
    with _lock:
        previous = _default_profile if op is None else _op_profiles.get(op)
    set_profile(profile, op)
    try:
        yield resolved
    finally:
        set_profile(previous, op)


def profile_for(symbol: str) -> Profile:
    chosen = _op_profiles.get(symbol) or _default_profile
    if chosen is None:
        env = os.environ.get(PROFILE_ENV, "").strip()
        if env:
            try:
                return _resolve(env)
            except ValueError as exc:
                raise ValueError(f"${PROFILE_ENV}: {exc}") from None
        chosen = "spec"
    return _resolve(chosen)


# --- the executor view ------------------------------------------------------------------------------


@dataclass
class ViewArg:
    """One argument of an executor as the simulator snapshotted it. Tensors have .shape, .dtype
    (NumPy dtype, or a text naming an aclDataType NumPy cannot hold), .strides and .offset in
    elements, .contiguous, and `array()` (a NumPy view of the device memory)."""

    kind: int
    name: str
    is_null: bool
    shape: tuple = ()
    strides: tuple = ()
    offset: int = 0
    storage: tuple = ()
    acl_dtype: int = -1
    dtype: Any = None
    format: int = -1
    data: int = 0
    value: Any = None
    i: int = 0
    f: float = 0.0
    _ffi: Any = field(default=None, repr=False)

    @property
    def is_tensor(self) -> bool:
        return self.kind in TENSOR_KINDS

    @property
    def contiguous(self) -> bool:
        return c_contiguous(self.shape, self.strides)

    def signature(self) -> tuple:
        """All a decision about this argument may read but its data's address (the keys of the
        prepare hook's and the compiled launch's remembered decisions)."""
        value = tuple(self.value) if isinstance(self.value, list) else self.value
        return (
            self.name,
            self.kind,
            self.is_null,
            self.shape,
            self.strides,
            self.dtype,
            self.format,
            type(self.value),
            value,
        )

    def array(self) -> np.ndarray:
        """A NumPy view of the tensor's elements in (simulated) device memory."""
        if not isinstance(self.dtype, np.dtype):
            raise TypeError(f"{self.name}: {self.dtype} cannot be viewed from NumPy")
        if 0 in self.shape:
            return np.zeros(self.shape, self.dtype)
        isz = self.dtype.itemsize
        end = self.offset + sum((d - 1) * s for d, s in zip(self.shape, self.strides)) + 1
        ffi = self._ffi
        raw = np.frombuffer(ffi.buffer(ffi.cast("char *", self.data), end * isz), dtype=np.uint8)
        return strided_elements(raw[self.offset * isz :], self.dtype, self.shape, self.strides)

    def describe(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "is_null": self.is_null,
            "shape": self.shape,
            "strides": self.strides,
            "offset": self.offset,
            "storage": self.storage,
            "dtype": str(self.dtype),
            "acl_dtype": self.acl_dtype,
            "format": self.format,
            "value": self.value,
            "data": self.data,
        }


def _dtype_text(acl: int) -> str:
    for name, value in abi.ENUMS["aclDataType"].items():
        if value == acl:
            return f"{name} (aclDataType {acl})"
    return f"aclDataType {acl}"


class _NotANumber:
    """A scalar whose dtype NumPy cannot read: the validator rejects it as not a real number."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def read_view(sim_ffi, controls, view) -> list[ViewArg]:
    """Every argument of an executor. A tensor list's value is a list of tensor ViewArgs (named
    "name[k]"), a scalar list's a list of numbers, an array attribute's a list of its elements."""
    n = controls.aclsim_view_num_args(view)
    if n < 0:
        raise LookupError("the executor view is not a live executor")
    out = []
    a = sim_ffi.new("struct aclsim_arg_view *")
    for i in range(n):
        rc = controls.aclsim_view_arg(view, i, a)
        if rc != 0:
            raise LookupError(f"aclsim_view_arg({i}) returned {rc}")
        arg = _view_arg(sim_ffi, a, f"arg{i}")
        if a.kind in (*TENSOR_LIST_KINDS, SCALAR_LIST_KIND) and not a.is_null:
            items = []
            for k in range(a.count):
                item = sim_ffi.new("struct aclsim_arg_view *")
                rc = controls.aclsim_view_item(view, i, k, item)
                if rc != 0:
                    raise LookupError(f"aclsim_view_item({i}, {k}) returned {rc}")
                element = _view_arg(sim_ffi, item, f"{arg.name}[{k}]")
                items.append(element.value if a.kind == SCALAR_LIST_KIND else element)
            arg.value = items
        out.append(arg)
    return out


def _view_arg(sim_ffi, a, fallback: str) -> ViewArg:
    """One argument (or list element) of the view, read into a ViewArg."""
    name = sim_ffi.string(a.name).decode() if a.name != sim_ffi.NULL else fallback
    # built field by field: the dataclass's keyword constructor costs more than the reading
    # (fields left unset keep their class defaults)
    arg = _new_view_arg(ViewArg)
    kind, is_null = a.kind, bool(a.is_null)
    arg.kind, arg.name, arg.is_null, arg.i, arg.f, arg._ffi = kind, name, is_null, a.i, a.f, sim_ffi
    if is_null:
        return arg
    if kind in TENSOR_KINDS:
        unpack, ndim = sim_ffi.unpack, a.ndim
        arg.shape = tuple(unpack(a.dims, ndim)) if ndim else ()
        arg.strides = tuple(unpack(a.strides, ndim)) if ndim else ()
        arg.storage = tuple(unpack(a.storage_dims, a.storage_ndim)) if a.storage_ndim else ()
        arg.offset = a.offset
        arg.acl_dtype = dtype = a.dtype
        arg.format = a.format
        arg.data = int(sim_ffi.cast(_uintptr(sim_ffi), a.data))
        arg.dtype = numpy_dtype(dtype) or _dtype_text(dtype)
    elif kind in SCALAR_KINDS:
        arg.acl_dtype = a.dtype
        dt = numpy_dtype(a.dtype)
        if dt is None or a.nbytes != dt.itemsize:
            arg.value = _NotANumber(f"<scalar of {_dtype_text(a.dtype)}>")
        else:
            arg.value = _scalar_value(sim_ffi, a.value, dt)
    elif kind in (9, 10):
        arg.value = sim_ffi.string(sim_ffi.cast("char *", a.value)).decode("utf-8", "replace")
    elif kind in (11, 12, 13, 14):
        ctype = {11: "int64_t", 12: "int64_t", 13: "float", 14: "bool"}[kind]
        ptr = sim_ffi.cast(f"{ctype} *", a.value)
        arg.value = [ptr[k] for k in range(a.count)]
    elif kind == 6:
        arg.value = bool(a.i)
    elif kind == 7:
        arg.value = int(a.i)
    elif kind == 8:
        arg.value = float(a.f)
    return arg


_new_view_arg = object.__new__

_C_SCALARS = {  # NumPy dtype name -> the C type a scalar of it is read as (without NumPy)
    "float32": "float",
    "float64": "double",
    "int8": "int8_t",
    "int16": "int16_t",
    "int32": "int32_t",
    "int64": "int64_t",
    "uint8": "uint8_t",
    "uint16": "uint16_t",
    "uint32": "uint32_t",
    "uint64": "uint64_t",
}


@functools.lru_cache(maxsize=None)
def _scalar_pointer(ffi, dtype: np.dtype):
    """The C pointer type a scalar of `dtype` is read through; None: read with NumPy (float16,
    bfloat16, bool and other types C has no plain type for here)."""
    ctype = _C_SCALARS.get(dtype.name)
    return None if ctype is None else ffi.typeof(f"{ctype} *")


def _scalar_value(sim_ffi, address, dt: np.dtype):
    """A scalar's value as a Python bool, int or float, read from its bytes at `address`."""
    pointer = _scalar_pointer(sim_ffi, dt)
    if pointer is not None:
        value = sim_ffi.cast(pointer, address)[0]
        return int(value) if dt.kind in "iu" else float(value)
    scalar = np.frombuffer(bytes(sim_ffi.buffer(sim_ffi.cast("char *", address), dt.itemsize)), dtype=dt)[0]
    return bool(scalar) if dt.kind == "b" else int(scalar) if dt.kind in "iu" else float(scalar)


@functools.lru_cache(maxsize=None)
def _uintptr(ffi):
    """The `uintptr_t` type of an FFI, looked up once (a type string is parsed on every cast)."""
    return ffi.typeof("uintptr_t")


def _validation_key(profile: "Profile", family: str, version: str, args: list[ViewArg]) -> tuple | None:
    """What a data profile's checks read of an executor (layouts, dtypes, scalar and attribute
    values, the family and version), as a key; None when it cannot be one. Only data profiles
    are keyed: a hand-built profile's check may depend on anything."""
    if profile.data is None:
        return None
    try:
        key = (
            profile.data,
            family,
            version,
            tuple(a.signature() for a in args),
        )
        hash(key)
    except TypeError:
        return None
    if any(isinstance(a.value, _NotANumber) for a in args):
        return None
    return key


_FORMAT_NAMES = {value: name_of_member(member) for member, value in abi.ENUMS["aclFormat"].items()}


def _formats(args: list[ViewArg]) -> dict[str, str]:
    """C name -> the spec's name of each tensor's aclFormat (a value no format names: as text)."""
    return {
        a.name: _FORMAT_NAMES.get(a.format) or f"aclFormat {a.format}" for a in args if a.is_tensor and not a.is_null
    }


def _null_unchecked(meta: Mapping, by_name: Mapping[str, ViewArg]) -> str | None:
    """The first parameter the implementation never null-checks that is NULL, if any."""
    return next((n for n in op_meta(meta).unchecked_nulls if n in by_name and by_name[n].is_null), None)


# --- recording (for tests: what the library received) -----------------------------------------------

_RECORD: collections.deque = collections.deque(maxlen=64)


_TEMPLATES: collections.OrderedDict = collections.OrderedDict()  # token -> (op, package, args)
TEMPLATES_SIZE = 4096  # signatures whose records the core may serve (its table holds 256)
_tokens = iter(range(1, 1 << 62))


def _template(symbol: str, package: str | None, args: list["ViewArg"]) -> int:
    """A token for what a remembered signature's record holds but its tensors' addresses."""
    with _lock:
        token = next(_tokens)
        _TEMPLATES[token] = (symbol, package, args)
        if len(_TEMPLATES) > TEMPLATES_SIZE:
            _TEMPLATES.popitem(last=False)
        return token


def _with_addresses(args: list["ViewArg"], data) -> list["ViewArg"]:
    """The template's arguments with the tensors' device addresses of one call (in view order, a
    list's elements in theirs)."""
    addresses = iter(data)
    out = []
    for a in args:
        if a.is_null:
            out.append(a)
        elif a.is_tensor:
            out.append(dataclasses.replace(a, data=next(addresses, a.data)))
        elif a.kind in TENSOR_LIST_KINDS:
            items = [dataclasses.replace(t, data=next(addresses, t.data)) for t in a.value]
            out.append(dataclasses.replace(a, value=items))
        else:
            out.append(a)
    return out


def _core_records() -> list[tuple]:
    """The prepares each loaded core answered from memory, as _RECORD items."""
    found = []
    with _lock:
        installed = list(_INSTALLED.values())
    for kernels in installed:
        controls = kernels.controls
        if not kernels.remembers:
            continue
        buf = kernels.ffi.new("struct aclsim_memo_record[]", _RECORD.maxlen)
        for k in range(controls.aclsim_memo_records(buf, _RECORD.maxlen)):
            r = buf[k]
            template = _TEMPLATES.get(r.token)
            if template is None:  # a signature remembered longer than TEMPLATES_SIZE others
                continue
            symbol, package, args = template
            data = [r.data[i] for i in range(r.ndata)]
            found.append((r.serial, symbol, package, _with_addresses(args, data), r.workspace))
    return found


def recorded(symbol: str | None = None) -> list[dict]:
    """The most recent prepared executors (newest last), as {"op", "args": {name: describe()},
    "workspace"}; only those of `symbol` when given. A call the simulator's core answered from
    memory is recorded by the core (its tensors' addresses) and described here from the
    signature's first call."""
    with _lock:
        items = list(_RECORD)
    items = sorted(items + _core_records(), key=lambda item: item[0])[-_RECORD.maxlen :]
    # described here, not in the hook: the prepare hook only keeps the snapshot
    return [
        {"op": op, "package": package, "args": {a.name: a.describe() for a in args}, "workspace": size}
        for _, op, package, args, size in items
        if symbol is None or op == symbol
    ]


def clear_recorded() -> None:
    with _lock:
        _RECORD.clear()
        installed = list(_INSTALLED.values())
    for kernels in installed:
        if kernels.remembers:
            kernels.controls.aclsim_memo_clear_records()


def forget_decisions() -> None:
    """Empties every loaded core's remembered decisions (sim_memo.c): something they depend on
    that the core cannot see changed (the profile chosen, an op registered, the kernels' source)."""
    with _lock:
        installed = list(_INSTALLED.values())
    for kernels in installed:
        if kernels.remembers:
            kernels.controls.aclsim_memo_clear()


def remembered_launches() -> int:
    """Launches the loaded cores ran from memory (a compiled kernel, without the run hook)."""
    with _lock:
        installed = list(_INSTALLED.values())
    total = 0
    for kernels in installed:
        if not kernels.remembers:
            continue
        stats = kernels.ffi.new("struct aclsim_memo_stats *")
        kernels.controls.aclsim_memo_get_stats(stats)
        total += stats.launch_hits
    return total


compiled.REMEMBERED_COUNTS.append(remembered_launches)
compiled.SOURCE_CHANGED.append(forget_decisions)


# --- the hooks ----------------------------------------------------------------------------------------


def _write_message(sim_ffi, buf, cap: int, text: str) -> None:
    try:
        data = text.encode("utf-8", "replace")[: max(0, int(cap) - 1)] + b"\0"
        sim_ffi.memmove(buf, data, len(data))
    except Exception:  # noqa: BLE001 - a message is best effort
        pass


class Kernels:
    """The hook pair of one loaded simulator library (its backend's runtime API and controls)."""

    def __init__(self, backend, controls=None):
        self.backend = backend
        self.controls = controls if controls is not None else backend.controls
        self.ffi = sim_ffi()
        # the core may answer a signature's later calls itself (sim_memo.c) only when the family
        # and version the hooks read are its own state, as a SimBackend's are
        self.remembers = bool(getattr(backend, "remembers_decisions", False))
        self._snapshots: dict[int, list[ViewArg]] = {}  # executor serial -> what prepare read
        self._snapshots_lock = threading.Lock()
        self.c_prepare = self.ffi.callback(
            "aclsim_prepare_hook", self._prepare_guarded, error=ACLNN_ERR_INNER, onerror=self._onerror
        )
        self.c_run = self.ffi.callback(
            "aclsim_run_hook", self._run_guarded, error=ACLNN_ERR_INNER, onerror=self._onerror
        )

    # -- the executor view, read once ------------------------------------------------------------
    def _keep_snapshot(self, serial: int, args: list[ViewArg], work: bool = True) -> None:
        """Keeps what prepare read of an executor for its run: an executor's arguments do not
        change after GetWorkspaceSize, and whether the kernel has work (False after an early
        return: success with nothing computed). Keyed by the executor's serial (never reused),
        so a snapshot can only ever serve the executor it was read from."""
        if not serial:
            return
        with self._snapshots_lock:
            if len(self._snapshots) >= SNAPSHOT_LIMIT:  # executors prepared but never launched
                self._snapshots.pop(next(iter(self._snapshots)))
            self._snapshots[serial] = (args, work)

    def _snapshot(self, view) -> tuple[list[ViewArg], bool]:
        """The arguments of the executor being run and whether it has work: prepare's snapshot
        when there is one (taken unless the kernels were off at prepare), else read now."""
        serial = self.controls.aclsim_view_serial(view)
        with self._snapshots_lock:
            found = self._snapshots.get(serial) if serial else None
        if found is None:
            return read_view(self.ffi, self.controls, view), True
        return found

    @staticmethod
    def _onerror(exception, exc_value, traceback):
        return None  # the declared error value (561000) is returned to C

    def install(self) -> None:
        self.controls.aclsim_set_hooks(self.c_prepare, self.c_run)

    # -- facts of the simulated device -----------------------------------------------------------
    def _family(self) -> str:
        return self.backend.family()

    def _version(self) -> str:
        # The backend's answer falls back to ascend_toolkit_install.info when the library has no
        # version call (a fake CANN built without one).
        version = self.backend.version()
        if version is None:
            raise LookupError("the CANN version is unknown (no aclsysGetVersionStr, no ascend_toolkit_install.info)")
        return version

    # -- prepare ---------------------------------------------------------------------------------
    def _prepare_guarded(self, op, view, workspace_size, message, cap):
        try:
            return self._prepare(op, view, workspace_size, message, cap)
        except BaseException as exc:  # noqa: BLE001 - nothing may propagate into C
            _write_message(self.ffi, message, cap, f"simulator kernel error in prepare: {type(exc).__name__}: {exc}")
            return ACLNN_ERR_INNER

    def _prepare(self, op, view, workspace_size, message, cap) -> int:
        ffi = self.ffi
        package, symbol = _op_id(ffi, op)
        try:
            entry = entry_for(symbol, package)
        except LookupError as exc:
            _write_message(ffi, message, cap, str(exc))
            return ACLNN_ERR_INNER_FIND_KERNEL_ERROR
        profile = profile_for(symbol)
        args = read_view(ffi, self.controls, view)
        by_name = {a.name: a for a in args}
        flags = self.controls.aclsim_view_flags(view) & (NULL_WORKSPACE_SIZE_PTR | NULL_EXECUTOR_PTR)
        if flags:
            status = profile.null_status(entry.meta, self._version())
            if status is not None:
                which = "workspaceSize" if flags & NULL_WORKSPACE_SIZE_PTR else "executor"
                _write_message(ffi, message, cap, f"{which} is a null pointer (profile {profile.name!r})")
                return status
        early = None
        if profile.checks:
            try:
                family = self._family()
            except UnknownSocError as exc:
                _write_message(ffi, message, cap, str(exc))
                return ACLNN_ERR_INNER
            version = self._version()
            key = _validation_key(profile, family, version, args)
            if key is None or key not in entry.validated:
                values = {a.name: (None if a.is_null else (a if a.is_tensor else a.value)) for a in args}
                try:
                    early = profile.validate(entry.meta, values, family=family, version=version, formats=_formats(args))
                except AclnnValidationError as exc:
                    _write_message(ffi, message, cap, f"{exc} (profile {profile.name!r})")
                    if self._rememberable(profile, key):  # its message is the signature's
                        self.controls.aclsim_memo_keep_prepare(view, 0, 0)
                    return exc.status
                if key is not None:
                    entry.remember(key, early)
            else:
                early = entry.validated[key]
            if early is None and any(a.is_null for a in args):  # (only a NULL can be one never checked)
                unchecked = _null_unchecked(profile.checked_meta(entry.meta, version), by_name)
                if unchecked is not None:
                    # the implementation reads it without a null check: a real library
                    # dereferences NULL here; the simulator answers as for an unchecked out-pointer
                    _write_message(
                        ffi,
                        message,
                        cap,
                        f"{unchecked} is a null pointer the implementation never checks (profile "
                        f"{profile.name!r}): the real library would dereference it",
                    )
                    return ACLNN_ERR_INNER_NULLPTR
        size = 0 if early is not None else int(profile.workspace(entry.meta, by_name))
        workspace_size[0] = size
        serial = self.controls.aclsim_view_serial(view)
        self._keep_snapshot(serial, args, early is None)
        with _lock:
            _RECORD.append((serial, symbol, entry.package, args, size))
        if self._rememberable(profile, key if profile.checks else ()):
            self.controls.aclsim_memo_keep_prepare(view, early is None, _template(symbol, entry.package, args))
        return 0

    def _rememberable(self, profile: "Profile", key) -> bool:
        """Whether the core may give this prepare's answer to the signature's later calls: a
        data profile's checks over a signature that is a key (_validation_key), or the lenient
        profile's none, each announcing the default workspace. A hand-built profile may depend
        on anything, and so may a simulator whose family or version is not its own state."""
        if not self.remembers or key is None or profile.workspace is not default_workspace:
            return False
        return profile.data is not None or profile is LENIENT

    # -- run -------------------------------------------------------------------------------------
    def _run_guarded(self, op, view, workspace, workspace_size, message, cap):
        try:
            return self._run(op, view, workspace, workspace_size, message, cap)
        except BaseException as exc:  # noqa: BLE001 - nothing may propagate into C
            _write_message(self.ffi, message, cap, f"simulator kernel error: {type(exc).__name__}: {exc}")
            return ACLNN_ERR_INNER

    def _run(self, op, view, workspace, workspace_size, message, cap) -> int:
        ffi = self.ffi
        package, symbol = _op_id(ffi, op)
        entry = entry_for(symbol, package)
        args, work = self._snapshot(view)
        if not work:
            return 0  # GetWorkspaceSize returned early (an empty tensor): nothing to compute
        if workspace != ffi.NULL and workspace_size:
            n = min(int(workspace_size), _SCRIBBLE_LIMIT)
            ffi.memmove(workspace, b"\x5a" * n, n)  # the kernel owns its workspace
        meta = entry.meta
        op = op_meta(meta)
        keep = functools.partial(self._keep_launch, view, args) if self.remembers else None
        if op.computes and compiled.run(self.backend, entry, args, self._family(), keep=keep):
            return 0  # the formula's C rendering computed it (compiled.py); else the reference does
        roles = {p.name: p.role for p in op.params}
        values: dict[str, Any] = {}
        outputs: dict[str, np.ndarray] = {}
        inputs: list[ViewArg] = []
        for a in args:
            role = roles.get(a.name)
            if a.is_tensor:
                if a.is_null:
                    values[a.name] = None
                elif a.kind in OUTPUT_KINDS or role == "output":
                    outputs[a.name] = a.array()
                else:
                    inputs.append(a)
                    if a.kind == INOUT_KIND:  # read (a private copy, below), then written
                        outputs[a.name] = a.array()
            else:
                values[a.name] = None if a.is_null else a.value
        for a in inputs:
            view = a.array()
            if any(np.may_share_memory(view, out) for out in outputs.values()):
                view = np.array(view)  # a private copy: the kernel writes an output it overlaps
            view.flags.writeable = False  # a reference never writes its inputs
            values[a.name] = view
        if not op.computes:  # binding tier: no formula computes the outputs; mark them as such
            for target in outputs.values():
                fill_poison(target)
            written = {p.name for p in op.params if p.inplace}
            for a in args:  # a tensor list it writes (an output, or in place): each of its tensors
                if (
                    a.kind in TENSOR_LIST_KINDS
                    and (a.kind == TENSOR_LIST_KINDS[1] or a.name in written)
                    and not a.is_null
                ):
                    for element in a.value:
                        fill_poison(element.array())
            return 0
        reference = entry.reference()
        out_dtypes = {name: arr.dtype for name, arr in outputs.items()}
        # a reference that can, writes its results straight into device memory (no full-size copy)
        options = {"out": outputs} if getattr(reference, "writes_out", False) else {}
        from aclnngen.evaluate.reference import Reference  # deferred: loaded by entry.reference() above

        if isinstance(reference, Reference):
            options["family"] = self._family()  # whose `arithmetic` rows apply
        results = reference(
            values, out_dtypes=out_dtypes, mode="opmath", version=self._version_for_reference(meta), **options
        )
        if not isinstance(results, tuple):
            results = (results,)
        writes = []
        for name, result in zip(op.written, results):
            target = outputs.get(name)
            if target is None or target.size == 0:
                continue  # nothing to write
            result = np.asarray(result)
            if result.shape != target.shape:
                # GetWorkspaceSize did not check this output's shape (a profile that does not,
                # like the vendor's for HardtanhBackward's out): a device kernel would write
                # past or short of it. Write nothing and fail the launch instead.
                _write_message(
                    ffi,
                    message,
                    cap,
                    f"{symbol}: output {name} has shape {tuple(target.shape)} but the kernel computes "
                    f"{tuple(result.shape)}; GetWorkspaceSize did not check it, and nothing was written",
                )
                return ACLNN_ERR_INNER
            writes.append((target, result))
        for target, result in writes:
            if result is not target:
                target[...] = result
        return 0

    def _keep_launch(self, view, args: list[ViewArg], plan) -> None:
        """Lets the core run this signature's later launches with `plan`'s kernel and arrays
        (compiled._Plan, launched in one piece); the core copies them. It keeps them only for a
        signature whose prepare it remembers."""
        kept = plan.kept
        if kept is None:
            ffi, kffi = self.ffi, compiled.kernel_ffi()

            def address(cdata, ctype):
                return ffi.cast(ctype, int(kffi.cast("uintptr_t", cdata)))

            tensors = list(plan.tensors)
            kept = plan.kept = (
                address(plan.fn, "void *"),
                ffi.new("int[]", tensors),
                ffi.new("int[]", [int(args[i].name in plan.outputs) for i in tensors]),
                len(tensors),
                plan.itemsize,
                plan.n,
                address(plan.c_doubles, "double *"),
                len(plan.c_doubles),
                address(plan.c_ints, "int64_t *"),
                len(plan.c_ints),
                address(plan.c_strings, "char **"),
                len(plan.c_strings),
                plan,  # keeps the arrays above alive with the tuple
            )
        self.controls.aclsim_memo_keep_launch(view, *kept[:-1])

    def _version_for_reference(self, meta) -> str:
        version = self.backend.library_version()
        return version if version is not None and is_version(version) else op_meta(meta).cann_version


_INSTALLED: dict[str, Kernels] = {}  # library path -> hooks (module-level: keeps the callbacks alive)


def install(backend, controls=None, *, key: str | None = None) -> Kernels:
    """Registers the Python kernels as the prepare/run hooks of `backend`'s simulator library
    (`controls`: the aclsim_* functions of that library; default backend.controls)."""
    kernels = Kernels(backend, controls)
    with _lock:
        _INSTALLED[key or getattr(backend, "path", None) or str(id(backend))] = kernels
    kernels.install()
    return kernels
