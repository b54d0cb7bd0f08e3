"""Typed errors of the runtime.

Every error a user can cause derives from `AclnnError`, whose `user_facing = True` tells the
command line to print the message alone, without a traceback. Constructors take keyword arguments
only and keep every field as an attribute, so callers and tests can inspect what went wrong
without parsing the message:

- `AclnnValidationError`: the Python-side validator rejected the arguments of an op before any C
  call, with the status the library documents for that violation (161001 or 161002).
- `AclnnStatusError`: the C library returned a non-zero `aclnnStatus`.
- `AclRuntimeError`: an ACL runtime call (`aclrtMalloc`, `aclrtMemcpy`, ...) returned an `aclError`.
- `BackendError`: the libraries could not be found or loaded, or the installed CANN lacks the op.
- `UnknownSocError`: `aclrtGetSocName` returned a name no product family matches.
"""

from __future__ import annotations

from typing import Any, Iterable

# The symbolic names have one source, specs/abi.yaml, rendered to generated/abi.py STATUS:
# aclnnStatus (include/aclnn/opdev/op_errno.h) and aclError (acl/acl_base_rt.h,
# acl/error_codes/rt_error_codes.h), the codes the fact sheet lists. `ACLNN_STATUS_NAMES` and
# `ACL_ERROR_NAMES` (code -> name) are built from it on first use, so importing this module never
# depends on the generated package being importable (the generator itself imports the runtime).
_NAME_TABLES = {"ACLNN_STATUS_NAMES": "aclnnStatus", "ACL_ERROR_NAMES": "aclError"}
_names: dict[str, dict[int, str]] = {}


def _table(kind: str) -> dict[int, str]:
    found = _names.get(kind)
    if found is None:
        # deferred: generated data; codegen imports this module (through validation) and must run
        # while generated/ is missing or stale
        from aclnngen.generated.abi import STATUS

        found = _names[kind] = {int(code): name for code, (name, _meaning) in STATUS[kind].items()}
    return found


def __getattr__(attr: str):
    kind = _NAME_TABLES.get(attr)
    if kind is None:
        raise AttributeError(f"module {__name__!r} has no attribute {attr!r}")
    return _table(kind)


VALIDATION_STATUSES = (161001, 161002)


def status_name(status: int) -> str:
    """The symbolic name of an aclnnStatus, or `UNKNOWN_ACLNN_STATUS` for a code not in the header."""
    return _table("aclnnStatus").get(status, "UNKNOWN_ACLNN_STATUS")


def acl_error_name(code: int) -> str:
    """The symbolic name of an aclError, or `UNKNOWN_ACL_ERROR`."""
    return _table("aclError").get(code, "UNKNOWN_ACL_ERROR")


def _symbol(op: str | None) -> str:
    if not op:
        return "aclnn op"
    return op if op.startswith("aclnn") else f"aclnn{op}"


def _restore(cls, args, state):
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class AclnnError(Exception):
    """Base of every runtime error a user can cause; the CLI prints it without a traceback."""

    user_facing = True

    # Keyword-only constructors do not survive the default pickling of exceptions (which calls
    # cls(*args)); rebuild from the attributes instead, so errors cross process boundaries.
    def __reduce__(self):
        return (_restore, (type(self), self.args, dict(self.__dict__)))


class AclnnValidationError(AclnnError):
    """The validator rejected an argument, with the status the C library documents for it.

    Attributes: `status` (161001 or 161002), `status_name`, `op` (the op's name, e.g.
    "GeluBackward"), `param` (the C name of the offending parameter; None for a problem of the op
    as a whole, such as an unsupported product family), `family`, `version`, `check` (which check
    failed: "null_pointer", "product", "dtype", a rule kind, "scalar_range", "attribute"),
    `found` (what was passed: a dtype, a shape, a value) and `allowed` (what is accepted).
    """

    def __init__(
        self,
        *,
        status: int,
        op: str,
        param: str | None,
        family: str | None,
        detail: str,
        found: Any = None,
        allowed: Any = None,
        check: str | None = None,
        version: str | None = None,
    ):
        if status not in VALIDATION_STATUSES:
            raise ValueError(f"a validation error has status 161001 or 161002, not {status!r}")
        self.status = status
        self.status_name = status_name(status)
        self.op = op
        self.param = param
        self.family = family
        self.version = None if version is None else str(version)
        self.check = check
        self.found = found
        self.allowed = allowed
        self.detail = detail
        where = [f"family {family!r}" if family is not None else "any family"]
        if self.version is not None:
            where.append(f"CANN {self.version}")
        super().__init__(f"{_symbol(op)}: {detail} [{', '.join(where)}; status {status} {self.status_name}]")


# What a tensor argument may be (the generated bindings' TensorLike, runtime/hints.py).
TENSOR_TYPES = (
    "a NumPy array, an aclnngen DeviceArray, or an object exposing __array_interface__, __array__ "
    "or __dlpack__ on the CPU (e.g. a PyTorch CPU tensor, bfloat16 included)"
)


class AclnnArgumentTypeError(AclnnValidationError, TypeError):
    """A value of the wrong Python type where a tensor belongs (a list, a Python number, an object
    NumPy cannot read): a TypeError, carrying the status the library would give (161002)."""


class AclnnStatusError(AclnnError):
    """A function of the C library returned a non-zero aclnnStatus.

    `recent_message` is what `aclGetRecentErrMsg` returned right after the failure (may be None).
    """

    def __init__(self, *, status: int, op: str | None, function: str, recent_message: str | None = None):
        self.status = int(status)
        self.status_name = status_name(self.status)
        self.op = op
        self.function = function
        self.recent_message = recent_message
        text = f"{function} returned {self.status} ({self.status_name})"
        if op:
            text += f" for {_symbol(op)}"
        if recent_message:
            text += f": {recent_message.strip()}"
        super().__init__(text)


class AclRuntimeError(AclnnError):
    """An ACL runtime function returned a non-zero aclError."""

    def __init__(self, *, status: int, function: str, detail: str | None = None):
        self.status = int(status)
        self.status_name = acl_error_name(self.status)
        self.function = function
        self.detail = detail
        text = f"{function} returned aclError {self.status} ({self.status_name})"
        if detail:
            text += f": {detail}"
        super().__init__(text)


class BackendError(AclnnError):
    """The backend cannot serve a call: libraries not found or not loadable, or the installed CANN
    does not export the op. Names the op, the CANN version found and every library searched."""

    def __init__(
        self,
        *,
        reason: str,
        op: str | None = None,
        cann_version: str | None = None,
        searched: Iterable[str] = (),
        hint: str | None = None,
    ):
        self.reason = reason
        self.op = op
        self.cann_version = cann_version
        self.searched = tuple(str(s) for s in searched)
        self.hint = hint
        parts = [reason]
        if op:
            parts.append(f"op: {_symbol(op)}")
        parts.append(f"CANN version: {cann_version or 'unknown'}")
        if self.searched:
            parts.append("searched: " + ", ".join(self.searched))
        text = "; ".join(parts)
        if hint:
            text += f". {hint}"
        super().__init__(text)


class CannNotFoundError(BackendError):
    """No CANN installation was found where one was asked for. Every command exits with one code
    for it (`codegen.commands.jsonout.EXIT_NO_CANN`)."""


class CallOrderError(AclnnError, RuntimeError):
    """A two-phase call used out of order: results read before the launch, or a closed call used."""

    def __init__(self, *, op: str, what: str):
        self.op = op
        super().__init__(f"{_symbol(op)}: {what}")


class OpNamespaceError(BackendError):
    """Two packages define the same C symbol and this process can hold only one of them: the op
    of `package` would call `holder`'s entry point. Names both packages; nothing is called."""

    def __init__(self, *, symbol: str, package: str, holder: str, library: str, backend: str):
        self.symbol, self.package, self.holder = symbol, package, holder
        super().__init__(
            reason=(
                f"{symbol} of package {package!r} cannot be loaded: {library} holds package "
                f"{holder!r}'s {symbol}, and one process has one {symbol} on the {backend} backend"
            ),
            op=symbol,
            searched=(library,),
            hint=(
                "use one of the two packages in this process, or rename the op in one spec"
                if backend != "sim"
                else f"let package {package!r} bring its own simulator entry points (its c/sim_ops.c)"
            ),
        )


class UnknownSocError(AclnnError):
    """`aclrtGetSocName` returned a name that no product family matches. The runtime never guesses
    a family: it says so and lists what it knows."""

    def __init__(self, *, soc_name: str | None, known: Iterable[str] = ()):
        self.soc_name = soc_name
        self.known = tuple(known)
        if soc_name is None:
            text = "aclrtGetSocName returned NULL: the SoC, and so the product family, is unknown"
        else:
            text = (
                f"aclrtGetSocName returned {soc_name!r}, which matches no product family in "
                f"specs/products.yaml; refusing to guess the family"
            )
        if self.known:
            text += f" (known SoC names: {', '.join(self.known)})"
        super().__init__(text)
