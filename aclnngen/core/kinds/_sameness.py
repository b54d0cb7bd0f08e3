"""The two sameness kinds (same_shape, same_dtype) share their check: every listed tensor agrees
with the first one present on one property."""

from __future__ import annotations

from typing import Callable, Mapping

from .base import Violation, first_violation, listed


def sameness_checker(rule: Mapping, check: str, field: int, noun: str, show: Callable):
    params, status = tuple(rule["params"]), rule["status"]

    def run(info) -> Violation | None:
        ref = None
        for name in params:
            entry = info.get(name)
            if entry is None:
                continue
            if ref is None:
                ref = (name, entry[field])
            elif entry[field] != ref[1]:
                return Violation(
                    status,
                    name,
                    f"{name} has {noun} {show(entry[field])} but {ref[0]} has {noun} {show(ref[1])}; "
                    f"{listed(params)} must have the same {noun}",
                    found=entry[field],
                    allowed=ref[1],
                )
        return None

    return first_violation(rule, run)


def same_as_other(rule: Mapping, name: str, known: Mapping):
    """The value of another listed tensor already known, for a listed output."""
    if name in rule["params"]:
        for other in rule["params"]:
            if other != name and other in known:
                return known[other]
    return None
