"""`aclnngen check`: render into memory and compare with the disk; exit 1 when anything is stale."""

from __future__ import annotations

import argparse
from pathlib import Path

from .generate import add_catalog_argument, catalog_target, target, unchanged_outputs

# (the generator is imported only when the outputs must be rendered and compared: a tree the last
# `generate` left untouched, from unchanged inputs, is answered from its record, codegen/gencache.py)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--specs", type=Path, help="a specs directory kept outside this repository")
    parser.add_argument("--out", type=Path, help="with --specs: the stand-alone package to check")
    add_catalog_argument(parser, "against the package generated from them")
    parser.set_defaults(ops=[])


def run(args: argparse.Namespace) -> int:
    catalog_target(args)
    unchanged = unchanged_outputs(args)
    if unchanged is not None:
        return _report_fresh(args, unchanged)
    from ..generate import compare, plan, short_diff

    specs_dir, root, layout = target(args)
    outputs = plan(specs_dir, layout)
    drift = compare(outputs, root, layout)
    if drift.fresh:
        return _report_fresh(args, len(outputs))
    if args.json:
        from .jsonout import emit

        emit(
            {
                "command": "check",
                "ok": False,
                "files": len(outputs),
                "stale": list(drift.stale),
                "missing": list(drift.missing),
                "orphaned": list(drift.orphaned),
            }
        )
        return 1
    by_path = {o.path: o for o in outputs}
    for path in drift.stale:
        print(f"stale: {path}")
        print(short_diff((root / path).read_text(encoding="utf-8"), by_path[path].content, path))
    for path in drift.missing:
        print(f"missing: {path}")
    for path in drift.orphaned:
        print(f"orphaned: {path} (no spec produces it)")
    fix = "aclnngen generate" + (
        f" --catalog --out {args.out}"
        if args.catalog
        else f" --specs {args.specs} --out {args.out}"
        if args.specs
        else ""
    )
    print(
        f"\n{len(drift.stale)} stale, {len(drift.missing)} missing, {len(drift.orphaned)} orphaned; run `{fix}` to fix"
    )
    return 1


def _report_fresh(args: argparse.Namespace, files: int) -> int:
    if args.json:
        from .jsonout import emit

        emit({"command": "check", "ok": True, "files": files, "stale": [], "missing": [], "orphaned": []})
    else:
        print(f"{files} generated files are fresh")
    return 0
