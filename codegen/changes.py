"""The change log (docs/changes.md): per CANN release, per op, what the specs' versioned facts
(`since`/`until`) add, remove or change there, classified as `aclnngen diff` does."""

from __future__ import annotations

from typing import Any

from aclnngen.core.releases import known_releases
from aclnngen.core.releases import CannVersion, vendor_tag

from .model import OpSpec, dump_spec
from .specdiff import diff, view


def op_changes(spec: OpSpec) -> list[tuple[str, dict[str, Any]]]:
    """One op's part of the change log: (release, entry) for each release its facts change at."""
    data = dump_spec(spec)
    points = [str(v) for v in known_releases(data)]  # the page's release and every since/until
    found = []
    for before, at in zip(points, points[1:]):
        changes = diff(view(data, before), view(data, at))
        if changes:
            found.append(
                (
                    at,
                    {
                        "name": spec.name,
                        "symbol": spec.symbol,
                        "snake": spec.snake_name,
                        "changes": [{"kind": c.kind, "what": c.what, "message": c.message} for c in changes],
                    },
                )
            )
    return found


def merge_entries(per_op: list[list[tuple[str, dict[str, Any]]]]) -> list[dict[str, Any]]:
    """The change log from each op's part (`op_changes`): [{release, ops: [{name, symbol, snake,
    changes: [{kind, what, message}]}]}], ops by name within a release, releases newest first;
    `tag` is the release as the vendor tags it (the log's headings)."""
    by_release: dict[str, list[dict[str, Any]]] = {}
    for entries in sorted(per_op, key=lambda e: e[0][1]["name"] if e else ""):
        for release, entry in entries:
            by_release.setdefault(release, []).append(entry)
    return [
        {"release": r, "tag": vendor_tag(r), "ops": by_release[r]}
        for r in sorted(by_release, key=CannVersion, reverse=True)
    ]
