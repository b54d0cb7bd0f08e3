"""CANN release numbers and the version ranges a fact may hold for.

Releases are spelt like `8.0.RC1`, `8.0.0`, `8.1.RC1`, `8.5.0` and community builds like
`8.0.0.alpha002`. Within one major.minor line: alphas < release candidates < releases.
"""

from __future__ import annotations

import re
from functools import total_ordering

_PATTERN = re.compile(
    r"^(?P<major>\d+)\.(?P<minor>\d+)\.(?:RC(?P<rc>\d+)|(?P<patch>\d+))(?:\.alpha(?P<alpha>\d+))?$"
)

VERSION_HELP = "a CANN release such as '8.0.RC1', '8.0.0', '8.5.0' or '8.0.0.alpha002'"


@total_ordering
class CannVersion:
    """A parsed CANN release; compares in release order and prints back as parsed."""

    __slots__ = ("text", "_key")

    def __init__(self, text: str):
        match = _PATTERN.match(text)
        if match is None:
            raise ValueError(f"{text!r} is not {VERSION_HELP}")
        major, minor = int(match["major"]), int(match["minor"])
        if match["rc"] is not None:
            stage, number = 1, int(match["rc"])
        else:
            stage, number = 2, int(match["patch"])
        alpha = match["alpha"]
        # An alpha build precedes the release or candidate it is numbered after.
        self._key = (major, minor, stage, number, 0 if alpha is not None else 1, int(alpha or 0))
        self.text = text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CannVersion) and self._key == other._key

    def __lt__(self, other: "CannVersion") -> bool:
        return self._key < other._key

    def __hash__(self) -> int:
        return hash(self._key)

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"CannVersion({self.text!r})"


def is_version(text: str) -> bool:
    return bool(_PATTERN.match(text))


def holds_at(since: str | None, until: str | None, version: str | CannVersion) -> bool:
    """Whether a fact documented from `since` (inclusive) until `until` (exclusive) holds."""
    v = version if isinstance(version, CannVersion) else CannVersion(version)
    if since is not None and v < CannVersion(since):
        return False
    if until is not None and not v < CannVersion(until):
        return False
    return True
