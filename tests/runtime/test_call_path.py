"""The runtime end to end: the generated bindings through cffi on the simulator (every family,
dtype and layout each op allows, bit for bit against the reference), device arrays, streams,
the session, CANN discovery (a fake install made of simulator libraries), and the two commands."""

from __future__ import annotations

import contextlib

import gc
import importlib
import os
import re
import subprocess
import sys
import textwrap
import threading

import ml_dtypes
import numpy as np
import pytest

from aclnngen.codegen.commands.jsonout import EXIT_NO_CANN
from aclnngen.generated import OPS
from aclnngen.generated.abi import DTYPES, LIBRARIES
from aclnngen.runtime import arrays, backend as backend_mod, products, session
from aclnngen.core import planning
from aclnngen.verify import cases
from aclnngen.verify.opcheck import binding_args
from aclnngen.runtime.sim import controls as simcontrols, kernels as simkernels
from aclnngen.runtime.arrays import DeviceArray, DeviceBuffer
from aclnngen.runtime.shapes import storage_dtype
from aclnngen.runtime.call import bind, tensor_descriptor
from aclnngen.runtime.errors import AclnnStatusError, AclRuntimeError, BackendError, UnknownSocError
from aclnngen.runtime.shapes import NUMPY_DTYPES
from aclnngen.core.rules import supported_dtypes, supported_families
from simcache import seeded_cache
from simtools import leak_counters, no_leaks_around, reference_args, same_bits, sim_backend
from repo_paths import REPO
import catalog
from catalog import PLAIN

# the call path checked bit for bit: the simulator computes with the reference (conftest.py)
pytestmark = pytest.mark.usefixtures("reference_kernels")

VERSION = "8.5.0"


def _specs_newest() -> str:
    """The release the simulator reports by default: the newest one the specs describe."""
    from aclnngen.codegen.loader import load_all
    from aclnngen.codegen.releases import described
    from aclnngen.core.releases import CannVersion

    return max(set().union(*(described(ls.spec) for ls in load_all())), key=CannVersion)


LAYOUTS = ("contiguous", "broadcast", "non-contiguous", "offset", "empty", "rank0")


def _op(snake):
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake)
    reference = importlib.import_module(f"aclnngen.generated.reference.{snake}")
    return meta, binding, reference


_split = binding_args


def _reference(meta, reference, values):
    inputs, scalars = reference_args(meta, values)
    result = reference.reference(*inputs, **scalars)
    return result if isinstance(result, tuple) else (result,)


_same_bits, _sim, _counters = same_bits, sim_backend, leak_counters


@pytest.fixture
def no_leaks():
    with no_leaks_around():
        yield


def _binding_cases(snake: str) -> list[tuple[str, str, str]]:
    meta, _, _ = _op(snake)
    found = []
    for family in supported_families(meta, VERSION):
        tensors = [p["name"] for p in meta["params"] if p["role"] in ("input", "output")]
        dtypes = [
            d
            for d in supported_dtypes(meta, tensors[0], family, VERSION)
            if all(d in supported_dtypes(meta, t, family, VERSION) for t in tensors)
        ]
        applicable = dict(planning.applicable_cases(meta, VERSION))
        for dtype in dtypes:
            found += [(family, dtype, layout) for layout in LAYOUTS if applicable.get(layout) == 0]
    return found


# --- every op, family, dtype and layout ------------------------------------------------------------


# one test per op, its cases inside: nearly a thousand tiny items would cost the suite more in
# bookkeeping than in calls
@pytest.mark.parametrize("snake", catalog.representatives())
def test_binding_matches_reference_bit_for_bit(snake):
    cases_of_op = _binding_cases(snake)
    assert cases_of_op, f"{snake}: no family, dtype and layout to call"
    for family, dtype, layout in cases_of_op:
        try:
            _binding_matches_reference_in(snake, family, dtype, layout)
        except AssertionError as exc:
            raise AssertionError(f"{snake}-{family}-{dtype}-{layout}: {exc}") from exc


def _binding_matches_reference_in(snake, family, dtype, layout):
    meta, binding, reference = _op(snake)
    values = dict(cases.make_values(meta, layout, dtype, version=VERSION))
    inputs, scalars = _split(meta, values)
    with session.simulated(family=family, version=VERSION):
        before = _counters()
        simkernels.clear_recorded()
        result = binding(*inputs, **scalars)
        assert _counters() == before, "a call leaked descriptors, executors or memory"
    got = result if isinstance(result, tuple) else (result,)
    want = _reference(meta, reference, values)
    assert len(got) == len(want) == len(meta["outputs"])
    for g, w in zip(got, want):
        assert isinstance(g, np.ndarray)
        assert _same_bits(g, w), f"{g} != {w}"
    # what the library received: the executor snapshot of every tensor descriptor
    record = simkernels.recorded(meta["symbol"])[-1]["args"]
    for p in meta["params"]:
        if p["role"] != "input":
            continue
        host, seen = values[p["name"]], record[p["name"]]
        assert seen["shape"] == host.shape
        assert seen["dtype"] == str(NUMPY_DTYPES[dtype])
        assert seen["format"] == 2  # ACL_FORMAT_ND
        assert len(seen["storage"]) == 1
        if layout == "non-contiguous" and host.size > 1:
            dense = arrays.contiguous_strides(host.shape)
            wide = [i for i, d in enumerate(host.shape) if d > 1]
            assert any(seen["strides"][i] != dense[i] for i in wide), f"{p['name']} reached C densified: {seen}"
            assert seen["strides"] == tuple(s // host.itemsize for s in host.strides)
        if layout == "offset" and host.size > 1:
            assert seen["offset"] == cases.OFFSET, f"{p['name']} lost its offset: {seen}"
        if layout == "empty" and host.size == 0:
            assert seen["storage"] == (0,)


def test_non_contiguous_view_strides_read_back_from_the_descriptor():
    b = _sim()
    base = np.arange(48, dtype=np.float32).reshape(4, 12)
    view = base[1:, ::3]  # offset 12, strides (12, 3)
    dev = DeviceArray.from_host(view)
    handle = tensor_descriptor(b, dev)
    try:
        ffi = b.ffi
        values = ffi.new("int64_t **")
        count = ffi.new("uint64_t *")
        assert b.api.aclGetViewStrides(handle, values, count) == 0
        assert [values[0][i] for i in range(count[0])] == [12, 3]
        ffi_free(b, values[0])
        assert b.api.aclGetViewShape(handle, values, count) == 0
        assert [values[0][i] for i in range(count[0])] == [3, 4]
        ffi_free(b, values[0])
        offset = ffi.new("int64_t *")
        assert b.api.aclGetViewOffset(handle, offset) == 0
        assert offset[0] == 12
        assert b.api.aclGetStorageShape(handle, values, count) == 0
        assert [values[0][i] for i in range(count[0])] == [12 + 2 * 12 + 3 * 3 + 1]
        ffi_free(b, values[0])
    finally:
        assert _same_bits(dev.to_host(), np.ascontiguousarray(view))
        assert b.api.aclDestroyTensor(handle) == 0
        dev.free()


def ffi_free(b, pointer):
    b.controls.aclsim_free(pointer)


def test_negative_strides_are_copied_to_a_positive_layout(no_leaks):
    meta, binding, reference = _op(PLAIN)
    values = dict(cases.make_values(meta, "contiguous", "float32", version=VERSION))
    g = values["gradOutput"][:, ::-1, ::-1]
    x = values["self"][::-1]
    got = binding(g, x)
    want = reference.reference(np.ascontiguousarray(g), np.ascontiguousarray(x))
    assert _same_bits(got, want)
    seen = simkernels.recorded(catalog.meta(PLAIN)["symbol"])[-1]["args"]
    assert all(s >= 0 for name in ("gradOutput", "self") for s in seen[name]["strides"])


def test_broadcast_to_zero_strides_reach_c(no_leaks):
    meta, binding, reference = _op(PLAIN)
    go = catalog.names(meta, "input")[0]
    x = np.linspace(-3, 3, 24, dtype=np.float32).reshape(2, 3, 4)
    g = np.broadcast_to(np.float32(0.5), (2, 3, 4))
    got = binding(g, x)
    assert _same_bits(got, reference.reference(np.ascontiguousarray(g), x))
    seen = simkernels.recorded(meta["symbol"])[-1]["args"][go]
    assert seen["strides"] == (0, 0, 0) and seen["storage"] == (1,)


def test_optional_scalar_none_is_null_and_scalars_are_float(no_leaks):
    snake = catalog.WITH_OPTIONAL_SCALAR
    meta, _, reference = _op(snake)
    values = dict(cases.make_values(meta, "contiguous", "float32", version=VERSION))
    scalar = catalog.names(meta, "optional_scalar")[0]
    default_value = next(p["default"] for p in meta["params"] if p["name"] == scalar)
    default = catalog.call(snake, {**values, scalar: None})
    assert simkernels.recorded(meta["symbol"])[-1]["args"][scalar]["is_null"]
    assert _same_bits(default, _reference(meta, reference, {**values, scalar: default_value})[0])
    other = catalog.call(snake, {**values, scalar: 2.5})
    seen = simkernels.recorded(meta["symbol"])[-1]["args"][scalar]
    assert not seen["is_null"] and seen["value"] == 2.5 and seen["acl_dtype"] == 0  # ACL_FLOAT
    assert _same_bits(other, _reference(meta, reference, {**values, scalar: 2.5})[0])
    assert not _same_bits(other, default)


# --- device arrays ---------------------------------------------------------------------------------


def test_device_arrays_stay_on_device_across_calls(no_leaks):
    meta, binding, reference = _op(PLAIN)
    values = dict(cases.make_values(meta, "contiguous", "float32", version=VERSION))
    g, x = (values[name] for name in catalog.names(meta, "input"))
    with DeviceArray.from_host(g) as dg, DeviceArray.from_host(x) as dx:
        start = _counters()["allocations"]
        first = binding(dg, dx)
        assert isinstance(first, DeviceArray) and first.shape == g.shape
        assert _counters()["allocations"] == start + 1  # only the output: the inputs stay where they are
        # the output of one call feeds the next without leaving the device
        second = binding(first, dx)
        third = binding(second, dx)
        want1 = reference.reference(g, x)
        want2 = reference.reference(want1, x)
        want3 = reference.reference(want2, x)
        assert _same_bits(first.to_host(), want1)
        assert _same_bits(third.to_host(), want3)
        for d in (first, second, third):
            d.free()
        assert _counters()["allocations"] == start


def test_device_array_round_trip_any_layout(no_leaks):
    host = (np.arange(60, dtype=np.float32) * 0.25).reshape(3, 4, 5).astype(ml_dtypes.bfloat16)
    for view in (
        host,
        host[:, ::2, 1:],
        host.transpose(2, 0, 1),
        host[1, 1:, 2],
        host[1, 2, 3:4].reshape(()),
        host[:0],
    ):
        with DeviceArray.from_host(view) as dev:
            assert dev.shape == view.shape and dev.dtype == view.dtype
            assert _same_bits(dev.to_host(), np.array(view))
            if view.ndim and view.size > 1 and not view.flags.c_contiguous:
                assert not dev.contiguous
    with DeviceArray.from_host(host[:, ::2], contiguous=True) as dense:
        assert dense.contiguous and dense.storage_size == dense.size


def test_device_array_from_host_into_existing_keeps_gaps(no_leaks):
    buf = np.full((4, 6), 7.0, np.float32)
    with DeviceArray.from_host(buf) as whole:
        view = DeviceArray(whole.buffer, (4, 3), np.float32, strides=(6, 2), offset=1, storage_size=24)
        view.from_host(np.arange(12, dtype=np.float32).reshape(4, 3))
        expected = buf.copy()
        expected[:, 1::2] = np.arange(12, dtype=np.float32).reshape(4, 3)
        assert _same_bits(whole.to_host(), expected)
        assert _same_bits(view.to_host(), np.arange(12, dtype=np.float32).reshape(4, 3))


def test_empty_arrays_never_allocate(no_leaks):
    start = _counters()["allocations"]
    dev = DeviceArray.empty((0, 3), np.float16)
    assert dev.address == 0 and dev.buffer.nbytes == 0
    assert _counters()["allocations"] == start
    assert dev.to_host().shape == (0, 3)
    dev.free()
    with pytest.raises(ValueError):
        DeviceBuffer(_sim(), -1)


def test_dropped_device_arrays_are_freed_by_the_finalizer(no_leaks):
    start = _counters()["allocations"]
    dev = DeviceArray.from_host(np.ones(1000, np.float32))
    assert _counters()["allocations"] == start + 1
    del dev
    gc.collect()
    assert _counters()["allocations"] == start


def test_outputs_passed_in_numpy_honour_their_layout(no_leaks):
    snake = catalog.an_op("two outputs", lambda m: len(m["outputs"]) == 2)
    meta, _, reference = _op(snake)
    values = dict(cases.make_values(meta, "contiguous", "float16", version=VERSION))
    first, second = meta["outputs"]
    shape = values[first].shape
    big = np.full((*shape[:-1], 2 * shape[-1]), 99.0, np.float16)
    strided = big[..., ::2]  # a strided output
    dense = np.zeros(values[second].shape, np.float16)
    keywords = {catalog.py_name(meta, first): strided, catalog.py_name(meta, second): dense}
    got = catalog.call(snake, values, **keywords)
    assert got[0] is strided and got[1] is dense
    want = _reference(meta, reference, values)
    assert _same_bits(np.ascontiguousarray(strided), want[0])
    assert _same_bits(dense, want[1])
    assert (big[..., 1::2] == 99.0).all(), "the gaps of a strided output were overwritten"
    seen = simkernels.recorded(meta["symbol"])[-1]["args"][first]
    assert seen["strides"] == tuple(st // strided.itemsize for st in strided.strides)


def test_outputs_passed_in_as_device_arrays(no_leaks):
    meta, binding, reference = _op(PLAIN)
    values = dict(cases.make_values(meta, "contiguous", "float32", version=VERSION))
    g, x = (values[name] for name in catalog.names(meta, "input"))
    keyword = catalog.py_name(meta, meta["outputs"][0])
    with DeviceArray.from_host(g) as dg, DeviceArray.from_host(x) as dx, DeviceArray.empty(g.shape, g.dtype) as out:
        got = binding(dg, dx, **{keyword: out})
        assert got is out
        assert _same_bits(out.to_host(), reference.reference(g, x))


# --- streams -----------------------------------------------------------------------------------------


def test_explicit_stream_returns_after_launch_and_keeps_the_workspace(no_leaks):
    snake = catalog.WITH_REDUCTION  # an op the simulator gives a workspace
    meta, binding, reference = _op(snake)
    values = dict(cases.make_values(meta, "contiguous", "float32", version=VERSION))
    inputs = [values[name] for name in catalog.names(meta, "input")]
    outputs = len(meta["outputs"])
    with session.stream() as s, contextlib.ExitStack() as held:
        on_device = [held.enter_context(DeviceArray.from_host(a)) for a in inputs]
        before = _counters()
        results = binding(*on_device, stream=s)
        results = results if isinstance(results, tuple) else (results,)
        now = _counters()
        assert now["queued_launches"] == before["queued_launches"] + 1, "the call waited for the stream"
        # the outputs and the workspace are allocated and still in use
        assert now["allocations"] == before["allocations"] + outputs + 1
        assert s.pending > 0
        with pytest.raises(AclRuntimeError) as err:
            results[0].to_host()  # reading memory a queued launch writes
        assert err.value.status == 107000
        with pytest.raises(arrays.ArrayError):
            on_device[0].free()  # memory a queued launch reads
        s.synchronize()
        after = _counters()
        assert after["queued_launches"] == before["queued_launches"]
        assert after["allocations"] == before["allocations"] + outputs, "the workspace outlived the synchronisation"
        assert s.pending == 0
        for got, want in zip(results, _reference(meta, reference, values)):
            assert _same_bits(got.to_host(), want)
            got.free()


def test_numpy_call_on_an_explicit_stream_synchronises(no_leaks):
    meta, binding, reference = _op(PLAIN)
    values = dict(cases.make_values(meta, "offset", "bfloat16", version=VERSION))
    with session.stream() as s:
        got = binding(values["gradOutput"], values["self"], stream=s)
        assert s.pending == 0
    assert _same_bits(got, reference.reference(values["gradOutput"], values["self"]))


def test_several_launches_queue_in_order_on_one_stream(no_leaks):
    meta, binding, reference = _op(PLAIN)
    x = np.linspace(-2, 2, 16, dtype=np.float32)
    g = np.ones(16, np.float32)
    with session.stream() as s, DeviceArray.from_host(g) as dg, DeviceArray.from_host(x) as dx:
        a = binding(dg, dx, stream=s)
        b = binding(a, dx, stream=s)  # reads what the first launch writes
        assert _counters()["queued_launches"] >= 2
        s.synchronize()
        first = reference.reference(g, x)
        assert _same_bits(b.to_host(), reference.reference(first, x))
        a.free()
        b.free()


# --- session -----------------------------------------------------------------------------------------


def test_simulated_sets_and_restores_soc_and_version():
    b = _sim()
    outer_soc, outer_version = b.soc_name(), b.version()
    with session.simulated(family="ascend950", version="8.3.RC1"):
        assert session.soc_name() == "Ascend950PR_9579"
        assert session.family() == "ascend950"
        assert session.version() == "8.3.RC1"
        with session.simulated(family="training"):
            assert session.soc_name() == "Ascend910A" and session.version() == "8.3.RC1"
        assert session.soc_name() == "Ascend950PR_9579"
    assert (b.soc_name(), b.version()) == (outer_soc, outer_version)
    with pytest.raises(ValueError):
        with session.simulated(family="a2", soc="Ascend310P3"):
            pass


def test_simulated_version_decides_validation():
    snake, family, earlier = catalog.family_gained(VERSION)
    values = dict(cases.make_values(catalog.meta(snake), "contiguous", "float32", version=VERSION))
    with session.simulated(family=family, version=VERSION):
        catalog.call(snake, values)
    from aclnngen.runtime.errors import AclnnValidationError

    with session.simulated(family=family, version=earlier):  # the family is supported from VERSION on
        with pytest.raises(AclnnValidationError) as err:
            catalog.call(snake, values)
    assert err.value.status == 161002 and err.value.check == "product"


def test_user_threads_just_work(no_leaks):
    meta, binding, reference = _op(PLAIN)
    values = dict(cases.make_values(meta, "contiguous", "float32", version=VERSION))
    want = reference.reference(values["gradOutput"], values["self"])
    results, errors = [], []

    def work():
        try:
            for _ in range(20):
                results.append(binding(values["gradOutput"], values["self"]))
            with session.stream() as s:
                dg = DeviceArray.from_host(values["gradOutput"])
                out = binding(dg, DeviceArray.from_host(values["self"]), stream=s)
                s.synchronize()
                results.append(out.to_host())
                out.free()
                dg.free()
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    assert len(results) == 4 * 21 and all(_same_bits(r, want) for r in results)


def test_device_context_manager_switches_device(no_leaks):
    b = _sim()
    dev = b.ffi.new("int32_t *")
    assert b.api.aclrtGetDevice(dev) == 0
    current = dev[0]
    with session.device(current) as chosen:
        assert chosen == current
        assert b.api.aclrtGetDevice(dev) == 0 and dev[0] == current
        DeviceArray.from_host(np.ones(4, np.float32)).free()
    assert b.api.aclrtGetDevice(dev) == 0 and dev[0] == current
    with pytest.raises(AclRuntimeError) as err:
        with session.device(7):  # the simulator has one device
            pass
    assert err.value.status == 107000 and "device 7" in str(err.value)
    # the thread keeps working afterwards
    DeviceArray.from_host(np.ones(4, np.float32)).free()


def test_device_context_in_a_fresh_thread(no_leaks):
    b = _sim()
    box = {}

    def body():
        with session.device(0):
            dev = b.ffi.new("int32_t *")
            box["inside"] = b.api.aclrtGetDevice(dev), dev[0]
            DeviceArray.from_host(np.ones(4, np.float32)).free()
        # the session gave the thread the device's context before the block; it keeps it
        box["after"] = b.api.aclrtGetDevice(b.ffi.new("int32_t *"))
        DeviceArray.from_host(np.ones(4, np.float32)).free()
        box["ok"] = True

    t = threading.Thread(target=body)
    t.start()
    t.join(60)
    assert box == {"inside": (0, 0), "after": 0, "ok": True}


def test_products_exact_then_prefix_then_unknown():
    assert products.family_of("Ascend910B") == "training"  # no digit: the old series, not A2
    assert products.family_of("Ascend910B4-1") == "a2"
    assert products.family_of("Ascend910_9391") == "a3"
    assert products.family_of("Ascend950DT_9591") == "ascend950"
    for bad in ("Ascend999X", "Ascend950PR_", "ascend910b2", "", None):
        with pytest.raises(UnknownSocError):
            products.family_of(bad)
    for family in products.family_ids():
        assert products.family_of(products.soc_for_family(family)) == family
    assert products.soc_for_family("ascend950") == "Ascend950PR_9579"


def test_dtype_table_maps_exactly():
    for name, (member, value, itemsize, module) in DTYPES.items():
        dt = storage_dtype(name)
        assert arrays.acl_dtype(dt) == value and dt.itemsize == itemsize
        assert arrays.numpy_dtype(value) == dt
    with pytest.raises(arrays.UnsupportedDtypeError):
        arrays.acl_dtype(np.dtype(">f4"))
    with pytest.raises(TypeError):
        arrays.acl_dtype(np.longdouble)


def _subprocess(code: str, env=None, timeout=300) -> subprocess.CompletedProcess:
    full = dict(os.environ)
    full.pop("ACLNNGEN_BACKEND", None)
    full.pop("ACLNNGEN_SIM_SOC", None)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full, timeout=timeout
    )


def test_init_once_and_repeat_initialize_is_not_finalised():
    code = """
        from aclnngen.runtime import session, ffi
        b = session.backend()
        assert b.owns_init
        assert session.init() is b          # once per process
        lib = ffi.runtime_ffi().dlopen(b.libraries["ascendcl"])
        assert lib.aclInit(ffi.runtime_ffi().NULL) == 100002
        b.shutdown()                         # what atexit does
        assert lib.aclInit(ffi.runtime_ffi().NULL) == 0, "the owner must finalise"
        print("owner ok")
    """
    proc = _subprocess(code)
    assert proc.returncode == 0, proc.stderr
    assert "owner ok" in proc.stdout
    code = f"""
        from aclnngen.runtime import session, ffi
        from aclnngen.runtime.sim import SimBackend
        # someone else initialises ACL first, as a host framework would
        b = SimBackend()
        lib = ffi.runtime_ffi().dlopen(b.libraries["ascendcl"])
        assert lib.aclInit(ffi.runtime_ffi().NULL) == 0
        import numpy as np
        from aclnngen.generated.ops.{PLAIN} import {PLAIN}
        out = {PLAIN}(np.ones(3, np.float32), np.ones(3, np.float32))
        active = session.backend()
        assert not active.owns_init, "100002 means ACL belongs to someone else"
        active.shutdown()
        assert lib.aclInit(ffi.runtime_ffi().NULL) == 100002, "finalised what it did not initialise"
        print("guest ok")
    """
    proc = _subprocess(code)
    assert proc.returncode == 0, proc.stderr
    assert "guest ok" in proc.stdout


def test_session_reset_rebuilds_from_scratch():
    code = f"""
        import numpy as np
        from aclnngen.runtime import session
        from aclnngen.runtime.arrays import DeviceArray
        from aclnngen.generated.ops.{PLAIN} import {PLAIN}
        old = session.backend()
        kept = DeviceArray.from_host(np.ones(8, np.float32))
        session.reset()
        new = session.backend()
        assert new is not old and new.owns_init and new.counters()["allocations"] == 0
        try:
            kept.to_host()
        except Exception as exc:
            print("stale:", type(exc).__name__)
        kept.free()  # a no-op: its block died with the reset
        out = {PLAIN}(np.ones(3, np.float32), np.ones(3, np.float32))
        print("ok", out.shape)
    """
    proc = _subprocess(code)
    assert proc.returncode == 0, proc.stderr
    assert "stale: ArrayError" in proc.stdout and "ok (3,)" in proc.stdout


# --- backends and CANN discovery ------------------------------------------------------------------------


def test_backend_selection(monkeypatch):
    monkeypatch.setenv("ACLNNGEN_BACKEND", "sim")
    assert backend_mod.select_backend_name() == "sim"
    monkeypatch.setenv("ACLNNGEN_BACKEND", "CANN")
    assert backend_mod.select_backend_name() == "cann"
    monkeypatch.setenv("ACLNNGEN_BACKEND", "gpu")
    with pytest.raises(BackendError, match="unknown backend 'gpu'"):
        backend_mod.select_backend_name()
    monkeypatch.delenv("ACLNNGEN_BACKEND")
    assert backend_mod.select_backend_name() is None
    assert backend_mod.select_backend_name("sim") == "sim"


def test_no_cann_and_forced_cann_is_a_clear_error(monkeypatch, tmp_path):
    monkeypatch.setenv("ASCEND_HOME_PATH", str(tmp_path / "nowhere"))
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    install, searched = backend_mod.find_cann()
    assert install is None
    assert str(tmp_path / "nowhere" / "lib64" / "libascendcl.so") in searched
    assert "libacl_rt.so (dynamic loader search)" in searched
    active = session.backend()
    with pytest.raises(BackendError) as err:
        session.init("cann")
    text = str(err.value)
    assert "CANN was not found" in text and "ACLNNGEN_BACKEND=sim" in text and "install CANN" in text
    assert str(tmp_path / "nowhere") in text
    assert session.backend() is active, "a failed selection must not change the backend"


@pytest.fixture(scope="module")
def fake_cann(tmp_path_factory):
    """A CANN install laid out like the real one, whose libraries are a private copy of the
    simulator (another file: another library instance than the session's)."""
    from aclnngen.runtime.sim.backend import build_core

    real = build_core(cache_dir=seeded_cache(tmp_path_factory.mktemp("fake-cann-cache"))).resolve()
    assert not os.path.samefile(real, sim_backend().path)
    home = tmp_path_factory.mktemp("Ascend") / "cann"
    arch = home / f"{backend_mod._arch_dir()}"
    (arch / "lib64").mkdir(parents=True)
    (home / "lib64").symlink_to(arch / "lib64")
    for name in ("libascendcl.so", "libnnopbase.so", "libopapi_nn.so", "libopapi_math.so"):
        (arch / "lib64" / name).symlink_to(real)
    (arch / "ascend_toolkit_install.info").write_text("package_name=Ascend-cann-toolkit\nversion=8.3.RC1\n")
    return home, real


def test_fake_cann_install_runs_the_bindings_unchanged(fake_cann, monkeypatch):
    from aclnngen.runtime import ffi

    home, real = fake_cann
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    monkeypatch.delenv("ASCEND_TOOLKIT_HOME", raising=False)
    monkeypatch.delenv("ASCEND_CUSTOM_OPP_PATH", raising=False)
    install, _ = backend_mod.find_cann()
    assert install is not None and install.runtime == str(home / "lib64" / "libascendcl.so")
    b = backend_mod.CannBackend(install)
    assert b.kind == "cann"
    candidates = b.op_library_candidates()
    nn, math = str(home / "lib64" / "libopapi_math.so"), str(home / "lib64" / "libopapi_nn.so")
    assert candidates.index(nn) < candidates.index("libopapi.so") and math in candidates
    # the real library would carry the kernels; this one gets the simulator's Python kernels
    simkernels.install(b, ffi.dlopen(simcontrols.sim_ffi(), str(real)), key="fake-cann")
    meta, binding, reference = _op(PLAIN)
    values = dict(cases.make_values(meta, "non-contiguous", "float16", version=VERSION))
    inputs, scalars = _split(meta, values)
    with session.activate(b):
        assert session.backend() is b and session.family() == "a2"
        reported = _specs_newest()  # the fake install is the simulator's library: its default release
        assert b.version_info() == (reported, "aclsysGetVersionStr")
        got = binding(*inputs, **scalars)
        # an op no library exports: a clear error naming it, the version and every library
        bogus = dict(
            meta,
            symbol="aclnnNoSuchOpBackward",
            name="NoSuchOpBackward",
            cdef=meta["cdef"].replace(meta["symbol"], "aclnnNoSuchOpBackward"),
        )
        with pytest.raises(BackendError) as err:
            bind(bogus)(*inputs, *scalars.values(), None)
        text = str(err.value)
        assert "aclnnNoSuchOpBackward" in text and f"CANN version: {reported}" in text
        assert nn in text and math in text and "libopapi.so" in text
        again = binding(*inputs, **scalars)  # the other ops keep working
    assert _same_bits(got, _reference(meta, reference, values)[0]) and _same_bits(again, got)
    # without aclsysGetVersionStr the version comes from ascend_toolkit_install.info
    monkeypatch.setattr(b, "library_version", lambda: None)
    b._version = None
    version, source = b.version_info()
    assert version == "8.3.RC1" and source.endswith("ascend_toolkit_install.info")
    b.shutdown()


def test_on_cann_the_runtime_refuses_what_the_library_may_not_check(fake_cann, monkeypatch):
    """Real CANN is not known to check a reused executor or a short workspace (it would read freed
    or short memory): there the runtime refuses them itself, with the library's status."""
    from aclnngen.runtime import ffi

    home, real = fake_cann
    monkeypatch.setenv("ASCEND_HOME_PATH", str(home))
    install, _ = backend_mod.find_cann()
    b = backend_mod.CannBackend(install)
    simkernels.install(b, ffi.dlopen(simcontrols.sim_ffi(), str(real)), key="fake-cann")
    meta, _, _ = _op(catalog.WITH_REDUCTION)  # an op with a workspace
    values = dict(cases.make_values(meta, "contiguous", "float32", version=VERSION))
    inputs = [values[name] for name in catalog.names(meta, "input")]
    call = bind(meta)
    with session.activate(b):
        with call.prepare(*inputs, *(None for _ in meta["outputs"])) as prepared:
            with pytest.raises(AclnnStatusError) as err:
                prepared.launch(workspace_size=8)
            assert err.value.status == 161002 and "refused by aclnngen" in err.value.recent_message
            with pytest.raises(AclnnStatusError) as err:
                prepared.launch(workspace=0)
            assert err.value.status == 161001 and "refused by aclnngen" in err.value.recent_message
            prepared.launch()
            with pytest.raises(AclnnStatusError) as err:
                prepared.launch()
            assert err.value.status == 161002 and "already launched" in err.value.recent_message
            session.synchronize()
    b.shutdown()


def test_op_library_search_order(tmp_path, monkeypatch):
    home = tmp_path / "home"
    lib64 = home / "lib64"
    lib64.mkdir(parents=True)
    for name in ("libcust_opapi.so", "libopapi_nn.so", "libopapi_math.so", "libopapi.so", "libaclnn_ops_train.so"):
        (lib64 / name).write_bytes(b"")
    custom = tmp_path / "custom"
    (custom / "vendorA" / "op_api" / "lib").mkdir(parents=True)
    (custom / "vendorA" / "op_api" / "lib" / "libcust_opapi.so").write_bytes(b"")
    opp = tmp_path / "opp"
    (opp / "vendors" / "vB" / "op_api" / "lib").mkdir(parents=True)
    (opp / "vendors" / "vB" / "op_api" / "lib" / "libcust_opapi.so").write_bytes(b"")
    (opp / "vendors" / "config.ini").write_text("load_priority=vB\n")
    install = backend_mod.CannInstall(str(lib64 / "libascendcl.so"), "", home, [lib64])
    b = object.__new__(backend_mod.CannBackend)
    b.install, b._candidates = install, None
    b.env = {"ASCEND_CUSTOM_OPP_PATH": str(custom), "ASCEND_OPP_PATH": str(opp)}
    order = b.op_library_candidates()
    assert order == [
        str(custom / "vendorA" / "op_api" / "lib" / "libcust_opapi.so"),  # $ASCEND_CUSTOM_OPP_PATH
        str(opp / "vendors" / "vB" / "op_api" / "lib" / "libcust_opapi.so"),  # vendors/config.ini
        str(lib64 / "libcust_opapi.so"),
        str(lib64 / "libopapi_math.so"),  # libopapi_*.so, sorted
        str(lib64 / "libopapi_nn.so"),
        str(lib64 / "libopapi.so"),
        str(lib64 / "libaclnn_ops_train.so"),
        # names no directory holds: the loader's own search, in LIBRARIES order
        "libaclnn_ops_infer.so",
        "libaclnn_math.so",
        "libaclnn_sparse.so",
        "libaclnn_fft.so",
        "libaclnn_rand.so",
    ]
    assert [n for n in LIBRARIES["opapi"][1] if "*" not in n and n not in {os.path.basename(p) for p in order}] == []


def test_extra_sim_sources_registry(tmp_path):
    src = tmp_path / "sim_ops.c"
    src.write_text("/* nothing */\n")
    before = dict(simkernels._SOURCES)
    try:
        assert src.resolve() in simkernels.register_sim_sources(src)
        simkernels.register_sim_sources(src)  # twice is once
        assert simkernels.extra_sources().count(src.resolve()) == 1
        with pytest.raises(FileNotFoundError):
            simkernels.register_sim_sources(tmp_path / "missing.c")
    finally:
        simkernels._SOURCES.clear()
        simkernels._SOURCES.update(before)


def test_standalone_package_brings_its_own_sim_sources(aclnngen_cli, tmp_path):
    """A package generated for custom specs runs on the simulator: its c/sim_ops.c is found from
    the META of its bindings and compiled in; an op it shares with the repository still links."""
    specs = tmp_path / "specs"
    (specs / "ops").mkdir(parents=True)
    repo = REPO
    snake, name = PLAIN, catalog.meta(PLAIN)["name"]
    text = (repo / "specs" / "ops" / f"{snake}.yaml").read_text()
    (specs / "ops" / f"{snake}.yaml").write_text(text)  # the same op as the repository's
    (specs / "ops" / f"my_{snake}.yaml").write_text(text.replace(name, f"My{name}"))
    out = tmp_path / "custompkg"
    gen = aclnngen_cli("generate", "--specs", str(specs), "--out", str(out))
    assert gen.returncode == 0, gen.stdout + gen.stderr
    assert f"aclnnMy{name}GetWorkspaceSize" in (out / "c" / "sim_ops.c").read_text()
    code = f"""
        import sys, numpy as np
        sys.path.insert(0, {str(tmp_path)!r})
        from custompkg.ops.my_{snake} import my_{snake} as mine
        from custompkg.ops.{snake} import {snake} as theirs
        from aclnngen.generated.reference.{snake} import reference
        from aclnngen.runtime.sim import kernels as simkernels
        from aclnngen.runtime import session
        assert any("custompkg" in str(p) for p in simkernels.extra_sources())
        g, x = np.ones(4, np.float32), np.linspace(-1, 1, 4).astype(np.float32)
        a = mine(g, x)
        b = theirs(g, x)
        assert a.tobytes() == b.tobytes() == reference(g, x).tobytes()
        assert str(session.backend().sources[-1]).endswith("custompkg/c/sim_ops.c")
        print("ok", a.dtype)
    """
    proc = _subprocess(code, env={"ACLNNGEN_CACHE_DIR": str(seeded_cache(tmp_path / "cache"))})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "ok float32" in proc.stdout


def test_sources_registered_late_need_a_reset(tmp_path):
    snake, name = PLAIN, catalog.meta(PLAIN)["name"]
    code = f"""
        import numpy as np
        from aclnngen.runtime import session
        from aclnngen.runtime.sim import kernels as simkernels
        from aclnngen.runtime.call import bind
        from aclnngen.runtime.errors import BackendError
        from aclnngen.generated.meta.{snake} import META
        from aclnngen.generated.ops.{snake} import {snake} as op
        g = np.ones(3, np.float32)
        op(g, g)                      # the simulator is built now
        src = {str(tmp_path / "late_ops.c")!r}
        c = open(session.backend().sources[0]).read().replace("{name}", "Late{name}")
        open(src, "w").write(c)
        simkernels.register_sim_sources(src)
        late = dict(META, symbol="aclnnLate{name}", cdef=META["cdef"].replace("{name}", "Late{name}"))
        simkernels.register_op(late, package="aclnngen.generated")
        try:
            bind(late)(g, g, None)
        except BackendError as exc:
            assert "session.reset()" in str(exc), exc
            print("refused")
        session.reset()
        out = bind(late)(g, g, None)
        assert out.tobytes() == op(g, g).tobytes()
        print("rebuilt")
    """
    proc = _subprocess(code, env={"ACLNNGEN_CACHE_DIR": str(seeded_cache(tmp_path / "cache"))})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "refused" in proc.stdout and "rebuilt" in proc.stdout


# --- commands ------------------------------------------------------------------------------------------


def _cli(*args, env=None):
    full = dict(os.environ)
    full.pop("ACLNNGEN_BACKEND", None)
    full.pop("ACLNNGEN_SIM_SOC", None)
    full.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "aclnngen.codegen.cli", *args], capture_output=True, text=True, env=full, timeout=600
    )


def test_info_command():
    proc = _cli("info")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "backend" in out and "sim (simulator" in out
    assert "libascendcl.so" in out and "libnnopbase.so" in out and "libopapi.so" in out
    assert "Ascend910B2" in out and "a2 (A2)" in out
    assert f"{_specs_newest()} (from aclsysGetVersionStr (default: the newest release" in out
    proc = _cli("info", env={"ACLNNGEN_SIM_SOC": "Ascend950DT_9591"})
    assert "ascend950 (950)" in proc.stdout
    proc = _cli("info", env={"ACLNNGEN_SIM_SOC": "Ascend999X"})
    assert proc.returncode == 1 and "unknown" in proc.stdout and "Ascend999X" in proc.stdout
    proc = _cli("info", env={"ACLNNGEN_BACKEND": "cann", "ASCEND_HOME_PATH": "/nonexistent/cann"})
    assert proc.returncode == EXIT_NO_CANN
    assert "CANN was not found" in proc.stderr and "/nonexistent/cann/lib64/libascendcl.so" in proc.stderr
    assert "ACLNNGEN_BACKEND=sim" in proc.stderr and "Traceback" not in proc.stderr


def test_run_command():
    proc = _cli("run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.splitlines()
    header = next(line for line in lines if line.startswith("op "))
    for column in ("op", "dtype", "shape", "status", "max |diff|", "match"):
        assert column in header

    rows = lines[lines.index(header) + 2 : -1]
    for snake in OPS:  # every op has a row per dtype (at least one on A2), and every row matched
        name = importlib.import_module(f"aclnngen.generated.meta.{snake}").META["name"]
        assert any(line.startswith(name + " ") for line in rows), name
    assert rows and all(line.rstrip().endswith(" yes") for line in rows), rows
    assert lines[-1] == f"{len(rows)} matched, 0 failed, 0 skipped"
    proc = _cli("run", "--one-dtype", env={"ACLNNGEN_SIM_SOC": "Ascend310P3"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "skipped: not supported on inference" in proc.stdout  # an op the inference series lacks
    summary = re.fullmatch(r"(\d+) matched, 0 failed, (\d+) skipped", proc.stdout.splitlines()[-1])
    assert summary and int(summary.group(1)) > 0 and int(summary.group(2)) >= 1, proc.stdout


def test_run_command_fails_when_the_library_disagrees(tmp_path):
    """A simulator kernel that computes something else makes `aclnngen run` exit 1."""
    meta = catalog.meta(PLAIN)
    code = f"""
        import sys
        from aclnngen.runtime.sim import kernels as simkernels
        from aclnngen.codegen.cli import main
        original = simkernels.Kernels._run
        def wrong(self, op, view, ws, wss, msg, cap):
            rc = original(self, op, view, ws, wss, msg, cap)
            for a in simkernels.read_view(self.ffi, self.controls, view):
                if a.kind == 1 and a.name == {meta["outputs"][0]!r} and 0 not in a.shape:
                    a.array()[...] = 0
            return rc
        simkernels.Kernels._run = wrong
        sys.exit(main(["run", "--ops", {meta["name"]!r}, "--one-dtype"]))
    """
    proc = _subprocess(code)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    # swish is transcendental: judged within the precision policy, which zeros fail
    assert "grad_input" in proc.stdout and "0 matched, 1 failed" in proc.stdout


def test_the_runtime_takes_abi_values_from_the_abi_table():
    from aclnngen.codegen.abi import default_abi
    from aclnngen.runtime import acl, arrays, backend, call

    abi = default_abi()
    assert call.ACL_FORMAT_ND == abi.enum_value("ACL_FORMAT_ND") == 2
    assert arrays.H2D == abi.enum_value("ACL_MEMCPY_HOST_TO_DEVICE") and arrays.D2H == abi.enum_value(
        "ACL_MEMCPY_DEVICE_TO_HOST"
    )
    assert backend.ACL_ERROR_REPEAT_INITIALIZE == abi.status_code("ACL_ERROR_REPEAT_INITIALIZE") == 100002
    assert acl.status_code("ACLNN_ERR_PARAM_INVALID") == 161002
