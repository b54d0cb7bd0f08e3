"""What a binding remembers between calls (runtime/call.py: per call signature, the outputs to
allocate and whether it passed validation; the simulator: per executor signature, whether it
passed its profile's checks) never lets a bad call through: a call that differs from a good one
only in a scalar's value, a dtype or the product family is checked again and refused, every
time, by the binding and by the simulated library alike."""

from __future__ import annotations

import importlib

import ml_dtypes
import numpy as np
import pytest

from aclnngen.runtime import session
from aclnngen.runtime.errors import AclnnStatusError, AclnnValidationError
from aclnngen.core import planning
from aclnngen.verify import cases
from simtools import no_leaks_around
from catalog import OPS, PLAIN

VERSION = "8.5.0"


def _op(snake):
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    return meta, getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake)


@pytest.fixture(autouse=True)
def no_leaks():
    with no_leaks_around():
        yield


def _scalar_case():
    """An op with a scalar bound, its tensors, and a good and a bad value of that scalar."""
    for snake in OPS:  # the first op with a scalar constraint will do
        meta, binding = _op(snake)
        bad = planning.scalar_violations(meta, VERSION)
        if bad:
            name, value, status = bad[0]
            scalar = next(p for p in meta["params"] if p["name"] == name)
            values = dict(cases.make_values(meta, "contiguous", "float32", version=VERSION))
            inputs = [values[p["name"]] for p in meta["params"] if p["role"] == "input"]
            return binding, inputs, scalar["py"], values[name], value, status
    pytest.skip("no op with a scalar constraint at this version")


def test_a_bad_scalar_value_is_refused_after_good_calls_of_the_same_shapes():
    binding, inputs, py, good, bad, status = _scalar_case()
    with session.simulated(family="a2", version=VERSION):
        for _ in range(3):
            binding(*inputs, **{py: good})
        for _ in range(2):  # refused every time: a failure is never remembered as a pass
            with pytest.raises(AclnnValidationError) as err:
                binding(*inputs, **{py: bad})
            assert err.value.status == status
        binding(*inputs, **{py: good})


def test_the_simulated_library_refuses_a_bad_value_after_good_ones():
    binding, inputs, py, good, bad, status = _scalar_case()
    with session.simulated(family="a2", version=VERSION):
        binding(*inputs, **{py: good}, validate=False)
        for _ in range(2):
            with pytest.raises(AclnnStatusError) as err:
                binding(*inputs, **{py: bad}, validate=False)
            assert err.value.status == status
        # remembered as computed without validation: validation still runs when asked for
        with pytest.raises(AclnnValidationError):
            binding(*inputs, **{py: bad})


def test_a_signature_that_passed_on_one_family_is_checked_again_on_another():
    meta, binding = _op(PLAIN)
    families = {f for entry in meta["params"][0]["dtypes"] if "bfloat16" in entry["dtypes"] for f in entry["families"]}
    without = {f for entry in meta["params"][0]["dtypes"] for f in entry["families"]} - families
    if not families or not without:
        pytest.skip("bfloat16 is allowed on every family or on none")
    x = np.ones((2, 3), ml_dtypes.bfloat16)
    with session.simulated(family=sorted(families)[0], version=VERSION):
        binding(x, x)
    with session.simulated(family=sorted(without)[0], version=VERSION):
        with pytest.raises(AclnnValidationError) as err:
            binding(x, x)
        assert err.value.check == "dtype"
        with pytest.raises(AclnnStatusError):
            binding(x, x, validate=False)


def test_a_dtype_change_at_the_same_shape_is_checked():
    _, binding = _op(PLAIN)
    with session.simulated(family="a2", version=VERSION):
        binding(np.ones((2, 3), np.float32), np.ones((2, 3), np.float32))
        with pytest.raises(AclnnValidationError):
            binding(np.ones((2, 3), np.float64), np.ones((2, 3), np.float64))
