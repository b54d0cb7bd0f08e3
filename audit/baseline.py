"""Accepted findings: each with a reason and an expiry date, so CI gates only on new drift.

The file is YAML: a list of `{id, reason, expires}` (expires: YYYY-MM-DD). A finding whose id is
listed and not expired is accepted; an expired acceptance counts as new; an entry that matches no
finding is stale and reported as a warning (the drift it excused is gone, or its id changed).
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from pathlib import Path

import yaml


class BaselineError(ValueError):
    """A malformed baseline file: names the file and the entry."""


@dataclass(frozen=True)
class Accepted:
    id: str
    reason: str
    expires: datetime.date


def load(path: Path | None) -> dict[str, Accepted]:
    if path is None or not path.exists():
        return {}
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    except yaml.YAMLError as exc:
        raise BaselineError(f"{path}: not YAML: {exc}") from None
    if not isinstance(data, list):
        raise BaselineError(f"{path}: a baseline is a list of {{id, reason, expires}} entries")
    found: dict[str, Accepted] = {}
    for index, entry in enumerate(data):
        if not isinstance(entry, dict) or set(entry) != {"id", "reason", "expires"}:
            raise BaselineError(f"{path}: entry {index} needs exactly id, reason and expires, found {entry!r}")
        expires = entry["expires"]
        if isinstance(expires, str):
            try:
                expires = datetime.date.fromisoformat(expires)
            except ValueError:
                raise BaselineError(f"{path}: entry {index}: expires {expires!r} is not YYYY-MM-DD") from None
        if not isinstance(expires, datetime.date) or not str(entry["reason"]).strip():
            raise BaselineError(f"{path}: entry {index}: needs a reason and a date to expire on")
        found[str(entry["id"])] = Accepted(str(entry["id"]), str(entry["reason"]), expires)
    return found


def judge(ids: list[str], accepted: dict[str, Accepted], today: datetime.date) -> tuple[list[str], list[str], list[str]]:
    """(new ids, accepted ids, stale baseline ids): new includes the ones whose acceptance expired."""
    new = [i for i in ids if i not in accepted or accepted[i].expires < today]
    ok = [i for i in ids if i in accepted and accepted[i].expires >= today]
    stale = sorted(set(accepted) - set(ids))
    return new, ok, stale
