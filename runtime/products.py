"""Product families at run time: which family an `aclrtGetSocName()` string belongs to.

The table is generated (generated/products.py, from specs/products.yaml). A SoC name maps to a
family by an exact name first, then by the longest matching prefix (the 950 series is known by
prefixes such as "Ascend950PR_"). A name that matches nothing raises `UnknownSocError`: the runtime
never guesses a family, because the family decides which dtypes an op accepts.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Mapping

from aclnngen.generated import products as generated_products

from .errors import UnknownSocError

__all__ = [
    "families",
    "family_ids",
    "family_label",
    "family_of",
    "soc_for_family",
    "known_soc_names",
]

# The suffix that turns a family's SoC prefix into a plausible full name ("Ascend950PR_9579").
PREFIX_SUFFIX = "9579"


def families() -> list[Mapping]:
    """The generated product table (list of dicts: id, label, doc_names, soc_names, soc_prefixes)."""
    return generated_products.FAMILIES


def family_ids() -> tuple[str, ...]:
    return tuple(f["id"] for f in families())


@lru_cache(maxsize=None)
def _exact() -> dict[str, str]:
    table: dict[str, str] = {}
    for family in families():
        for name in family.get("soc_names") or ():
            table.setdefault(name, family["id"])
    return table


@lru_cache(maxsize=None)
def _prefixes() -> tuple[tuple[str, str], ...]:
    pairs = [(p, f["id"]) for f in families() for p in f.get("soc_prefixes") or ()]
    return tuple(sorted(pairs, key=lambda pair: -len(pair[0])))  # longest prefix first


def known_soc_names() -> tuple[str, ...]:
    """Every exact SoC name and every prefix (written `Prefix*`), for error messages."""
    return tuple(_exact()) + tuple(f"{p}*" for p, _ in _prefixes())


@lru_cache(maxsize=256)
def family_of(soc_name: str | None) -> str:
    """The family id of an `aclrtGetSocName()` answer; UnknownSocError when none matches."""
    if soc_name is None:
        raise UnknownSocError(soc_name=None, known=known_soc_names())
    found = _exact().get(soc_name)
    if found is not None:
        return found
    for prefix, family in _prefixes():
        if soc_name.startswith(prefix) and len(soc_name) > len(prefix):
            return family
    raise UnknownSocError(soc_name=soc_name, known=known_soc_names())


def family_label(family: str) -> str:
    for f in families():
        if f["id"] == family:
            return f["label"]
    raise KeyError(f"unknown product family {family!r}; known: {', '.join(family_ids())}")


def soc_for_family(family: str) -> str:
    """A SoC name that identifies `family`: its first exact name, else its first prefix + "9579"."""
    for f in families():
        if f["id"] != family:
            continue
        if f.get("soc_names"):
            return f["soc_names"][0]
        if f.get("soc_prefixes"):
            return f["soc_prefixes"][0] + PREFIX_SUFFIX
        raise ValueError(f"product family {family!r} lists no SoC name or prefix")
    raise ValueError(f"unknown product family {family!r}; known: {', '.join(family_ids())}")
