"""The C types an attribute (a plain C argument of an aclnn API, not a tensor or an aclScalar) may
have, and what each means on every side: the prototype's type, the Python type hint, the value
the planner picks when the spec gives none, the simulator's argument kind, the creator and
destructor of the array kinds, and which values fit (`misfit`).

One table for the spec model, the cross-field checks, the binding's signature, the call path,
the validator, the planner and the simulator's entry points. Pure Python over plain values (a
NumPy scalar counts as the Python number it holds).
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

FLOAT32_MAX = 3.4028234663852886e38


@dataclass(frozen=True)
class AttributeType:
    """One C type an attribute may have, with what each consumer reads of it (a docstring also
    spares dataclass() building one from inspect.signature at import)."""

    c_type: str  # as a spec writes it: "int8_t", "aclFloatArray*"
    base: str  # the prototype's base type
    pointer_depth: int  # 0 for a value, 1 for a pointer (NULL when absent)
    element: str  # "bool" | "int" | "float" | "str": what one value (or array element) is
    hint: str  # the Python type hint of the binding's argument
    neutral: Any  # the value a test takes when the spec states no default and no choice
    sim_kind: str  # the simulator's argument kind (runtime/sim/aclsim_controls.h)
    bounds: tuple[int, int] | None = None  # integers: inclusive range
    float_max: float | None = None  # floats: the largest finite magnitude the C type holds
    create: str | None = None  # arrays: aclCreateXxxArray(const T* value, uint64_t size)
    destroy: str | None = None  # arrays: aclDestroyXxxArray
    c_element: str | None = None  # arrays: the element's C type (cffi's spelling)

    @property
    def is_pointer(self) -> bool:
        return self.pointer_depth > 0

    @property
    def is_array(self) -> bool:
        return self.create is not None


def _int(bits: int) -> tuple[int, int]:
    return -(2 ** (bits - 1)), 2 ** (bits - 1) - 1


ATTRIBUTE_TYPES: dict[str, AttributeType] = {
    t.c_type: t
    for t in (
        AttributeType("bool", "bool", 0, "bool", "bool", False, "SIM_ARG_BOOL"),
        AttributeType("int8_t", "int8_t", 0, "int", "int", 0, "SIM_ARG_INT64", bounds=_int(8)),
        AttributeType("int32_t", "int32_t", 0, "int", "int", 0, "SIM_ARG_INT64", bounds=_int(32)),
        AttributeType("int64_t", "int64_t", 0, "int", "int", 0, "SIM_ARG_INT64", bounds=_int(64)),
        AttributeType("int", "int", 0, "int", "int", 0, "SIM_ARG_INT64", bounds=_int(32)),
        # the simulator carries integers as int64_t: a uint64_t above its range cannot pass through
        AttributeType("uint64_t", "uint64_t", 0, "int", "int", 0, "SIM_ARG_INT64", bounds=(0, 2**63 - 1)),
        # an enum of the ABI (aclsim_abi.h, the cdef): the value is the dtype's number, ACL_FLOAT = 0
        AttributeType("aclDataType", "aclDataType", 0, "int", "int", 0, "SIM_ARG_INT64", bounds=_int(32)),
        AttributeType("float", "float", 0, "float", "float", 0.0, "SIM_ARG_DOUBLE", float_max=FLOAT32_MAX),
        AttributeType("double", "double", 0, "float", "float", 0.0, "SIM_ARG_DOUBLE"),
        AttributeType("char*", "char", 1, "str", "str", "", "SIM_ARG_STRING"),
        AttributeType(
            "aclIntArray*",
            "aclIntArray",
            1,
            "int",
            "Sequence[int]",
            [],
            "SIM_ARG_INT_ARRAY",
            bounds=_int(64),
            create="aclCreateIntArray",
            destroy="aclDestroyIntArray",
            c_element="int64_t",
        ),
        AttributeType(
            "aclFloatArray*",
            "aclFloatArray",
            1,
            "float",
            "Sequence[float]",
            [],
            "SIM_ARG_FLOAT_ARRAY",
            float_max=FLOAT32_MAX,
            create="aclCreateFloatArray",
            destroy="aclDestroyFloatArray",
            c_element="float",
        ),
        AttributeType(
            "aclBoolArray*",
            "aclBoolArray",
            1,
            "bool",
            "Sequence[bool]",
            [],
            "SIM_ARG_BOOL_ARRAY",
            create="aclCreateBoolArray",
            destroy="aclDestroyBoolArray",
            c_element="bool",
        ),
    )
}
ATTRIBUTE_C_TYPES: tuple[str, ...] = tuple(ATTRIBUTE_TYPES)
# attributes passed as pointers: a NULL one is a null-pointer case when it has no default
POINTER_C_TYPES: tuple[str, ...] = tuple(c for c, t in ATTRIBUTE_TYPES.items() if t.is_pointer)


def _is_bool(value: Any) -> bool:
    # NumPy's bool scalar is no subclass of bool; core does not import NumPy, so it goes by name
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool") and hasattr(value, "item")


def _element_misfit(t: AttributeType, value: Any) -> str | None:
    """Why one value (or array element) is no value of `t`'s element type; None when it fits."""
    if t.element == "bool":
        return None if _is_bool(value) else f"{value!r} is not a bool"
    if t.element == "str":
        if not isinstance(value, str):
            return f"{value!r} is not a str"
        return "it holds a NUL character" if "\x00" in value else None
    if _is_bool(value) or isinstance(value, (str, bytes, list, tuple, dict)):
        what = "a sequence" if isinstance(value, (list, tuple)) else type(value).__name__
        return f"{value!r} is {what}, not a number"
    if t.element == "int":
        if not isinstance(value, numbers.Integral):
            return f"{value!r} is not an integer"
        lo, hi = t.bounds or _int(64)
        if not lo <= int(value) <= hi:
            return f"{value!r} is outside the {t.base if not t.is_array else t.c_element} range {lo}..{hi}"
        return None
    if not isinstance(value, numbers.Real):
        return f"{value!r} is not a real number"
    if t.float_max is not None:
        f = float(value)
        if not math.isfinite(f):
            return f"{value!r} is not finite"
        if abs(f) > t.float_max:
            return f"{value!r} does not fit a float (largest magnitude {t.float_max:g})"
    return None


def misfit(c_type: str, value: Any) -> str | None:
    """Why `value` is no valid argument of an attribute of `c_type` (wrong type, out of range, an
    array that is no flat sequence), as a phrase naming the element at fault; None when it fits.
    None (NULL) is the caller's to judge."""
    t = ATTRIBUTE_TYPES[c_type]
    if not t.is_array:
        return _element_misfit(t, value)
    if not isinstance(value, (list, tuple)):
        return f"{type(value).__name__} is not a sequence; a {c_type} takes a list or tuple"
    for index, item in enumerate(value):
        why = _element_misfit(t, item)
        if why is not None:
            return f"element {index}: {why}"
    return None
