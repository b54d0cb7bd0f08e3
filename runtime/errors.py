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

# aclnnStatus (include/aclnn/opdev/op_errno.h).
ACLNN_STATUS_NAMES: dict[int, str] = {
    0: "ACLNN_SUCCESS",
    161001: "ACLNN_ERR_PARAM_NULLPTR",
    161002: "ACLNN_ERR_PARAM_INVALID",
    361001: "ACLNN_ERR_RUNTIME_ERROR",
    561000: "ACLNN_ERR_INNER",
    561001: "ACLNN_ERR_INNER_INFERSHAPE_ERROR",
    561002: "ACLNN_ERR_INNER_TILING_ERROR",
    561003: "ACLNN_ERR_INNER_FIND_KERNEL_ERROR",
    561101: "ACLNN_ERR_INNER_CREATE_EXECUTOR",
    561102: "ACLNN_ERR_INNER_NOT_TRANS_EXECUTOR",
    561103: "ACLNN_ERR_INNER_NULLPTR",
    561104: "ACLNN_ERR_INNER_WRONG_ATTR_INFO_SIZE",
    561105: "ACLNN_ERR_INNER_KEY_CONFLICT",
    561106: "ACLNN_ERR_INNER_INVALID_IMPL_MODE",
    561107: "ACLNN_ERR_INNER_OPP_PATH_NOT_FOUND",
    561108: "ACLNN_ERR_INNER_LOAD_JSON_FAILED",
    561109: "ACLNN_ERR_INNER_JSON_VALUE_NOT_FOUND",
    561110: "ACLNN_ERR_INNER_JSON_FORMAT_INVALID",
    561111: "ACLNN_ERR_INNER_JSON_DTYPE_INVALID",
    561112: "ACLNN_ERR_INNER_OPP_KERNEL_PKG_NOT_FOUND",
    561113: "ACLNN_ERR_INNER_OP_FILE_INVALID",
    561114: "ACLNN_ERR_INNER_ATTR_NUM_OUT_OF_BOUND",
    561115: "ACLNN_ERR_INNER_ATTR_LEN_NOT_ENOUGH",
    561116: "ACLNN_ERR_INNER_INPUT_NUM_IN_JSON_TOO_LARGE",
    561117: "ACLNN_ERR_INNER_INPUT_JSON_IS_NULL",
    561118: "ACLNN_ERR_INNER_STATIC_WORKSPACE_INVALID",
    561119: "ACLNN_ERR_INNER_STATIC_BLOCK_DIM_INVALID",
}

# aclError (acl/acl_base_rt.h, acl/error_codes/rt_error_codes.h): the codes the fact sheet lists.
ACL_ERROR_NAMES: dict[int, str] = {
    0: "ACL_SUCCESS",
    100000: "ACL_ERROR_INVALID_PARAM",
    100001: "ACL_ERROR_UNINITIALIZE",
    100002: "ACL_ERROR_REPEAT_INITIALIZE",
    100037: "ACL_ERROR_REPEAT_FINALIZE",
    107000: "ACL_ERROR_RT_PARAM_INVALID",
    107002: "ACL_ERROR_RT_CONTEXT_NULL",
    200000: "ACL_ERROR_BAD_ALLOC",
    200001: "ACL_ERROR_API_NOT_SUPPORT",
    200002: "ACL_ERROR_INVALID_DEVICE",
    207000: "ACL_ERROR_RT_FEATURE_NOT_SUPPORT",
    207001: "ACL_ERROR_RT_MEMORY_ALLOCATION",
    500000: "ACL_ERROR_INTERNAL_ERROR",
    500001: "ACL_ERROR_FAILURE",
    500003: "ACL_ERROR_RT_FAILURE",
    507000: "ACL_ERROR_RT_INTERNAL_ERROR",
    507015: "ACL_ERROR_RT_AICORE_EXCEPTION",
    507046: "ACL_ERROR_RT_STREAM_SYNC_TIMEOUT",
}

VALIDATION_STATUSES = (161001, 161002)


def status_name(status: int) -> str:
    """The symbolic name of an aclnnStatus, or `UNKNOWN_ACLNN_STATUS` for a code not in the header."""
    return ACLNN_STATUS_NAMES.get(status, "UNKNOWN_ACLNN_STATUS")


def acl_error_name(code: int) -> str:
    """The symbolic name of an aclError, or `UNKNOWN_ACL_ERROR`."""
    return ACL_ERROR_NAMES.get(code, "UNKNOWN_ACL_ERROR")


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
