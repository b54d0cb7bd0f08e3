"""The C types of the catalog beyond tensors, scalars and bool/int64_t/double/char* attributes
(issue 25): int8_t, int32_t and float attributes, the three arrays (aclIntArray*, aclFloatArray*,
aclBoolArray*), tensor lists (aclTensorList*) and scalar lists (aclScalarList*), through the spec
model, the generated binding, the conversion to C and the simulator's view. Driven through two
made-up ops (tests/data/container_specs: TypedAttributeScale, ListCarryScale) generated once for
the module."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from packages import generated_package, run_generated_tests
from repo_paths import DATA
from simtools import no_leaks_around
from aclnngen.core.attribute_types import ATTRIBUTE_TYPES, misfit
from aclnngen.runtime import session
from aclnngen.runtime.errors import AclnnArgumentTypeError, AclnnStatusError, AclnnValidationError
from aclnngen.runtime.arrays import ArrayError, DeviceArray, UnsupportedDtypeError, from_host
from aclnngen.runtime.sim import kernels as simkernels

SPECS = DATA / "container_specs"
PACKAGE = "container_ops"
ARRAYS = {"dims": [0, -1, 7], "weights": [0.5, -2.0], "mask": [True, False, True]}


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    with generated_package(tmp_path_factory.mktemp("containers"), SPECS, PACKAGE) as out:
        yield out


@pytest.fixture(scope="module")
def bindings(package):
    """The made-up ops' bindings, their simulator entry points built in (a simulator built before
    the package was imported is rebuilt once, here)."""
    found = {
        name: getattr(importlib.import_module(f"{PACKAGE}.ops.{name}"), name)
        for name in ("typed_attribute_scale", "list_carry_scale", "inplace_add_pair")
    }
    session.reset()
    return found


@pytest.fixture(scope="module")
def op(bindings):
    return bindings["typed_attribute_scale"]


@pytest.fixture(scope="module")
def lists_op(bindings):
    return bindings["list_carry_scale"]


@pytest.fixture(scope="module")
def inplace_op(bindings):
    return bindings["inplace_add_pair"]


@pytest.fixture
def seen(monkeypatch):
    """The arguments the simulator's hooks read of each executor, by name (the last call's)."""
    found: dict = {}
    original = simkernels.read_view

    def spy(*args, **kwargs):
        view = original(*args, **kwargs)
        found.clear()
        found.update({a.name: a for a in view})
        return view

    monkeypatch.setattr(simkernels, "read_view", spy)
    return found


X = np.linspace(-2.0, 2.0, 12, dtype=np.float32).reshape(3, 4)


# --- the values each type takes --------------------------------------------------------------


@pytest.mark.parametrize(
    "c_type, good, bad",
    [
        ("int8_t", [-128, 127, np.int8(5)], [128, -129, 1.0, True, "1"]),
        ("int32_t", [-(2**31), 2**31 - 1], [2**31, -(2**31) - 1, 2.5]),
        ("float", [0.0, -3.4e38, np.float32(1.5), 7], [float("inf"), float("nan"), 3.5e38, False, [1.0]]),
        ("aclIntArray*", [[], [1, -2], (3,)], [[1.5], [True], [[1, 2]], 5, "12", [2**63]]),
        ("aclFloatArray*", [[], [1.0, 2], (0.5,)], [[float("nan")], [1e39], [[1.0]], ["a"], 1.0]),
        ("aclBoolArray*", [[], [True, np.bool_(False)], (False,)], [[1], [None], [[True]], True]),
    ],
)
def test_misfit_accepts_the_types_values_and_names_what_is_wrong(c_type, good, bad):
    for value in good:
        assert misfit(c_type, value) is None, (c_type, value)
    for value in bad:
        why = misfit(c_type, value)
        assert why, (c_type, value)
        if ATTRIBUTE_TYPES[c_type].is_array and isinstance(value, (list, tuple)):
            assert why.startswith("element 0: "), why


# --- the binding on the simulator ------------------------------------------------------------


def test_each_type_reaches_the_simulator_with_its_value(op, seen):
    out = op(X, scale=0.25, shift=-7, repeats=2**31 - 1, **ARRAYS)
    np.testing.assert_allclose(out, X * 0.25 - 7, rtol=1e-6)
    assert seen["scale"].value == 0.25 and seen["shift"].value == -7 and seen["repeats"].value == 2**31 - 1
    assert seen["dims"].value == ARRAYS["dims"]
    assert seen["weights"].value == ARRAYS["weights"]
    assert seen["mask"].value == ARRAYS["mask"]


def test_a_float_attribute_is_rounded_to_float_on_its_way(op, seen):
    op(X, scale=0.1, **ARRAYS)
    assert seen["scale"].value == float(np.float32(0.1)) != 0.1  # passed as a C float


def test_empty_arrays_are_allowed(op, seen):
    op(X, dims=[], weights=[], mask=[])
    assert seen["dims"].value == seen["weights"].value == seen["mask"].value == []


@pytest.mark.parametrize("validate", [True, False])
@pytest.mark.parametrize(
    "name, value, phrase",
    [
        ("shift", 300, "outside the int8_t range -128..127"),
        ("repeats", -(2**31) - 1, "outside the int32_t range"),
        ("scale", float("inf"), "is not finite"),
        ("scale", 1e39, "does not fit a float"),
        ("dims", [1, 2.5], "element 1: 2.5 is not an integer"),
        ("dims", [[1, 2]], "element 0: [1, 2] is a sequence, not a number"),
        ("weights", [0.5, "x"], "element 1: 'x' is str, not a number"),
        ("mask", [True, 1], "element 1: 1 is not a bool"),
        ("mask", np.array([True]), "ndarray is not a sequence"),
    ],
)
def test_a_value_the_c_type_cannot_hold_is_refused_naming_the_parameter(op, name, value, phrase, validate):
    """Refused as 161002 naming the parameter, with or without validation (the conversion cannot
    write it), and nothing is left behind."""
    args = {**ARRAYS, name: value}
    with no_leaks_around():
        with pytest.raises(AclnnValidationError) as info:
            op(X, **args, validate=validate)
    err = info.value
    assert err.status == 161002 and err.param == name and err.check == "attribute"
    assert phrase in str(err), str(err)


def test_a_null_array_gives_the_null_pointer_status(op):
    with pytest.raises(AclnnValidationError) as info:
        op(X, dims=None, weights=[1.0], mask=[True])
    assert info.value.status == 161001 and info.value.param == "dims"
    with no_leaks_around():  # the library's own check, as the library answers it
        with pytest.raises(AclnnStatusError) as raised:
            op(X, dims=[1], weights=None, mask=[True], validate=False)
    assert raised.value.status == 161001 and "weights" in str(raised.value)


def test_no_leaks_after_calls_that_pass_and_calls_that_fail(op):
    with no_leaks_around():
        for _ in range(3):
            op(X, **ARRAYS)
        with pytest.raises(AclnnValidationError):  # fails after the arrays before it were made
            op(X, dims=[1], weights=[1.0], mask=[True], out=np.empty((2, 2), np.float32))
        with pytest.raises(AclnnStatusError):  # the library refuses: every array is destroyed
            op(X, dims=[1], weights=[1.0], mask=None, validate=False)


def test_the_signature_and_the_page_name_each_type(package):
    binding = (package / "ops" / "typed_attribute_scale.py").read_text()
    for hint in ("dims: Sequence[int]", "weights: Sequence[float]", "mask: Sequence[bool]", "shift: int = 3"):
        assert hint in binding, hint
    source = (package / "c" / "sim_ops.c").read_text()
    assert '{SIM_ARG_DOUBLE, "scale", &(double){scale}, 0}' in source  # widened, not reinterpreted
    assert '{SIM_ARG_FLOAT_ARRAY, "weights", weights, 0}' in source


# --- tensor and scalar lists --------------------------------------------------------------------

T = [np.arange(6, dtype=np.float32).reshape(2, 3), np.array([7, -8, 9], dtype=np.int32)]


def test_lists_reach_the_simulator_element_by_element(lists_op, seen):
    out = lists_op(X, T, [0.1, 2, -3.5], extras=[T[1]])
    np.testing.assert_array_equal(out, X * 2)
    tensors = seen["tensors"].value
    assert [t.name for t in tensors] == ["tensors[0]", "tensors[1]"]
    for got, want in zip(tensors, T):
        assert got.shape == want.shape and got.dtype == want.dtype
    assert seen["extrasOptional"].value[0].shape == (3,)
    assert seen["weights"].value == [float(np.float32(0.1)), 2.0, -3.5]  # float32 aclScalars


def test_a_list_elements_data_is_readable_from_the_view(lists_op, monkeypatch):
    """The run hook's view of a tensor list gives each element's device memory (ViewArg.array)."""
    found = []
    original = simkernels.Kernels._run

    def spy(self, op, view, *rest):
        found.extend(
            np.array(t.array())
            for t in next(a for a in simkernels.read_view(self.ffi, self.controls, view) if a.name == "tensors").value
        )
        return original(self, op, view, *rest)

    monkeypatch.setattr(simkernels.Kernels, "_run", spy)
    lists_op(X, T, [1.0])
    assert len(found) == 2 and all(np.array_equal(a, b) for a, b in zip(found, T))


def test_empty_lists_and_a_null_optional_list_are_allowed(lists_op, seen):
    lists_op(X, [], [])
    assert seen["tensors"].value == [] and seen["weights"].value == []
    assert seen["extrasOptional"].is_null


@pytest.mark.parametrize(
    "args, error, param, phrase",
    [
        ((np.zeros(3, np.float32), [1.0]), AclnnArgumentTypeError, "tensors", "must be a list or tuple of tensors"),
        (([T[0], None], [1.0]), AclnnArgumentTypeError, "tensors", "element 1 is None"),
        (([T[0], "x"], [1.0]), AclnnArgumentTypeError, "tensors", "element 1"),
        ((T, 1.0), AclnnArgumentTypeError, "weights", "must be a list or tuple of real numbers"),
        ((T, [1.0, "x"]), AclnnArgumentTypeError, "weights", "element 1 ('x') is not a real number"),
        ((T, [True]), AclnnArgumentTypeError, "weights", "element 0 (True) is not a real number"),
        (([T[0], T[1].astype(np.int64)], [1.0]), AclnnValidationError, "tensors[1]", "has dtype int64"),
        ((T, [0.5, 1e39]), AclnnValidationError, "weights[1]", "does not fit"),
        ((None, [1.0]), AclnnValidationError, "tensors", "is None"),
        ((T, None), AclnnValidationError, "weights", "is None"),
    ],
)
def test_a_bad_list_is_refused_naming_the_list_or_its_element(lists_op, args, error, param, phrase):
    with no_leaks_around():
        with pytest.raises(error) as info:
            lists_op(X, *args)
    assert info.value.param == param and phrase in str(info.value), str(info.value)
    assert info.value.status in (161001, 161002)


def test_without_validation_the_library_and_the_conversion_refuse(lists_op):
    with no_leaks_around():
        with pytest.raises(AclnnStatusError) as raised:  # the library's own null check
            lists_op(X, None, [1.0], validate=False)
        assert raised.value.status == 161001 and "tensors" in str(raised.value)
        with pytest.raises(AclnnValidationError) as info:  # the second aclScalar cannot be made
            lists_op(X, T, [0.5, 1e39], validate=False)
        assert info.value.param == "weights[1]"
        with pytest.raises(UnsupportedDtypeError, match=r"tensors\[1\]"):  # after the first element
            lists_op(X, [T[0], np.array(["a"])], [1.0], validate=False)


def test_no_leaks_after_list_calls(lists_op):
    with no_leaks_around():
        for _ in range(3):
            lists_op(X, T, [1.0, 2.0], extras=T)
        with pytest.raises(AclnnValidationError):  # after every list was converted
            lists_op(X, T, [1.0], out=np.empty((1, 1), np.float32), validate=True)
        with pytest.raises(AclnnStatusError):
            lists_op(X, T, None, validate=False)


def test_the_binding_types_lists_as_sequences(package):
    binding = (package / "ops" / "list_carry_scale.py").read_text()
    for hint in (
        "tensors: Sequence[TensorLike]",
        "weights: Sequence[float]",
        "extras: Sequence[TensorLike] | None = None",
    ):
        assert hint in binding, hint
    source = (package / "c" / "sim_ops.c").read_text()
    for entry in (
        '{SIM_ARG_TENSOR_LIST_IN, "tensors"',
        '{SIM_ARG_TENSOR_LIST_OPTIONAL, "extrasOptional"',
        '{SIM_ARG_SCALAR_LIST, "weights"',
    ):
        assert entry in source, entry


# --- in-place inputs and several outputs --------------------------------------------------------

A = np.linspace(-1.0, 1.0, 6, dtype=np.float32).reshape(2, 3)
B = np.full((2, 3), 0.5, np.float32)


def test_an_inplace_input_is_written_into_the_callers_array_and_returned_last(inplace_op):
    ref, before = A.copy(), A.copy()
    product, square, written = inplace_op(ref, B)
    assert written is ref
    np.testing.assert_array_equal(ref, before + B)
    np.testing.assert_array_equal(product, before * B)  # read before it was written
    np.testing.assert_array_equal(square, B * B)


def test_an_inplace_strided_view_is_written_through(inplace_op):
    base = np.zeros((2, 6), np.float32)
    view = base[:, ::2]
    view[...] = A
    inplace_op(view, B)
    np.testing.assert_array_equal(base[:, ::2], A + B)
    assert not base[:, 1::2].any()  # the gaps are untouched


def test_several_outputs_go_in_as_a_tuple_and_come_back_in_order(inplace_op):
    outs = (np.empty((2, 3), np.float32), np.empty((2, 3), np.float32))
    product, square, _ = inplace_op(A.copy(), B, out=outs)
    assert product is outs[0] and square is outs[1]
    _, square_alias, _ = inplace_op(A.copy(), B, square=outs[1])
    assert square_alias is outs[1]
    with pytest.raises(TypeError, match="out must be a tuple of 2 arrays"):
        inplace_op(A.copy(), B, out=outs[0])


def test_a_read_only_inplace_array_is_refused_before_anything_runs(inplace_op):
    frozen = A.copy()
    frozen.flags.writeable = False
    with no_leaks_around():
        with pytest.raises(ArrayError, match="self_ref is written in place"):
            inplace_op(frozen, B)
    np.testing.assert_array_equal(frozen, A)


def test_an_inplace_device_array_is_written_on_the_device(inplace_op):
    ref, other = from_host(A), from_host(B)
    product, square, written = inplace_op(ref, other)
    assert written is ref and isinstance(product, DeviceArray)
    np.testing.assert_array_equal(ref.to_host(), A + B)
    for array in (ref, other, product, square):
        array.free()


def test_no_leaks_after_inplace_calls(inplace_op):
    with no_leaks_around():
        for _ in range(3):
            inplace_op(A.copy(), B)
        with pytest.raises(AclnnValidationError):
            inplace_op(A.copy(), B[:1])


def test_the_generated_tests_pass_on_the_simulator(package):
    done = run_generated_tests(package, "-n", "0")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert done.with_outcome("passed") and "failed" not in done.stdout
