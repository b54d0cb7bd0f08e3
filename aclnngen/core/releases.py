"""CANN releases: the one place where their spellings are parsed, ordered and printed.

A release is written either as the vendor tags it in its repositories (`v8.5.0`, `v9.0.0-rc.1`,
`v9.2.0-beta.1`, `v9.1.0.pre`) or in the internal spelling of the specs and of CANN's older
version strings (`8.5.0`, `8.0.RC1`, `9.2.RC1.alpha001`, community builds like `8.0.0.alpha002`).
Both spellings are accepted everywhere (`--cann`, `--at`, `--release`, `cann_version`,
`since`/`until`); `as_release` turns either into the internal spelling, which the rest of the code
compares, and `vendor_tag` prints a release the way the vendor tags it.

Order within one major.minor line: alphas < release candidates < releases; a vendor beta precedes
the first release candidate (`v9.2.0-beta.1` is `9.2.RC1.alpha001`), a `.pre` build follows the
candidates and precedes the release (`v9.1.0.pre` is `9.1.0.alpha099`).

`known_releases(meta)` gathers the releases an op's META (or a spec's plain data) describes.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from functools import lru_cache, total_ordering
from typing import Any

_PATTERN = re.compile(r"^(?P<major>\d+)\.(?P<minor>\d+)\.(?:RC(?P<rc>\d+)|(?P<patch>\d+))(?:\.alpha(?P<alpha>\d+))?$")
_TAG = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)(?:-(beta|rc)\.(\d+))?(\.pre)?$")

# Either spelling, for the JSON Schema of the specs (an editor flags a misspelt release as it is typed).
RELEASE_PATTERN = (
    "^(?:"
    + _PATTERN.pattern[1:-1]
    .replace("?P<major>", "")
    .replace("?P<minor>", "")
    .replace("?P<rc>", "")
    .replace("?P<patch>", "")
    .replace("?P<alpha>", "")
    + "|"
    + _TAG.pattern[1:-1]
    + ")$"
)

VERSION_HELP = (
    "a CANN release, as the vendor tags it ('v8.5.0', 'v9.0.0-rc.1', 'v9.2.0-beta.1') "
    "or spelt internally ('8.5.0', '8.0.RC1', '9.2.RC1.alpha001')"
)


class ReleaseError(ValueError):
    """A text that is no CANN release in either spelling."""

    user_facing = True


@functools.lru_cache(maxsize=256)  # asked on every call with the library's answer: a pure function of it
def as_release(text: str | None) -> str | None:
    """The internal spelling of a release written either way; None when `text` is neither.
    9.2.0-beta.1 -> 9.2.RC1.alpha001, 9.0.0-rc.1 -> 9.0.RC1, 9.1.0.pre -> 9.1.0.alpha099,
    v8.5.0 -> 8.5.0; for a patch release 9.0.1-beta.2 -> 9.0.1.alpha002, 9.0.1-rc.1 -> 9.0.1.alpha051."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if _PATTERN.match(text):
        return text
    match = _TAG.match(text)
    if not match:
        return None
    major, minor, patch, stage, number, pre = match.groups()
    if stage == "rc":
        return f"{major}.{minor}.RC{number}" if patch == "0" else f"{major}.{minor}.{patch}.alpha{50 + int(number):03d}"
    if stage == "beta":
        return (
            f"{major}.{minor}.RC1.alpha{int(number):03d}"
            if patch == "0"
            else f"{major}.{minor}.{patch}.alpha{int(number):03d}"
        )
    return f"{major}.{minor}.{patch}" + (".alpha099" if pre else "")


def release_of(text: str, what: str = "release") -> str:
    """The internal spelling of `text`; a ReleaseError naming both accepted spellings otherwise."""
    release = as_release(text)
    if release is None:
        raise ReleaseError(f"{what} {text!r} is not {VERSION_HELP}")
    return release


def is_version(text: object) -> bool:
    """Whether `text` is a release in either spelling."""
    return as_release(text) is not None  # type: ignore[arg-type]


def vendor_tag(release: str) -> str:
    """How the vendor tags `release` (either spelling): 9.1.0 -> v9.1.0, 9.2.RC1.alpha001 ->
    v9.2.0-beta.1, 9.0.RC1 -> v9.0.0-rc.1, 9.1.0.alpha099 -> v9.1.0.pre. A community build no tag
    stands for (8.0.0.alpha002) keeps its internal spelling."""
    text = release_of(release)
    match = _PATTERN.match(text)
    assert match is not None
    major, minor, rc, patch, alpha = match["major"], match["minor"], match["rc"], match["patch"], match["alpha"]
    if rc is not None:
        if alpha is None:
            tag = f"v{major}.{minor}.0-rc.{int(rc)}"
        elif rc == "1" and 0 < int(alpha) < 50:
            tag = f"v{major}.{minor}.0-beta.{int(alpha)}"
        else:
            return text
    elif alpha is None:
        tag = f"v{major}.{minor}.{patch}"
    elif int(alpha) == 99:
        tag = f"v{major}.{minor}.{patch}.pre"
    elif patch != "0" and 50 < int(alpha) < 99:
        tag = f"v{major}.{minor}.{patch}-rc.{int(alpha) - 50}"
    elif patch != "0" and 0 < int(alpha) < 50:
        tag = f"v{major}.{minor}.{patch}-beta.{int(alpha)}"
    else:
        return text
    return tag if as_release(tag) == text else text


def simulator_spelling(release: str) -> str:
    """How the simulator (and CANN's version strings) spell a release: a vendor pre-release
    X.Y.RC1.alpha00N as X.Y.0-beta.N; others as the internal spelling."""
    text = as_release(release) or release
    match = re.fullmatch(r"(\d+)\.(\d+)\.RC1\.alpha0*(\d+)", text)
    return f"{match.group(1)}.{match.group(2)}.0-beta.{match.group(3)}" if match else text


@total_ordering
class CannVersion:
    """A parsed CANN release (either spelling); compares in release order and prints in the
    internal spelling."""

    __slots__ = ("text", "_key")

    def __init__(self, text: str):
        text = release_of(text)
        match = _PATTERN.match(text)
        assert match is not None
        major, minor = int(match["major"]), int(match["minor"])
        if match["rc"] is not None:
            stage, number = 1, int(match["rc"])
        else:
            stage, number = 2, int(match["patch"])
        alpha = match["alpha"]
        # An alpha build precedes the release or candidate it is numbered after.
        self._key = (major, minor, stage, number, 0 if alpha is not None else 1, int(alpha or 0))
        self.text = text

    @property
    def tag(self) -> str:
        return vendor_tag(self.text)

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


@lru_cache(maxsize=1024)
def parsed(text: str) -> CannVersion:
    """CannVersion(text), parsed once: test planning asks `holds_at` about the same few releases
    hundreds of thousands of times."""
    return CannVersion(text)


def holds_at(since: str | None, until: str | None, version: str | CannVersion) -> bool:
    """Whether a fact documented from `since` (inclusive) until `until` (exclusive) holds."""
    v = version if isinstance(version, CannVersion) else parsed(version)
    if since is not None and v < parsed(since):
        return False
    if until is not None and not v < parsed(until):
        return False
    return True


def _fact_releases(meta: Mapping[str, Any], keys: tuple[str, ...]) -> set[CannVersion]:
    """The page's release and every release the versioned facts name under `keys`."""
    found = {meta.get("cann_version")}

    def visit(node: Any) -> None:
        if isinstance(node, Mapping):
            for key in keys:
                value = node.get(key)
                if isinstance(value, str):
                    found.add(value)
            for value in node.values():
                visit(value)
        elif isinstance(node, (list, tuple)):
            for value in node:
                visit(value)

    visit(meta)
    return {CannVersion(v) for v in found if is_version(v)}


def known_releases(meta: Mapping[str, Any]) -> list[CannVersion]:
    """The page's release and every release a versioned fact starts or ends at, oldest first."""
    return sorted(_fact_releases(meta, ("since", "until")))


def newest_documented(meta: Mapping[str, Any]) -> CannVersion:
    """The newest release the page documents: its own, or a later one a versioned fact starts at
    (the release an op's generated tests check)."""
    return max(_fact_releases(meta, ("since",)))
