"""Accepted findings: each with a reason and an expiry date, so CI gates only on new drift.

The file is YAML: a list of `{id, reason, expires}` (expires: YYYY-MM-DD). A finding whose id is
listed and not expired is accepted; one whose acceptance has expired is reported as expired (and
gates like a new one); an entry that matches no finding is stale and reported as a warning (the
drift it excused is gone, or its id changed). A finding a spec's `defects` entry explains is
recorded, never new, and needs no entry.

`aclnngen audit --write-baseline FILE` writes the findings that gate as entries whose reason and
expiry are placeholders (`PLACEHOLDER_REASON`, `PLACEHOLDER_EXPIRES`) a person replaces; the loader
refuses a file that still holds one, naming the entry.
"""

from __future__ import annotations

import datetime
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

import yaml

from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.yamlio import check_events
from aclnngen.files import FileError, read_text

MAX_BASELINE_BYTES = 16 << 20
PLACEHOLDER_REASON = "TODO: say why this finding is accepted"
PLACEHOLDER_EXPIRES = "YYYY-MM-DD"


class BaselineError(ValueError):
    """A malformed baseline file: names the file and the entry."""

    user_facing = True


@dataclass(frozen=True)
class Accepted:
    id: str
    reason: str
    expires: datetime.date


@dataclass(frozen=True)
class Judgement:
    """The status of each finding id: new, recorded (a spec's defects entry explains it), accepted
    by the baseline, or accepted until a date now past (expired); and the stale baseline entries."""

    new: list[str] = field(default_factory=list)
    recorded: list[str] = field(default_factory=list)
    accepted: list[str] = field(default_factory=list)
    expired: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    @property
    def gates(self) -> list[str]:
        """The findings that fail the gate: new ones and expired acceptances."""
        return self.new + self.expired

    def status(self, finding_id: str) -> str:
        for name in ("recorded", "accepted", "expired"):
            if finding_id in getattr(self, name):
                return name
        return "new"


def load(path: Path | None) -> dict[str, Accepted]:
    if path is None:
        return {}
    if not os.path.lexists(path):
        raise BaselineError(f"{path}: no such baseline file (write one with --write-baseline {path})")
    try:  # a bounded regular file (a FIFO is refused unread), no anchors or aliases (no YAML bomb)
        text = read_text(path, what="baseline", limit=MAX_BASELINE_BYTES)
        check_events(text, path, "baselines")
        data = yaml.safe_load(text) or []
    except FileError as exc:
        raise BaselineError(str(exc)) from None
    except SpecError as exc:
        raise BaselineError("; ".join(str(p) for p in exc.problems)) from None
    except (yaml.YAMLError, ValueError) as exc:  # ValueError: a date YAML reads but the calendar lacks
        raise BaselineError(f"{path}: not a baseline YAML file: {' '.join(str(exc).split())}") from None
    if not isinstance(data, list):
        raise BaselineError(f"{path}: a baseline is a list of {{id, reason, expires}} entries")
    found: dict[str, Accepted] = {}
    for index, entry in enumerate(data):
        if not isinstance(entry, dict) or set(entry) != {"id", "reason", "expires"}:
            raise BaselineError(f"{path}: entry {index} needs exactly id, reason and expires, found {str(entry)[:200]}")
        where = f"{path}: entry {index} ({entry['id']})"
        if str(entry["reason"]).strip() == PLACEHOLDER_REASON:
            raise BaselineError(
                f"{where}: the reason is still the placeholder --write-baseline wrote; say why the finding is accepted"
            )
        expires = entry["expires"]
        if str(expires).strip() == PLACEHOLDER_EXPIRES:
            raise BaselineError(
                f"{where}: expires is still the placeholder {PLACEHOLDER_EXPIRES}; give the date the acceptance ends"
            )
        if isinstance(expires, datetime.datetime):
            raise BaselineError(f"{where}: expires {expires} has a time of day; give a date, YYYY-MM-DD")
        if isinstance(expires, str):
            try:
                expires = datetime.date.fromisoformat(expires)
            except ValueError:
                raise BaselineError(f"{where}: expires {expires!r} is not YYYY-MM-DD") from None
        if not isinstance(expires, datetime.date) or not str(entry["reason"] or "").strip():
            raise BaselineError(f"{where}: needs a reason and a date to expire on")
        found[str(entry["id"])] = Accepted(str(entry["id"]), str(entry["reason"]), expires)
    return found


def judge(
    ids: list[str], accepted: Mapping[str, Accepted], today: datetime.date, recorded: Iterable[str] = ()
) -> Judgement:
    """Each finding's status; an acceptance past its date is `expired`, not accepted."""
    recorded = set(recorded)
    result = Judgement()
    for i in ids:
        if i in recorded:
            result.recorded.append(i)
        elif i not in accepted:
            result.new.append(i)
        elif accepted[i].expires < today:
            result.expired.append(i)
        else:
            result.accepted.append(i)
    result.stale.extend(sorted(set(accepted) - set(ids)))
    return result


def dump(findings: Iterable[Mapping], accepted: Mapping[str, Accepted], judgement: Judgement) -> str:
    """A baseline of the findings that gate or are accepted (finding dicts of the report's JSON):
    an accepted finding keeps its entry; a new one gets placeholders a person fills; an expired
    one keeps its reason and gets a placeholder date."""
    lines = [
        "# Accepted findings of `aclnngen audit` (use with --baseline). Written by --write-baseline:",
        f"# replace every {PLACEHOLDER_REASON!r} with the reason and every {PLACEHOLDER_EXPIRES} with",
        "# the date the acceptance ends; the audit refuses the file until then.",
        "",
    ]
    keep = set(judgement.new) | set(judgement.expired) | set(judgement.accepted)
    for f in findings:
        if f["id"] not in keep:
            continue
        old = accepted.get(f["id"])
        reason = old.reason if old else PLACEHOLDER_REASON
        expires = old.expires.isoformat() if old and f["id"] in judgement.accepted else PLACEHOLDER_EXPIRES
        families = f" on {', '.join(f['families'])}" if f.get("families") else ""
        lines += [
            f"# {f['op']}: {f['subject']}{families}: claimed {f['claimed']}; observed {f['observed']}".replace(
                "\n", " "
            ),
            f"- id: {f['id']}",
            f"  reason: {yaml.safe_dump(reason, default_style=None, width=10**6).strip().removesuffix('...').strip()}",
            f"  expires: {expires}",
            "",
        ]
    return "\n".join(lines)
