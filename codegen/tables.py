"""Where the spec tables are: one resolver for every command.

The built-in specs folder is `specs/` of a checkout, or `aclnngen/specs/` of an installed wheel
(package data); both sit beside `codegen/`. A specs folder given with `--specs DIR` may hold its own
tables; whatever table DIR lacks comes from the built-in folder, the same way for every command.
Profiles describe particular ops, so they are DIR's own only (they never fall back).
"""

from __future__ import annotations

from pathlib import Path

BUILTIN_SPECS_DIR = Path(__file__).resolve().parent.parent / "specs"

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
