"""Arithmetic as the library does it, and oracle arguments as data (issue 23), on made-up ops
(tests/data/arithmetic_specs): integer tensors computed in float32 and rounded to the nearest
integer; a scalar the library clamps, stated to the oracle as `{expr: ...}`; dtype constants and a
`compute` dtype for oracle steps. Checked against PyTorch called directly."""

from __future__ import annotations

import importlib
from pathlib import Path

import numpy as np
import pytest
import yaml

from packages import generated_package, run_generated_tests
from repo_paths import DATA
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.runtime import session
from aclnngen.verify import oracle

SPECS = DATA / "arithmetic_specs"
PACKAGE = "arith_ops"


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    with generated_package(tmp_path_factory.mktemp("arithmetic"), SPECS, PACKAGE) as out:
        yield out


def test_the_generated_tests_pass_with_single_call_oracles(package):
    done = run_generated_tests(package)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert any("int8-" in node for node in done.collected)


def test_integers_compute_in_float32_and_round_to_nearest(package):
    import torch

    reference = importlib.import_module(f"{PACKAGE}.reference.scaled_result_backward").reference
    binding = importlib.import_module(f"{PACKAGE}.ops.scaled_result_backward").scaled_result_backward
    session.reset()  # the package's simulator entry points, registered by that import, get built in
    g = np.array([10, 10, 10, -7], dtype=np.int32)
    y = np.array([5, -1, 0, -3], dtype=np.int32)
    # PyTorch directly: SELU's backward from its result, in float32, rounded half to even
    expected = (
        torch.ops.aten.elu_backward(
            torch.from_numpy(g.astype(np.float32)),
            1.6732632423543772,
            1.0507009873554805,
            1.0,
            True,
            torch.from_numpy(y.astype(np.float32)),
        )
        .round()
        .to(torch.int32)
        .numpy()
    )
    assert expected.tolist() == [11, 8, 18, 9]
    np.testing.assert_array_equal(reference(g, y), expected)
    with session.simulated(family="a2"):
        np.testing.assert_array_equal(binding(g, y), expected)
    for dtype in (np.int8, np.int32):
        got = reference(g.astype(dtype), y.astype(dtype))
        assert got.dtype == dtype and got.tolist() == expected.tolist()


def _spec_text(name: str) -> dict:
    return yaml.safe_load((SPECS / "ops" / f"{name}.yaml").read_text(encoding="utf-8"))


def _load(tmp_path: Path, data: dict):
    path = tmp_path / "ops" / "scaled_result_backward.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return load_spec(path, load_products())


def test_a_non_integer_constant_never_meets_integers_silently(tmp_path):
    data = _spec_text("scaled_result_backward")
    del data["arithmetic"]
    with pytest.raises(SpecError) as err:
        _load(tmp_path, data)
    text = str(err.value)
    assert "scaled_result_backward.yaml:" in text and "1.0507009873554805" in text and "arithmetic.compute" in text
    data = _spec_text("scaled_result_backward")
    data["arithmetic"]["compute"][0]["storage"] = ["int8"]  # int32 left uncovered
    with pytest.raises(SpecError, match="int32"):
        _load(tmp_path, data)
    for p in data["parameters"]:  # float data only: nothing to say
        for row in p.get("dtypes", []):
            row["dtypes"] = ["float16", "float32"]
    del data["arithmetic"]
    _load(tmp_path, data)


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda a: a["compute"][0].update(compute="int32"), "a float dtype"),
        (lambda a: a["compute"][0].update(families=["training"]), "not among the spec's products"),
        (lambda a: a.update(to_integer="round_up"), "to_integer"),
    ],
)
def test_the_arithmetic_section_is_checked(tmp_path, change, message):
    data = _spec_text("scaled_result_backward")
    change(data["arithmetic"])
    with pytest.raises(SpecError, match=message):
        _load(tmp_path, data)


def test_an_expression_argument_states_the_clamped_scalar(package):
    module = importlib.import_module(f"{PACKAGE}.reference.clamped_threshold_backward")
    meta = importlib.import_module(f"{PACKAGE}.meta.clamped_threshold_backward").META
    g = np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32)
    x = np.array([-0.6, -0.2, 0.0, 0.3], dtype=np.float32)
    ours = module.reference(g, x, threshold=-0.5)
    values = {"grad_output": g, "self": x, "threshold": -0.5}
    (theirs,) = oracle.run(meta["oracle"], values, expressions=module.oracle_argument)
    np.testing.assert_array_equal(ours, theirs)
    np.testing.assert_array_equal(theirs, [0.0, 0.0, 0.0, 4.0])  # x <= 0 passes nothing
    plain = {**meta["oracle"], "args": ["grad_output", "self", "threshold"]}  # PyTorch's own threshold
    (unclamped,) = oracle.run(plain, values)
    assert not np.array_equal(unclamped, ours)
    with pytest.raises(oracle.OracleStepError, match="needs the op's reference"):
        oracle.run(meta["oracle"], values)


def test_an_expression_over_anything_but_scalars_and_attributes_is_refused(tmp_path):
    data = _spec_text("clamped_threshold_backward")
    data["oracle"]["args"][2] = {"expr": "maximum(self, 0)"}
    path = tmp_path / "ops" / "clamped_threshold_backward.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    with pytest.raises(SpecError) as err:
        load_spec(path, load_products())
    assert "clamped_threshold_backward.yaml:" in str(err.value) and "self" in str(err.value)


def test_a_dtype_constant_is_passed_as_a_torch_dtype():
    x = np.array([1.5, -2.25], dtype=np.float32)
    step = {
        "kind": "aten",
        "op": "_to_copy",
        "args": ["x"],
        "kwargs": {"dtype": {"dtype": "float64"}},
        "outputs": ["y"],
    }
    (y,) = oracle.run(step, {"x": x})
    assert y.dtype == np.float64 and y.tolist() == [1.5, -2.25]


def test_steps_compute_in_the_stated_dtype_and_round_once():
    x = np.linspace(1.01, 7.9, 4001).astype(np.float16)
    steps = {
        "kind": "steps",
        "steps": [{"name": "sq", "op": "mul", "args": ["x", "x"]}, {"name": "cube", "op": "mul", "args": ["sq", "x"]}],
        "outputs": ["cube"],
    }
    once = (x.astype(np.float32) ** 2 * x.astype(np.float32)).astype(np.float16)
    (stepwise,) = oracle.run(steps, {"x": x})
    (computed,) = oracle.run({**steps, "compute": "float32"}, {"x": x}, output_dtypes=[np.float16])
    assert computed.dtype == np.float16
    np.testing.assert_array_equal(computed, once)
    assert (stepwise != once).any(), "rounding every step in float16 differs somewhere"


def test_scalars_are_rounded_as_the_spec_says(package):
    from aclnngen.evaluate.reference import Reference

    module = importlib.import_module(f"{PACKAGE}.reference.clamped_threshold_backward")
    meta = dict(importlib.import_module(f"{PACKAGE}.meta.clamped_threshold_backward").META)
    x = np.array([np.float16(0.10002)], dtype=np.float16)  # 0.10003662..., above the threshold 0.10002
    values = {"gradOutput": np.ones(1, np.float16), "self": x, "threshold": 0.10002}
    assert Reference(meta, module.FORMULAS)(values).tolist() == [1.0]
    rounded = {"compute": [], "to_integer": "truncate", "scalars": [{"storage": ["float16"], "round_to": "float16"}]}
    meta = {**meta, "arithmetic": rounded}  # a new META: one that has been read is never changed
    assert Reference(meta, module.FORMULAS)(values).tolist() == [0.0]  # the threshold rounds up to x
    values = {**values, "gradOutput": np.ones(1, np.float32), "self": x.astype(np.float32)}
    assert Reference(meta, module.FORMULAS)(values).tolist() == [1.0]  # float32 data: not rounded


def test_the_op_page_states_the_arithmetic(package):
    page = (package / "docs" / "scaled_result_backward.md").read_text(encoding="utf-8")
    assert "int8, int32 compute in float32" in page and "`nearest_even`" in page
    assert "## Arithmetic" not in (package / "docs" / "clamped_threshold_backward.md").read_text(encoding="utf-8")


def test_an_ignored_forward_intermediate_gets_data_its_forward_gives(package):
    from aclnngen.verify import cases, opcheck

    meta = importlib.import_module(f"{PACKAGE}.meta.buffered_log_sigmoid_backward").META
    reference = importlib.import_module(f"{PACKAGE}.reference.buffered_log_sigmoid_backward")
    op = opcheck.OpUnderTest(meta, reference=reference, binding=None, version="8.5.0")
    drawn = dict(cases.make_values(meta, "rank0", "float32", version="8.5.0"))
    random_buffer = drawn["buffer"].copy()
    values = opcheck.with_forward_values(op, drawn)
    x = values["self"].astype(np.float64)
    np.testing.assert_allclose(values["buffer"], np.exp(-np.abs(x)), rtol=1e-6)
    by_py = {"grad_output": values["gradOutput"], "self": values["self"], "buffer": values["buffer"]}
    (theirs,) = op.run_oracle(by_py, [np.dtype(np.float32)])
    np.testing.assert_allclose(
        theirs, reference.reference(values["gradOutput"], values["self"], values["buffer"]), rtol=1e-5
    )
    (with_random,) = op.run_oracle({**by_py, "buffer": random_buffer}, [np.dtype(np.float32)])
    assert not np.allclose(with_random, theirs, rtol=1e-3), "PyTorch reads the buffer: random data would not do"


def test_an_oracle_domain_skips_the_points_outside_it_naming_why(tmp_path):
    data = _spec_text("clamped_threshold_backward")
    data["oracle"]["args"][2] = "threshold"  # PyTorch's own threshold: right only where it is not negative
    data["oracle"]["domain"] = {"where": "threshold >= 0", "reason": "A negative threshold counts as zero here."}
    specs = tmp_path / "specs"
    (specs / "ops").mkdir(parents=True)
    (specs / "ops" / "clamped_threshold_backward.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    with generated_package(tmp_path, specs, "domain_ops") as out:
        tests = out / "tests" / "test_clamped_threshold_backward.py"
        text = tests.read_text(encoding="utf-8")
        assert "-no-oracle-a-negative-threshold-counts-as-zero" in text
        done = run_generated_tests(out, "-rs")  # the tests of its one op
    assert done.returncode == 0, done.stdout[-3000:]
    assert "outside the oracle's domain (threshold >= 0): A negative threshold counts as zero here." in done.stdout
    assert 0 < len(done.with_outcome("skipped")) < len(done.with_outcome("passed"))
    data["oracle"].pop("domain")  # without the domain the negative points fail: the domain is what keeps them out
    (specs / "ops" / "clamped_threshold_backward.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    with generated_package(tmp_path / "again", specs, "nodomain_ops") as out:
        done = run_generated_tests(out, "-k", "sweep")
    assert done.returncode == 1 and done.with_outcome("failed")
