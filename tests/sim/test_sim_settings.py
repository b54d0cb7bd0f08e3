"""Simulator settings for benchmarks and debugging: kernels off (only the C protocol runs) and
the poison fills of fresh and freed device memory (ACLNNGEN_SIM_POISON)."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from aclnngen.runtime import session
from aclnngen.runtime.arrays import DeviceArray
from aclnngen.runtime.errors import AclnnStatusError
from aclnngen.core import planning
from simtools import leak_counters, no_leaks_around
import catalog

VERSION = "8.5.0"
PAGE_FLOATS = 4096 // 4


@pytest.fixture(autouse=True)
def no_leaks():
    with no_leaks_around():
        yield


def _plain():
    return catalog.binding(catalog.PLAIN)


def test_kernels_off_runs_the_protocol_without_computing():
    fn = _plain()
    x = np.full((4,), 0.5, np.float32)
    b = session.backend()
    want = fn(x, x)
    start = leak_counters()
    b.set_kernels(False)
    try:
        got = fn(x, x)  # the output is fresh device memory nobody wrote: poisoned, NaN
        assert np.isnan(got).all()
        # the op's own checks (the prepare hook) are off; the core's are not
        fn(x, x, validate=False)
        assert leak_counters() == start
    finally:
        b.set_kernels(True)
    np.testing.assert_array_equal(fn(x, x), want)


def test_kernels_off_leaves_the_library_checks_to_the_core():
    meta = importlib.import_module("aclnngen.generated.meta.softshrink_backward").META
    fn = importlib.import_module("aclnngen.generated.ops.softshrink_backward").softshrink_backward
    bad = planning.scalar_violations(meta, VERSION)
    if not bad:
        pytest.skip("no scalar constraint at this version")
    name, value, _ = bad[0]
    py = next(p["py"] for p in meta["params"] if p["name"] == name)
    x = np.ones((3,), np.float32)
    b = session.backend()
    b.set_kernels(False)
    try:
        fn(x, x, validate=False, **{py: value})  # no op-specific check: accepted
    finally:
        b.set_kernels(True)
    with pytest.raises(AclnnStatusError):
        fn(x, x, validate=False, **{py: value})


def _fresh(floats: int) -> np.ndarray:
    dev = DeviceArray.empty((floats,), np.float32)
    try:
        return dev.to_host()
    finally:
        dev.free()


def test_small_blocks_are_poisoned_whole_and_large_ones_in_their_first_page(monkeypatch):
    monkeypatch.delenv("ACLNNGEN_SIM_POISON", raising=False)
    assert np.isnan(_fresh(1000)).all()
    assert np.isnan(_fresh(1 << 20)[:PAGE_FLOATS]).all()  # 4 MiB: above the 1 MiB default


def test_full_poison_is_a_debug_setting(monkeypatch):
    monkeypatch.setenv("ACLNNGEN_SIM_POISON", "full")
    assert np.isnan(_fresh(1 << 20)).all()
    monkeypatch.setenv("ACLNNGEN_SIM_POISON", "8M")  # a size: blocks up to it whole
    assert np.isnan(_fresh(1 << 20)).all()


def test_a_run_never_reads_another_executors_snapshot():
    """The run hook reuses what prepare read of the same executor; an executor prepared while the
    kernels were off has no snapshot, and must not get the one of an earlier executor that lived
    at the same address (its buffers are gone)."""
    fn = _plain()
    call = importlib.import_module(f"aclnngen.generated.ops.{catalog.PLAIN}")._CALL
    b = session.backend()
    x1 = np.full((8,), 0.25, np.float32)
    x2 = np.linspace(-2, 2, 8, dtype=np.float32)
    want = fn(x2, x2)
    for _ in range(5):
        first = call.prepare(x1, x1, None)  # snapshot taken, then dropped unlaunched
        first.close()
        b.set_kernels(False)
        try:
            second = call.prepare(x2, x2, None)  # no prepare hook: no snapshot
        finally:
            b.set_kernels(True)
        try:
            second.launch()
            got = second.finish()
        finally:
            second.close()
        np.testing.assert_array_equal(got, want)
