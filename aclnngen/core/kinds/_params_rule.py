"""The kinds over a list of tensors, each checked on its own (ranks, empty, layout)."""

from __future__ import annotations

from typing import Callable, Mapping

from .base import Violation


def each_checker(rule: Mapping, bad: Callable[[tuple], bool], violation: Callable[[str, tuple], Violation]):
    params = tuple(rule["params"])

    def run(info, contiguous) -> Violation | None:
        for name in params:
            entry = info.get(name)
            if entry is not None and bad(name, entry, contiguous):
                return violation(name, entry[0])
        return None

    return run
