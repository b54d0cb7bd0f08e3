"""`aclnngen generate [OP...] [--specs DIR --out DIR]`: render outputs and write the files that changed."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..errors import GenerateError
from ..generate import REPO_LAYOUT, package_layout, plan, write
from ..loader import DEFAULT_SPECS_DIR, REPO_ROOT


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("ops", nargs="*", metavar="OP", help="only these ops (snake_case or aclnn name), plus the shared index files")
    parser.add_argument("--specs", type=Path, help="a specs directory kept outside this repository (with ops/*.yaml)")
    parser.add_argument("--out", type=Path, help="with --specs: the folder of the stand-alone package to write")
    parser.add_argument(
        "--cann",
        metavar="VERSION",
        help="render only the facts that hold at this CANN release, as a stand-alone package (--out, default build/aclnn_cann_<version>)",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="also overwrite or remove files the manifest does not list or that were edited by hand (never through a link)",
    )


def target(args: argparse.Namespace):
    """(specs dir, output root, layout) for the arguments."""
    if args.specs is None and args.out is None:
        return DEFAULT_SPECS_DIR, REPO_ROOT, REPO_LAYOUT
    if args.specs is None or args.out is None:
        raise GenerateError("--specs and --out go together: a stand-alone package needs both")
    if not (args.specs / "ops").is_dir():
        raise GenerateError(f"--specs {args.specs}: expected a folder with an ops/ subfolder of *.yaml specs")
    if args.out.exists() and not args.out.is_dir():
        raise GenerateError(f"--out {args.out}: is a file, not a folder; name the folder of the package to write")
    out = args.out.resolve()
    return args.specs, out, package_layout(out)


def run(args: argparse.Namespace) -> int:
    release = None
    if args.cann is not None:
        from ..importer.releases import release_of

        release = release_of(args.cann)
        args.specs = args.specs or DEFAULT_SPECS_DIR
        args.out = args.out or Path("build") / ("aclnn_cann_" + "".join(c if c.isalnum() else "_" for c in release))
    specs_dir, root, layout = target(args)
    outputs = plan(specs_dir, layout, tuple(args.ops), release)
    written, removed = write(outputs, root, layout, partial=bool(args.ops), force=args.force)
    if args.json:
        from .jsonout import emit

        emit({"command": "generate", "ok": True, "rendered": len(outputs), "written": [str(p) for p in written],
              "removed": [str(p) for p in removed]})
        return 0
    for path in written:
        print(f"wrote {path}")
    for path in removed:
        print(f"removed {path} (no spec produces it)")
    print(f"{len(outputs)} files rendered, {len(written)} written, {len(removed)} removed")
    return 0
