"""Where the spec tables are: one resolver for every command.

The built-in specs folder is `specs/` of a checkout, or `aclnngen/specs/` of an installed wheel
(package data); both sit beside `codegen/`. A specs folder given with `--specs DIR` may hold its own
tables; whatever table DIR lacks comes from the built-in folder, the same way for every command.
Profiles describe particular ops, so they are DIR's own only (they never fall back).

A specs folder holds its op specs in one of two layouts: `ops/*.yaml` (the built-in folder, a
team's own), or the vendor catalog's `<repository>/<category>/*.yaml` (`specs/catalog`, written
by `aclnngen catalog --specs-out`). `spec_paths` finds them either way, for every command.
"""

from __future__ import annotations

from pathlib import Path

BUILTIN_SPECS_DIR = Path(__file__).resolve().parent.parent / "specs"
CATALOG_SPECS_DIR = BUILTIN_SPECS_DIR / "catalog"
CATALOG_LAYOUT = "*/*/*.yaml"  # <repository>/<category>/<api>.yaml under a catalog folder

# the tables a specs folder may hold, apart from its ops/ and profiles/
TABLES = ("products.yaml", "abi.yaml")


def table_path(specs_dir: Path | None, name: str) -> Path:
    """`specs_dir/name` when that file exists, else the built-in table of that name."""
    if name not in TABLES:
        raise ValueError(f"{name!r} is not a spec table; tables: {', '.join(TABLES)}")
    if specs_dir is not None:
        own = Path(specs_dir) / name
        if own.exists():
            return own
    return BUILTIN_SPECS_DIR / name


def is_catalog(specs_dir: Path) -> bool:
    """Whether `specs_dir` holds its specs in the catalog's layout (no ops/ folder)."""
    specs_dir = Path(specs_dir)
    return not (specs_dir / "ops").is_dir() and next(specs_dir.glob(CATALOG_LAYOUT), None) is not None


def spec_paths(specs_dir: Path) -> list[Path]:
    """The op spec files of a specs folder, in name order (either layout)."""
    specs_dir = Path(specs_dir)
    if is_catalog(specs_dir):
        paths = sorted(specs_dir.glob(CATALOG_LAYOUT), key=lambda p: (p.name, p.as_posix()))
        twice = sorted({a.name for a, b in zip(paths, paths[1:]) if a.name == b.name})
        if twice:  # one op, one module name in the package
            from .errors import GenerateError

            raise GenerateError(f"{specs_dir}: specs named alike in two folders: {', '.join(twice)}")
        return paths
    return sorted((specs_dir / "ops").glob("*.yaml"))


def spec_path(specs_dir: Path, snake: str) -> Path:
    """The spec file of op `snake` in a specs folder (either layout)."""
    if not is_catalog(specs_dir):
        return Path(specs_dir) / "ops" / f"{snake}.yaml"
    for path in Path(specs_dir).glob(f"*/*/{snake}.yaml"):
        return path
    raise FileNotFoundError(f"no spec {snake}.yaml under {specs_dir}")
