"""The two-phase aclnn call, generic over an op's META: `bind(meta)` -> a callable.

`bind(meta)` (runtime/binding.py: all that a binding's import loads) returns a `Binding` that
becomes this module's `BoundOp` at its first use. A BoundOp precomputes, once per op, everything a
call needs (the parameters in prototype order with their roles, scalar dtypes as aclDataType
values, the output positions). Calling it with all parameters in prototype order, plus `stream=`
and `validate=`:

  1. makes sure the session is up (backend loaded, ACL initialised, this thread has a context);
  2. infers the missing outputs (`shapes.infer_outputs`), then validates every argument against
     the spec for the session's product family and CANN version (unless validate=False) BEFORE
     anything reaches C: no device memory is allocated for a call the validator rejects. Both
     are worked out once per call signature (`BoundOp.signatures`: each argument's type, shape,
     dtype and layout, scalar and attribute values, the SoC name, the CANN version); only a call
     that passed validation is remembered as validated, so a bad call is refused every time;
  3. brings the tensors to the device (NumPy inputs are copied with their view layout, see
     arrays.py; DeviceArrays are used in place), creates aclTensor/aclScalar descriptors;
  4. calls XxxGetWorkspaceSize, allocates the workspace only when it is non-zero, launches Xxx on
     the stream, and destroys every descriptor right after the launch (as op-plugin does);
  5. NumPy call: synchronises the stream, copies the outputs back (into the NumPy outputs the
     caller passed, honouring their layout, else into new arrays) and returns NumPy arrays.
     Device call (any DeviceArray argument): with stream=None it synchronises the session's stream
     and returns DeviceArrays; with an explicit `Stream` it returns right after the launch, and the
     workspace and temporaries stay referenced by the stream until `stream.synchronize()`.

Every path, errors included, destroys what it created and frees what it allocated (try/finally);
an executor that was prepared but never launched is destroyed, also when its `Prepared` is
dropped without `close()` (a finaliser). Reading results (`finish()`) before a successful launch
raises CallOrderError. A scalar that does not fit the dtype of its aclScalar (1e300 for float32)
is refused with 161002 by the validator and, with validate=False, by the conversion itself. A non-zero aclnnStatus raises
AclnnStatusError (status, symbolic name, op, function, aclGetRecentErrMsg()); a failing runtime call
raises AclRuntimeError.

`BoundOp.prepare(...)` exposes the two phases separately (a `Prepared` with the executor, the
announced workspace size and `launch(stream=, workspace=, workspace_size=)`), for tests and audits
of the library's own checks (an executor launched twice, a short workspace). On the simulator those
reach the library, which checks them; on real CANN, which is not known to check them and would read
freed or short memory, the runtime refuses them itself with the same status (161002).
"""

from __future__ import annotations

import functools
import numbers
import weakref
from typing import Any, Mapping, Sequence

import numpy as np

from . import session as session_mod
from . import acl
from .arrays import (
    ArrayError,
    ArrayTypeError,
    DeviceArray,
    DeviceBuffer,
    acl_dtype,
    device_like,
    host_layout,
    upload,
)
from .errors import (
    TENSOR_TYPES,
    AclnnArgumentTypeError,
    AclnnStatusError,
    AclnnValidationError,
    BackendError,
    CallOrderError,
    UnknownSocError,
)
from aclnngen.core.attribute_types import ATTRIBUTE_TYPES
from aclnngen.core.attribute_types import misfit as attribute_misfit
from aclnngen.core.formats import ND, UnknownFormat, acl_member
from aclnngen.core.meta import Param as MetaParam
from aclnngen.core.meta import op_meta
from aclnngen.core.records import Record
from aclnngen.core.releases import as_release, known_releases

from .bound_ops import announce, package_of
from .releases import check_release
from .shapes import DEFAULT_SCALAR_DTYPE, NUMPY_DTYPES, infer_outputs

__all__ = ["bind", "BoundOp", "Prepared", "tensor_descriptor"]

ACL_FORMAT_ND = acl.enum_value("ACL_FORMAT_ND")
ACLNN_ERR_PARAM_NULLPTR = acl.status_code("ACLNN_ERR_PARAM_NULLPTR")
ACLNN_ERR_PARAM_INVALID = acl.status_code("ACLNN_ERR_PARAM_INVALID")
ACLNN_ERR_INNER_NULLPTR = acl.status_code("ACLNN_ERR_INNER_NULLPTR")


_VALIDATION: Any = None


def bind(meta: Mapping[str, Any]) -> "BoundOp":
    """The op's BoundOp at once (tools and tests that want it built now). A generated binding uses
    runtime/binding.py's `bind`, which builds it at the binding's first use instead."""
    op = BoundOp(meta)
    announce(meta)
    return op


def _validation():
    """runtime.validation, imported at the first call that needs it."""
    global _VALIDATION
    if _VALIDATION is None:
        # no bytecode cached, its 650 lines compile at each import: not needed to import a binding
        # deferred: the validator loads at the first call that validates
        from . import validation

        _VALIDATION = validation
    return _VALIDATION


class _Param(Record):
    """One parameter as the call reads it (a frozen record: built at a binding's first use, where
    a dataclass would compile its methods first)."""

    index: int
    name: str
    py: str
    role: str
    kind: str  # "tensor" | "scalar" | "attribute"
    optional: bool
    output: bool
    scalar_acl: int | None = None
    scalar_np: Any = None
    attr_type: str | None = None
    default: Any = None
    scalar_dtype: str | None = None
    is_list: bool = False  # an aclTensorList* or aclScalarList*
    inplace: bool = False  # an input the op writes: its result goes back into the caller's array


def _param(index: int, p: MetaParam) -> _Param:
    role = p.role
    if p.is_tensor:
        return _Param(
            index, p.name, p.py, role, "tensor", p.optional, role == "output", is_list=p.is_list, inplace=p.inplace
        )
    if p.is_scalar:
        dtype_name = p.scalar_dtype or DEFAULT_SCALAR_DTYPE
        np_dtype = NUMPY_DTYPES.get(dtype_name) or np.dtype(dtype_name)
        return _Param(
            index,
            p.name,
            p.py,
            role,
            "scalar",
            role == "optional_scalar",
            False,
            scalar_acl=acl_dtype(np_dtype),
            scalar_np=np_dtype,
            default=p.default,
            scalar_dtype=dtype_name,
            is_list=p.is_list,
        )
    if role == "attribute":
        return _Param(
            index,
            p.name,
            p.py,
            role,
            "attribute",
            False,
            False,
            attr_type=p.attr_type,
            default=p.default,
        )
    raise ValueError(f"{p.name}: unknown parameter role {role!r}")


def _newest_version(meta: Mapping[str, Any]) -> str:
    """The newest CANN release a META mentions: the version validation assumes when the
    installed one is unknown."""
    return str(known_releases(meta)[-1])


class _OutputSpec:
    """Shape and dtype of an output that the binding will allocate (what the validator sees)."""

    __slots__ = ("shape", "dtype")
    contiguous = True

    def __init__(self, shape, dtype):
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)


class BoundOp:
    """One op's two-phase call; see the module docstring."""

    def __init__(self, meta: Mapping[str, Any]):
        self.meta = meta
        op = op_meta(meta)
        self.name = op.name
        self.symbol = op.symbol
        self.gws_name = self.symbol + "GetWorkspaceSize"
        self.params = tuple(_param(i, p) for i, p in enumerate(op.params))
        self.nparams = len(self.params)
        self.tensors = tuple(p for p in self.params if p.kind == "tensor")
        self.inputs = tuple(p for p in self.tensors if not p.output)
        by_name = {p.name: p for p in self.params}
        self.outputs = tuple(by_name[name] for name in op.outputs)
        # what a call returns: the outputs, then the inputs it writes in place (op.written)
        self.written = tuple(by_name[name] for name in op.written)
        self.newest_version = _newest_version(meta)
        self._versions: dict[str | None, str] = {}
        self.signatures: dict[tuple, tuple] = {}  # call signature -> (outputs to allocate, validated)
        self.plans: dict[tuple, Any] = {}  # plan key -> its callplan.Plan, or NO_PLAN
        # lists and tensors written in place are the Python path's alone
        self.plannable = not any(p.is_list or p.inplace for p in self.params)
        # per parameter, what plan_key reads of its argument
        self.plan_kinds = tuple(
            (_OUTPUT if p.output else _INPUT) if p.kind == "tensor" else _VALUE for p in self.params
        )
        self.no_outputs = (None,) * len(self.outputs)
        # the op is (package, symbol); listeners such as the simulator's kernels learn of it
        self.package = package_of(meta)  # announced by the bind that made it

    def __repr__(self) -> str:
        return f"<aclnn binding {self.symbol}({', '.join(p.py for p in self.params)})>"

    # -- helpers -----------------------------------------------------------------------------------
    def validation_version(self, version: str | None) -> str:
        found = self._versions.get(version)
        if found is None:
            found = as_release(version) or self.newest_version
            self._versions[version] = found
            check_release(self.meta, version)
        return found

    def remember(self, key: tuple, entry: tuple) -> None:
        if len(self.signatures) >= SIGNATURE_CACHE_SIZE:
            self.signatures.clear()  # many shapes: start over rather than grow without bound
        self.signatures[key] = entry

    def functions(self, backend):
        return backend.op_functions(self.meta, self.package)

    # -- the Python signature ------------------------------------------------------------------------
    def resolve_outputs(self, out, **by_name) -> tuple:
        """The output arguments in prototype order, from `out` (one array for a single output, or a
        tuple with one entry per output, as NumPy's ufuncs and torch take it) and the outputs' own
        Python names (aliases); None where the binding allocates the output."""
        if out is None:
            for alias in by_name.values():
                if alias is not None:
                    break
            else:
                return self.no_outputs  # the common call: every output allocated by the binding
        names = [p.py for p in self.outputs]
        if out is None:
            given = [None] * len(names)
        elif len(names) == 1:
            given = [out[0] if isinstance(out, tuple) and len(out) == 1 else out]
        elif isinstance(out, tuple) and len(out) == len(names):
            given = list(out)
        else:
            raise TypeError(
                f"{self.symbol}: out must be a tuple of {len(names)} arrays ({', '.join(names)}), None for any to allocate; got {type(out).__name__}"
            )
        for index, name in enumerate(names):
            alias = by_name.get(name)
            if alias is not None:
                if given[index] is not None:
                    raise TypeError(f"{self.symbol}: output {name} is given twice, in out and as {name}=")
                given[index] = alias
        return tuple(given)

    def resolve_formats(self, formats: Mapping[str, str] | None) -> dict[str, str]:
        """C name -> format name from the binding's `formats=` (tensor Python name -> a name of
        aclnngen.core.formats, e.g. {"self": "NCHW"}); the tensors not named are ND."""
        if not formats:
            return {}
        if not isinstance(formats, Mapping):
            raise TypeError(
                f"{self.symbol}: formats must be a mapping of tensor name to format, e.g. "
                f"{{{self.tensors[0].py!r}: 'NCHW'}}; got {type(formats).__name__}"
            )
        by_py = {p.py: p for p in self.tensors}
        resolved = {}
        for key, name in formats.items():
            p = by_py.get(key)
            if p is None:
                raise TypeError(
                    f"{self.symbol}: formats names {key!r}, which is no tensor of the op; "
                    f"its tensors are {', '.join(by_py)}"
                )
            try:
                acl_member(name)
            except UnknownFormat as exc:
                raise ValueError(f"{self.symbol}: formats[{key!r}]: {exc}") from None
            resolved[p.name] = name
        return resolved

    # -- the call ----------------------------------------------------------------------------------
    def __call__(self, *args, stream=None, validate: bool = True, formats: Mapping[str, str] | None = None):
        return self.call(args, stream, validate, formats)

    def call(self, args: tuple, stream, validate: bool, formats: Mapping[str, str] | None):
        """`__call__` with every argument positional: what the generated bindings call (keywords
        and a starred tuple cost a repeated call more than the plan's own Python)."""
        key = None
        # plans on: the loaded module's setting read directly (_plans_on raises for a bad one)
        if (
            stream is None
            and not formats
            and len(args) == self.nparams
            and ((_CALLPLAN is not None and _CALLPLAN._mode == "auto") or _plans_on())
        ):
            key = self.plan_key(args)
            if key is not None:
                plan = self.plans.get(key)
                # a plan serves the backend it was made with, alive (a reset or shut down one is
                # replaced); NO_PLAN serves none
                if plan is not None and (plan.validated or not validate) and plan.backend is session_mod.backend():
                    result = plan(args, key[1])
                    if result is not _CALLPLAN.STALE:
                        return result
        # launched and closed right here (try/finally), so it needs no finaliser
        prepared = self.prepare(*args, stream=stream, validate=validate, formats=formats, _guarded=False)
        try:
            prepared.launch(stream)
        except BaseException:
            prepared.close()
            raise
        result = prepared.finish(stream)
        if key is not None:
            self._learn(key, prepared, args)
        return result

    def plan_key(self, args) -> tuple | None:
        """(signature, host) of a call a plan can make (runtime/callplan.py): tensors all NumPy
        arrays (C-contiguous, not empty, a view only when it starts its storage) or all device arrays, outputs left to the binding,
        scalars and attributes plain values; None for any other call."""
        if not self.plannable:
            return None
        key: list = []
        host = device = False
        for kind, value in zip(self.plan_kinds, args):
            if kind is _INPUT:
                t = type(value)
                if t is np.ndarray:
                    # the key (shape, dtype) leaves the layout open: checked on every call
                    if not value.size or not value.flags.c_contiguous:
                        return None
                    # a view goes to the device from its own first element (upload keeps no
                    # prefix of its base): then its descriptor is a whole array's
                    if value.base is not None and host_layout(value)[4]:
                        return None
                    host = True
                    key.append((value.shape, value.dtype))
                elif t is DeviceArray:
                    buffer = value.buffer
                    if buffer is None or not buffer.address:
                        return None
                    device = True
                    key.append((value.shape, value.dtype, value.strides, value.offset, value.storage_size))
                elif value is None:
                    key.append(None)
                else:
                    return None
            elif kind is _OUTPUT:
                if value is not None:
                    return None
                key.append(None)
            elif value is None or isinstance(value, _PLAIN_VALUES):
                key.append((type(value), value))
            else:
                return None
        if host == device:
            return None  # no tensor, or NumPy and device arrays mixed
        return (tuple(key), host)

    def _learn(self, key: tuple, prepared: "Prepared", args) -> None:
        """After a successful call: the plan of its signature, for the next calls."""
        if len(self.plans) >= SIGNATURE_CACHE_SIZE:
            self.plans.clear()  # many shapes: start over rather than grow without bound
        specs = {name: (v.shape, v.dtype) for name, v in prepared.values.items() if isinstance(v, _OutputSpec)}
        plan = _callplan().make_plan(self, prepared.backend, prepared.values, args, key[1], prepared.validated, specs)
        self.plans[key] = NO_PLAN if plan is None else plan

    def prepare(
        self,
        *args,
        stream=None,
        validate: bool = True,
        formats: Mapping[str, str] | None = None,
        _guarded: bool = True,
    ) -> "Prepared":
        """Phase one only: validation, device copies, descriptors and GetWorkspaceSize."""
        if len(args) != self.nparams:
            raise TypeError(
                f"{self.symbol} takes {self.nparams} arguments in prototype order "
                f"({', '.join(p.py for p in self.params)}), got {len(args)}"
            )
        resolved = self.resolve_formats(formats)
        backend = _stream_backend(stream)
        return Prepared(self, backend, args, validate, guarded=_guarded, formats=resolved)


SIGNATURE_CACHE_SIZE = 512  # signatures remembered per op


class _NoPlan:
    """A signature no plan can make (no helper, an argument type it does not carry): never
    validated, of no backend, so `__call__`'s one test of a plan turns it down."""

    validated = False
    backend = None


NO_PLAN = _NoPlan()
_CALLPLAN: Any = None


def _callplan():
    """runtime.callplan, imported at the first call that plans."""
    global _CALLPLAN
    if _CALLPLAN is None:
        # deferred: the plans (and their build) load at the first call, not at a binding's import
        from . import callplan

        _CALLPLAN = callplan
    return _CALLPLAN


def _plans_on() -> bool:
    return (_CALLPLAN or _callplan()).enabled()


_INPUT, _OUTPUT, _VALUE = "input", "output", "value"  # BoundOp.plan_kinds


# an attribute's element kind (aclnngen.core.attribute_types) -> the Python value cffi passes
_ELEMENT = {"bool": bool, "int": int, "float": float}
# Scalar and attribute values whose type and value alone decide validation (immutable, hashable).
_PLAIN_VALUES = (bool, int, float, str, np.generic)


def _value_key(value):
    """What validation and output inference read of one argument, as a hashable key; raises
    TypeError for a value of a type whose state the key could not capture."""
    t = type(value)
    if value is None:
        return None
    if t is np.ndarray:
        return (t, value.shape, value.dtype, value.flags.c_contiguous)
    if t is DeviceArray:
        return (t, value.shape, value.dtype, value.strides)
    if t in (list, tuple):
        return (t, tuple(_value_key(v) for v in value))
    if isinstance(value, _PLAIN_VALUES):
        return (t, value)
    raise TypeError(t)


def _signature(op: "BoundOp", values: Mapping[str, Any], soc, version, formats: Mapping[str, str]) -> tuple | None:
    """The call's signature for `BoundOp.signatures`; None when an argument cannot be keyed."""
    try:
        key = (soc, version, tuple(sorted(formats.items())), tuple(_value_key(values[p.name]) for p in op.params))
        hash(key)
    except TypeError:
        return None
    return key


def _stream_backend(stream):
    if stream is None:
        return session_mod.backend()
    b = getattr(stream, "backend", None)
    if b is None:
        return session_mod.backend()  # a raw aclrtStream handle: the active backend's
    if not b.alive:
        raise BackendError(reason=f"the stream belongs to a {b.kind} backend that was shut down or reset")
    b.ensure_thread()
    return b


def _as_tensor(value):
    """Values NumPy can read (the array interface, or DLPack; bfloat16 through runtime/dlpack.py)
    become arrays; DeviceArrays and None stay. Anything else comes back as `(value, failure)`
    with what reading it raised (None when nothing could be tried), for `_not_a_tensor`."""
    if value is None or isinstance(value, (np.ndarray, DeviceArray)):
        return value
    failure: BaseException | None = None
    if isinstance(value, np.generic) or hasattr(value, "__array_interface__") or hasattr(value, "__array__"):
        try:
            return np.asarray(value)
        except Exception as exc:  # noqa: BLE001 - e.g. a bfloat16 torch tensor: try DLPack below
            failure = exc
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except Exception as exc:  # noqa: BLE001 - NumPy refuses bfloat16; read it ourselves
            failure = exc
            from .dlpack import bfloat16_from_dlpack  # deferred: DLPack bfloat16 only, not on the import path

            try:
                found = bfloat16_from_dlpack(value)
            except Exception as inner:  # noqa: BLE001 - requires grad, another device: said below
                found, failure = None, inner
            if found is not None:
                return found
    return _Unread(value, failure)


class _Unread:
    """A tensor argument that could not be read as an array, and why (see `_as_tensor`)."""

    __slots__ = ("value", "failure")

    def __init__(self, value, failure):
        self.value, self.failure = value, failure


def _address_of(workspace) -> int:
    if isinstance(workspace, (DeviceBuffer, DeviceArray)):
        return workspace.address
    if isinstance(workspace, int):
        return workspace
    return 1  # a cdata pointer: the library judges it


def _is_array(value) -> bool:
    return isinstance(value, (np.ndarray, DeviceArray))


class _Temporaries:
    """Device buffers a call owns, handed to a stream: freed once it has been synchronised."""

    def __init__(self, buffers):
        self.buffers = list(buffers)

    def _release_after_sync(self):
        buffers, self.buffers = self.buffers, []
        for buf in buffers:
            try:
                buf.free()
            except Exception:  # noqa: BLE001 - the finaliser retries; never raise from a sync
                pass


class _Descriptors:
    """The descriptors and the executor of one prepared call, apart from the `Prepared` so a
    finaliser can destroy them when a prepared call is dropped without launch or close."""

    def __init__(self, backend):
        self.backend = backend
        self.generation = backend.generation
        self.handles: list[tuple[Any, Any]] = []  # (destroy function, handle)
        self.executor = None
        self.launched = False

    def destroy_handles(self) -> None:
        handles = list(self.handles)
        self.handles.clear()
        if not self._backend_live():
            return  # reset or shut down: the handles no longer exist
        for destroy, handle in reversed(handles):
            if destroy is not None:
                try:
                    destroy(handle)
                except Exception:  # noqa: BLE001 - cleanup continues
                    pass

    def release(self) -> None:
        """Every descriptor, and the executor unless it was launched (a launch consumes it)."""
        self.destroy_handles()
        executor, self.executor = self.executor, None
        if executor is not None and not self.launched and self._backend_live():
            b = self.backend
            try:
                if b.api.aclDestroyAclOpExecutor(executor) != 0:
                    b.recent_error()
            except Exception:  # noqa: BLE001
                pass

    def _backend_live(self) -> bool:
        return self.backend.alive and self.backend.generation == self.generation


class Prepared:
    """One call between its two phases. Owns descriptors, temporaries, the workspace and the
    executor until `close()` (or `finish()`); a prepared call that is dropped without either
    gives its descriptors and executor back through a finaliser."""

    def __init__(
        self,
        op: BoundOp,
        backend,
        args: Sequence[Any],
        validate: bool,
        *,
        guarded: bool = True,
        formats: Mapping[str, str] | None = None,
    ):
        self.op = op
        self.backend = backend
        self.formats = dict(formats or {})  # C name -> format name; ND when absent
        self._owned = _Descriptors(backend)
        if guarded:  # a prepared call handed to the caller, who may drop it
            self._finalizer = weakref.finalize(self, self._owned.release)
            self._finalizer.atexit = False  # at exit the runtime may already be finalised
        else:
            self._finalizer = self._owned.release
        self.workspace_size = 0
        self.workspace: DeviceBuffer | None = None
        self.launched = False
        self._stream = None
        self.launches = 0
        self.closed = False
        self._handles = self._owned.handles
        self._temps: list[DeviceBuffer] = []
        self._device: list[DeviceArray | None] = [None] * op.nparams
        self._list_devices: list[DeviceArray] = []  # the elements of tensor lists
        self._host_targets: list[tuple[_Param, np.ndarray | None, DeviceArray]] = []
        self._fresh: list[DeviceBuffer] = []  # outputs allocated for a device call: the caller's on success
        try:
            self._phase_one(args, validate)
        except BaseException:
            self.close()
            raise

    @property
    def executor(self):
        return self._owned.executor

    @executor.setter
    def executor(self, value) -> None:
        self._owned.executor = value

    # -- phase one -------------------------------------------------------------------------------
    def _phase_one(self, args, validate: bool) -> None:
        op, b = self.op, self.backend
        meta = op.meta
        values: dict[str, Any] = {}
        for p in op.params:
            value = args[p.index]
            if p.is_list:
                value = self._sequence(p, value, validate, version_of=b)
            elif p.kind == "tensor":
                value = _as_tensor(value)
                if type(value) is _Unread:
                    # refused here, before outputs are inferred from the inputs, so the error
                    # names this input (not an output left unallocated)
                    raise self._not_a_tensor(p, value, validate, version_of=b)
            values[p.name] = value
        self.device_mode = any(
            isinstance(v, DeviceArray)
            for p in op.tensors
            for v in (values[p.name] if p.is_list and values[p.name] is not None else (values[p.name],))
        )
        soc = b.soc_name()
        version = op.validation_version(b.version())
        # What a call of this signature (shapes, dtypes, layouts, scalar values, SoC, version)
        # needs is worked out once: the outputs to allocate, and whether it passed validation.
        # Only a call that passed is remembered as validated, so a bad call is checked every time.
        key = _signature(op, values, soc, version, self.formats)
        known = op.signatures.get(key) if key is not None else None
        if known is None:
            allocate = self._outputs_to_allocate(values, version, self._family(validate))
            validated = False
        else:
            allocate, validated = known
        for name, shape, dtype in allocate:
            values[name] = _OutputSpec(shape, dtype)
        if validate and not validated:
            _validation().validate(meta, values, family=b.family(), version=version, formats=self.formats)
            validated = True
        if key is not None and (known is None or validated != known[1]):
            op.remember(key, (allocate, validated))
        self.validated = validated
        self.values = values
        gws, self._launch_fn, self.library = op.functions(b)

        ffi = b.ffi
        cargs = []
        for p in op.params:
            value = values[p.name]
            if p.is_list:
                cargs.append(self._list(p, value))
            elif p.kind == "tensor":
                cargs.append(self._tensor(p, value))
            elif p.kind == "scalar":
                cargs.append(self._scalar(p, value))
            else:
                cargs.append(self._attribute(p, value))
        ws = ffi.new("uint64_t *")
        ex = ffi.new("aclOpExecutor **")
        rc = gws(*cargs, ws, ex)
        if rc != 0:
            raise AclnnStatusError(status=rc, op=op.name, function=op.gws_name, recent_message=b.recent_error() or None)
        self.executor = ex[0]
        self.workspace_size = int(ws[0])

    def _sequence(self, p: _Param, value, validate: bool, *, version_of):
        """A list parameter's argument as a list (tensors read as arrays), or None (NULL). Not a
        sequence, or an element that is no tensor (or, in a scalar list, no real number): a
        typed error naming the parameter and the element."""
        if value is None:
            return None
        what = "tensors" if p.kind == "tensor" else "real numbers"
        if not isinstance(value, (list, tuple)):
            raise self._bad_list(p, value, f"must be a list or tuple of {what}, not {type(value).__name__}", validate)
        items = []
        for k, item in enumerate(value):
            if p.kind == "tensor":
                read = _as_tensor(item)
                if read is None or type(read) is _Unread:
                    from .dlpack import unreadable_reason  # deferred: error messages only

                    why = (
                        "is None (a list holds no NULL tensor)"
                        if read is None
                        else unreadable_reason(item, read.failure)
                    )
                    raise self._bad_list(p, item, f"element {k} {why}; a tensor is {TENSOR_TYPES}", validate)
                items.append(read)
            else:
                if isinstance(item, (bool, np.bool_)) or not isinstance(item, (numbers.Real, np.integer, np.floating)):
                    raise self._bad_list(p, item, f"element {k} ({item!r}) is not a real number", validate)
                items.append(item)
        return items

    def _bad_list(self, p: _Param, found, detail: str, validate: bool) -> Exception:
        detail = f"{p.name} {detail}"
        if not validate:
            return ArrayTypeError(f"{self.op.symbol}: {detail}")
        return AclnnArgumentTypeError(
            status=ACLNN_ERR_PARAM_INVALID,
            op=self.op.name,
            param=p.name,
            family=None,
            detail=detail,
            found=type(found).__name__,
            allowed=f"a sequence of {'tensors' if p.kind == 'tensor' else 'real numbers'}",
            check="tensor" if p.kind == "tensor" else "scalar",
        )

    def _list(self, p: _Param, value):
        """aclCreateTensorList / aclCreateScalarList over one descriptor per element. The list
        owns its elements: only it is destroyed after the launch; elements made before a
        failure are destroyed one by one."""
        b, ffi = self.backend, self.backend.ffi
        if value is None:
            return ffi.NULL
        tensors = p.kind == "tensor"
        create, destroy = (
            (b.api.aclCreateTensorList, b.api.aclDestroyTensorList)
            if tensors
            else (b.api.aclCreateScalarList, b.api.aclDestroyScalarList)
        )
        made: list = []
        mark = len(self._handles)
        handed_over = False  # whether the elements left the call's handles for the list's
        try:
            for k, item in enumerate(value):
                element = p._replace(name=f"{p.name}[{k}]", py=f"{p.py}[{k}]", optional=False, is_list=False)
                made.append(self._tensor(element, item, whole=p) if tensors else self._scalar(element, item))
            del self._handles[mark:]
            handed_over = True
            kind = "aclTensor" if tensors else "aclScalar"
            items = ffi.new(f"{kind} *[]", made or 1)
            handle = create(items, len(made))
            if handle == ffi.NULL:
                raise AclnnStatusError(
                    status=ACLNN_ERR_INNER_NULLPTR,
                    op=self.op.name,
                    function="aclCreateTensorList" if tensors else "aclCreateScalarList",
                    recent_message=b.recent_error() or f"the list {p.name} could not be created",
                )
        except BaseException:
            for element in made if handed_over else ():
                (b.api.aclDestroyTensor if tensors else b.api.aclDestroyScalar)(element)
            raise
        self._handles.append((destroy, handle))
        return handle

    def _not_a_tensor(self, p: _Param, unread: _Unread, validate: bool, *, version_of) -> Exception:
        """The TypeError for a tensor argument that cannot be read, naming it and saying what to
        do: AclnnArgumentTypeError (status 161002, what the library would answer) when
        validating, ArrayTypeError with validate=False (docs/python-api.md)."""
        from .dlpack import unreadable_reason  # deferred: error messages only

        value = unread.value
        name = p.name if p.py == p.name else f"{p.name} (argument {p.py})"
        detail = f"{name} must be a tensor: it {unreadable_reason(value, unread.failure)}; a tensor is {TENSOR_TYPES}"
        if not validate:
            return ArrayTypeError(f"{self.op.symbol}: {detail}")
        try:
            family = version_of.family()
        except Exception:  # noqa: BLE001 - the SoC is the library's to report; the type is ours
            family = None
        return AclnnArgumentTypeError(
            status=ACLNN_ERR_PARAM_INVALID,
            op=self.op.name,
            param=p.name,
            family=family,
            detail=detail,
            found=type(value).__name__,
            allowed=TENSOR_TYPES,
            check="tensor",
            version=self.op.validation_version(version_of.version()),
        )

    def _family(self, validate: bool) -> str | None:
        """The session's product family; without validation an unknown SoC is the library's to
        report, so outputs are then inferred from every family's rules."""
        try:
            return self.backend.family()
        except UnknownSocError:
            if validate:
                raise
            return None

    def _outputs_to_allocate(self, values, version, family) -> tuple:
        """(C name, shape, dtype) of each output the caller left out: inferred from the inputs."""
        op = self.op
        # a list output is the caller's to pass: how many tensors it holds, no rule says
        missing = [p for p in op.outputs if values[p.name] is None and not p.is_list]
        if not missing:
            return ()
        inferred = infer_outputs(op.meta, values, version, family=family)
        first = next((values[p.name] for p in op.inputs if _is_array(values[p.name])), None)
        allocate = []
        for p in missing:
            if p.name in inferred:
                shape, dtype = inferred[p.name]
                allocate.append((p.name, tuple(shape), np.dtype(dtype)))
            elif first is not None:
                # nothing to infer from (e.g. an input dtype NumPy cannot promote): follow the
                # first input, so the validator reports the input, not a "NULL" output
                allocate.append((p.name, tuple(first.shape), np.dtype(first.dtype)))
        return tuple(allocate)

    def _tensor(self, p: _Param, value, whole: _Param | None = None):
        """The descriptor of one tensor argument (`whole`: the list it is an element of)."""
        b, ffi = self.backend, self.backend.ffi
        if value is None:
            return ffi.NULL
        if isinstance(value, _OutputSpec):
            try:
                dev = DeviceArray.empty(value.shape, value.dtype, backend=b)
            except ArrayError as exc:  # e.g. more bytes than any device has: say which output
                raise ArrayError(
                    f"{self.op.symbol}: output {p.py} of shape {value.shape} ({value.dtype}): {exc}"
                ) from None
            (self._fresh if self.device_mode else self._temps).append(dev.buffer)
            self._host_targets.append((p, None, dev))
        elif isinstance(value, DeviceArray):
            if value.backend is not b:
                raise ArrayError(f"{p.py}: the device array belongs to another backend ({value.backend.kind})")
            value._check_live()
            dev = value
            if p.output or p.inplace:
                self._host_targets.append((p, None, dev))
        elif isinstance(value, np.ndarray):
            if p.output:
                if not value.flags.writeable:
                    raise ArrayError(f"{self.op.symbol}: output {p.py} is a read-only array")
                acl_dtype(value.dtype, param=p.name, op=self.op.name)
                dev = device_like(b, value)
                self._host_targets.append((p, value, dev))
            else:
                acl_dtype(value.dtype, param=p.name, op=self.op.name)
                if p.inplace and not value.flags.writeable:
                    raise ArrayError(f"{self.op.symbol}: {p.py} is written in place, but the array is read-only")
                dev = upload(b, value)
                if p.inplace:  # the result is copied back into the caller's array
                    self._host_targets.append((p, value, dev))
            self._temps.append(dev.buffer)
        else:
            raise ArrayTypeError(
                f"{self.op.symbol}: {p.py} must be a tensor: {TENSOR_TYPES}; got {type(value).__name__}"
            )
        if whole is None:
            self._device[p.index] = dev
        else:
            self._list_devices.append(dev)
        return self._create_tensor(dev, p, format_of=whole)

    def _create_tensor(self, dev: DeviceArray, p: _Param | None = None, format_of: _Param | None = None):
        b = self.backend
        fmt = self.formats.get((format_of or p).name, ND) if p else ND
        handle = tensor_descriptor(b, dev, param=p.name if p else None, op=self.op.name, format=fmt)
        self._handles.append((b.api.aclDestroyTensor, handle))
        return handle

    def _scalar(self, p: _Param, value):
        b, ffi = self.backend, self.backend.ffi
        if value is None:
            return ffi.NULL
        if not isinstance(value, (numbers.Real, np.bool_, np.integer, np.floating)):
            raise ArrayError(f"{self.op.symbol}: scalar {p.py} must be a real number, not {value!r}")
        misfit = _validation().scalar_misfit(value, p.scalar_dtype)
        if misfit is not None:
            # refused even with validate=False: the value cannot be written into the aclScalar,
            # so no check of the library could ever see it (it would silently become inf)
            raise AclnnValidationError(
                status=ACLNN_ERR_PARAM_INVALID,
                op=self.op.name,
                param=p.name,
                family=None,
                check="scalar_dtype",
                detail=f"{p.name} {misfit}",
                found=value,
                allowed=p.scalar_dtype,
            )
        raw = np.asarray(value).astype(p.scalar_np)
        buf = ffi.new("uint8_t[]", raw.tobytes())
        handle = b.api.aclCreateScalar(buf, p.scalar_acl)
        if handle == ffi.NULL:
            raise AclnnStatusError(
                status=ACLNN_ERR_INNER_NULLPTR,
                op=self.op.name,
                function="aclCreateScalar",
                recent_message=b.recent_error() or f"aclCreateScalar returned NULL for {p.name}",
            )
        self._handles.append((b.api.aclDestroyScalar, handle))
        return handle

    def _attribute(self, p: _Param, value):
        b, ffi = self.backend, self.backend.ffi
        if value is None:
            value = p.default
        t = ATTRIBUTE_TYPES.get(p.attr_type or "")
        if t is None:
            raise ArrayError(f"{self.op.symbol}: attribute type {p.attr_type!r} of {p.py} is not supported")
        if value is None:
            return ffi.NULL if t.is_pointer else 0
        why = attribute_misfit(t.c_type, value)
        if why is not None:
            # refused even with validate=False: the value cannot be written as the C type (an
            # int8_t of 300, a float of 1e39), so no check of the library could ever see it
            raise AclnnValidationError(
                status=ACLNN_ERR_PARAM_INVALID,
                op=self.op.name,
                param=p.name,
                family=None,
                check="attribute",
                detail=f"{p.name} = {value!r} is not a valid {t.c_type}: {why}",
                found=value,
                allowed=t.c_type,
            )
        if t.c_type == "char*":
            buf = ffi.new("char[]", value.encode())
            self._handles.append((None, buf))  # keeps the buffer alive
            return buf
        if t.is_array:
            items = [_ELEMENT[t.element](v) for v in value]
            # size 0 passes a non-NULL pointer to no elements, as a std::vector's data() may
            arr = ffi.new(f"{t.c_element}[]", items or 1)
            handle = getattr(b.api, t.create)(arr, len(items))
            if handle == ffi.NULL:
                raise AclnnStatusError(
                    status=ACLNN_ERR_INNER_NULLPTR,
                    op=self.op.name,
                    function=t.create,
                    recent_message=b.recent_error() or f"{t.create} returned NULL for {p.name}",
                )
            self._handles.append((getattr(b.api, t.destroy), handle))
            return handle
        return _ELEMENT[t.element](value)

    # -- phase two -------------------------------------------------------------------------------
    def launch(self, stream=None, *, workspace=None, workspace_size: int | None = None) -> None:
        """aclnnXxx(workspace, workspaceSize, executor, stream). The workspace is allocated here
        (only when the announced size is non-zero) unless given; `workspace_size` defaults to the
        announced size. Descriptors are destroyed right after the launch."""
        if self.closed:
            raise ArrayError(f"{self.op.symbol}: this prepared call was closed")
        b, ffi = self.backend, self.backend.ffi
        size = self.workspace_size if workspace_size is None else int(workspace_size)
        guard = b.kind != "sim"  # real CANN is not known to check these: refuse them here
        if guard and self.launches:
            raise AclnnStatusError(
                status=ACLNN_ERR_PARAM_INVALID,
                op=self.op.name,
                function=self.op.symbol,
                recent_message="the executor was already launched (refused by aclnngen before reaching the library)",
            )
        if guard and size < self.workspace_size:
            raise AclnnStatusError(
                status=ACLNN_ERR_PARAM_INVALID,
                op=self.op.name,
                function=self.op.symbol,
                recent_message=(
                    f"workspaceSize {size} is smaller than the {self.workspace_size} bytes announced "
                    "(refused by aclnngen before reaching the library)"
                ),
            )
        if guard and self.workspace_size > 0 and workspace is not None and not _address_of(workspace):
            raise AclnnStatusError(
                status=ACLNN_ERR_PARAM_NULLPTR,
                op=self.op.name,
                function=self.op.symbol,
                recent_message=(
                    f"workspace is NULL but {self.workspace_size} bytes were announced "
                    "(refused by aclnngen before reaching the library)"
                ),
            )
        if workspace is None:
            if self.workspace is None and self.workspace_size > 0:
                self.workspace = DeviceBuffer(b, self.workspace_size)
            ws_ptr = self.workspace.ptr if self.workspace is not None else ffi.NULL
        elif isinstance(workspace, (DeviceBuffer, DeviceArray)):
            ws_ptr = ffi.cast("void *", workspace.address)
        else:
            ws_ptr = ffi.cast("void *", workspace) if isinstance(workspace, int) else workspace
        handle = ffi.NULL if stream is None else getattr(stream, "handle", stream)
        self._stream = stream
        self.launches += 1
        try:
            rc = self._launch_fn(ws_ptr, size, self.executor, handle)
        finally:
            self._destroy_descriptors()
        if rc != 0:
            raise AclnnStatusError(
                status=rc, op=self.op.name, function=self.op.symbol, recent_message=b.recent_error() or None
            )
        self.launched = self._owned.launched = True  # a launched executor is the library's

    def _destroy_descriptors(self) -> None:
        self._owned.destroy_handles()

    def finish(self, stream=None):
        """After a successful launch: synchronise (unless a device call on an explicit stream),
        copy results back, release temporaries; returns the outputs. Before a launch there are
        no results (the outputs hold whatever the device memory held): CallOrderError."""
        if self.closed:
            raise CallOrderError(op=self.op.name, what="finish(): this prepared call was closed; its results are gone")
        if not self.launched:
            raise CallOrderError(
                op=self.op.name,
                what="finish() before a successful launch(): there are no results to read yet",
            )
        b = self.backend
        explicit = stream is not None and hasattr(stream, "keep") and not getattr(stream, "is_default", False)
        # (host, device) per written parameter; a list output's elements ("out[0]", ...) in order
        by_name: dict[str, list] = {}
        for p, host, dev in self._host_targets:
            by_name.setdefault(p.name.split("[", 1)[0], []).append((host, dev))

        def each(p, deliver):
            found = [deliver(host, dev) for host, dev in by_name.get(p.name, ())]
            return found if p.is_list else (found[0] if found else None)

        # A NumPy output the caller passed in must be filled before returning, even on a device call.
        host_outputs = any(host is not None for pairs in by_name.values() for host, _ in pairs)
        try:
            if self.device_mode and explicit and not host_outputs:
                owned = [buf for buf in self._temps]
                if self.workspace is not None:
                    owned.append(self.workspace)
                # the holder comes last: Stream releases the buffers' busy marks, then frees
                stream.keep(
                    *owned, *(d for d in self._device if d is not None), *self._list_devices, _Temporaries(owned)
                )
                self._temps, self.workspace, self._fresh = [], None, []
                results = [each(p, lambda host, dev: dev) for p in self.op.written]
                return results[0] if len(results) == 1 else tuple(results)
            s = stream if stream is not None and hasattr(stream, "synchronize") else session_mod.default_stream(b)
            if stream is not None and not hasattr(stream, "synchronize"):
                b.check("aclrtSynchronizeStream", b.api.aclrtSynchronizeStream(stream))
            else:
                s.synchronize()

            def deliver(host, dev):  # into the caller's array; else the device array or a new host one
                if host is not None:
                    dev.copy_to(host)
                    return host
                return dev if self.device_mode else dev.to_host()

            results = [each(p, deliver) for p in self.op.written]
            if self.device_mode:
                self._fresh = []  # delivered to the caller
            return results[0] if len(results) == 1 else tuple(results)
        finally:
            self.close()

    def close(self) -> None:
        """Releases everything this call still owns. An executor that was never launched is
        destroyed; buffers a launch used are freed only once nothing queued can touch them."""
        if self.closed:
            return
        self.closed = True
        b = self.backend
        self._finalizer()  # descriptors, and the executor unless launched; once
        buffers = self._temps + self._fresh
        if self.workspace is not None:
            buffers.append(self.workspace)
        self._temps, self._fresh, self.workspace = [], [], None
        if self.launched and buffers:
            # a launch that was never synchronised (an error between launch and sync): wait for
            # the default stream so the memory is no longer in use before freeing it
            try:
                s = self._stream
                if s is None:
                    session_mod.default_stream(b).synchronize()
                elif hasattr(s, "synchronize"):
                    s.synchronize()
                else:
                    b.api.aclrtSynchronizeStream(s)
            except Exception:  # noqa: BLE001
                pass
        for buf in buffers:
            try:
                buf.free()
            except Exception:  # noqa: BLE001 - the finaliser is the last resort
                pass

    def __enter__(self) -> "Prepared":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_LAYOUTS: dict[tuple, tuple] = {}  # (ffi, shape, strides, storage size) -> the three int64_t arrays
LAYOUT_CACHE_SIZE = 1024


def _layout(ffi, shape, strides, storage_size) -> tuple:
    """The dims, strides and storage-dims arrays of a descriptor, made once per layout:
    aclCreateTensor copies them, so one set serves every call (and every thread) alike."""
    key = (ffi, shape, strides, storage_size)
    found = _LAYOUTS.get(key)
    if found is None:
        if len(_LAYOUTS) >= LAYOUT_CACHE_SIZE:
            _LAYOUTS.clear()
        found = _LAYOUTS[key] = (
            ffi.new("int64_t[]", list(shape) or [0]),
            ffi.new("int64_t[]", list(strides) or [0]),
            ffi.new("int64_t[]", [storage_size]),
        )
    return found


@functools.lru_cache(maxsize=None)
def _void_p(ffi):
    """The `void *` type of an FFI, looked up once (a type string is parsed on every cast)."""
    return ffi.typeof("void *")


def tensor_descriptor(backend, dev: DeviceArray, *, param: str | None = None, op: str | None = None, format: str = ND):
    """aclCreateTensor for a device array: view dims/strides/offset in elements, `format` (a name
    of aclnngen.core.formats, ND by default), 1-D storage dims (the storage's element count),
    data = the storage base (NULL when empty). The caller destroys it (aclDestroyTensor)."""
    ffi = backend.ffi
    dtype = acl_dtype(dev.dtype, param=param, op=op)
    shape = dev.shape
    dims, strides, storage = _layout(ffi, shape, dev.strides, dev.storage_size)
    address = dev.address
    data = ffi.cast(_void_p(ffi), address) if address else ffi.NULL
    acl_format = ACL_FORMAT_ND if format == ND else acl.enum_value(acl_member(format))
    handle = backend.api.aclCreateTensor(dims, len(shape), dtype, strides, dev.offset, acl_format, storage, 1, data)
    if handle == ffi.NULL:
        raise AclnnStatusError(
            status=ACLNN_ERR_INNER_NULLPTR,
            op=op,
            function="aclCreateTensor",
            recent_message=backend.recent_error() or f"aclCreateTensor returned NULL for {param}",
        )
    return handle
