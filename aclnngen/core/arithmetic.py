"""Arithmetic as the library does it: a spec's `arithmetic` facts as plain data, and the answers
the evaluator, the oracle and the docs read from them.

META["arithmetic"] (absent: the default model of aclnngen/evaluate/numerics.py) =
    {"compute": [{"storage": [dtype names], "compute": dtype name, "families": [...]}],
     "to_integer": one of TO_INTEGER,
     "scalars": [{"storage": [dtype names], "round_to": dtype name, "families": [...]}]}

`storage` is the dtype the op's tensor inputs hold (their promoted dtype); a row without families
holds on every family. The first row that matches wins.
"""

from __future__ import annotations

from typing import Mapping

# How a result computed in a float dtype becomes an integer or bool output.
TO_INTEGER = ("truncate", "nearest_even", "floor")
TO_INTEGER_MEANING = {
    "truncate": "toward zero, as a C cast does",
    "nearest_even": "to the nearest integer, ties to even",
    "floor": "toward minus infinity",
}
DEFAULT_TO_INTEGER = "truncate"


def _row(rows, storage: str, family: str | None) -> Mapping | None:
    for row in rows or ():
        if storage in row["storage"] and (not row.get("families") or family in row["families"]):
            return row
    return None


def compute_dtype(arithmetic: Mapping | None, storage: str, family: str | None) -> str | None:
    """The dtype the spec says the op computes in for inputs stored as `storage` on `family`; None
    where it says nothing (the default model then holds)."""
    row = _row((arithmetic or {}).get("compute"), storage, family)
    return None if row is None else row["compute"]


def scalar_precision(arithmetic: Mapping | None, storage: str, family: str | None) -> str | None:
    """The dtype each scalar is rounded to before computing on data stored as `storage`; None where
    the spec says nothing (the scalar is held in its aclScalar's dtype)."""
    row = _row((arithmetic or {}).get("scalars"), storage, family)
    return None if row is None else row["round_to"]


def to_integer(arithmetic: Mapping | None) -> str:
    return (arithmetic or {}).get("to_integer") or DEFAULT_TO_INTEGER
