"""Recorded facts of single ops' vendor behaviour profiles (specs/profiles/vendor/), each checked
against the vendor's op_api code: the simulator running the "vendor" profile must answer as that
code does. Each test names its op because it tests a fact recorded for that op alone; each fails on
the statement the profile held before it was corrected."""

from __future__ import annotations

import numpy as np
import pytest

from aclnngen.runtime import session
from aclnngen.runtime.errors import AclnnStatusError

PARAM_INVALID = 161002


@pytest.fixture
def vendor_a2():
    with session.simulated(family="a2", version="9.1.0", profile="vendor"):
        yield


def test_recorded_fact_swish_backward_rejects_more_than_8_dims_before_reshaping(vendor_a2):
    # CheckShapeValid runs OP_CHECK_MAX_DIM on all three tensors before the >8-dim reshape path
    from aclnngen.generated.ops.swish_backward import swish_backward

    x = np.ones((1,) * 9, dtype=np.float32)
    with pytest.raises(AclnnStatusError) as err:
        swish_backward(x, x, 1.0, validate=False)
    assert err.value.status == PARAM_INVALID
    ok = np.ones((1,) * 8, dtype=np.float32)
    assert swish_backward(ok, ok, 1.0, validate=False).shape == ok.shape


def test_recorded_fact_softshrink_backward_broadcasts_its_inputs_into_grad_input(vendor_a2):
    # gradInput is compared with BroadcastInferShape(self, gradOutput), not with self's shape
    from aclnngen.generated.ops.softshrink_backward import softshrink_backward

    g = np.array([[[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]]], dtype=np.float32)  # {1, 2, 3}
    x = np.array([[0.1, -0.9, 2.0], [-3.0, 0.2, 0.7]], dtype=np.float32)  # {2, 3}
    out = np.zeros((1, 2, 3), dtype=np.float32)
    got = softshrink_backward(g, x, 0.5, grad_input=out, validate=False)
    expected = np.where(np.abs(np.broadcast_to(x, g.shape)) > 0.5, g, 0)
    np.testing.assert_array_equal(got, expected)
    with pytest.raises(AclnnStatusError) as err:  # gradInput of self's shape is not the broadcast shape
        softshrink_backward(g, x, 0.5, grad_input=np.zeros((2, 3), dtype=np.float32), validate=False)
    assert err.value.status == PARAM_INVALID


def test_recorded_fact_elu_backward_accepts_any_grad_input_dtype_grad_output_casts_to(vendor_a2):
    # only OP_CHECK_RESULT_DTYPE_CAST_FAILED(gradOutput, gradInput) looks at gradInput's dtype
    from aclnngen.generated.ops.elu_backward import elu_backward

    g = np.array([1.0, -2.0], dtype=np.float32)
    x = np.array([0.5, -1.0], dtype=np.float32)
    out = np.zeros(2, dtype=np.complex64)
    got = elu_backward(g, 1.0, 1.0, 1.0, False, x, grad_input=out, validate=False)
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got.real, [1.0, -2.0 * np.exp(-1.0)], rtol=1e-6)
    with pytest.raises(AclnnStatusError) as err:  # float does not cast to an integer output
        elu_backward(g, 1.0, 1.0, 1.0, False, x, grad_input=np.zeros(2, dtype=np.int32), validate=False)
    assert err.value.status == PARAM_INVALID
