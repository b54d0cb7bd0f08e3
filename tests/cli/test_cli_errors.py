"""The command line never prints a traceback: one line on stderr naming what and where, exit 1 (2 for
usage errors); `generate --specs DIR` with bad specs reports every problem of every spec and writes
nothing."""

from __future__ import annotations

import shutil
from pathlib import Path

import forkserver
import pytest

from aclnngen.codegen import cli
from aclnngen.codegen import generate as generate_module
from repo_paths import CUSTOM_SPECS

SPECS = CUSTOM_SPECS


def test_an_unexpected_error_is_one_line_with_a_hint(monkeypatch, capsys, tmp_path):
    def broken(*args, **kwargs):
        raise TypeError("something aclnngen did not expect\nover two lines")

    monkeypatch.setattr(generate_module, "plan", broken)
    monkeypatch.setattr("aclnngen.codegen.commands.generate.plan", broken, raising=False)
    code = cli.main(["generate", "--specs", str(SPECS), "--out", str(tmp_path / "pkg")])
    err = capsys.readouterr().err
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert "internal error: TypeError: something aclnngen did not expect over two lines" in err
    assert "report" in err and "ACLNNGEN_DEBUG=1" in err
    monkeypatch.setenv("ACLNNGEN_DEBUG", "1")
    with pytest.raises(TypeError):
        cli.main(["generate", "--specs", str(SPECS), "--out", str(tmp_path / "pkg")])


def test_a_negative_seed_is_a_usage_error():
    result = forkserver.run_cli("run", "--seed", "-1", timeout=120)  # a process of its own, without the start-up
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr and "--seed: -1 is out of range" in result.stderr


def test_generate_with_bad_specs_reports_every_one_and_writes_nothing(tmp_path):
    specs = tmp_path / "specs"
    shutil.copytree(SPECS, specs)
    good, bad = sorted((specs / "ops").glob("*.yaml"))[:2]
    bad.write_text(bad.read_text().replace("summary:", "big: " + "9" * 5000 + "\nsummary:", 1))
    deep = specs / "ops" / "deep_op.yaml"
    deep.write_text("name: DeepOp\nx: " + "[" * 5000 + "]" * 5000 + "\n")
    garbled = specs / "ops" / "garbled_op.yaml"
    garbled.write_text("name: GarbledOp\nsummary: [\n")
    out = tmp_path / "pkg"
    result = forkserver.run_cli("generate", "--specs", specs, "--out", out, timeout=300)
    assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    for path in (bad, deep, garbled):
        assert any(line.startswith(f"{path}:") for line in lines), (path, result.stderr)
    assert not any(line.startswith(f"{good}:") for line in lines), result.stderr
    assert not out.exists(), "a failed generate wrote files"


def test_an_unexpected_failure_in_one_spec_never_stops_the_others(monkeypatch, tmp_path):
    from aclnngen.codegen import loader

    specs = tmp_path / "specs"
    shutil.copytree(SPECS, specs)
    first, second = sorted((specs / "ops").glob("*.yaml"))[:2]
    second.write_text(second.read_text().replace("summary:", "unknown_key: 1\nsummary:", 1))
    real = loader.validate_model

    def flaky(model, data, path, *args, **kwargs):
        if Path(path) == first:
            raise TypeError("a bug of aclnngen")
        return real(model, data, path, *args, **kwargs)

    monkeypatch.setattr(loader, "validate_model", flaky)
    with pytest.raises(loader.SpecError) as info:
        loader.load_all(specs, loader.load_products())
    lines = [str(p) for p in info.value.problems]
    assert any(line.startswith(f"{first}:0: ") and "bug in aclnngen" in line for line in lines), lines
    assert any(line.startswith(f"{second}:") and "unknown key 'unknown_key'" in line for line in lines), lines
