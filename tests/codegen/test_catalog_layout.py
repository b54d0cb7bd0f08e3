"""A specs folder in the vendor catalog's layout (`<repository>/<category>/*.yaml`, as
`aclnngen catalog --specs-out` writes `specs/catalog`) generates and checks like one with `ops/`;
`--catalog` names the committed catalog. An unchanged package is checked from the last run's
record (codegen/gencache.py), and a file restored by hand is remembered anew."""

from __future__ import annotations

import shutil

import pytest

from aclnngen.codegen import generate, tables
from aclnngen.codegen.cli import main
from aclnngen.codegen.errors import GenerateError
from repo_paths import CATALOG_SPECS

# three catalog specs from different folders (a few ops keep this fast; the layout is what counts)
SAMPLE = sorted(CATALOG_SPECS.glob(tables.CATALOG_LAYOUT))[::300][:3]
pytestmark = pytest.mark.skipif(len(SAMPLE) < 3, reason="fewer than three catalog specs under specs/catalog")


@pytest.fixture
def catalog_tree(tmp_path, monkeypatch):
    monkeypatch.setenv("ACLNNGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = tmp_path / "catalog"
    for path in SAMPLE:
        target = root / path.relative_to(CATALOG_SPECS)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)
    return root


def test_the_catalog_layout_is_found_in_name_order(catalog_tree):
    assert tables.is_catalog(catalog_tree) and not tables.is_catalog(catalog_tree.parent)
    found = tables.spec_paths(catalog_tree)
    assert [p.name for p in found] == sorted(p.name for p in SAMPLE)
    assert tables.spec_path(catalog_tree, SAMPLE[0].stem).name == SAMPLE[0].name


def test_two_specs_named_alike_in_two_folders_are_refused(catalog_tree):
    twin = catalog_tree / "another-repo" / "another-category" / SAMPLE[0].name
    twin.parent.mkdir(parents=True)
    shutil.copy(SAMPLE[0], twin)
    with pytest.raises(GenerateError, match=f"named alike in two folders: {SAMPLE[0].name}"):
        tables.spec_paths(catalog_tree)


def test_a_catalog_folder_generates_a_package_and_checks_it(catalog_tree, tmp_path, monkeypatch, capsys):
    out = tmp_path / "pkg" / "my_catalog"
    assert main(["generate", "--specs", str(catalog_tree), "--out", str(out)]) == 0
    for path in SAMPLE:
        assert (out / "ops" / f"{path.stem}.py").is_file() and (out / "meta" / f"{path.stem}.py").is_file()
    check = ["check", "--specs", str(catalog_tree), "--out", str(out)]
    real_plan = generate.plan

    def no_render(*args, **kwargs):
        raise AssertionError("an unchanged package was rendered to be checked")

    monkeypatch.setattr(generate, "plan", no_render)
    capsys.readouterr()
    assert main(check) == 0 and "generated files are fresh" in capsys.readouterr().out
    binding = out / "ops" / f"{SAMPLE[0].stem}.py"
    binding.write_text(binding.read_text() + "# mine\n")
    monkeypatch.setattr(generate, "plan", real_plan)  # a touched output: rendered and compared
    assert main(check) == 1 and f"stale: ops/{SAMPLE[0].stem}.py" in capsys.readouterr().out


def test_a_file_restored_by_hand_is_remembered_so_the_next_run_reads_nothing(catalog_tree, tmp_path, monkeypatch):
    out = tmp_path / "pkg" / "my_catalog"
    generate_cmd = ["generate", "--specs", str(catalog_tree), "--out", str(out)]
    assert main(generate_cmd) == 0
    binding = out / "ops" / f"{SAMPLE[0].stem}.py"
    text = binding.read_text()
    binding.unlink()
    binding.write_text(text)  # the same content, a new file: the record no longer matches it
    assert main(generate_cmd) == 0  # a full run: it reads the file, finds it right, remembers it

    def no_render(*args, **kwargs):
        raise AssertionError("rendered again though nothing changed since the last run")

    monkeypatch.setattr(generate, "plan", no_render)
    assert main(generate_cmd) == 0


def test_catalog_names_the_committed_catalog_and_refuses_specs_beside_it(tmp_path, capsys):
    assert main(["generate", "--catalog", "--specs", str(tmp_path)]) != 0
    assert "give --specs or --catalog, not both" in capsys.readouterr().err
    assert tables.is_catalog(tables.CATALOG_SPECS_DIR)
    assert tables.CATALOG_SPECS_DIR.resolve() == CATALOG_SPECS.resolve()
