"""One resolver for the spec tables (codegen/tables.py): a specs folder's own products.yaml and
abi.yaml, else the built-in ones, the same way for every command."""

from __future__ import annotations

import shutil

import pytest

from aclnngen.codegen.cli import main
from aclnngen.codegen.loader import load_products
from aclnngen.codegen.tables import BUILTIN_SPECS_DIR, table_path
from repo_paths import CUSTOM_SPECS

CUSTOM = CUSTOM_SPECS


def test_own_table_else_the_built_in_one(tmp_path):
    assert table_path(tmp_path, "products.yaml") == BUILTIN_SPECS_DIR / "products.yaml"
    assert table_path(None, "abi.yaml") == BUILTIN_SPECS_DIR / "abi.yaml"
    own = tmp_path / "products.yaml"
    shutil.copy(BUILTIN_SPECS_DIR / "products.yaml", own)
    assert table_path(tmp_path, "products.yaml") == own
    with pytest.raises(ValueError, match="not a spec table"):
        table_path(tmp_path, "ops.yaml")


def test_a_folder_own_product_table_is_the_one_used(tmp_path):
    text = (BUILTIN_SPECS_DIR / "products.yaml").read_text(encoding="utf-8")
    (tmp_path / "products.yaml").write_text(text.replace("label: A2\n", "label: A2-custom\n", 1), encoding="utf-8")
    assert "A2-custom" in {f.label for f in load_products(tmp_path).families}
    assert "A2-custom" not in {f.label for f in load_products().families}


@pytest.mark.parametrize(
    "command", [["validate", "{specs}"], ["validate", "{specs}/ops/{first}"], ["specs", "--specs", "{specs}"]]
)
def test_every_command_falls_back_for_a_folder_with_only_ops(tmp_path, capsys, command):
    specs = tmp_path / "specs"
    shutil.copytree(CUSTOM / "ops", specs / "ops")
    first = sorted((specs / "ops").glob("*.yaml"))[0].name
    argv = [a.format(specs=specs, first=first) for a in command]
    assert main(argv) == 0, capsys.readouterr().err
