"""Which CANN releases an op's spec describes, and the one warning per op when the installed
release lies outside them (the spec's facts may then be stale or premature)."""

from __future__ import annotations

import functools
import re
import warnings
from collections.abc import Mapping
from typing import Any

from .versions import CannVersion, is_version


_TAG = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-(beta|rc)\.(\d+))?(\.pre)?$")


@functools.lru_cache(maxsize=256)  # asked on every call with the library's answer: a pure function of it
def as_release(text: str | None) -> str | None:
    """A CANN release spelling for `text`: itself when it is one (8.5.0, 8.0.RC1), else the
    spelling a vendor tag or version string stands for, in the same order as the vendor's
    pre-releases (beta < rc < release, as the simulator numbers them):
    9.2.0-beta.1 -> 9.2.RC1.alpha001 (before 9.2.RC1), 9.0.0-rc.1 -> 9.0.RC1,
    9.1.0.pre -> 9.1.0.alpha099 (after the candidates, before 9.1.0); for a patch release
    9.0.1-beta.2 -> 9.0.1.alpha002. None when it is neither."""
    if text is None:
        return None
    if is_version(text):
        return text
    match = _TAG.match(text)
    if not match:
        return None
    major, minor, patch, stage, number, pre = match.groups()
    if stage == "rc":
        return f"{major}.{minor}.RC{number}" if patch == "0" else f"{major}.{minor}.{patch}.alpha{50 + int(number):03d}"
    if stage == "beta":
        return f"{major}.{minor}.RC1.alpha{int(number):03d}" if patch == "0" else f"{major}.{minor}.{patch}.alpha{int(number):03d}"
    return f"{major}.{minor}.{patch}" + (".alpha099" if pre else "")


def simulator_spelling(release: str) -> str:
    """How the simulator (and CANN's version strings) spell a release that `as_release` made from
    a vendor pre-release: X.Y.RC1.alpha00N -> X.Y.0-beta.N; others are spelt as they are."""
    match = re.fullmatch(r"(\d+)\.(\d+)\.RC1\.alpha0*(\d+)", release)
    return f"{match.group(1)}.{match.group(2)}.0-beta.{match.group(3)}" if match else release


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
