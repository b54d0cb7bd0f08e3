"""What the prepare hook reads on every call, read cheaply and the same: profiles.is_name agrees
with names() (a profile added to the table at run time too), and a scalar read through a C type
has the value NumPy reads from its bytes."""

from __future__ import annotations

import numpy as np
import pytest

from aclnngen.generated import profiles as generated_profiles
from aclnngen.runtime import profiles
from aclnngen.runtime.sim import kernels


def test_is_name_agrees_with_names(monkeypatch):
    for name in profiles.names():
        assert profiles.is_name(name)
    for name in ("lenient", "no-such-profile", ""):
        assert not profiles.is_name(name)
    monkeypatch.setitem(generated_profiles.PROFILES, "added-at-run-time", {})
    assert profiles.is_name("added-at-run-time")
    assert kernels.resolve_profile("added-at-run-time").data == "added-at-run-time"
    monkeypatch.undo()
    assert not profiles.is_name("added-at-run-time")


@pytest.mark.parametrize(
    "dtype", ["float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint64", "bool"]
)
def test_a_scalar_reads_as_numpy_reads_it(dtype):
    """The prepare hook reads a scalar's bytes through a C type where one fits: same value."""
    from aclnngen.runtime.sim.controls import sim_ffi

    ffi = sim_ffi()
    for value in (0, 1, -1.5, 3.25, 100, np.iinfo(np.int64).max if dtype == "int64" else 7):
        want = np.asarray(value).astype(dtype)
        data = ffi.new("char[]", want.tobytes())
        got = kernels._scalar_value(ffi, data, np.dtype(dtype))
        assert type(got) is (bool if dtype == "bool" else int if want.dtype.kind in "iu" else float)
        assert got == want.item()
