"""Limits on input (docs/security.md): each hostile spec file gets one clear `file:line` message from
`aclnngen validate`, exit 1, well under a second (the bound here is generous for a loaded machine)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from aclnngen.codegen import cli, formula
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, spec_paths

SEED = sorted(spec_paths(DEFAULT_SPECS_DIR))[0]
BOUND_SECONDS = 2.0


def _hostile(tmp_path: Path, kind: str) -> Path:
    path = tmp_path / SEED.name
    text = SEED.read_text(encoding="utf-8")
    if kind == "alias bomb":
        rows = ["bomb0: &b0 [x, x, x, x, x, x, x, x, x, x]"]
        rows += [f"bomb{i}: &b{i} [{', '.join([f'*b{i - 1}'] * 10)}]" for i in range(1, 9)]
        path.write_text(text.replace("summary:", "\n".join(rows) + "\nsummary:", 1), encoding="utf-8")
    elif kind == "deep nesting":
        path.write_text(text + "deep: " + "[" * 5000 + "]" * 5000 + "\n", encoding="utf-8")
    elif kind == "huge integer":
        path.write_text(text.replace("cann_version:", "big: " + "9" * 5000 + "\ncann_version:", 1), encoding="utf-8")
    elif kind == "too large":
        path.write_text(text + "#" + "x" * (1 << 20) + "\n", encoding="utf-8")
    elif kind == "not UTF-8":
        path.write_bytes(text.encode("utf-8").replace(b"summary:", b"summary: \xff", 1))
    elif kind == "FIFO":
        os.mkfifo(path)
    return path


EXPECTED = {
    "alias bomb": "anchors and aliases",
    "deep nesting": "nested more than",
    "huge integer": "integers are limited to 64 bits",
    "too large": "limited to 1048576 bytes",
    "not UTF-8": "not UTF-8: byte 0xff",
    "FIFO": "not a regular file",
}


def _validate(path, capsys) -> tuple[int, str, float]:
    result: dict = {}

    def work():
        start = time.monotonic()
        result["code"] = cli.main(["validate", str(path)])
        result["seconds"] = time.monotonic() - start

    worker = threading.Thread(target=work, daemon=True)  # a hang fails the test instead of blocking it
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), f"validate {path} hung"
    return result["code"], capsys.readouterr().err, result["seconds"]


@pytest.mark.parametrize("kind", sorted(EXPECTED))
def test_each_limit_is_one_line_at_once(tmp_path, capsys, kind):
    path = _hostile(tmp_path, kind)
    code, err, seconds = _validate(path, capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"{path}:") and EXPECTED[kind] in err, err
    assert seconds < BOUND_SECONDS, f"{kind}: {seconds:.2f} s"


def test_a_bad_byte_is_reported_on_its_line(tmp_path, capsys):
    path = _hostile(tmp_path, "not UTF-8")
    line = next(i for i, row in enumerate(SEED.read_text().splitlines(), 1) if row.startswith("summary:"))
    assert _validate(path, capsys)[1].startswith(f"{path}:{line}: ")


def test_devices_are_refused_without_reading(capsys):
    code, err, seconds = _validate(Path("/dev/zero"), capsys)
    assert code == 1 and "not a regular file" in err and seconds < BOUND_SECONDS


def test_an_exponent_tower_in_a_threshold_folds_at_once():
    names = {"self": "input", "grad_output": "input", "out": "output"}
    start = time.monotonic()
    prog = formula.parse_program({"out": "where(self > 2**2**2**2**2**2, grad_output, 0)"}, names, loc=("formula",))
    ((tensor, threshold),) = formula.comparison_boundaries(prog)
    assert (tensor, threshold) == ("self", "math.inf")
    assert time.monotonic() - start < BOUND_SECONDS
