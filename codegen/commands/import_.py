"""`aclnngen import PAGE... [-o DIR] [--release VERSION]`: one draft spec per doc page, and a summary
per page of what was read, what is TODO and what could not be parsed.

With `--into specs/ops/<op>.yaml --release VERSION PAGE`, merges the page's facts into an existing
spec as versioned facts instead (see codegen/importer/merge.py)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import GenerateError
from ..loader import DEFAULT_SPECS_DIR, load_products


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("pages", nargs="+", type=Path, help="vendor Markdown pages (aclnn<Op>.md) or saved web pages")
    parser.add_argument("-o", "--output", type=Path, default=Path("."), help="directory for the drafts (default: .)")
    parser.add_argument(
        "--release", help="the release the page describes: 8.5.0, or a vendor tag such as v9.2.0-beta.1"
    )
    parser.add_argument(
        "--tier",
        choices=("auto", "full", "binding"),
        default="auto",
        help="the drafts' tier: full (formula and oracle to write), binding (no numerics), or auto: "
        "full where the page states a formula, else binding (default)",
    )
    parser.add_argument("--into", type=Path, help="merge the page into this spec as versioned facts of --release")
    parser.add_argument("--specs", type=Path, default=DEFAULT_SPECS_DIR, help="specs directory (for products.yaml)")


def run(args: argparse.Namespace) -> int:
    from ..importer.draft import build_draft
    from ..importer.pages import read_page_apis
    from aclnngen.core.releases import release_of
    from ..importer.summary import summary_dict, summary_lines
    from ..importer.writer import write_draft

    products = load_products(args.specs)
    release = release_of(args.release, "--release") if args.release else None
    if args.into is not None:
        from ..importer.merge import merge_command

        if release is None or len(args.pages) != 1:
            raise GenerateError("--into needs exactly one PAGE and --release VERSION")
        if args.json:
            raise GenerateError("--into prints a diff for a person to review; --json goes with drafts (-o)")
        return merge_command(args.into, args.pages[0], release, products)
    try:
        args.output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GenerateError(f"-o {args.output}: cannot create the folder ({exc.strerror or exc})") from None
    pages = []
    for page in args.pages:
        for facts in read_page_apis(page, products, release):  # a shared page documents several APIs
            draft = build_draft(facts, products, tier=args.tier)
            target = write_draft(draft, facts, args.output)
            if args.json:
                pages.append(summary_dict(facts, draft, target))
            else:
                for line in summary_lines(facts, draft, target):
                    print(line)
    if args.json:
        from .jsonout import emit

        emit({"command": "import", "ok": True, "pages": pages})
    return 0
