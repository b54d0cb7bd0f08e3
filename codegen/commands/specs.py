"""`aclnngen specs`: a table of the specs, their product families and dtypes per family.

By default each op is shown at its newest documented release, as the support matrix
(docs/ops/index.md) shows it, so the two agree; `--cann VERSION` shows one release for every op,
and only a release some spec describes (codegen/releases.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..loader import DEFAULT_SPECS_DIR, load_all, load_products
from ..releases import check_release, covers, left_out
from ..resolve import resolve
from ..testplan import newest_version

NEWEST = "each op's newest documented release, as in docs/ops/index.md"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--specs", type=Path, default=DEFAULT_SPECS_DIR, help="specs directory (default: the built-in specs)"
    )
    parser.add_argument(
        "--cann",
        metavar="VERSION",
        help=f"show the facts of this CANN release, one a spec describes (default: {NEWEST})",
    )


def run(args: argparse.Namespace) -> int:
    products = load_products(args.specs)
    loaded = load_all(args.specs, products)
    release = check_release(args.cann, [ls.spec for ls in loaded]) if args.cann is not None else None
    rows = []
    omitted = left_out([ls.spec for ls in loaded], release) if release else []
    for ls in loaded:
        if release and not covers(ls.spec, release):
            continue  # its spec describes only later releases: nothing is known of it at `release`
        op = resolve(ls.spec, release or newest_version(ls.spec))
        for family in products.families:
            if family.id in op.families:
                dtypes = {p.name: list(op.dtypes_of(p.name, family.id)) for p in ls.spec.parameters if p.is_tensor}
                rows.append(
                    {
                        "op": op.name,
                        "cann": op.version,
                        "family": family.id,
                        "product": family.label,
                        "summary": op.dtype_summary(family.id),
                        "dtypes": dtypes,
                    }
                )
    shown = f"CANN {release}" if release else NEWEST
    if args.json:
        from .jsonout import emit

        emit(
            {
                "command": "specs",
                "ok": True,
                "release": release or "newest",
                "shows": shown,
                "left_out": omitted,
                "rows": [{k: v for k, v in r.items() if k != "summary"} for r in rows],
            }
        )
        return 0
    print(f"facts at {shown}")
    if omitted:
        print(f"left out (their specs describe only later releases): {', '.join(omitted)}", file=sys.stderr)
    table = [("op", "CANN", "product", "dtypes")] + [(r["op"], r["cann"], r["product"], r["summary"]) for r in rows]
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    for index, row in enumerate(table):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            print("  ".join("-" * width for width in widths))
    return 0
