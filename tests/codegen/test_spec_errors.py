"""Malformed specs: each kind of mistake is rejected with the right `file:line` and an actionable message."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import load_products, load_spec
from repo_paths import DATA

# a made-up spec (a frozen, renamed copy of a real one), so a changed spec of the catalog leaves these cases as they are
BASE = (DATA / "spec_errors" / "demo_swish_backward.yaml").read_text(encoding="utf-8")
PRODUCTS = load_products()


def _line_of(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} is not in the text")


def _edit(old: str, new: str, count: int = 1) -> str:
    assert old in BASE, f"the base spec no longer contains {old!r}"
    return BASE.replace(old, new, count)


def _load(tmp_path: Path, text: str, name: str = "demo_swish_backward.yaml"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path, load_spec(path, PRODUCTS)


# (id, edited text, the text of the line the error must point at, a regex the message must match)
CASES = [
    (
        "unknown-top-level-key",
        _edit("cann_version: 8.0.0", "cann_version: 8.0.0\nauthor: someone"),
        "author: someone",
        r"unknown key 'author'",
    ),
    (
        "unknown-nested-key",
        _edit("    py_name: beta\n", "    py_name: beta\n    colour: red\n"),
        "colour: red",
        r"unknown key 'colour'",
    ),
    (
        "duplicate-key",
        _edit("cann_version: 8.0.0", "cann_version: 8.0.0\ncann_version: 8.5.0"),
        "cann_version: 8.5.0",
        r"duplicate key 'cann_version'",
    ),
    (
        "missing-key",
        _edit("summary: Gradient of Swish, x * sigmoid(beta * x), with respect to its input x.\n", ""),
        "name: DemoSwishBackward",
        r"missing key 'summary'",
    ),
    ("missing-nested-key", _edit("    role: optional_scalar\n", ""), "- name: betaOptional", r"missing key 'role'"),
    (
        "wrong-type-number-for-string",
        _edit("cann_version: 8.0.0", "cann_version: 8.0"),
        "cann_version: 8.0",
        r"cann_version.*string",
    ),
    (
        "wrong-type-string-for-list",
        _edit(
            "  - {kind: same_shape, params: [gradOutput, self, gradInput]}",
            "  - {kind: same_shape, params: gradOutput}",
        ),
        "kind: same_shape",
        r"list",
    ),
    (
        "op-name-not-c-identifier",
        _edit("name: DemoSwishBackward", "name: Swish-Backward"),
        "name: Swish-Backward",
        r"not a C identifier",
    ),
    (
        "param-name-not-c-identifier",
        _edit("  - name: betaOptional", "  - name: beta.Optional"),
        "name: beta.Optional",
        r"not a C identifier",
    ),
    ("py-name-keyword", _edit("    py_name: beta\n", "    py_name: lambda\n"), "py_name: lambda", r"keyword"),
    ("py-name-not-snake", _edit("    py_name: beta\n", "    py_name: Beta\n"), "py_name: Beta", r"snake_case"),
    (
        "formula-outside-language",
        _edit("    s: sigmoid(beta * self)", "    s: __import__('os').system('true')"),
        "__import__",
        r"(only the functions of the language can be called|attribute access is not allowed)",
    ),
    (
        "formula-unknown-name",
        _edit("    s: sigmoid(beta * self)", "    s: sigmoid(betta * self)"),
        "betta",
        r"betta.*did you mean .beta.",
    ),
    (
        "formula-uses-output",
        _edit("    s: sigmoid(beta * self)", "    s: sigmoid(beta * grad_input)"),
        "grad_input)",
        r"output",
    ),
    (
        "unknown-dtype",
        _edit(
            "{families: [training, inference], dtypes: [float16, float32]}",
            "{families: [training, inference], dtypes: [float8, float32]}",
        ),
        "float8",
        r"unknown dtype 'float8'",
    ),
    (
        "unknown-product-family",
        _edit("  - family: inference\n", "  - family: inferense\n"),
        "family: inferense",
        r"unknown product family 'inferense'.*did you mean 'inference'",
    ),
    (
        "unknown-family-in-dtypes",
        _edit(
            "{families: [a2], dtypes: [bfloat16, float16, float32]}",
            "{families: [a9], dtypes: [bfloat16, float16, float32]}",
        ),
        "families: [a9]",
        r"unknown product family 'a9'",
    ),
    (
        "rule-names-unknown-param",
        _edit(
            "  - {kind: same_shape, params: [gradOutput, self, gradInput]}",
            "  - {kind: same_shape, params: [gradOutput, selff, gradInput]}",
        ),
        "selff",
        r"unknown parameter 'selff'.*did you mean 'self'",
    ),
    (
        "rule-on-scalar",
        _edit(
            "  - {kind: same_dtype, params: [gradOutput, self, gradInput]}",
            "  - {kind: same_dtype, params: [gradOutput, betaOptional]}",
        ),
        "betaOptional]",
        r"applies to tensors",
    ),
    (
        "unknown-rule-kind",
        _edit("  - {kind: same_shape,", "  - {kind: same_size,"),
        "same_size",
        r"unknown kind 'same_size'",
    ),
    (
        "prototype-not-canonical",
        _edit(
            "(const aclTensor* gradOutput, const aclTensor* self, const aclScalar*",
            "(const aclTensor *gradOutput, const aclTensor* self, const aclScalar*",
        ),
        "get_workspace_size:",
        r"canonical",
    ),
    (
        "prototype-disagrees-with-table",
        _edit(
            "const aclScalar* betaOptional, aclTensor* gradInput, uint64_t*",
            "const aclScalar* beta, aclTensor* gradInput, uint64_t*",
        ),
        "- name: betaOptional",
        r"'beta' in the prototype but 'betaOptional' in the table",
    ),
    (
        "prototype-wrong-function-name",
        _edit("aclnnStatus aclnnDemoSwishBackward(void*", "aclnnStatus aclnnDemoSwishBackwards(void*"),
        "launch:",
        r"must be named aclnnDemoSwishBackward",
    ),
    (
        "prototype-input-not-const",
        _edit("(const aclTensor* gradOutput,", "(aclTensor* gradOutput,"),
        "    role: input",
        r"const",
    ),
    ("bad-version", _edit("    since: 8.5.0\n", "    since: eight\n"), "since: eight", r"not a CANN release"),
    ("bad-status", _edit("  - status: 161001", "  - status: 161003"), "status: 161003", r"161001|161002"),
    (
        "return-code-without-rule",
        _edit("    check: same_shape\n", "    check: broadcast\n"),
        "check: broadcast",
        r"no rule of kind 'broadcast'",
    ),
    (
        "null-pointer-row-names-optional",
        _edit(
            "    params: [gradOutput, self, gradInput]\n    condition: One of the tensors",
            "    params: [gradOutput, betaOptional]\n    condition: One of the tensors",
        ),
        "params: [gradOutput, betaOptional]",
        r"may be NULL",
    ),
    (
        "oracle-unknown-arg",
        _edit("  args: [grad_output, self, beta]", "  args: [grad_output, x, beta]"),
        "args: [grad_output, x, beta]",
        r"unknown parameter 'x'",
    ),
    (
        "dtypes-given-twice",
        _edit(
            "      - {families: [a2], dtypes: [bfloat16, float16, float32]}\n",
            "      - {families: [a2], dtypes: [bfloat16, float16, float32]}\n      - {families: [a2], dtypes: [float32]}\n",
        ),
        "{families: [a2], dtypes: [float32]}",
        r"given twice",
    ),
    (
        "supported-family-without-dtypes",
        _edit(
            "      - {families: [training, inference], dtypes: [float16, float32]}\n",
            "      - {families: [training], dtypes: [float16, float32]}\n",
        ),
        "    dtypes:",
        r"no dtypes for supported family inference",
    ),
    ("invalid-yaml", _edit("summary: Gradient", "summary: [Gradient"), "summary: [Gradient", r"invalid YAML"),
    (
        "claimed-formula-on-other-defect",
        _edit("  - kind: return_code\n", "  - kind: return_code\n    claimed: {outputs: {grad_input: grad_output}}\n"),
        "- kind: return_code",
        r"claimed",
    ),
    ("optional-scalar-without-default", _edit("    default: 1.0\n", ""), "- name: betaOptional", r"needs 'default'"),
    (
        "formula-outputs-mismatch",
        _edit("    grad_input: grad_output *", "    grad_in: grad_output *"),
        "outputs:",
        r"exactly the output tensors",
    ),
    (
        "no-family-at-the-page-release",
        _edit(
            "  - family: training\n  - family: inference\n  - family: a2\n",
            "  - family: training\n    since: 8.5.0\n  - family: inference\n    since: 8.5.0\n  - family: a2\n    since: 8.5.0\n",
        ).replace("  - family: a3\n    since: 8.5.0\n  - family: ascend950\n", "  - family: ascend950\n"),
        "products:",
        r"no product family supports the op at its page's release",
    ),
    (
        "no-null-pointer-row",
        _edit(
            "  - status: 161001\n    check: null_pointer\n    params: [gradOutput, self, gradInput]\n    condition: One of the tensors gradOutput, self or gradInput is NULL.\n",
            "",
        ),
        "return_codes:",
        r"need a row for 161001",
    ),
    (
        "scalar-field-on-tensor",
        _edit(
            "    role: input\n    summary: Gradient flowing back",
            "    role: input\n    scalar_dtype: float32\n    summary: Gradient flowing back",
        ),
        "- name: gradOutput",
        r"'scalar_dtype' does not apply",
    ),
]


@pytest.mark.parametrize("text,line_text,pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_malformed_spec_is_rejected_at_its_line(tmp_path, text, line_text, pattern):
    with pytest.raises(SpecError) as info:
        _load(tmp_path, text)
    problems = info.value.problems
    assert problems, "SpecError without problems"
    first = problems[0]
    assert first.path == str(tmp_path / "demo_swish_backward.yaml")
    assert first.line == _line_of(text, line_text), f"{first} should point at the line holding {line_text!r}"
    assert re.search(pattern, first.message), f"message {first.message!r} does not match {pattern!r}"


def test_there_are_at_least_25_kinds_of_mistake():
    assert len({c[0] for c in CASES}) >= 25


def test_file_name_must_match_op(tmp_path):
    with pytest.raises(SpecError) as info:
        _load(tmp_path, BASE, name="swish.yaml")
    assert "demo_swish_backward.yaml" in info.value.problems[0].message
    assert info.value.problems[0].line == _line_of(BASE, "name: DemoSwishBackward")


def test_empty_file(tmp_path):
    with pytest.raises(SpecError) as info:
        _load(tmp_path, "")
    assert "empty" in info.value.problems[0].message


def test_unmodified_base_loads(tmp_path):
    _, loaded = _load(tmp_path, BASE)
    assert loaded.spec.name == "DemoSwishBackward"


def test_a_scalar_the_header_declares_without_const_loads(tmp_path):
    # the library never writes a scalar: the header's `aclScalar*` is the same ABI as a const one
    text = _edit("const aclScalar* betaOptional, aclTensor* gradInput", "aclScalar* betaOptional, aclTensor* gradInput")
    _, loaded = _load(tmp_path, text)
    gws = loaded.spec.prototypes.get_workspace_size
    assert "aclScalar* betaOptional" in gws and "const aclScalar* betaOptional" not in gws


def test_the_trailing_pair_may_be_named_as_the_header_names_it(tmp_path):
    # the ABI sees the two types only; a header naming the executor `opExecutor` declares the same
    _, loaded = _load(tmp_path, _edit("aclOpExecutor** executor)", "aclOpExecutor** opExecutor)"))
    assert loaded.spec.prototypes.get_workspace_size.endswith("aclOpExecutor** opExecutor)")
    with pytest.raises(SpecError, match="the last two parameters must be"):
        _load(tmp_path, _edit("aclOpExecutor** executor)", "aclOpExecutor* executor)"))
