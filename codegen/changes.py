"""The change log (docs/changes.md): per CANN release, per op, what the specs' versioned facts
(`since`/`until`) add, remove or change there, classified as `aclnngen diff` does."""

from __future__ import annotations

from typing import Any

from aclnngen.runtime.versions import CannVersion, is_version

from .model import OpSpec, dump_spec
from .specdiff import diff, view


def releases_of(data: Any) -> set[str]:
    """Every release a spec's facts start or end at."""
    found: set[str] = set()
    if isinstance(data, dict):
        for key in ("since", "until"):
            value = data.get(key)
            if isinstance(value, str) and is_version(value):
                found.add(value)
        for value in data.values():
            found |= releases_of(value)
    elif isinstance(data, list):
        for value in data:
            found |= releases_of(value)
    return found


def op_changes(spec: OpSpec) -> list[tuple[str, dict[str, Any]]]:
    """One op's part of the change log: (release, entry) for each release its facts change at."""
    data = dump_spec(spec)
    points = sorted(releases_of(data) | {spec.cann_version}, key=CannVersion)
    found = []
    for before, at in zip(points, points[1:]):
        changes = diff(view(data, before), view(data, at))
        if changes:
            found.append((at, {
                "name": spec.name,
                "symbol": spec.symbol,
                "snake": spec.snake_name,
                "changes": [{"kind": c.kind, "what": c.what, "message": c.message} for c in changes],
            }))
    return found


def merge_entries(per_op: list[list[tuple[str, dict[str, Any]]]]) -> list[dict[str, Any]]:
    """The change log from each op's part (`op_changes`): [{release, ops: [{name, symbol, snake,
    changes: [{kind, what, message}]}]}], ops by name within a release, releases newest first."""
    by_release: dict[str, list[dict[str, Any]]] = {}
    for entries in sorted(per_op, key=lambda e: e[0][1]["name"] if e else ""):
        for release, entry in entries:
            by_release.setdefault(release, []).append(entry)
    return [{"release": r, "ops": by_release[r]} for r in sorted(by_release, key=CannVersion, reverse=True)]
