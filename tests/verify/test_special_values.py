"""Special values (NaN, infinities, signed zeros, subnormals, extremes) reach every op's comparison
with the oracle, in the gradient as in the forward input, and NaN positions are judged like any
other: only an aten operator whose own answer there depends on the element's position
(verify/oracle.py, NAN_POSITION_DEPENDENT) has them left out, and that list is checked against the
torch in use."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import catalog
from aclnngen.verify import opcheck, oracle

torch = pytest.importorskip("torch")


def _op(snake: str) -> opcheck.OpUnderTest:
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    reference = importlib.import_module(f"aclnngen.generated.reference.{snake}")
    return opcheck.OpUnderTest(meta, reference=reference, binding=None, version=meta["cann_version"])


@pytest.mark.parametrize("snake", catalog.representatives())
def test_special_values_reach_the_gradient_and_the_forward_input(snake):
    op = _op(snake)
    values = opcheck.adversarial_values(op, "float32", "special-values")
    meanings = dict((p.name, m) for p, m in opcheck._meanings(op))
    for name, meaning in meanings.items():
        if meaning not in ("gradient", "forward_input"):
            continue
        data = np.asarray(values[name], dtype=np.float64)
        assert np.isnan(data).any() and np.isposinf(data).any() and np.isneginf(data).any(), f"{snake}: {name}"
        assert (np.signbit(data) & (data == 0)).any(), f"{snake}: {name} holds no -0.0"


@pytest.mark.parametrize("aten", sorted(oracle.NAN_POSITION_DEPENDENT))
def test_recorded_fact_each_listed_oracle_quirk_is_real_in_this_torch(aten):
    n = 1000
    x = torch.randn(n)
    x[3] = x[n - 1] = float("nan")
    g = torch.full((n,), 2.0)
    fn = getattr(torch.ops.aten, aten)
    extra = {"hardtanh_backward": (-1.0, 1.0), "softshrink_backward": (0.5,)}[aten]
    got = fn(g, x, *extra)
    assert got[3].item() != got[n - 1].item(), (
        f"aten::{aten} now answers a NaN input the same everywhere: drop it from the list"
    )


def _wrong_at_nan_inputs(values, op, result):
    """`result` with another value wherever a forward input is NaN: a reference wrong only there."""
    x = next(values[p.name] for p, m in opcheck._meanings(op) if m == "forward_input")
    out = np.array(result, copy=True)
    at = np.isnan(np.asarray(x, dtype=np.float64))
    out[at] = np.where(out[at] == 0, 7.0, 0.0)  # differs from what was there, NaN included
    return out


def _takes_a_forward_input(snake: str) -> bool:
    return any(m == "forward_input" for _, m in opcheck._meanings(_op(snake)))


@pytest.mark.parametrize("snake", [s for s in catalog.representatives() if _takes_a_forward_input(s)])
def test_a_reference_wrong_only_at_nan_inputs_is_caught_unless_the_oracle_is_position_dependent(snake):
    op = _op(snake)
    values = opcheck.adversarial_values(op, "float32", "special-values")
    by_py = {p["py"]: values.get(p["name"]) for p in op.meta["params"] if p["role"] != "output"}
    theirs = oracle.run(op.meta["oracle"], by_py)
    (py, kind), want = next(iter(op.meta["formula"]["outputs"].items())), theirs[0]
    wrong = _wrong_at_nan_inputs(values, op, want)
    assert not np.array_equal(wrong, want, equal_nan=True)
    if oracle.nan_position_dependent(op.meta["oracle"]):
        opcheck.compare_within_policy(op, values, py, kind, "float32", wrong, want, None)  # left out: passes
    else:
        with pytest.raises(AssertionError):
            opcheck.compare_within_policy(op, values, py, kind, "float32", wrong, want, None)


def test_threshold_backward_passes_the_gradient_at_a_nan_input_as_aten_does():
    """A recorded fact of one op: its formula is written so that NaN is not <= threshold."""
    op = _op("threshold_backward")
    x = np.array([np.nan, -1.0, 2.0], dtype=np.float32)
    g = np.array([3.0, 3.0, 3.0], dtype=np.float32)
    (got,) = op.run_reference({"gradOutput": g, "self": x, "threshold": 0.5, "out": np.zeros(3, np.float32)})
    want = torch.ops.aten.threshold_backward(torch.from_numpy(g), torch.from_numpy(x), 0.5).numpy()
    assert np.array_equal(got, want) and got[0] == 3.0, (got, want)
