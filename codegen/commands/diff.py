"""`aclnngen diff OLD NEW` or `aclnngen diff SPEC --at A --at B`: the changes a binding user feels,
each breaking or compatible; `--json` for tools; exit 1 when anything breaking is not allowed.

The allow-list (`--allow FILE`, YAML: a list of {op, match, reason, expires}) silences accepted
breaking changes whose message contains `match`, until the expiry date (then they count again)."""

from __future__ import annotations

import argparse
import datetime
from dataclasses import replace
from pathlib import Path

from ..errors import GenerateError, Problem, SpecError
from ..yamlio import read_yaml


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("specs", nargs="+", type=Path, help="OLD NEW (specs or drafts), or one spec with --at twice")
    parser.add_argument("--at", action="append", default=[], metavar="RELEASE", help="compare one spec at two releases")
    parser.add_argument("--allow", type=Path, help="allow-list of accepted breaking changes (YAML)")


def _load(path: Path) -> dict:
    data, _ = read_yaml(path)
    if not isinstance(data, dict):
        raise SpecError(Problem(str(path), 1, "a spec is a YAML mapping at the top level"))
    return data


def _allowed(path: Path | None, today: datetime.date) -> list[dict]:
    if path is None:
        return []
    data, lines = read_yaml(path)
    entries = []
    for index, entry in enumerate(data if isinstance(data, list) else [None]):
        line = lines.line_of((index,))
        if not isinstance(entry, dict) or not {"match", "reason", "expires"} <= set(entry):
            raise SpecError(
                Problem(str(path), line, "each allow-list entry needs match, reason and expires (YYYY-MM-DD)")
            )
        expires = entry["expires"]
        if isinstance(expires, str):
            try:
                expires = datetime.date.fromisoformat(expires)
            except ValueError:
                raise SpecError(Problem(str(path), line, f"expires: {expires!r} is not a date (YYYY-MM-DD)")) from None
        if not isinstance(expires, datetime.date):
            raise SpecError(Problem(str(path), line, "expires: a date (YYYY-MM-DD)"))
        if expires >= today:
            entries.append(entry)
    return entries


def run(args: argparse.Namespace) -> int:
    from ..releases import check_release
    from ..specdiff import BREAKING, Change, as_dicts, diff, diff_files, view

    if len(args.specs) == 1 and len(args.at) == 2:
        data = _load(args.specs[0])
        at = [check_release(a, [data], "--at") for a in args.at]  # one rule for releases (codegen/releases.py)
        old, new = view(data, at[0]), view(data, at[1])
        changes = diff(old, new)
    elif len(args.specs) == 2 and len(args.at) <= 2:
        old_data, new_data = _load(args.specs[0]), _load(args.specs[1])
        if args.at:  # each file at its release
            old = view(old_data, check_release(args.at[0], [old_data], "--at"))
            new = view(new_data, check_release(args.at[-1], [new_data], "--at"))
            changes = diff(old, new)
        else:  # every change, the versioned facts included, at each release either file describes
            new = view(new_data)
            changes = diff_files(old_data, new_data)
    else:
        raise GenerateError("give OLD NEW, or one spec with --at RELEASE twice")
    allowed = _allowed(args.allow, datetime.date.today())
    kept: list[Change] = []
    for change in changes:
        if change.kind == BREAKING and any(
            str(e["match"]) in change.message and e.get("op", new.name) == new.name for e in allowed
        ):
            change = replace(change, kind="allowed")
        kept.append(change)
    if args.json:
        from .jsonout import emit

        breaking = sum(c.kind == BREAKING for c in kept)
        emit({"command": "diff", "ok": breaking == 0, "breaking": breaking, "changes": as_dicts(kept)})
    else:
        for change in kept:
            print(change)
        breaking = sum(c.kind == BREAKING for c in kept)
        print(f"{len(kept)} change(s), {breaking} breaking")
    return 1 if any(c.kind == BREAKING for c in kept) else 0
