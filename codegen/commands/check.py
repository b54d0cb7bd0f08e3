"""`aclnngen check`: render into memory and compare with the disk; exit 1 when anything is stale."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..generate import compare, plan, short_diff
from .generate import target


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--specs", type=Path, help="a specs directory kept outside this repository")
    parser.add_argument("--out", type=Path, help="with --specs: the stand-alone package to check")
    parser.set_defaults(ops=[])


def run(args: argparse.Namespace) -> int:
    specs_dir, root, layout = target(args)
    outputs = plan(specs_dir, layout)
    drift = compare(outputs, root, layout)
    if args.json:
        from .jsonout import emit

        emit(
            {
                "command": "check",
                "ok": drift.fresh,
                "files": len(outputs),
                "stale": list(drift.stale),
                "missing": list(drift.missing),
                "orphaned": list(drift.orphaned),
            }
        )
        return 0 if drift.fresh else 1
    if drift.fresh:
        print(f"{len(outputs)} generated files are fresh")
        return 0
    by_path = {o.path: o for o in outputs}
    for path in drift.stale:
        print(f"stale: {path}")
        print(short_diff((root / path).read_text(encoding="utf-8"), by_path[path].content, path))
    for path in drift.missing:
        print(f"missing: {path}")
    for path in drift.orphaned:
        print(f"orphaned: {path} (no spec produces it)")
    fix = "aclnngen generate" + (f" --specs {args.specs} --out {args.out}" if args.specs else "")
    print(
        f"\n{len(drift.stale)} stale, {len(drift.missing)} missing, {len(drift.orphaned)} orphaned; run `{fix}` to fix"
    )
    return 1
