"""`aclnngen export --ttk DIR`: each op's cases as a TTK ACLNN case file, `DIR/<aclnnName>.csv`.

A team with an NPU runs them with the vendor's tool (`python3 -m ttk aclnn -i DIR/<file>.csv`);
`aclnngen run --cases FILE.csv` runs the same file on the active backend here. What a row holds and
what is left out: aclnngen/verify/ttk.py and docs/cli.md.
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--ttk", required=True, metavar="DIR", type=Path, help="the folder to write the case files to")
    parser.add_argument("--ops", nargs="+", metavar="OP", help="only these ops (snake_case or aclnn name)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the data the ranges are taken from (default 0)")
    parser.add_argument(
        "--package", help="the generated package whose ops to export (default: aclnngen's own), importable by name"
    )


def run(args: argparse.Namespace) -> int:
    from aclnngen.runtime.call import _newest_version
    from aclnngen.verify import ttk

    from ..errors import GenerateError
    from .run import BUILT_IN, _ops, package_ops

    folder: Path = args.ttk
    if folder.exists() and not folder.is_dir():
        raise GenerateError(f"{folder}: not a folder")
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    package = args.package or BUILT_IN
    chosen = (
        _ops(args.ops) if package == BUILT_IN else [s for s in package_ops(package) if not args.ops or s in args.ops]
    )
    for snake in chosen:
        meta = importlib.import_module(f"{package}.meta.{snake}").META
        rows = ttk.op_cases(meta, _newest_version(meta), seed=args.seed)
        path = ttk.write(rows, folder / f"{meta['symbol']}.csv")
        written.append({"op": meta["name"], "file": str(path), "cases": len(rows)})
    if args.json:
        from .jsonout import emit

        emit({"command": "export", "ok": True, "files": written})
        return 0
    for entry in written:
        print(f"{entry['file']}: {entry['cases']} cases of {entry['op']}")
    print(f"{len(written)} files, {sum(e['cases'] for e in written)} cases")
    return 0
