"""Each op's opmath float32 reference against its float64 golden, on the data the throughput
benchmark times (benchmarks/bench_throughput.py, smaller): the accuracy each op states.

Two figures per op, the benchmark's: the largest absolute error, and the mean relative error where
|golden| >= 1e-3 (a relative error at a root of the function says nothing). The stated bounds are
about twice the measured figures (benchmarks/README.md, "the NumPy reference fused"). Every op,
a new one included (no table to edit: adding an op is a spec), is held to the precision policy the
generated tests judge by (verify/opcheck.py): selections bit-exact, the rest within its standard.
"""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from aclnngen.core.meta import op_meta
from aclnngen.generated import OPS
from aclnngen.verify import cases, opcheck
from aclnngen.verify.opcheck import OpUnderTest

# op -> (max absolute error, mean relative error away from the roots), float32 opmath vs float64
RECORDED_FACTS_ACCURACY = {
    "elu_backward": (0.0, 0.0),  # the base case's is_result: no exp, exact products of its data
    "gelu_backward": (2e-6, 2e-6),  # erf within 8 float32 ulps (evaluate/fastmath.py), a root near -0.75
    "gelu_backward_v2": (2e-6, 2e-6),
    "hardtanh_backward": (0.0, 0.0),  # a selection: exact
    "leaky_relu_backward": (0.0, 0.0),
    "prelu_backward": (3e-5, 2e-7),  # the weight's gradient: a float32 sum of 4096 products
    "sigmoid_backward": (3e-7, 1e-7),
    "softmax_backward": (3e-6, 6e-7),
    "softshrink_backward": (0.0, 0.0),
    "swish_backward": (2e-6, 2e-7),
    "threshold_backward": (0.0, 0.0),
}


def _values(snake: str, side: int = 16) -> tuple[OpUnderTest, dict]:
    """The op's base case with every tensor grown to side**3 elements (a per-channel weight keeps
    one value per channel), drawn as the benchmark draws them."""
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    op = OpUnderTest(
        meta,
        reference=importlib.import_module(f"aclnngen.generated.reference.{snake}"),
        binding=None,
        version=meta["cann_version"],
    )
    rng = np.random.default_rng(0)
    values = dict(cases.make_values(meta, "contiguous", "float32", version=meta["cann_version"]))
    for p in op_meta(meta).by_role("input"):
        small = values.get(p.name)
        if not isinstance(small, np.ndarray):
            continue
        shape = (side,) if small.ndim == 1 else (side,) * 3
        if p.meaning == "forward_output":  # a value the forward can produce
            data = rng.uniform(0.01, 0.99, size=shape)
        elif small.ndim == 1:
            data = rng.uniform(0.05, 0.5, size=shape)
        else:
            data = rng.standard_normal(size=shape) * 2.0
        values[p.name] = data.astype(np.float32)
    for p in op_meta(meta).by_role("output"):
        values.pop(p.name, None)
    return op, values


def _errors(ours: np.ndarray, golden: np.ndarray) -> tuple[float, float]:
    diff = np.abs(ours.astype(np.float64) - golden)
    away = np.abs(golden) >= 1e-3
    return float(np.max(diff, initial=0.0)), float(np.mean(diff[away] / np.abs(golden[away]))) if away.any() else 0.0


@pytest.mark.parametrize("snake", sorted(OPS))
def test_every_ops_float32_reference_is_within_the_policy_of_its_float64_golden(snake):
    op, values = _values(snake)
    ours, golden = op.run_reference(values), op.run_reference(values, mode="golden")
    judged = 0
    for name, a, g in zip(op.typed.written, ours, golden):
        py = op.typed.param(name).py
        kind = op.typed.formula.outputs.get(py, "arithmetic")
        if kind == "reduction":  # its bound is the float32 sum's against torch's (generated tests)
            continue
        # a selection (of an input, or one product of inputs) is exact once rounded to float32
        want = g.astype(a.dtype) if kind == "selection" else g
        opcheck.compare_within_policy(op, values, py, kind, "float32", a, want, None)
        judged += 1
    if not judged:
        pytest.skip(f"{snake}: every output is a reduction, judged against torch's sum, not float64's")


@pytest.mark.parametrize("snake", sorted(RECORDED_FACTS_ACCURACY))
def test_the_reference_keeps_its_stated_accuracy_against_float64(snake):
    op, values = _values(snake)
    ours, golden = op.run_reference(values), op.run_reference(values, mode="golden")
    stated_abs, stated_rel = RECORDED_FACTS_ACCURACY[snake]
    for a, g in zip(ours, golden):
        assert a.dtype == np.float32 and g.dtype == np.float64
        worst, mean = _errors(a, g)
        assert worst <= stated_abs and mean <= stated_rel, f"{snake}: max abs {worst:.2e}, mean rel {mean:.2e}"
