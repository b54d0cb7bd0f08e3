"""Which section of docs/spec-language.md describes the key at a spec location, so every
validation error can point the writer at the documentation of what they got wrong."""

from __future__ import annotations

DOC = "docs/spec-language.md"

_TOP = {
    "source": "source",
    "products": "products",
    "prototypes": "prototypes",
    "page_prototypes": "prototypes",
    "parameters": "parameters",
    "rules": "rules",
    "formula": "formula",
    "return_codes": "return-codes",
    "oracle": "oracle",
    "defects": "defects",
}
_PARAMETER_KEYS = {
    "role": "roles",
    "dtypes": "dtypes",
    "optional": "dtypes",
    "meaning": "input-meanings",
    "forward": "input-meanings",
    "scalar_dtype": "scalars",
    "scalar_dtypes": "scalars",
    "default": "scalars",
    "constraints": "scalar-constraints",
    "c_type": "attributes",
    "choices": "attributes",
}


def section_for(loc: tuple) -> str:
    """The anchor (without '#') of the section that documents `loc` (a path from the root)."""
    if not loc:
        return "top-level-keys"
    head = loc[0]
    if head == "parameters":
        for key in loc[1:]:
            if key in _PARAMETER_KEYS:
                return _PARAMETER_KEYS[key]
        return "parameters"
    return _TOP.get(head, "top-level-keys")


def pointer(loc: tuple) -> str:
    return f"(see {DOC}#{section_for(tuple(loc))})"
