"""Input meanings in a spec: `meaning` on input tensors only, `forward` exactly on forward outputs,
and a `forward` expression checked like a formula (names: x, the scalars and attributes)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import load_products, load_spec
from repo_paths import CUSTOM_SPECS

BASE = (CUSTOM_SPECS / "ops" / "sloped_step_backward.yaml").read_text(encoding="utf-8")
SELF = "    summary: The input x (or the forward result when selfIsResult).\n"
OUT = "    summary: Gradient with respect to x.\n"


def _load(tmp_path: Path, text: str):
    path = tmp_path / "sloped_step_backward.yaml"
    path.write_text(text, encoding="utf-8")
    return load_spec(path, load_products()).spec


def _with(anchor: str, extra: str) -> str:
    assert anchor in BASE
    return BASE.replace(anchor, anchor + extra)


def test_a_forward_output_with_its_forward_function_loads(tmp_path):
    spec = _load(
        tmp_path, _with(SELF, "    meaning: forward_output\n    forward: where(x > 0, x, x * negative_slope)\n")
    )
    assert spec.parameter("self").meaning == "forward_output"


@pytest.mark.parametrize(
    "extra, anchor, pattern, line",
    [
        ("    meaning: forward_output\n", SELF, r"needs 'forward'", "- name: self"),
        ("    meaning: forward_input\n    forward: x\n", SELF, r"needs 'forward'", "- name: self"),
        ("    meaning: gradient\n", OUT, r"apply to input tensors", "- name: gradInput"),
        ("    meaning: forward_output\n    forward: tanh(y)\n", SELF, r"unknown name `y`", "forward: tanh(y)"),
        ("    meaning: forward_output\n    forward: grad_output * x\n", SELF, r"grad_output", "forward: grad_output"),
        ("    meaning: weights\n", SELF, r"meaning", "meaning: weights"),
    ],
)
def test_a_wrong_meaning_or_forward_is_an_error_at_its_line(tmp_path, extra, anchor, pattern, line):
    text = _with(anchor, extra)
    with pytest.raises(SpecError, match=pattern) as info:
        _load(tmp_path, text)
    number = next(i for i, row in enumerate(text.splitlines(), 1) if line in row)
    assert f"sloped_step_backward.yaml:{number}:" in str(info.value), str(info.value)
