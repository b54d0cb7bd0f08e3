"""Everything that can go wrong in a binding call gives a typed error, never a crash, and leaves
nothing behind: the validator's errors before any C call, the library's own 161001/161002 with
validate=False, misuse of the two-phase protocol, bad memory, missing ops, absent CANN, unknown
SoCs, and failures inside the simulator's Python kernels."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest

from aclnngen.core import planning
from aclnngen.verify import cases
from aclnngen.runtime import session
from aclnngen.runtime.sim import kernels as simkernels
from aclnngen.runtime.arrays import ArrayError, ArrayTypeError, DeviceArray, UnsupportedDtypeError
from aclnngen.runtime.call import bind, tensor_descriptor
from aclnngen.core.releases import known_releases
from aclnngen.runtime.releases import CannReleaseWarning
from aclnngen.runtime.errors import (
    AclnnArgumentTypeError,
    AclnnError,
    AclnnStatusError,
    AclnnValidationError,
    AclRuntimeError,
    BackendError,
    UnknownSocError,
)
import catalog
from catalog import PLAIN, meta as _meta
from simcache import seeded_cache
from simtools import leak_counters as _counters, no_leaks_around

VERSION = "8.5.0"
PLAIN_SYMBOL = _meta(PLAIN)["symbol"]


def _op(snake):
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake)
    return meta, binding


def _values(snake, layout="contiguous", dtype="float32"):
    meta, _ = _op(snake)
    return dict(cases.make_values(meta, layout, dtype, version=VERSION))


@pytest.fixture(autouse=True)
def no_leaks():
    """Every test here must leave the simulator's live objects where it found them."""
    with no_leaks_around():
        yield


def session_family(meta) -> str:
    """A family the op is supported on at VERSION (the simulated device for its call)."""
    from aclnngen.core.rules import supported_families

    return supported_families(meta, VERSION)[0]


def _reaches_c() -> int:
    return len(simkernels.recorded())


# --- validation before C, the library's own checks after ---------------------------------------------


def test_wrong_dtype_for_the_product():
    snake, family, dtype = catalog.dtype_missing_on_a_family(VERSION)
    meta, v = _meta(snake), _values(snake, dtype=dtype)
    simkernels.clear_recorded()
    with session.simulated(family=family, version=VERSION):
        with pytest.raises(AclnnValidationError) as err:
            catalog.call(snake, v)
        assert _reaches_c() == 0, "the validator must reject before anything reaches C"
        assert err.value.status == 161002 and err.value.check == "dtype" and err.value.family == family
        with pytest.raises(AclnnStatusError) as lib:
            catalog.call(snake, v, validate=False)
    e = lib.value
    assert e.status == 161002 and e.status_name == "ACLNN_ERR_PARAM_INVALID"
    assert e.op == meta["name"] and e.function == f"{meta['symbol']}GetWorkspaceSize"
    assert dtype in e.recent_message and family in e.recent_message
    assert "161002" in str(e) and meta["symbol"] in str(e)


def test_bad_shape():
    _, binding = _op(PLAIN)
    v = _values(PLAIN)
    bad = np.zeros((2, 5, 4), np.float32)  # does not broadcast with (2, 3, 4)
    with pytest.raises(AclnnValidationError) as err:
        binding(bad, v["self"])
    assert err.value.status == 161002 and err.value.check == "broadcast" and "(2, 5, 4)" in str(err.value)
    with pytest.raises(AclnnStatusError) as lib:
        binding(bad, v["self"], validate=False)
    assert lib.value.status == 161002 and "broadcast" in lib.value.recent_message


def test_wrong_output_shape_passed_in():
    meta, binding = _op(PLAIN)
    v = _values(PLAIN)
    out = np.zeros((2, 3, 5), np.float32)
    (go, x), (result,) = catalog.names(meta, "input"), catalog.names(meta, "output")
    keyword = {catalog.py_name(meta, result): out}
    with pytest.raises(AclnnValidationError):
        binding(v[go], v[x], **keyword)
    with pytest.raises(AclnnStatusError) as lib:
        binding(v[go], v[x], **keyword, validate=False)
    assert lib.value.status == 161002
    assert (out == 0).all()


def test_device_call_failing_in_c_frees_its_outputs_at_once():
    meta, binding = _op(PLAIN)
    v = _values(PLAIN)
    go, x = catalog.names(meta, "input")
    with DeviceArray.from_host(v[go]) as g, DeviceArray.from_host(np.ones((2, 5, 7), np.float32)) as bad:
        before = _counters()  # shapes that do not broadcast, past the validator
        with pytest.raises(AclnnStatusError) as lib:
            binding(g, bad, validate=False)
        assert lib.value.status == 161002
        assert _counters() == before, "the outputs allocated for the call outlived its failure"


def test_null_pointer_for_a_required_argument():
    snake = catalog.an_op("a required scalar", lambda m: bool(catalog.names(m, "scalar")))
    meta, v = _meta(snake), _values(snake)
    first, scalar = catalog.names(meta, "input")[0], catalog.names(meta, "scalar")[0]
    family = session_family(meta)
    with session.simulated(family=family, version=VERSION):
        with pytest.raises(AclnnValidationError) as err:
            catalog.call(snake, {**v, first: None})
        assert err.value.status == 161001 and err.value.param == first
        with pytest.raises(AclnnStatusError) as lib:
            catalog.call(snake, {**v, first: None}, validate=False)
        assert lib.value.status == 161001 and lib.value.status_name == "ACLNN_ERR_PARAM_NULLPTR"
        assert first in lib.value.recent_message
        with pytest.raises(AclnnStatusError) as lib:
            catalog.call(snake, {**v, scalar: None}, validate=False)  # a NULL scalar
        assert lib.value.status == 161001 and scalar in lib.value.recent_message


def test_scalar_constraint_from_the_library():
    snake = catalog.an_op("a scalar constraint", lambda m: bool(planning.scalar_violations(m, VERSION)))
    meta, v = _meta(snake), _values(snake)
    name, value, status = planning.scalar_violations(meta, VERSION)[0]
    with session.simulated(family=session_family(meta), version=VERSION):
        with pytest.raises(AclnnValidationError) as err:
            catalog.call(snake, {**v, name: value})
        assert err.value.status == status
        with pytest.raises(AclnnStatusError) as lib:
            catalog.call(snake, {**v, name: value}, validate=False)
    assert lib.value.status == status


def test_op_not_supported_on_the_family():
    snake, family = catalog.unsupported_family(VERSION)
    v = _values(snake)
    with session.simulated(family=family, version=VERSION):
        with pytest.raises(AclnnValidationError) as err:
            catalog.call(snake, v)
        assert err.value.check == "product"
        with pytest.raises(AclnnStatusError) as lib:
            catalog.call(snake, v, validate=False)
    assert lib.value.status == 161002


def test_unmappable_dtype():
    _, binding = _op(PLAIN)
    x = np.ones((2, 3), dtype=">f4")  # non-native byte order: no aclDataType
    with pytest.raises(AclnnValidationError) as err:
        binding(x, x)
    assert err.value.status == 161002
    with pytest.raises(UnsupportedDtypeError) as typed:
        binding(x, x, validate=False)
    assert isinstance(typed.value, TypeError) and isinstance(typed.value, AclnnError)
    assert "no aclDataType" in str(typed.value) and "gradOutput" in str(typed.value)
    longdouble = np.ones(3, np.longdouble)
    with pytest.raises(UnsupportedDtypeError):
        binding(longdouble, longdouble, validate=False)


def test_not_an_array():
    _, binding = _op(PLAIN)
    with pytest.raises(AclnnValidationError) as err:
        binding("not a tensor", np.ones(3, np.float32))
    assert err.value.status == 161002
    with pytest.raises(ArrayError) as typed:
        binding("not a tensor", np.ones(3, np.float32), validate=False)
    assert isinstance(typed.value, ValueError)
    snake = catalog.WITH_OPTIONAL_SCALAR
    meta, v = _meta(snake), _values(snake)
    scalar = catalog.names(meta, "optional_scalar")[0]
    with pytest.raises(ArrayError, match="real number"):
        catalog.call(snake, {**v, scalar: "2"}, validate=False)


def _metas():
    """The META of one op of each structure (catalog.representatives, naming none): the argument
    conversions the tests below walk read an op's structure, never its names, so an op that
    differs from another only by its names adds nothing to them."""
    for snake in catalog.representatives():
        yield catalog.meta(snake)


def _call_with(meta, bad_name, bad, validate=True, **others):
    """The op's generated binding, called by keyword with valid arguments (its newest release, a
    dtype accepted on A2) except `bad_name`, which gets `bad`, and the C names in `others`."""
    _, binding = _op(meta["snake"])
    version = str(known_releases(meta)[-1])
    dtype = next((d for d, ok in planning.dtype_cases(meta, "a2", version) if ok), "float32")
    values = cases.make_values(meta, "contiguous", dtype, version=version)
    values.update(others)
    values[bad_name] = bad
    outputs = [p for p in meta["params"] if p["role"] == "output"]
    kwargs = {p["py"]: values[p["name"]] for p in meta["params"] if p["role"] != "output"}
    out = tuple(values[p["name"]] if p["name"] == bad_name else None for p in outputs)  # one entry per output
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CannReleaseWarning)  # ops whose specs start after the simulator's release
        return binding(**kwargs, out=out, validate=validate)


def _tensors(meta, role=None):
    return [p for p in meta["params"] if p["role"] in ((role,) if role else ("input", "output"))]


NOT_ARRAYS = {
    "list": [[1.0, 2.0]],
    "tuple": (1.0,),
    "float": 1.0,
    "str": "x",
    "object": object(),
    # an object whose array interface describes 2**64 elements: NumPy cannot read it
    "too big": type(
        "TooBig",
        (),
        {
            "__array_interface__": {
                "shape": (2**32, 2**32),
                "typestr": "<f4",
                "data": (0, True),
                "strides": (0, 0),
                "version": 3,
            }
        },
    )(),
}


@pytest.mark.parametrize("kind", list(NOT_ARRAYS))
def test_a_non_array_is_a_type_error_naming_that_tensor(kind):
    """Every tensor of every kind of op: a value that is not an array is a TypeError naming that tensor
    (never an output reported as NULL because nothing could be inferred from the inputs), with
    and without validation, and nothing reaches C."""
    bad = NOT_ARRAYS[kind]
    for meta in _metas():
        for p in _tensors(meta):
            before = _reaches_c()
            with pytest.raises(AclnnArgumentTypeError) as err:
                _call_with(meta, p["name"], bad)
            assert err.value.param == p["name"] and err.value.status == 161002, (meta["name"], str(err.value))
            assert str(err.value).split(": ", 1)[1].startswith(p["name"] + " "), str(err.value)
            assert type(bad).__name__ in str(err.value) and "NULL" not in str(err.value)
            with pytest.raises(ArrayTypeError) as typed:
                _call_with(meta, p["name"], bad, validate=False)
            assert p["name"] in str(typed.value) and isinstance(typed.value, TypeError)
            assert _reaches_c() == before, f"{meta['name']}: a call with {kind} for {p['name']} reached C"


def test_only_lists_name_the_first_input_not_the_output():
    """All inputs lists (a binding called with [[1.0]], [[1.0]] in the issue): the first input is named,
    not an output that could not be inferred."""
    for meta in _metas():
        inputs = _tensors(meta, "input")
        with pytest.raises(AclnnArgumentTypeError) as err:
            _call_with(meta, inputs[0]["name"], [[1.0]], **{p["name"]: [[1.0]] for p in inputs})
        assert err.value.param == inputs[0]["name"], str(err.value)
        assert "Python list" in str(err.value) and "np.asarray" in str(err.value)


def _torch():
    return pytest.importorskip("torch")


TORCH_MISUSES = {
    # what is wrong, a tensor made so from a valid CPU tensor, what the message must tell the user
    "requires grad": (lambda t: t.clone().requires_grad_(True), ".detach()"),
    "requires grad, bfloat16": (lambda t: t.bfloat16().requires_grad_(True), ".detach()"),
    "meta device": (lambda t: t.to("meta"), "meta device"),
    "meta device, bfloat16": (lambda t: t.bfloat16().to("meta"), "meta device"),
}


@pytest.mark.needs_torch
@pytest.mark.parametrize("misuse", list(TORCH_MISUSES))
def test_a_torch_tensor_the_call_cannot_read_is_a_type_error_saying_what_to_do(misuse):
    """Every tensor of every kind of op, an input or an output passed in: a torch tensor that requires
    grad (its array interface and DLPack export refuse), or on the meta device, is a TypeError
    naming the parameter and what to do, not torch's BufferError; also with validate=False."""
    torch = _torch()
    make, advice = TORCH_MISUSES[misuse]
    for meta in _metas():
        for p in _tensors(meta):
            if "bfloat16" in misuse and p["role"] == "output":
                continue  # the float32 case covers outputs; requires_grad on bfloat16 is the input path
            bad = make(torch.ones(2, 3))
            if "grad" in misuse:
                assert bad.requires_grad
            with pytest.raises(AclnnArgumentTypeError) as err:
                _call_with(meta, p["name"], bad)
            assert err.value.param == p["name"] and advice in str(err.value), str(err.value)
            with pytest.raises(ArrayTypeError) as typed:
                _call_with(meta, p["name"], bad, validate=False)
            assert p["name"] in str(typed.value) and advice in str(typed.value)


@pytest.mark.needs_torch
def test_a_readable_torch_tensor_still_works_after_detach():
    """The advice holds: the detached tensor is accepted (the refusal above is not a blanket one)."""
    torch = _torch()
    meta, binding = _op(PLAIN)
    x = torch.linspace(-2, 2, 6).reshape(2, 3).requires_grad_(True)
    with pytest.raises(TypeError):
        binding(x, x)
    got = binding(x.detach(), x.detach())
    assert got.shape == (2, 3)


def test_an_output_larger_than_any_device_names_that_output():
    """Inputs of 2**62 elements (zero strides) whose output cannot be allocated: the error names
    the output and its size, not an OverflowError from cffi."""
    for meta in _metas():
        inputs = _tensors(meta, "input")
        if len(_tensors(meta)) != len(inputs) + 1 or any(p["role"] not in ("input", "output") for p in meta["params"]):
            continue  # ops with scalars or attributes would need values: one op shape suffices
        output = next(p for p in _tensors(meta, "output"))
        if ("float32", True) not in planning.dtype_cases(meta, "a2", str(known_releases(meta)[-1])):
            continue
        huge = DeviceArray.wrap(0, (2**31, 2**31), np.float32, strides=(0, 0))
        with pytest.raises(ArrayError) as err:
            _op(meta["snake"])[1](*[huge] * len(inputs), validate=False)
        assert output["py"] in str(err.value) and "2**64 - 1" in str(err.value), str(err.value)
        return
    pytest.skip("no built-in op with float32 tensors only")


def test_read_only_output():
    _, binding = _op(PLAIN)
    x = np.ones(4, np.float32)
    out = np.zeros(4, np.float32)
    out.flags.writeable = False
    with pytest.raises(ArrayError, match="read-only"):
        binding(x, x, grad_input=out)


def test_wrong_number_of_arguments():
    meta, _ = _op(PLAIN)
    with pytest.raises(TypeError, match="takes 3 arguments"):
        bind(meta)(np.ones(3, np.float32))


# --- memory -----------------------------------------------------------------------------------------------


def test_device_array_pointing_into_host_memory():
    _, binding = _op(PLAIN)
    host = np.ones(64, np.float32)
    # a 32-byte aligned address inside a host array, posing as device memory
    address = (host.ctypes.data + 31) // 32 * 32
    fake = DeviceArray.wrap(address, (4,), np.float32)
    x = DeviceArray.from_host(np.ones(4, np.float32))
    try:
        with pytest.raises(AclnnStatusError) as lib:
            binding(fake, x, validate=False)
        assert lib.value.status == 161002
        assert "host memory" in lib.value.recent_message and "gradOutput" in lib.value.recent_message
        with pytest.raises(AclnnStatusError):  # validation cannot see it; the library does
            binding(fake, x)
    finally:
        x.free()


def test_device_array_past_the_end_of_its_block():
    _, binding = _op(PLAIN)
    x = DeviceArray.from_host(np.ones(4, np.float32))
    try:
        too_long = DeviceArray.wrap(x.address, (64,), np.float32)
        with pytest.raises(AclnnStatusError) as lib:
            binding(too_long, too_long, validate=False)
        assert lib.value.status == 161002 and "past the end" in lib.value.recent_message
    finally:
        x.free()


def test_freed_device_array():
    _, binding = _op(PLAIN)
    x = DeviceArray.from_host(np.ones(4, np.float32))
    x.free()
    x.free()  # twice is fine
    with pytest.raises(ArrayError, match="freed"):
        binding(x, x)
    with pytest.raises(ArrayError):
        x.to_host()


def test_device_array_of_another_backend(tmp_path):
    from aclnngen.runtime.sim import SimBackend

    other = SimBackend(cache_dir=seeded_cache(tmp_path / "cache"))  # a copy: another library instance
    try:
        other.ensure_thread()
        foreign = DeviceArray.from_host(np.ones(4, np.float32), backend=other)
        _, binding = _op(PLAIN)
        with pytest.raises(ArrayError, match="another backend"):
            binding(foreign, np.ones(4, np.float32))
        foreign.free()
    finally:
        other.shutdown()


# --- the two-phase protocol ------------------------------------------------------------------------------


def test_executor_reused():
    meta, _ = _op(PLAIN)
    v = _values(PLAIN)
    call = bind(meta)
    with call.prepare(v["gradOutput"], v["self"], None) as prepared:
        prepared.launch()
        with pytest.raises(AclnnStatusError) as err:
            prepared.launch()  # before the first run
        assert err.value.status == 161002 and "already ran" in err.value.recent_message
        session.synchronize()
        with pytest.raises(AclnnStatusError) as err:
            prepared.launch()  # after it ran and was released
        assert err.value.status == 161002 and err.value.function == PLAIN_SYMBOL


def test_short_workspace():
    meta, _ = _op(catalog.WITH_REDUCTION)
    v = _values(catalog.WITH_REDUCTION)
    inputs = [v[name] for name in catalog.names(meta, "input")]
    with bind(meta).prepare(*inputs, *(None for _ in meta["outputs"])) as prepared:
        assert prepared.workspace_size == simkernels.DEFAULT_REDUCTION_WORKSPACE
        with pytest.raises(AclnnStatusError) as err:
            prepared.launch(workspace_size=prepared.workspace_size // 2)
    assert err.value.status == 161002
    assert "smaller than the 512 bytes" in err.value.recent_message


def test_missing_workspace():
    meta, _ = _op(catalog.WITH_REDUCTION)
    v = _values(catalog.WITH_REDUCTION)
    inputs = [v[name] for name in catalog.names(meta, "input")]
    with bind(meta).prepare(*inputs, *(None for _ in meta["outputs"])) as prepared:
        with pytest.raises(AclnnStatusError) as err:
            prepared.launch(workspace=0)
    assert err.value.status == 161001


def test_null_out_pointers_follow_the_profile():
    meta, _ = _op(PLAIN)
    b = session.backend()
    gws, _, _ = b.op_functions(meta)
    x = DeviceArray.from_host(np.ones(4, np.float32))
    out = DeviceArray.empty((4,), np.float32)
    handles = [tensor_descriptor(b, x), tensor_descriptor(b, x), tensor_descriptor(b, out)]
    try:
        ws = b.ffi.new("uint64_t *")
        assert gws(*handles, ws, b.ffi.NULL) == 161001
        assert "executor" in b.recent_error()
        unchecked = simkernels.Profile("unchecked", "does not check the out-pointers", null_out_pointer_status=None)
        with simkernels.use_profile(unchecked, op=PLAIN_SYMBOL):
            assert gws(*handles, b.ffi.NULL, b.ffi.NULL) == 561103  # the real library would crash
        b.recent_error()
    finally:
        for h in handles:
            b.api.aclDestroyTensor(h)
        x.free()
        out.free()


def test_launch_on_a_destroyed_stream():
    _, binding = _op(PLAIN)
    x = DeviceArray.from_host(np.ones(4, np.float32))
    s = session.stream()
    s.destroy()
    try:
        with pytest.raises(AclnnStatusError) as err:
            binding(x, x, stream=s)
        assert err.value.status == 361001
        with pytest.raises(AclRuntimeError):
            s.synchronize()
    finally:
        x.free()


# --- backends, ops and SoCs -----------------------------------------------------------------------------


def test_missing_op_symbol_and_the_others_keep_working():
    meta, plain = _op(PLAIN)
    bogus = dict(
        meta,
        name="NoSuchBackward",
        symbol="aclnnNoSuchBackward",
        cdef=meta["cdef"].replace(PLAIN_SYMBOL, "aclnnNoSuchBackward"),
    )
    x = np.ones(4, np.float32)
    simkernels.clear_recorded()
    for _ in range(2):  # the lookup failure is remembered and raised again
        with pytest.raises(BackendError) as err:
            bind(bogus)(x, x, None)
    e = err.value
    reported = session.version()  # the simulator's: the newest release the specs describe
    assert e.op == "NoSuchBackward" and e.cann_version == reported
    assert any("libopapi.so" in s for s in e.searched)
    text = str(e)
    assert "aclnnNoSuchBackward" in text and f"CANN version: {reported}" in text and "searched:" in text
    assert _reaches_c() == 0
    assert plain(x, x).shape == (4,)
    assert simkernels.entry_for(PLAIN_SYMBOL).meta is meta, "a META copy replaced the real op"


def test_forced_cann_without_cann():
    code = f"""
        import numpy as np
        from aclnngen.generated.ops.{PLAIN} import {PLAIN}
        from aclnngen.runtime.errors import BackendError
        try:
            {PLAIN}(np.ones(3, np.float32), np.ones(3, np.float32))
        except BackendError as exc:
            print("BackendError:", exc)
    """
    env = dict(os.environ, ACLNNGEN_BACKEND="cann", ASCEND_HOME_PATH="/opt/no/cann")
    env.pop("ASCEND_TOOLKIT_HOME", None)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=300
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "BackendError: CANN was not found" in out
    assert "/opt/no/cann/lib64/libascendcl.so" in out and "libacl_rt.so" in out
    assert "ACLNNGEN_BACKEND=sim" in out and "install CANN" in out


def test_unknown_soc_from_the_environment(monkeypatch):
    _, binding = _op(PLAIN)
    x = np.ones(4, np.float32)
    monkeypatch.setenv("ACLNNGEN_SIM_SOC", "Ascend999X")
    assert session.soc_name() == "Ascend999X"
    with pytest.raises(UnknownSocError) as err:
        binding(x, x)
    assert err.value.soc_name == "Ascend999X" and "refusing to guess" in str(err.value)
    assert "Ascend910B2" in err.value.known
    # without the Python validator, the simulated library cannot pick a family either
    with pytest.raises(AclnnStatusError) as lib:
        binding(x, x, validate=False)
    assert lib.value.status == 561000 and "Ascend999X" in lib.value.recent_message
    with pytest.raises(UnknownSocError):
        session.family()
    monkeypatch.delenv("ACLNNGEN_SIM_SOC")
    assert binding(x, x).shape == (4,)


# --- failures inside the simulator's kernels -------------------------------------------------------------


def test_exception_in_the_prepare_hook_is_a_status():
    _, binding = _op(PLAIN)
    x = np.ones(4, np.float32)

    def explode(meta, values, *, family, version):
        raise RuntimeError("the profile exploded")

    with simkernels.use_profile(simkernels.Profile("boom", "raises", check=explode)):
        with pytest.raises(AclnnStatusError) as err:
            binding(x, x, validate=False)
    assert err.value.status == 561000
    assert "RuntimeError: the profile exploded" in err.value.recent_message


def test_kernel_failure_reports_at_synchronisation():
    _, binding = _op(PLAIN)
    x = np.ones((2, 3), np.float32)
    out = np.zeros((2, 4), np.float32)  # wrong shape; the lenient profile lets it through
    with simkernels.use_profile("lenient"):
        with pytest.raises(AclRuntimeError) as err:
            binding(x, x, grad_input=out, validate=False)
    e = err.value
    assert e.status == 507015 and e.status_name == "ACL_ERROR_RT_AICORE_EXCEPTION"
    assert e.function == "aclrtSynchronizeStream" and PLAIN_SYMBOL in e.detail
    assert (out == 0).all()


def test_profiles_decide_what_the_library_checks():
    _, binding = _op(PLAIN)
    x = np.linspace(-2, 2, 6)  # float64: outside every family's dtype list
    with pytest.raises(AclnnStatusError):
        binding(x, x, validate=False)
    with simkernels.use_profile("lenient", op=PLAIN_SYMBOL):
        got = binding(x, x, validate=False)
        assert got.dtype == np.float64
    assert simkernels.profile_for(PLAIN_SYMBOL).name == "spec"
    with pytest.raises(ValueError, match="unknown simulator profile"):
        simkernels.set_profile("nonsense")


def test_errors_cross_process_boundaries():
    import pickle

    error = AclnnStatusError(
        status=161002, op="SomeBackward", function="aclnnSomeBackwardGetWorkspaceSize", recent_message="m"
    )
    again = pickle.loads(pickle.dumps(error))
    assert again.status == 161002 and str(again) == str(error)
