"""The simulator behaves like a real CANN where a binding can go wrong, seen through the runtime
and the generated bindings:

1. behaviour profiles as data: under "vendor" the library accepts what its page forbids (and
   crashes where it does not check its out-pointers), under "spec" it follows the page;
2. threads and contexts (cann-abi.md 9.2): a thread without a context gets 107002 from the raw
   API, the runtime gives every user thread a context, and eight threads on their own streams get
   the reference's results;
3. asynchrony: launches are queued per stream and run at synchronisation, in order; descriptors
   may go before the sync; memory a queued launch uses cannot be freed or overwritten; the
   runtime keeps the workspace until the sync;
4. status names come from the one ABI table.
"""

from __future__ import annotations

import gc
import importlib
import threading

import catalog
import numpy as np
import pytest

from aclnngen.verify import cases
from aclnngen.runtime import errors, profiles, session
from aclnngen.runtime.sim import kernels as simkernels
from aclnngen.runtime.arrays import ArrayError, DeviceArray
from aclnngen.runtime.call import bind, tensor_descriptor
from aclnngen.runtime.errors import AclnnStatusError, AclRuntimeError
from catalog import PLAIN, meta as _meta
from simtools import leak_counters, reference_args, same_bits, sim_backend

# the call path checked bit for bit: the simulator computes with the reference (conftest.py)
pytestmark = pytest.mark.usefixtures("reference_kernels")

VERSION = "8.5.0"
PLAIN_SYMBOL = _meta(PLAIN)["symbol"]
#: the keyword of the plain op's output
PLAIN_OUT = next(p["py"] for p in _meta(PLAIN)["params"] if p["role"] == "output")
ACL_ERROR_RT_PARAM_INVALID = 107000
ACL_ERROR_RT_CONTEXT_NULL = 107002
ACL_ERROR_RT_AICORE_EXCEPTION = 507015
ACLNN_ERR_PARAM_NULLPTR = 161001
ACLNN_ERR_PARAM_INVALID = 161002
ACLNN_ERR_INNER = 561000
ACLNN_ERR_INNER_NULLPTR = 561103


def _op(snake):
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake)
    reference = importlib.import_module(f"aclnngen.generated.reference.{snake}")
    return meta, binding, reference


def _values(snake, layout="contiguous", dtype="float32"):
    meta, _, _ = _op(snake)
    return dict(cases.make_values(meta, layout, dtype, version=VERSION))


def _reference(snake, values):
    meta, _, reference = _op(snake)
    inputs, scalars = reference_args(meta, values)
    result = reference.reference(*inputs, **scalars)
    return result if isinstance(result, tuple) else (result,)


_same_bits, _sim, _counters = same_bits, sim_backend, leak_counters


def _peek(dev: DeviceArray) -> bytes:
    """The bytes of a device array's storage read straight from the simulated device memory (the
    simulator's device memory is host memory), bypassing aclrtMemcpy, which refuses to read what a
    queued launch writes."""
    ffi = dev.backend.ffi
    return bytes(ffi.buffer(ffi.cast("char *", dev.address), dev.storage_size * dev.itemsize))


@pytest.fixture(autouse=True)
def no_leaks():
    """Every test leaves the simulator's live objects, and its profile, where it found them."""
    assert _sim().kind == "sim"
    session.synchronize()
    before = _counters()
    profile = simkernels.profile_for(PLAIN_SYMBOL)
    yield
    session.synchronize()
    gc.collect()
    assert _counters() == before
    assert simkernels.profile_for(PLAIN_SYMBOL) == profile


# =====================================================================================================
# 1. behaviour profiles
# =====================================================================================================


def test_every_data_profile_is_a_simulator_profile(monkeypatch):
    assert set(profiles.names()) <= set(simkernels.known_profiles())
    assert {"spec", "vendor", "lenient"} <= set(simkernels.PROFILES)
    assert simkernels.PROFILES["vendor"].data == "vendor"
    with pytest.raises(ValueError, match="unknown simulator profile 'nonsense'.*spec, vendor"):
        simkernels.use_profile("nonsense").__enter__()
    # a profile added to the data (as `aclnngen generate` would render it) is usable at once
    from aclnngen.generated import profiles as data

    snake = catalog.an_op(
        "two inputs, one output, a same_shape rule and no required scalar or attribute",
        lambda m: (
            catalog.has_rule("same_shape")(m)
            and (len(catalog.names(m, "input")), len(m["outputs"])) == (2, 1)
            and not catalog.names(m, "scalar", "attribute")
        ),
    )
    meta = catalog.meta(snake)
    entry = {
        "op": meta["name"],
        "cann_version": VERSION,
        "evidence": "test",
        "null_out_pointers": "unchecked",
        "changes": [{"action": "drop", "rule": "same_shape", "params": [], "reason": "test"}],
    }
    monkeypatch.setitem(data.PROFILES, "audit-test", {meta["name"]: {VERSION: entry}})
    assert "audit-test" in simkernels.known_profiles()
    (go, x_name), (out,) = catalog.names(meta, "input"), catalog.names(meta, "output")
    g, x = np.ones((2, 3), np.float32), np.ones((3, 2), np.float32)
    values = {go: g, x_name: x, out: np.zeros((2, 3), np.float32)}
    with pytest.raises(AclnnStatusError) as err:
        catalog.call(snake, values, **{catalog.py_name(meta, out): values[out]}, validate=False)
    assert err.value.status == ACLNN_ERR_PARAM_INVALID and "same shape" in err.value.recent_message
    with simkernels.use_profile("audit-test"):
        in_c_order = [values.get(p["name"]) for p in meta["params"]]
        prepared = bind(meta).prepare(*in_c_order, validate=False)
        prepared.close()  # accepted by the library: the changed rule is the data's


def test_recorded_fact_softshrink_backward_mixed_dtypes_vendor_accepts_spec_rejects():
    _, softshrink, _ = _op("softshrink_backward")
    g = np.linspace(-2, 2, 12, dtype=np.float16).reshape(3, 4)
    x = np.linspace(-3, 3, 12, dtype=np.float32).reshape(3, 4)
    out = np.full((3, 4), 7, np.float32)
    with session.simulated(family="a2", version=VERSION, profile="spec"):
        with pytest.raises(AclnnStatusError) as err:
            softshrink(g, x, lambd=0.5, grad_input=out, validate=False)
    assert err.value.status == ACLNN_ERR_PARAM_INVALID
    assert err.value.function == "aclnnSoftshrinkBackwardGetWorkspaceSize"
    assert "same dtype" in err.value.recent_message and "profile 'spec'" in err.value.recent_message
    assert (out == 7).all()
    with session.simulated(family="a2", version=VERSION, profile="vendor"):
        got = softshrink(g, x, lambd=0.5, grad_input=out, validate=False)
    assert got is out and got.dtype == np.float32
    want = np.where(np.abs(x) > 0.5, g.astype(np.float32), np.float32(0))
    np.testing.assert_array_equal(got, want)


def test_recorded_fact_a_profile_holds_from_its_release_on():
    """The vendor profile is recorded for 8.5.0: on an older simulated CANN the spec's rules hold."""
    _, gelu, _ = _op("gelu_backward_v2")  # its vendor profile drops max_rank
    x = np.ones((1,) * 9, np.float32)
    with session.simulated(family="a2", version="8.0.0", profile="vendor"):
        with pytest.raises(AclnnStatusError) as err:
            gelu(x, x, "none", validate=False)
    assert err.value.status == ACLNN_ERR_PARAM_INVALID and "9 dims" in err.value.recent_message
    with session.simulated(family="a2", version="8.5.0", profile="vendor"):
        assert gelu(x, x, "none", validate=False).shape == (1,) * 9


def test_recorded_fact_hardtanh_backward_empty_tensors_vendor_accepts_spec_rejects():
    _, hardtanh, _ = _op("hardtanh_backward")
    empty = np.zeros((0, 3), np.float32)
    with session.simulated(profile="spec"):
        with pytest.raises(AclnnStatusError) as err:
            hardtanh(empty, empty, min=-1.0, max=1.0, validate=False)
    assert err.value.status == ACLNN_ERR_PARAM_INVALID and "empty" in err.value.recent_message
    with session.simulated(profile="vendor"):
        got = hardtanh(empty, empty, min=-1.0, max=1.0, validate=False)
        assert got.shape == (0, 3) and got.dtype == np.float32
        assert simkernels.recorded("aclnnHardtanhBackward")[-1]["workspace"] == 0


def test_recorded_fact_hardtanh_backward_wrong_out_shape_passes_get_workspace_size_under_vendor():
    meta, hardtanh, _ = _op("hardtanh_backward")
    x = np.linspace(-2, 2, 6, dtype=np.float32).reshape(2, 3)
    out = np.zeros((7,), np.float32)
    with session.simulated(profile="spec"):
        with pytest.raises(AclnnStatusError) as err:
            bind(meta).prepare(x, x, -1.0, 1.0, out, validate=False)
    assert err.value.status == ACLNN_ERR_PARAM_INVALID and "out has shape (7,)" in err.value.recent_message
    with session.simulated(profile="vendor"):
        with bind(meta).prepare(x, x, -1.0, 1.0, out, validate=False) as prepared:
            assert prepared.executor is not None and prepared.workspace_size == 0
            # the launch is queued; the kernel refuses to write an output of the wrong shape
            prepared.launch()
            with pytest.raises(AclRuntimeError) as failure:
                prepared.finish()
        # through the binding: the same clear failure at synchronisation, nothing written
        with pytest.raises(AclRuntimeError) as again:
            hardtanh(x, x, min=-1.0, max=1.0, out=out, validate=False)
    for e in (failure.value, again.value):
        assert e.status == ACL_ERROR_RT_AICORE_EXCEPTION and e.function == "aclrtSynchronizeStream"
        assert "aclnnHardtanhBackward" in e.detail and "output out has shape (7,)" in e.detail
        assert "computes (2, 3)" in e.detail and "nothing was written" in e.detail
    assert (out == 0).all()
    # a device output keeps its old data
    with session.simulated(profile="vendor"), DeviceArray.from_host(np.full(7, 5, np.float32)) as dout:
        with pytest.raises(AclRuntimeError):
            hardtanh(DeviceArray.from_host(x), x, min=-1.0, max=1.0, out=dout, validate=False)
        assert (dout.to_host() == 5).all()


def test_recorded_fact_gelu_backward_v2_rank9_vendor_accepts_and_computes():
    _, gelu, _ = _op("gelu_backward_v2")  # the implementation checks no rank
    shape = (2, 1, 2, 1, 2, 1, 2, 1, 3)
    rng = np.random.default_rng(9)
    x = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    with session.simulated(profile="spec"):
        with pytest.raises(AclnnStatusError) as err:
            gelu(g, x, "tanh", validate=False)
    assert err.value.status == ACLNN_ERR_PARAM_INVALID and "9 dims" in err.value.recent_message
    with session.simulated(profile="vendor"):
        got = gelu(g, x, "tanh", validate=False)
        # non-contiguous rank-9 views too
        gt, xt = g.transpose(8, 0, 1, 2, 3, 4, 5, 6, 7), x.transpose(8, 0, 1, 2, 3, 4, 5, 6, 7)
        got_t = gelu(gt, xt, "tanh", validate=False)
    want = _reference("gelu_backward_v2", {"gradOutput": g, "self": x, "approximate": "tanh"})[0]
    assert _same_bits(got, want)
    assert _same_bits(got_t, np.ascontiguousarray(want.transpose(8, 0, 1, 2, 3, 4, 5, 6, 7)))


def _gws_with_null(snake, which):
    """Calls XxxGetWorkspaceSize through the runtime's op ffi with valid descriptors and a NULL
    workspaceSize or executor pointer; returns (status, recent error message)."""
    meta, _, _ = _op(snake)
    b = _sim()
    from aclnngen.runtime import ffi as ffimod

    op_ffi = ffimod.op_ffi(meta)
    gws, _, _ = b.op_functions(meta)
    values = _values(snake)
    devices, args = [], []
    try:
        for p in meta["params"]:
            value = values[p["name"]]
            if p["role"] in ("input", "output"):
                dev = DeviceArray.from_host(value)
                devices.append(dev)
                args.append(tensor_descriptor(b, dev))
            elif p["role"] in ("scalar", "optional_scalar"):
                raw = b.ffi.new("float *", float(1.0 if value is None else value))
                args.append(b.api.aclCreateScalar(raw, 0))
        ws = op_ffi.new("uint64_t *")
        ex = op_ffi.new("aclOpExecutor **")
        rc = gws(*args, op_ffi.NULL if which == "workspaceSize" else ws, op_ffi.NULL if which == "executor" else ex)
        assert rc != 0, "a NULL out-pointer was accepted"
        return rc, b.recent_error()
    finally:
        for p, h in zip([p for p in meta["params"] if p["role"] != "attribute"], args):
            (b.api.aclDestroyTensor if p["role"] in ("input", "output") else b.api.aclDestroyScalar)(h)
        for dev in devices:
            dev.free()


@pytest.mark.parametrize("which", ["workspaceSize", "executor"])
@pytest.mark.parametrize("snake", ["gelu_backward", "prelu_backward"])
def test_recorded_fact_unchecked_null_out_pointers_crash_under_vendor(snake, which):
    with session.simulated(profile="spec"):
        rc, message = _gws_with_null(snake, which)
    assert rc == ACLNN_ERR_PARAM_NULLPTR and f"{which} is a null pointer" in message
    with session.simulated(profile="vendor"):
        rc, message = _gws_with_null(snake, which)
    assert rc == ACLNN_ERR_INNER_NULLPTR
    assert f"{which} is NULL" in message and "would dereference a null pointer" in message


@pytest.mark.parametrize("snake", ["swish_backward", "hardtanh_backward", "softshrink_backward"])
def test_recorded_fact_checked_null_out_pointers_give_161001_under_vendor(snake):
    with session.simulated(profile="vendor"):
        rc, message = _gws_with_null(snake, "executor")
    assert rc == ACLNN_ERR_PARAM_NULLPTR and "profile 'vendor'" in message


def test_profile_selection_env_function_and_session_on_softshrink(monkeypatch):
    _, softshrink, _ = _op("softshrink_backward")
    g, x = np.ones(4, np.float16), np.ones(4, np.float32)

    def status():
        try:
            softshrink(g, x, lambd=0.5, grad_input=np.zeros(4, np.float32), validate=False)
        except AclnnStatusError as exc:
            return exc.status
        return 0

    assert status() == ACLNN_ERR_PARAM_INVALID  # spec, the default
    monkeypatch.setenv("ACLNNGEN_SIM_PROFILE", "vendor")
    assert simkernels.profile_for("aclnnSoftshrinkBackward").name == "vendor"
    assert status() == 0
    with simkernels.use_profile("spec", op="aclnnSoftshrinkBackward"):  # per op beats the environment
        assert status() == ACLNN_ERR_PARAM_INVALID
    with session.simulated(profile="spec"):
        assert status() == ACLNN_ERR_PARAM_INVALID
    assert status() == 0
    monkeypatch.setenv("ACLNNGEN_SIM_PROFILE", "nonsense")
    with pytest.raises(AclnnStatusError) as err:
        softshrink(g, x, lambd=0.5, validate=False)
    assert err.value.status == ACLNN_ERR_INNER and "$ACLNNGEN_SIM_PROFILE" in err.value.recent_message
    monkeypatch.delenv("ACLNNGEN_SIM_PROFILE")
    with simkernels.use_profile("vendor"):
        assert status() == 0
    assert status() == ACLNN_ERR_PARAM_INVALID
    with pytest.raises(ValueError, match="unknown simulator profile"):
        with session.simulated(profile="nonsense"):
            pass
    with session.simulated(profile="lenient"):
        assert status() == 0


# =====================================================================================================
# 2. threads and contexts
# =====================================================================================================


def _in_thread(fn):
    box = {}

    def body():
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001
            box["error"] = exc

    t = threading.Thread(target=body)
    t.start()
    t.join(120)
    assert not t.is_alive(), "thread hung"
    if "error" in box:
        raise box["error"]
    return box["result"]


def test_a_thread_without_a_context_gets_107002():
    b = _sim()
    api, ffi = b.api, b.ffi
    ctx = ffi.new("aclrtContext *")
    assert api.aclrtGetCurrentContext(ctx) == 0  # the main thread has one (the runtime set it)
    shared = ctx[0]

    def raw():
        seen = {}
        ptr = ffi.new("void **")
        seen["malloc"] = api.aclrtMalloc(ptr, 64, 0)
        seen["malloc_msg"] = b.recent_error()
        seen["stream"] = api.aclrtCreateStream(ffi.new("aclrtStream *"))
        seen["sync"] = api.aclrtSynchronizeStream(ffi.NULL)
        seen["memcpy"] = api.aclrtMemcpy(ptr, 4, ffi.new("char[4]"), 4, 0)
        b.recent_error()
        # with the shared context the same thread works
        seen["set"] = api.aclrtSetCurrentContext(shared)
        seen["malloc2"] = api.aclrtMalloc(ptr, 64, 0)
        seen["free"] = api.aclrtFree(ptr[0])
        return seen

    seen = _in_thread(raw)
    assert seen["malloc"] == ACL_ERROR_RT_CONTEXT_NULL and "no current context" in seen["malloc_msg"]
    assert seen["stream"] == seen["sync"] == seen["memcpy"] == ACL_ERROR_RT_CONTEXT_NULL
    assert (seen["set"], seen["malloc2"], seen["free"]) == (0, 0, 0)


def test_a_launch_from_a_thread_without_a_context_gets_107002():
    meta, _, _ = _op(PLAIN)
    v = _values(PLAIN)
    prepared = bind(meta).prepare(v["gradOutput"], v["self"], None, validate=False)
    try:

        def launch():
            b = prepared.backend
            return prepared._launch_fn(b.ffi.NULL, 0, prepared.executor, b.ffi.NULL), b.recent_error()

        rc, message = _in_thread(launch)
        assert rc == ACL_ERROR_RT_CONTEXT_NULL and "no current context" in message
        prepared.launch()  # the executor is still usable from a thread with a context
        prepared.finish()
    finally:
        prepared.close()


def test_user_threads_get_a_context_from_the_runtime():
    _, plain, _ = _op(PLAIN)
    v = _values(PLAIN)
    want = _reference(PLAIN, v)[0]
    b = _sim()

    def work():
        dev = b.ffi.new("int32_t *")
        before = b.api.aclrtGetDevice(dev)
        b.recent_error()
        got = plain(v["gradOutput"], v["self"])
        after = b.api.aclrtGetDevice(dev)
        with DeviceArray.from_host(v["self"]) as dx:
            out = plain(dx, dx)
            out.free()
        return before, after, dev[0], got

    before, after, device, got = _in_thread(work)
    assert before == ACL_ERROR_RT_CONTEXT_NULL  # a fresh thread has no context of its own ...
    assert (after, device) == (0, b.device)  # ... until the runtime gives it the device's
    assert _same_bits(got, want)


def _call_args(meta, values, to_device):
    args, owned = [], []
    for p in meta["params"]:
        value = values[p["name"]]
        if p["role"] == "input" and to_device:
            value = DeviceArray.from_host(value)
            owned.append(value)
        elif p["role"] == "output":
            value = None
        args.append(value)
    return args, owned


def test_eight_threads_on_their_own_streams_run_every_kind_of_op():
    # one op of each structure (catalog.representatives): the streams and threads are the subject,
    # and an op that differs from another only by its name runs the same path
    ops = catalog.representatives()
    calls = {snake: bind(_op(snake)[0]) for snake in ops}
    data = {}
    for i, snake in enumerate(ops):
        for layout in ("contiguous", "non-contiguous"):
            values = dict(cases.make_values(calls[snake].meta, layout, "float32", version=VERSION, seed=i))
            data[snake, layout] = (values, _reference(snake, values))
    barrier = threading.Barrier(8)
    results, failures = [], []

    def worker(k):
        try:
            barrier.wait(60)
            with session.stream() as s:
                for round_ in range(3):
                    pending = []
                    for (snake, layout), (values, want) in data.items():
                        args, owned = _call_args(calls[snake].meta, values, to_device=True)
                        got = calls[snake](*args, stream=s)  # returns after the launch
                        pending.append((snake, want, got if isinstance(got, tuple) else (got,), owned))
                    for (snake, layout), (values, want) in data.items():
                        # NumPy calls synchronise this thread's default stream, never `s`
                        host = calls[snake](*_call_args(calls[snake].meta, values, to_device=False)[0])
                        results.append((k, snake, want, host if isinstance(host, tuple) else (host,)))
                    # nothing on `s` ran yet, whatever the other threads synchronised meanwhile
                    unrun = [snake for snake, _, got, _ in pending if any(_peek(d) != b"\xff" * d.nbytes for d in got)]
                    if unrun:
                        raise AssertionError(f"launches on the thread's own stream ran before its sync: {unrun}")
                    s.synchronize()
                    for snake, want, got, owned in pending:
                        results.append((k, snake, want, tuple(d.to_host() for d in got)))
                        for d in (*got, *owned):
                            d.free()
        except BaseException as exc:  # noqa: BLE001
            failures.append((k, exc))

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "a thread hung"
    assert not failures, failures
    assert len(results) == 8 * 3 * len(data) * 2
    wrong = [
        (k, snake)
        for k, snake, want, got in results
        if len(got) != len(want) or not all(_same_bits(g, w) for g, w in zip(got, want))
    ]
    assert not wrong, wrong


# =====================================================================================================
# 3. asynchrony
# =====================================================================================================


def test_results_appear_only_at_synchronisation():
    _, plain, _ = _op(PLAIN)
    v = _values(PLAIN)
    want = _reference(PLAIN, v)[0]
    with session.stream() as s, DeviceArray.from_host(v["gradOutput"]) as dg, DeviceArray.from_host(v["self"]) as dx:
        fresh = plain(dg, dx, stream=s)  # a new output: uninitialised device memory
        old = DeviceArray.from_host(np.full(want.shape, 3.25, np.float32))
        old_bytes = _peek(old)
        same = plain(dg, dx, **{PLAIN_OUT: old}, stream=s)
        assert same is old
        assert _peek(fresh) == b"\xff" * fresh.nbytes, "the kernel ran before the synchronisation"
        assert _peek(old) == old_bytes
        assert s.pending > 0 and _counters()["queued_launches"] >= 2
        s.synchronize()
        assert _same_bits(fresh.to_host(), want) and _same_bits(old.to_host(), want)
        assert _counters()["queued_launches"] == 0
        fresh.free()
        old.free()


def test_launches_on_one_stream_run_in_order():
    meta, plain, _ = _op(PLAIN)
    v = _values(PLAIN)
    go, x_name = catalog.names(meta, "input")
    g, x = v[go], v[x_name]
    first = _reference(PLAIN, v)[0]
    second = _reference(PLAIN, {go: first, x_name: x})[0]
    third = _reference(PLAIN, {go: second, x_name: first})[0]
    with session.stream() as s, DeviceArray.from_host(g) as dg, DeviceArray.from_host(x) as dx:
        a = plain(dg, dx, stream=s)
        b = plain(a, dx, stream=s)  # reads what the first launch writes
        c = plain(b, a, stream=s)  # reads both
        assert _peek(c) == b"\xff" * c.nbytes
        s.synchronize()
        assert _same_bits(a.to_host(), first)
        assert _same_bits(b.to_host(), second)
        assert _same_bits(c.to_host(), third)
        for d in (a, b, c):
            d.free()


def test_descriptors_destroyed_before_the_synchronisation_are_legal():
    snake = catalog.WITH_OPTIONAL_SCALAR
    meta, _, _ = _op(snake)
    v = _values(snake)
    scalar = catalog.names(meta, "optional_scalar")[0]
    go, x_name = catalog.names(meta, "input")
    want = _reference(snake, v)[0]
    scalars = len(catalog.names(meta, "scalar", "optional_scalar"))
    b = _sim()
    with (
        session.stream() as s,
        DeviceArray.from_host(v[go]) as dg,
        DeviceArray.from_host(v[x_name]) as dx,
        DeviceArray.empty(want.shape, want.dtype) as out,
    ):
        on_device = {go: dg, x_name: dx, meta["outputs"][0]: out}
        before = _counters()
        prepared = bind(meta).prepare(*[on_device.get(p["name"], v.get(p["name"])) for p in meta["params"]])
        assert _counters()["tensors"] == before["tensors"] + 3
        assert _counters()["scalars"] == before["scalars"] + scalars
        prepared.launch(s)  # the runtime destroys every descriptor right after the launch
        now = _counters()
        assert (now["tensors"], now["scalars"]) == (before["tensors"], before["scalars"])
        assert now["queued_launches"] == before["queued_launches"] + 1
        # the same by hand (the optional scalar NULL): destroy each descriptor between the launch and the sync
        handles = {name: tensor_descriptor(b, d) for name, d in on_device.items()}
        gws, launch, _ = b.op_functions(meta)
        ws, ex = b.ffi.new("uint64_t *"), b.ffi.new("aclOpExecutor **")
        assert gws(*[handles.get(p["name"], b.ffi.NULL) for p in meta["params"]], ws, ex) == 0
        assert launch(b.ffi.NULL, 0, ex[0], s.handle) == 0
        assert [b.api.aclDestroyTensor(h) for h in handles.values()] == [0, 0, 0]
        s.synchronize()
        prepared.close()
        assert _same_bits(out.to_host(), _reference(snake, {**v, scalar: None})[0])


def test_memory_a_queued_launch_uses_cannot_be_freed_or_overwritten():
    snake = catalog.WITH_REDUCTION  # several inputs and outputs
    meta, op, _ = _op(snake)
    v = _values(snake)
    want = _reference(snake, v)
    names = catalog.names(meta, "input")
    b = _sim()
    with session.stream() as s:
        inputs = [DeviceArray.from_host(v[n]) for n in names]
        outputs = op(*inputs, stream=s)
        # the runtime refuses to free an input of a queued launch
        with pytest.raises(ArrayError, match="queued on a stream"):
            inputs[1].free()
        # and so does the simulated library itself when asked directly
        assert b.api.aclrtFree(b.ffi.cast("void *", inputs[-1].address)) == ACL_ERROR_RT_PARAM_INVALID
        assert f"still used by a queued launch of {meta['symbol']}" in b.recent_error()
        # overwriting an input, or reading an output, before the sync is an error too
        with pytest.raises(AclRuntimeError) as err:
            inputs[0].from_host(np.zeros_like(v[names[0]]))
        assert err.value.status == ACL_ERROR_RT_PARAM_INVALID and "queued launch" in err.value.detail
        with pytest.raises(AclRuntimeError) as err:
            outputs[0].to_host()
        assert err.value.status == ACL_ERROR_RT_PARAM_INVALID
        # reading an input is fine: two readers never conflict
        assert _same_bits(inputs[1].to_host(), v[names[1]])
        s.synchronize()
        assert all(_same_bits(got.to_host(), expected) for got, expected in zip(outputs, want))
        for d in (*inputs, *outputs):
            d.free()  # all free after the sync


def test_the_workspace_is_released_only_after_the_synchronisation():
    snake = catalog.WITH_REDUCTION  # an op the simulator gives a workspace
    meta, op, _ = _op(snake)
    v = _values(snake)
    padded = (simkernels.DEFAULT_REDUCTION_WORKSPACE + 31) // 32 * 32 + 32  # as aclrtMalloc reserves
    with session.stream() as s:
        inputs = [DeviceArray.from_host(v[n]) for n in catalog.names(meta, "input")]
        base = _counters()
        outputs = op(*inputs, stream=s)
        assert simkernels.recorded(meta["symbol"])[-1]["workspace"] == simkernels.DEFAULT_REDUCTION_WORKSPACE
        queued = _counters()
        out_bytes = sum((o.buffer.nbytes + 31) // 32 * 32 + 32 for o in outputs)
        assert queued["allocations"] == base["allocations"] + len(outputs) + 1  # the outputs and the workspace
        assert queued["allocated_bytes"] == base["allocated_bytes"] + out_bytes + padded
        s.synchronize()
        after = _counters()
        assert after["allocations"] == base["allocations"] + len(outputs)
        assert after["allocated_bytes"] == base["allocated_bytes"] + out_bytes
        for d in (*inputs, *outputs):
            d.free()


def test_destroying_a_stream_runs_its_queued_launches():
    meta, _, _ = _op(PLAIN)
    v = _values(PLAIN)
    want = _reference(PLAIN, v)[0]
    b = _sim()
    handle = b.ffi.new("aclrtStream *")
    assert b.api.aclrtCreateStream(handle) == 0
    with (
        DeviceArray.from_host(v["gradOutput"]) as dg,
        DeviceArray.from_host(v["self"]) as dx,
        DeviceArray.empty(want.shape, want.dtype) as out,
    ):
        prepared = bind(meta).prepare(dg, dx, out)
        prepared.launch(handle[0])
        assert _peek(out) == b"\xff" * out.nbytes
        assert b.api.aclrtDestroyStream(handle[0]) == 0
        assert _same_bits(out.to_host(), want)
        prepared.close()


# =====================================================================================================
# 4. status names
# =====================================================================================================


def test_status_names_come_from_the_abi_table(monkeypatch):
    from aclnngen.generated.abi import STATUS

    for code, (name, _) in STATUS["aclnnStatus"].items():
        assert errors.status_name(code) == name
    for code, (name, _) in STATUS["aclError"].items():
        assert errors.acl_error_name(code) == name
    assert errors.ACL_ERROR_NAMES[100003] == "ACL_ERROR_INVALID_FILE"
    assert errors.status_name(4242) == "UNKNOWN_ACLNN_STATUS" and errors.acl_error_name(4242) == "UNKNOWN_ACL_ERROR"
    # one source: a code added to the table is named by the errors at once
    monkeypatch.setitem(STATUS["aclError"], 4242, ("ACL_ERROR_FROM_THE_TABLE", "test"))
    monkeypatch.setattr(errors, "_names", {})
    e = AclRuntimeError(status=4242, function="aclrtMalloc")
    assert e.status_name == "ACL_ERROR_FROM_THE_TABLE" and "ACL_ERROR_FROM_THE_TABLE" in str(e)
