"""The importer's one mapping from a prototype's C parameter type to what the spec language makes
of it: a tensor, a scalar or an attribute of a given `c_type`, or a type the spec language does not
know yet. The spec language's own lists (codegen/model.py `ATTRIBUTE_C_TYPES`) decide, so a C type
the model learns is imported the moment it is added there; a type with no spec form is reported per
page as `unsupported type X` (one reason string, counted by `aclnngen catalog`)."""

from __future__ import annotations

from dataclasses import dataclass

from ..model import ATTRIBUTE_C_TYPES


@dataclass(frozen=True)
class SpecType:
    kind: str | None  # "tensor", "scalar", "attribute"; None: the spec language has no form for it
    c_type: str  # the type without `const` and blanks, e.g. "aclTensor*", "int64_t"
    writable: bool = False  # a non-const pointer: the library may write through it
    is_list: bool = False  # an aclTensorList* or aclScalarList*: the spec's `list: true`

    @property
    def unsupported(self) -> str | None:
        """The reason the spec language cannot hold the parameter, or None."""
        return None if self.kind is not None else unsupported_reason(self.c_type)


def unsupported_reason(c_type: str) -> str:
    return f"unsupported type {c_type}"


def spec_type(c_type: str) -> SpecType:
    """What the spec language makes of one C parameter type as a prototype prints it."""
    compact = c_type.replace(" ", "")
    bare = compact.replace("const", "")
    writable = not compact.startswith("const")
    if bare in ("aclTensor*", "aclTensorList*"):
        return SpecType("tensor", bare, writable, is_list=bare == "aclTensorList*")
    if bare in ("aclScalar*", "aclScalarList*"):
        return SpecType("scalar", bare, writable, is_list=bare == "aclScalarList*")
    if bare in ATTRIBUTE_C_TYPES:
        return SpecType("attribute", bare, writable)
    return SpecType(None, bare, writable)
