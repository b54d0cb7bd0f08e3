"""Dtype categories: float, integer, bool, complex, for every dtype name a spec may use.

One table, so the test planner, the numerics, the case builders and the data generators agree on
what a dtype is (a spec's integer or complex tensor is not a float with another name).
"""

from __future__ import annotations

from .shapes import ALL_DTYPES

CATEGORIES = ("float", "integer", "bool", "complex")

CATEGORY: dict[str, str] = {
    **{name: "float" for name in ("float16", "bfloat16", "float32", "float64")},
    **{name: "integer" for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")},
    "bool": "bool",
    **{name: "complex" for name in ("complex64", "complex128")},
}

# The order test cases list dtypes in: floats by width first (the common case), then the others.
_ORDER = ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64",
          "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128")

assert set(CATEGORY) == set(ALL_DTYPES) == set(_ORDER), "every spec dtype needs a category and a place in the order"


def category(name: str) -> str:
    """The category of a dtype name; KeyError naming the known dtypes for anything else."""
    try:
        return CATEGORY[name]
    except KeyError:
        raise KeyError(f"unknown dtype {name!r}; known: {', '.join(ALL_DTYPES)}") from None


def sort_key(name: str) -> int:
    """Position of a dtype name in the listing order (floats by width, integers, bool, complex)."""
    category(name)
    return _ORDER.index(name)


_CAST_ORDER = {"bool": 0, "integer": 1, "float": 2, "complex": 3}


def can_cast(source: str, target: str) -> bool:
    """torch.can_cast over dtype names: a value may be cast to a dtype of the same or a higher
    category (bool < integer < float < complex), never down a category."""
    return _CAST_ORDER[category(source)] <= _CAST_ORDER[category(target)]
