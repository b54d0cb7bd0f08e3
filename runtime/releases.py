"""Which CANN releases an op's spec describes, and the one warning per op when the installed
release lies outside them (the spec's facts may then be stale or premature)."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from .versions import CannVersion, as_release, is_version


class CannReleaseWarning(UserWarning):
    """The installed CANN release is outside every release a spec's facts cover."""


_warned: set[str] = set()


def known_releases(meta: Mapping[str, Any]) -> list[CannVersion]:
    """The page's release and every release a versioned fact starts or ends at, oldest first."""
    found = {meta["cann_version"]}

    def visit(node: Any) -> None:
        if isinstance(node, Mapping):
            for key in ("since", "until"):
                value = node.get(key)
                if isinstance(value, str):
                    found.add(value)
            for value in node.values():
                visit(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                visit(value)

    visit(meta)
    return sorted(CannVersion(v) for v in found if is_version(v))


def check_release(meta: Mapping[str, Any], installed: str | None) -> str | None:
    """Warn once per op when `installed` is outside the releases the spec knows; returns the
    message (None when inside, unknown or already warned)."""
    installed = as_release(installed)
    if installed is None or meta["name"] in _warned:
        return None
    known = known_releases(meta)
    version = CannVersion(installed)
    if known[0] <= version <= known[-1]:
        return None
    nearest = known[0] if version < known[0] else known[-1]
    _warned.add(meta["name"])
    message = (
        f"aclnn{meta['name']}: the installed CANN {installed} is outside the releases its spec describes "
        f"({known[0]} to {known[-1]}); the nearest known release is {nearest}, whose facts are used"
    )
    warnings.warn(CannReleaseWarning(message), stacklevel=3)
    return message
