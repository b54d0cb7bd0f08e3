"""The dtype names a spec may use, their categories (float, integer, bool, complex), the order
test cases list them in, casting, and PyTorch-style promotion (`PROMOTION`, `promote_names`).

One table, so the spec model, the test planner, the numerics, the case builders and the data
generators agree on what a dtype is (a spec's integer or complex tensor is not a float with
another name). Names only: the NumPy dtype of each name is `runtime.shapes.NUMPY_DTYPES`.

The narrow formats of the newer products (float8, float4, hifloat8, int4) are names too, so a
binding-tier spec can list them and its binding can pass them; they promote with nothing but
themselves (PyTorch has no promotion for them either) and NumPy holds them through ml_dtypes, or,
where ml_dtypes has no such type (`BITS_ONLY`), as raw bytes of their width.
"""

from __future__ import annotations

from typing import Iterable

# The dtype names a spec may use, as NumPy and ml_dtypes spell them (codegen.model.DTYPES is this list).
ALL_DTYPES: tuple[str, ...] = (
    "float16",
    "float32",
    "bfloat16",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "complex64",
    "complex128",
    *("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "hifloat8", "float4_e2m1fn", "float4_e1m2", "int4"),
)

# Narrow dtypes NumPy (and ml_dtypes) has no type for: held as raw bytes, never computed with.
BITS_ONLY: frozenset[str] = frozenset({"hifloat8", "float4_e1m2"})

# The narrow dtypes (below 16 bits, not int8/uint8/bool): storage and transport only.
NARROW: frozenset[str] = frozenset(
    {"float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "hifloat8", "float4_e2m1fn", "float4_e1m2", "int4"}
)

CATEGORIES = ("float", "integer", "bool", "complex")

CATEGORY: dict[str, str] = {
    **{name: "float" for name in ("float16", "bfloat16", "float32", "float64")},
    **{name: "integer" for name in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")},
    **{name: "integer" if name == "int4" else "float" for name in NARROW},
    "bool": "bool",
    **{name: "complex" for name in ("complex64", "complex128")},
}

# The order test cases list dtypes in: floats by width first (the common case), then the others.
_ORDER = (
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "complex64",
    "complex128",
    *("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "hifloat8", "float4_e2m1fn", "float4_e1m2", "int4"),
)

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


class PromotionError(TypeError):
    """Dtypes that have no common dtype under `PROMOTION` (or a dtype the table does not know)."""


# --- dtype promotion ----------------------------------------------------------------------------

_KIND = {"bool": 0}
_BITS: dict[str, int] = {"bool": 1}
for _n in ("int8", "int16", "int32", "int64"):
    _KIND[_n], _BITS[_n] = 1, int(_n[3:])
for _n in ("uint8", "uint16", "uint32", "uint64"):
    _KIND[_n], _BITS[_n] = 1, int(_n[4:])
for _n, _b in (("float16", 16), ("bfloat16", 16), ("float32", 32), ("float64", 64)):
    _KIND[_n], _BITS[_n] = 2, _b
for _n, _b in (("complex64", 64), ("complex128", 128)):
    _KIND[_n], _BITS[_n] = 3, _b


def _promote_pair(a: str, b: str) -> str | None:
    if a == b:
        return a
    if a in NARROW or b in NARROW:
        return None  # a narrow dtype has no common dtype with another
    ka, kb = _KIND[a], _KIND[b]
    if ka != kb:
        hi, lo = (a, b) if ka > kb else (b, a)
        if _KIND[hi] == 3 and _KIND[lo] == 2 and _BITS[lo] == 64:
            return "complex128"  # complex64 with float64 keeps float64's precision
        return hi  # bool < integer < floating < complex: the higher kind wins (PyTorch)
    if ka == 1:
        sa, sb = not a.startswith("u"), not b.startswith("u")
        if sa == sb:
            return a if _BITS[a] >= _BITS[b] else b
        signed, unsigned = (a, b) if sa else (b, a)
        if _BITS[signed] > _BITS[unsigned]:
            return signed
        wider = 2 * _BITS[unsigned]
        return f"int{wider}" if wider <= 64 else None  # uint64 with a signed int has no common type
    if ka == 2:
        if {a, b} == {"float16", "bfloat16"}:
            return "float32"
        return a if _BITS[a] >= _BITS[b] else b
    return a if _BITS[a] >= _BITS[b] else b


# PROMOTION[(a, b)]: the dtype a and b promote to, or None when they have no common dtype.
PROMOTION: dict[tuple[str, str], str | None] = {(a, b): _promote_pair(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}


def promote_names(names: Iterable[str]) -> str | None:
    """The promoted dtype name of `names`, or None if they have none (or a name is unknown)."""
    result = None
    for name in names:
        if name not in _KIND and name not in NARROW:
            return None
        result = name if result is None else PROMOTION[(result, name)]
        if result is None:
            return None
    return result
