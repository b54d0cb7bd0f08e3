"""Which CANN releases the specs describe, the one rule every command applies to a release it is
given (`specs --cann`, `generate --cann`, `diff --at`): a release no spec describes is refused
(GenerateError, exit 1, the same message), never extrapolated; and at a release it does describe,
an op whose spec describes only later releases is left out. Spellings: aclnngen/core/releases.py."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aclnngen.core.releases import known_releases
from aclnngen.core.releases import CannVersion, ReleaseError, release_of, vendor_tag

from .consistency import versioned_facts
from .errors import GenerateError
from .model import OpSpec


def described(spec: OpSpec | Mapping[str, Any]) -> set[str]:
    """The page's own release and every since/until boundary of its facts (internal spelling);
    for a spec's plain data (a draft, a file `diff` reads) every since/until it holds."""
    if isinstance(spec, Mapping):
        return {str(v) for v in known_releases({"cann_version": None, **spec})}
    found = {spec.cann_version}
    for entity in versioned_facts(spec):
        found |= {v for v in (entity.since, entity.until) if v is not None}
    return found


def covers(spec: OpSpec | Mapping[str, Any], release: str) -> bool:
    """Whether some fact of `spec` is stated at `release`: false when the spec describes only
    later releases (its facts are then not known to hold at `release`)."""
    return min(CannVersion(v) for v in described(spec)) <= CannVersion(release)


def _tags(releases: Iterable[str]) -> str:
    """`v8.5.0, v9.0.0-beta.1 (9.0.RC1.alpha001)`: the vendor's tag, and the internal spelling where it differs."""
    shown = []
    for release in sorted(set(releases), key=CannVersion):
        tag = vendor_tag(release)
        shown.append(tag if tag.removeprefix("v") == release else f"{tag} ({release})")
    return ", ".join(shown)


def check_release(text: str, specs: Iterable[OpSpec | Mapping[str, Any]], option: str = "--cann") -> str:
    """The internal spelling of `text` when a spec describes that release; else a GenerateError
    listing those that do (either spelling is accepted, aclnngen/core/releases.py)."""
    try:
        release = release_of(text, option)
    except ReleaseError as exc:
        raise GenerateError(str(exc)) from None
    known = set().union(*(described(s) for s in specs))
    if CannVersion(release) not in {CannVersion(v) for v in known}:
        raise GenerateError(
            f"{option} {text}: no spec describes CANN {text}; releases the specs describe: {_tags(known)}"
        )
    return release


def left_out(specs: Iterable[OpSpec], release: str) -> list[str]:
    """The ops (aclnn names) no fact covers at `release`, in name order."""
    return sorted(s.name for s in specs if not covers(s, release))
