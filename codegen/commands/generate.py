"""`aclnngen generate [OP...] [--specs DIR --out DIR]`: render outputs and write the files that changed."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import GenerateError
from ..tables import BUILTIN_SPECS_DIR, CATALOG_SPECS_DIR, is_catalog

# (the generator itself is imported only when something is to be rendered: an unchanged run is
# answered from the last run's record, codegen/gencache.py, without loading the spec model)
DEFAULT_SPECS_DIR = BUILTIN_SPECS_DIR
REPO_ROOT = BUILTIN_SPECS_DIR.parent
CATALOG_OUT = Path("build") / "aclnn_catalog"  # a package name: no hyphen


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "ops", nargs="*", metavar="OP", help="only these ops (snake_case or aclnn name), plus the shared index files"
    )
    parser.add_argument(
        "--specs",
        type=Path,
        help="a specs directory kept outside this repository (with ops/*.yaml, or the catalog's <repository>/<category>/*.yaml)",
    )
    add_catalog_argument(parser, "as a stand-alone package")
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
    from ..generate import REPO_LAYOUT, package_layout

    if args.specs is None and args.out is None:
        return DEFAULT_SPECS_DIR, REPO_ROOT, REPO_LAYOUT
    if args.specs is None or args.out is None:
        raise GenerateError("--specs and --out go together: a stand-alone package needs both")
    if not (args.specs / "ops").is_dir() and not is_catalog(args.specs):
        raise GenerateError(
            f"--specs {args.specs}: expected a folder with an ops/ subfolder of *.yaml specs,"
            " or the catalog's <repository>/<category>/*.yaml"
        )
    if args.out.exists() and not args.out.is_dir():
        raise GenerateError(f"--out {args.out}: is a file, not a folder; name the folder of the package to write")
    out = args.out.resolve()
    return args.specs, out, package_layout(out)


def add_catalog_argument(parser: argparse.ArgumentParser, doing: str) -> None:
    parser.add_argument(
        "--catalog",
        action="store_true",
        help=f"the vendor catalog's specs ({CATALOG_SPECS_DIR.parent.name}/{CATALOG_SPECS_DIR.name}), {doing} (--out, default {CATALOG_OUT})",
    )


def catalog_target(args: argparse.Namespace) -> None:
    """--catalog: the committed catalog's specs, into build/aclnn_catalog unless --out says where."""
    if not args.catalog:
        return
    if args.specs is not None:
        raise GenerateError("--catalog names the specs: give --specs or --catalog, not both")
    if not is_catalog(CATALOG_SPECS_DIR):
        raise GenerateError(f"no catalog specs under {CATALOG_SPECS_DIR} (aclnngen catalog --specs-out writes them)")
    args.specs, args.out = CATALOG_SPECS_DIR, args.out or CATALOG_OUT


def run(args: argparse.Namespace) -> int:
    release, omitted = None, []
    catalog_target(args)
    if args.cann is not None:
        from ..loader import load_all, load_products
        from ..releases import check_release, left_out

        args.specs = args.specs or DEFAULT_SPECS_DIR
        specs = [ls.spec for ls in load_all(args.specs, load_products(args.specs))]
        release = check_release(args.cann, specs)  # refused as every command refuses it (codegen/releases.py)
        omitted = left_out(specs, release)  # rendered only as far as the specs state them: not at all
        if omitted and not args.json:
            print(
                f"left out at CANN {args.cann} (their specs describe only later releases): {', '.join(omitted)}",
                file=sys.stderr,
            )
        args.out = args.out or Path("build") / ("aclnn_cann_" + "".join(c if c.isalnum() else "_" for c in release))
    from .. import gencache

    run_key = None
    if gencache.enabled() and not args.force and not args.ops:
        run_key, root_guess = _run_key(args, release)
        rendered = gencache.unchanged_since(root_guess, run_key)
        if rendered is not None:
            return _report(args, rendered, [], [], omitted)
    from ..generate import plan, write

    specs_dir, root, layout = target(args)
    outputs = plan(specs_dir, layout, tuple(args.ops), release)
    written, removed = write(outputs, root, layout, partial=bool(args.ops), force=args.force, run_key=run_key)
    return _report(args, len(outputs), written, removed, omitted)


def unchanged_outputs(args: argparse.Namespace, release: str | None = None) -> int | None:
    """The number of files the last full `generate` with these arguments rendered, when the
    inputs, the generator and every file it wrote are unchanged since (so rendering again would
    give what is on disk); else None. Read without loading the spec model."""
    from .. import gencache

    if not gencache.enabled():
        return None
    run_key, root = _run_key(args, release)
    return gencache.unchanged_since(root, run_key)


def _run_key(args: argparse.Namespace, release: str | None) -> tuple[str, Path]:
    """The key of this run's inputs (codegen/gencache.py run_key) and the output root it names."""
    from .. import gencache

    specs_dir = args.specs if args.specs is not None else DEFAULT_SPECS_DIR
    root = args.out.resolve() if args.out is not None else REPO_ROOT
    arguments = {
        "specs": str(Path(specs_dir).resolve()),
        "out": str(root),
        "release": release,
        "repo": args.out is None,
    }
    return gencache.run_key(Path(specs_dir), arguments), root


def _report(args: argparse.Namespace, rendered: int, written: list, removed: list, omitted: list[str]) -> int:
    if args.json:
        from .jsonout import emit

        emit(
            {
                "command": "generate",
                "ok": True,
                "rendered": rendered,
                "written": [str(p) for p in written],
                "removed": [str(p) for p in removed],
                "left_out": omitted,
            }
        )
        return 0
    for path in written:
        print(f"wrote {path}")
    for path in removed:
        print(f"removed {path} (no spec produces it)")
    print(f"{rendered} files rendered, {len(written)} written, {len(removed)} removed")
    return 0
