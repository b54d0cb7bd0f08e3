"""`aclnngen specs`: a table of the specs, their product families and dtypes per family."""

from __future__ import annotations

import argparse
from pathlib import Path

from aclnngen.runtime.versions import VERSION_HELP, is_version

from ..errors import GenerateError
from ..loader import DEFAULT_SPECS_DIR, load_all, load_products
from ..resolve import resolve


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--specs", type=Path, default=DEFAULT_SPECS_DIR, help="specs directory (default: specs/)")
    parser.add_argument("--cann", metavar="VERSION", help="show the facts of this CANN release (default: each page's own)")


def run(args: argparse.Namespace) -> int:
    if args.cann is not None and not is_version(args.cann):
        raise GenerateError(f"--cann {args.cann!r} is not {VERSION_HELP}")
    products = load_products(args.specs)
    rows = [("op", "CANN", "product", "dtypes")]
    for loaded in load_all(args.specs, products):
        op = resolve(loaded.spec, args.cann or loaded.spec.cann_version)
        for family in products.families:
            if family.id not in op.families:
                continue
            rows.append((op.name, op.version, family.label, op.dtype_summary(family.id)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for index, row in enumerate(rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
        if index == 0:
            print("  ".join("-" * width for width in widths))
    return 0
