"""`aclnngen catalog --mirror GIT_DIR... [--tag TAG] [--release VERSION] [--write FILE] [--specs-out DIR]
[--run-tests] [--history [TAG...]]`: every aclnn page of the vendor's repositories, imported as binding-tier specs, with the
count of pages found, APIs imported, valid, generated and (--run-tests) passing their generated
tests on the simulator, and the reasons for every API left out
(codegen/catalog.py). The mirrors default to ACLNNGEN_VENDOR_MIRRORS (paths joined by os.pathsep)."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from aclnngen.files import write_atomic

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
    parser.add_argument(
        "--run-tests",
        action="store_true",
        help="also run every generated op's generated tests on the simulator (minutes) and count those passing",
    )
    parser.add_argument(
        "--since",
        metavar="OLD_TAG",
        help="also survey OLD_TAG and report every API's changes from it to --tag (codegen/catalog_changes.py)",
    )
    parser.add_argument(
        "--history",
        nargs="*",
        metavar="TAG",
        help="fold the pages of these older release tags into each spec as versioned facts (since/until); "
        "no TAG: every release tag of the mirrors (vX.Y.Z, no beta, rc or .pre) older than --release "
        "(codegen/catalog_history.py)",
    )
    parser.add_argument(
        "--write-changes", type=Path, metavar="FILE", help="with --since: write the changes as Markdown here"
    )


def vendor_mirrors(given: list[Path]) -> list[Path]:
    """The git directories given (--mirror), else ACLNNGEN_VENDOR_MIRRORS's; each must be a folder."""
    mirrors = list(given) or [Path(p) for p in os.environ.get(MIRRORS_VARIABLE, "").split(os.pathsep) if p]
    if not mirrors:
        raise GenerateError(f"no vendor mirror: pass --mirror GIT_DIR or set {MIRRORS_VARIABLE}")
    for mirror in mirrors:
        if not mirror.is_dir():
            raise GenerateError(f"--mirror {mirror}: not a folder (a git directory of a vendor repository)")
    return mirrors


def run(args: argparse.Namespace) -> int:
    from .. import catalog, catalog_changes

    mirrors = vendor_mirrors(args.mirror)
    if args.write_changes is not None and not args.since:
        raise GenerateError("--write-changes needs --since OLD_TAG")
    report = catalog.survey(
        mirrors,
        args.tag,
        load_products(args.specs),
        args.specs_out,
        args.release,
        run_tests=args.run_tests,
        history=args.history,
    )
    counts = {stage: report.count(stage) for stage in report.stages}
    if args.write is not None:
        write_atomic(args.write, catalog.markdown(report), what="catalog report")
    changes = None
    if args.since:
        changes = catalog_changes.compare(catalog.survey(mirrors, args.since, load_products(args.specs)), report)
        if args.write_changes is not None:
            write_atomic(args.write_changes, catalog_changes.markdown(changes), what="catalog changes")
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
                "definitions": dict(sorted(report.definitions().items())),
                "prototypes_held": report.prototypes_held(),
                **({"history": report.history.counts()} if report.history is not None else {}),
                "reasons": dict(report.reasons().most_common()),
                **({"changes": changes_json(changes)} if changes is not None else {}),
            }
        )
        return 0
    print(f"pages at {args.tag}: " + ", ".join(f"{repo} {n}" for repo, n in sorted(report.pages.items())))
    print(f"APIs: {len(report.results)}; " + ", ".join(f"{stage} {n}" for stage, n in counts.items()))
    print(
        "first-phase prototypes against the vendor headers: "
        + ", ".join(f"{k} {n}" for k, n in sorted(report.headers().items()))
    )
    print(
        f"'{catalog.BUILT}' APIs against their op definitions: "
        + ", ".join(f"{k} {n}" for k, n in sorted(report.definitions().items()))
    )
    print(report.summary())
    if report.history is not None:
        print(
            f"history over {', '.join(report.history.tags) or 'no tag'}: "
            + ", ".join(f"{n} {k}" for k, n in sorted(report.history.counts().items(), key=lambda kv: -kv[1]))
        )
    print("left out, by reason:")
    for reason, n in report.reasons().most_common():
        print(f"  {n:4d}  {reason}")
    if changes is not None:
        print(catalog_changes.summary(changes))
    return 0


def changes_json(changes) -> dict:
    """The catalog's changes between two tags for tools (`catalog --since`, `diff --since`)."""
    return {
        "since": changes.old,
        "added": [api for _, api in changes.added],
        "removed": [api for _, api in changes.removed],
        "changed": [
            {
                "api": c.api,
                "breaking": c.breaking,
                "prototype": list(c.prototype) if c.prototype else None,
                "prototype_change": c.prototype_note or None,
                "changes": [{"kind": d.kind, "what": d.what, "message": d.message} for d in c.changes],
            }
            for c in changes.changed
        ],
    }
