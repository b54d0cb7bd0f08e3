"""Oracles composed of several aten calls, as data (`kind: steps`): names flow from step to step,
constants and dtypes are passed as in an aten oracle, bad names are refused at their line by
`validate`, and a failing step names itself when the oracle runs. Synthetic fixtures only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aclnngen.codegen import metadata
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.verify import oracle
from repo_paths import CUSTOM_SPECS

torch = pytest.importorskip("torch", reason="the oracle runs PyTorch (CI installs it)")

BASE = (CUSTOM_SPECS / "ops" / "sloped_step_backward.yaml").read_text(encoding="utf-8")
STEPS = "    - {name: scaled, op: mul, args: [grad_output, negative_slope]}\n"


def _spec(tmp_path: Path, text: str = BASE):
    path = tmp_path / "sloped_step_backward.yaml"
    path.write_text(text, encoding="utf-8")
    return load_spec(path, load_products()).spec


def _data():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    x[0, :3] = [0.0, -0.0, np.nan]
    return rng.standard_normal((4, 5)).astype(np.float32), x


def test_steps_compute_what_the_single_aten_op_computes(tmp_path):
    spec = _spec(tmp_path)
    assert spec.oracle.kind == "steps" and len(spec.oracle.steps) > 1
    g, x = _data()
    (ours,) = oracle.run(
        metadata.build(spec)["oracle"], {"grad_output": g, "self": x, "negative_slope": 0.25, "self_is_result": False}
    )
    want = torch.ops.aten.leaky_relu_backward(torch.from_numpy(g), torch.from_numpy(x), 0.25, False).numpy()
    assert ours.dtype == np.float32 and np.array_equal(ours, want, equal_nan=True)


def test_a_step_with_constants_and_a_tuple_result_through_aten_elu():
    g, x = _data()
    alpha, scale = 1.6732632423543772, 1.0507009873554805  # SELU's: elu_backward with constants
    steps = {
        "kind": "steps",
        "outputs": ["grad_input", "grad_sign"],
        "steps": [
            {"name": "y", "op": "selu", "args": ["self"]},
            {
                "name": "grad_input",
                "op": "elu_backward",
                "args": ["grad_output", {"const": alpha}, {"const": scale}, {"const": 1.0}, {"const": True}, "y"],
            },
            {"name": ["grad_sign", "grad_abs"], "op": "frexp", "args": ["grad_input"]},
        ],
    }
    grad_input, mantissa = oracle.run(steps, {"grad_output": g, "self": x})
    y = np.where(x > 0, scale * x, scale * alpha * np.expm1(x.astype(np.float64)))
    want = np.where(y > 0, scale * g, g * (y + scale * alpha))
    finite = np.isfinite(x)  # aten's NaN handling is its own; the composition is what is checked
    np.testing.assert_allclose(grad_input[finite], want[finite], rtol=1e-5, atol=1e-6)
    assert mantissa.shape == g.shape and np.all(np.abs(mantissa[np.isfinite(mantissa) & (mantissa != 0)]) >= 0.5)


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda t: t.replace(STEPS, STEPS.replace("negative_slope]", "slope]")), "unknown parameter 'slope'"),
        (lambda t: t.replace(STEPS, STEPS.replace("name: scaled", "name: self")), "reuses the name"),
        (
            lambda t: t.replace("  outputs: [grad_input]\n", "  outputs: [scaled]\n"),
            "the oracle must produce the outputs",
        ),
        (
            lambda t: t.replace(
                "args: [positive, grad_output, scaled]", "args: [positive, grad_output, later]"
            ).replace(
                "  outputs: [grad_input]\n",
                "    - {name: later, op: mul, args: [grad_output, {const: 2.0}]}\n  outputs: [grad_input]\n",
            ),
            "unknown parameter 'later'",
        ),  # a result used before its step
        (
            lambda t: t.replace("op: gt, args: [self, {const: 0.0}]", "op: gt, args: [self, {dtype_of: scaled}]"),
            "unknown input tensor 'scaled'",
        ),
    ],
)
def test_bad_names_are_refused_at_their_line(tmp_path, edit, message):
    text = edit(BASE)
    assert text != BASE
    with pytest.raises(SpecError, match=message) as info:
        _spec(tmp_path, text)
    assert "sloped_step_backward.yaml:" in str(info.value) and "spec-language.md#oracle" in str(info.value)


def test_a_failing_step_names_itself():
    g, x = _data()
    missing = {
        "kind": "steps",
        "outputs": ["out"],
        "steps": [{"name": "out", "op": "no_such_aten_op", "args": ["self"]}],
    }
    with pytest.raises(
        oracle.OracleStepError, match=r"oracle step 0 \(out\): torch has no aten operator 'no_such_aten_op'"
    ):
        oracle.run(missing, {"self": x})
    arity = {"kind": "steps", "outputs": ["a"], "steps": [{"name": ["a", "b"], "op": "mul", "args": ["self", "self"]}]}
    with pytest.raises(oracle.OracleStepError, match=r"returned 1 result\(s\) for the 2 name\(s\)"):
        oracle.run(arity, {"self": x})
    wrong = {"kind": "steps", "outputs": ["a"], "steps": [{"name": "a", "op": "mul", "args": ["self"]}]}
    with pytest.raises(oracle.OracleStepError, match=r"oracle step 0 \(a\): aten::mul failed"):
        oracle.run(wrong, {"self": x})
