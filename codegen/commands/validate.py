"""`aclnngen validate [PATH...]`: exit 0 when every file is valid, else 1 and one line per problem."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import Problem, SpecError
from ..loader import DEFAULT_SPECS_DIR, load_products, load_spec, spec_paths


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "paths",
        nargs="*",
        type=Path,
        help="spec files, or specs directories (holding products.yaml, abi.yaml and ops/); default: specs/",
    )


def _specs_dir_of(path: Path) -> Path:
    """The specs directory an op file belongs to (DIR/ops/x.yaml -> DIR); its tables resolve as
    every command's do (codegen/tables.py: DIR's own, else the built-in ones)."""
    return path.parent.parent if path.parent.name == "ops" else path.parent


def _validate_dir(specs_dir: Path) -> list[Problem]:
    problems: list[Problem] = []
    try:
        products = load_products(specs_dir)
    except SpecError as exc:
        return list(exc.problems)
    if (specs_dir / "abi.yaml").exists():  # the built-in one when absent, validated with the package
        problems += _validate_abi(specs_dir / "abi.yaml")
    paths = spec_paths(specs_dir)
    if not paths:
        problems.append(Problem(str(specs_dir / "ops"), 0, "no op specs (*.yaml) found"))
    specs = {}
    for path in paths:
        try:
            loaded = load_spec(path, products)
        except SpecError as exc:
            problems += exc.problems
            continue
        specs[path] = loaded.spec
        _warn(loaded)
    if not problems:
        from ..profiles import load_profiles

        try:
            load_profiles(specs_dir, {s.name: s for s in specs.values()})
        except SpecError as exc:
            problems += exc.problems
    return problems


def _validate_abi(path: Path) -> list[Problem]:
    from ..abi import load_abi

    try:
        load_abi(path)
    except SpecError as exc:
        return list(exc.problems)
    return []


def _validate_file(path: Path) -> list[Problem]:
    if not path.exists():
        return [Problem(str(path), 0, "no such file or directory")]
    if path.name == "products.yaml":
        try:
            load_products(path.parent)
        except SpecError as exc:
            return list(exc.problems)
        return []
    if path.name == "abi.yaml":
        return _validate_abi(path)
    try:
        products = load_products(_specs_dir_of(path))
        loaded = load_spec(path, products)
    except SpecError as exc:
        return list(exc.problems)
    _warn(loaded)
    return []


def _warn(loaded) -> None:
    """Print what is suspicious but valid (rules that contradict each other) to stderr."""
    from .. import metadata
    from ..rule_conflicts import rule_conflicts

    for problem in rule_conflicts(loaded.spec, metadata.build(loaded.spec), str(loaded.path), loaded.lines):
        print(problem, file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    paths = args.paths or [DEFAULT_SPECS_DIR]
    problems: list[Problem] = []
    count = 0
    for path in paths:
        if path.is_dir():
            problems += _validate_dir(path)
            count += len(spec_paths(path))
        else:
            problems += _validate_file(path)
            count += 1
    if problems:
        raise SpecError(problems)
    if args.json:
        from .jsonout import emit

        emit({"command": "validate", "ok": True, "count": count, "problems": []})
        return 0
    print(f"{count} spec{'s' if count != 1 else ''} valid")
    return 0
