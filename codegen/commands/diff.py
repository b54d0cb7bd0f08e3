"""`aclnngen diff OLD NEW` or `aclnngen diff SPEC --at A --at B`: the changes a binding user feels,
each breaking or compatible; `--json` for tools; exit 1 when anything breaking is not allowed.

`aclnngen diff --since OLD_TAG --tag NEW_TAG [--mirror GIT_DIR...] [--write docs/catalog-changes.md]`: the
same over every aclnn API of the vendor's repositories between two tags (codegen/catalog_changes.py),
a report: APIs removed, prototypes changed, products, dtypes and formats lost first, then the gains.

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
    parser.add_argument("specs", nargs="*", type=Path, help="OLD NEW (specs or drafts), or one spec with --at twice")
    parser.add_argument("--at", action="append", default=[], metavar="RELEASE", help="compare one spec at two releases")
    parser.add_argument("--allow", type=Path, help="allow-list of accepted breaking changes (YAML)")
    catalog = parser.add_argument_group("the vendor catalog between two tags (instead of OLD NEW)")
    catalog.add_argument("--since", metavar="OLD_TAG", help="compare every aclnn API from this tag")
    catalog.add_argument("--tag", metavar="NEW_TAG", help="to this tag (a release tag)")
    catalog.add_argument(
        "--mirror", action="append", type=Path, default=[], help="a vendor git directory (ACLNNGEN_VENDOR_MIRRORS)"
    )
    catalog.add_argument(
        "--write", type=Path, metavar="FILE", help="write the changes as Markdown (docs/catalog-changes.md)"
    )


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


def run_catalog(args: argparse.Namespace) -> int:
    """The release view of the catalog: a report (exit 0), written where --write says."""
    from aclnngen.files import write_atomic

    from .. import catalog, catalog_changes
    from ..loader import DEFAULT_SPECS_DIR, load_products
    from .catalog import changes_json, vendor_mirrors

    if args.specs or args.at or args.allow or not (args.since and args.tag):
        raise GenerateError("--since OLD_TAG --tag NEW_TAG compares the vendor catalog: no specs, --at or --allow")
    mirrors, products = vendor_mirrors(args.mirror), load_products(DEFAULT_SPECS_DIR)
    changes = catalog_changes.compare(
        catalog.survey(mirrors, args.since, products), catalog.survey(mirrors, args.tag, products)
    )
    if args.write is not None:
        write_atomic(args.write, catalog_changes.markdown(changes), what="catalog changes")
    if args.json:
        from .jsonout import emit

        emit({"command": "diff", "ok": True, "catalog": changes_json(changes)})
    else:
        print(catalog_changes.summary(changes))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.since or args.tag or args.mirror or args.write:
        return run_catalog(args)
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
