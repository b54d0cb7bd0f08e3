"""`aclnngen catalog --mirror GIT_DIR... [--tag TAG] [--release VERSION] [--write FILE] [--specs-out DIR]`:
every aclnn page of the vendor's repositories, imported as binding-tier specs, with the count of
pages found, APIs imported, valid and generated, and the reasons for every API left out
(codegen/catalog.py). The mirrors default to ACLNNGEN_VENDOR_MIRRORS (paths joined by os.pathsep)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from ..errors import GenerateError
from ..loader import DEFAULT_SPECS_DIR, load_products

MIRRORS_VARIABLE = "ACLNNGEN_VENDOR_MIRRORS"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--mirror",
        action="append",
        type=Path,
        default=[],
        help=f"a git directory of a vendor repository ({MIRRORS_VARIABLE})",
    )
    parser.add_argument("--tag", default="HEAD", help="the tag (or HEAD) whose pages are read (default: HEAD)")
    parser.add_argument(
        "--release", help="the release the pages describe (default: --tag, which must then be a release tag)"
    )
    parser.add_argument("--write", type=Path, help="write the report as Markdown here (docs/catalog.md)")
    parser.add_argument("--specs-out", type=Path, help="write each valid spec to DIR/<repo>/<category>/<api>.yaml")
    parser.add_argument("--specs", type=Path, default=DEFAULT_SPECS_DIR, help="specs directory (for products.yaml)")


def run(args: argparse.Namespace) -> int:
    from .. import catalog

    mirrors = list(args.mirror) or [Path(p) for p in os.environ.get(MIRRORS_VARIABLE, "").split(os.pathsep) if p]
    if not mirrors:
        raise GenerateError(f"no vendor mirror: pass --mirror GIT_DIR or set {MIRRORS_VARIABLE}")
    for mirror in mirrors:
        if not mirror.is_dir():
            raise GenerateError(f"--mirror {mirror}: not a folder (a git directory of a vendor repository)")
    report = catalog.survey(mirrors, args.tag, load_products(args.specs), args.specs_out, args.release)
    counts = {stage: report.count(stage) for stage in catalog.STAGES}
    if args.write is not None:
        args.write.write_text(catalog.markdown(report), encoding="utf-8")
    if args.json:
        from .jsonout import emit

        emit(
            {
                "command": "catalog",
                "ok": True,
                "tag": args.tag,
                "pages": report.pages,
                "apis": len(report.results),
                **counts,
                "headers": dict(sorted(report.headers().items())),
                "reasons": dict(report.reasons().most_common()),
            }
        )
        return 0
    print(f"pages at {args.tag}: " + ", ".join(f"{repo} {n}" for repo, n in sorted(report.pages.items())))
    print(f"APIs: {len(report.results)}; " + ", ".join(f"{stage} {n}" for stage, n in counts.items()))
    print(
        "first-phase prototypes against the vendor headers: "
        + ", ".join(f"{k} {n}" for k, n in sorted(report.headers().items()))
    )
    print("left out, by reason:")
    for reason, n in report.reasons().most_common():
        print(f"  {n:4d}  {reason}")
    return 0
