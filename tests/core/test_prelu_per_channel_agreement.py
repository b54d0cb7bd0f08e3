"""PreluBackward's weight: what the validator accepts is exactly what the kernel can run.

The per_channel rule's check and the evaluator's `per_channel`/`sum_per_channel` share one
definition (`core.kinds.per_channel.weight_layout`); a weight of shape (2, 2) for 4 channels used
to pass validation and then fail in the simulated kernel with 507015.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from aclnngen.core.broadcasting import channels, numel
from aclnngen.core.meta import op_meta
from aclnngen.evaluate.numerics import Numerics
from aclnngen.generated.meta.prelu_backward import META
from aclnngen.generated.ops.prelu_backward import prelu_backward
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.validation import validate

FP32 = np.dtype(np.float32)
SELF_SHAPES = [(), (5,), (2, 4), (2, 4, 3), (1, 6, 2), (2, 1)]
WEIGHT_SHAPES = [(), (1,), (4,), (2, 2), (1, 4, 1), (6,), (2, 3), (3, 2), (1, 1)]


def _accepted(self_shape, weight_shape) -> bool:
    values = {
        "gradOutput": np.zeros(self_shape, FP32),
        "self": np.zeros(self_shape, FP32),
        "weight": np.zeros(weight_shape, FP32),
        "gradInput": np.zeros(self_shape, FP32),
        # the gradient as the rule wants it, so only the weight against self decides
        "gradWeight": np.zeros(weight_shape if numel(weight_shape) == 1 else (channels(self_shape),), FP32),
    }
    try:
        validate(META, values, family="a2", version=op_meta(META).cann_version)
    except AclnnValidationError as err:
        assert err.check == "per_channel", err
        return False
    return True


def _kernel_runs(self_shape, weight_shape) -> bool:
    m = Numerics("opmath", {"weight": FP32})
    try:
        m.per_channel(np.zeros(weight_shape, FP32), np.zeros(self_shape, FP32))
        m.sum_per_channel(np.zeros(self_shape, FP32), np.zeros(weight_shape, FP32))
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("self_shape,weight_shape", list(itertools.product(SELF_SHAPES, WEIGHT_SHAPES)))
def test_validator_accepts_what_the_kernel_runs(self_shape, weight_shape):
    assert _accepted(self_shape, weight_shape) == _kernel_runs(self_shape, weight_shape)


@pytest.mark.parametrize("validate_first", [True, False])
def test_prelu_a_square_weight_for_four_channels_runs(validate_first):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((2, 4, 3)).astype(FP32)
    g = rng.standard_normal((2, 4, 3)).astype(FP32)
    w = np.array([[0.1, 0.2], [0.3, 0.4]], FP32)
    grad_input, grad_weight = prelu_backward(g, x, w, validate=validate_first)
    flat_input, flat_weight = prelu_backward(g, x, w.reshape(4))
    np.testing.assert_array_equal(grad_input, flat_input)
    assert grad_weight.shape == (4,)
    np.testing.assert_array_equal(grad_weight, flat_weight)
