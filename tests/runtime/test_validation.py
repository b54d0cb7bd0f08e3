"""The runtime's typed errors, shape/dtype helpers and the META-driven validator, on the five real
specs (facts from their pages, cann-abi.md §4) and on synthetic METAs for the rule kinds the real
specs do not exercise."""

from __future__ import annotations

import copy
import math
import pickle
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import catalog
import pytest
from catalog import loaded_specs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclnngen.codegen.loader import spec_paths
from aclnngen.codegen.metadata import build
from aclnngen.codegen.model import DTYPES as SPEC_DTYPES
from aclnngen.runtime import validation
from aclnngen.core.planning import scalar_violations
from aclnngen.verify.cases import make_values
from aclnngen.runtime.errors import (
    AclnnError,
    AclnnStatusError,
    AclnnValidationError,
    AclRuntimeError,
    BackendError,
    UnknownSocError,
)
from aclnngen.core.dtypes import ALL_DTYPES, PROMOTION, PromotionError
from aclnngen.core.rules import BroadcastError, broadcast_shapes
from aclnngen.runtime.shapes import NUMPY_DTYPES, infer_outputs, is_contiguous, promote_dtypes
from aclnngen.core.rules import supported_dtypes, supported_families
from aclnngen.runtime.validation import validate

METAS = {ls.spec.name: build(ls.spec) for ls in loaded_specs()}
BF16 = np.dtype(ml_dtypes.bfloat16)
F16, F32, F64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)


def arr(shape, dtype=F32, fill=0.5):
    return np.full(shape, fill, dtype=dtype)


def rejected(meta, values, *, family, version):
    with pytest.raises(AclnnValidationError) as info:
        validate(meta, values, family=family, version=version)
    return info.value


def gelu(go, x, out):
    return {"gradOutput": go, "self": x, "gradInput": out}


def prelu(go, x, w, gi, gw):
    return {"gradOutput": go, "self": x, "weight": w, "gradInput": gi, "gradWeight": gw}


def test_every_spec_is_loaded():
    assert METAS and len(METAS) == len(spec_paths())


# --- errors -------------------------------------------------------------------------------------


def test_validation_error_carries_every_field_and_says_them():
    err = AclnnValidationError(
        status=161002,
        op="DemoBackward",
        param="self",
        family="training",
        version="8.0.0",
        check="dtype",
        detail="self has dtype bfloat16; allowed: float16, float32",
        found="bfloat16",
        allowed=("float16", "float32"),
    )
    assert isinstance(err, AclnnError) and err.user_facing is True
    assert (err.status, err.status_name, err.op, err.param, err.family) == (
        161002,
        "ACLNN_ERR_PARAM_INVALID",
        "DemoBackward",
        "self",
        "training",
    )
    text = str(err)
    for part in (
        "aclnnDemoBackward",
        "self",
        "bfloat16",
        "training",
        "float16, float32",
        "161002",
        "ACLNN_ERR_PARAM_INVALID",
        "8.0.0",
    ):
        assert part in text
    assert AclnnValidationError(status=161001, op="X", param="p", family=None, detail="d").status_name == (
        "ACLNN_ERR_PARAM_NULLPTR"
    )


def test_validation_error_rejects_a_status_that_is_not_a_validation_status():
    with pytest.raises(ValueError, match="161001 or 161002"):
        AclnnValidationError(status=0, op="X", param="p", family="a2", detail="d")


@pytest.mark.parametrize(
    "error",
    [
        AclnnValidationError(status=161001, op="DemoBackward", param="self", family="a2", detail="self is None"),
        AclnnStatusError(
            status=161002,
            op="DemoBackward",
            function="aclnnDemoBackwardGetWorkspaceSize",
            recent_message="EZ1001 bad",
        ),
        AclRuntimeError(status=207001, function="aclrtMalloc"),
        BackendError(reason="op not found", op="DemoBackward", cann_version="8.0.0", searched=["libopapi.so"]),
        UnknownSocError(soc_name="Ascend999", known=["Ascend910B1"]),
    ],
)
def test_errors_survive_pickling_with_their_fields(error):
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error) and back.__dict__ == error.__dict__
    assert back.user_facing


def test_status_runtime_backend_and_soc_errors_say_what_went_wrong():
    status = AclnnStatusError(
        status=561003,
        op="DemoBackward",
        function="aclnnDemoBackwardGetWorkspaceSize",
        recent_message="kernel not found\n",
    )
    assert status.status_name == "ACLNN_ERR_INNER_FIND_KERNEL_ERROR"
    assert "aclnnDemoBackwardGetWorkspaceSize returned 561003" in str(status) and "kernel not found" in str(status)
    assert "UNKNOWN_ACLNN_STATUS" in str(AclnnStatusError(status=42, op=None, function="f"))
    acl = AclRuntimeError(status=100002, function="aclInit")
    assert acl.status_name == "ACL_ERROR_REPEAT_INITIALIZE" and "aclInit" in str(acl)
    backend = BackendError(
        reason="aclnnDemoBackward is not exported by the installed CANN",
        op="DemoBackward",
        cann_version="8.0.RC1",
        searched=["/usr/local/Ascend/lib64/libopapi.so", "libopapi_nn.so"],
    )
    for part in ("DemoBackward", "8.0.RC1", "libopapi.so", "libopapi_nn.so"):
        assert part in str(backend)
    soc = UnknownSocError(soc_name="Ascend910Z9")
    assert "Ascend910Z9" in str(soc) and "guess" in str(soc)
    assert "NULL" in str(UnknownSocError(soc_name=None))


# --- shapes -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "shapes_, expected",
    [
        ([(2, 3, 4), (3, 1)], (2, 3, 4)),
        ([(), (5,)], (5,)),
        ([(1,), (0,)], (0,)),
        ([(4, 1), (1, 5), (3, 1, 1)], (3, 4, 5)),
        ([(2, 3)], (2, 3)),
        ([], ()),
    ],
)
def test_broadcast_shapes_agrees_with_numpy(shapes_, expected):
    assert broadcast_shapes(*shapes_) == expected
    if shapes_:
        assert broadcast_shapes(*shapes_) == np.broadcast_shapes(*shapes_)


@pytest.mark.parametrize("shapes_", [[(2, 3), (3, 2)], [(0,), (3,)], [(2, 5, 4), (2, 3, 4)]])
def test_broadcast_shapes_raises_a_value_error_naming_the_shapes(shapes_):
    with pytest.raises(BroadcastError) as info:
        broadcast_shapes(*shapes_)
    assert isinstance(info.value, ValueError)
    assert str(shapes_[0]) in str(info.value)


def test_runtime_dtype_names_match_the_spec_model():
    assert ALL_DTYPES == tuple(SPEC_DTYPES)
    assert NUMPY_DTYPES["bfloat16"] == BF16


def test_promotion_table_is_symmetric_total_and_torch_like():
    assert set(PROMOTION) == {(a, b) for a in ALL_DTYPES for b in ALL_DTYPES}
    for (a, b), result in PROMOTION.items():
        assert PROMOTION[(b, a)] == result
        assert PROMOTION[(a, a)] == a
    assert PROMOTION[("float16", "bfloat16")] == "float32"
    assert PROMOTION[("float16", "float32")] == "float32"
    assert PROMOTION[("bfloat16", "float64")] == "float64"
    assert PROMOTION[("int32", "float16")] == "float16"  # int with float: the float (torch)
    assert PROMOTION[("bool", "int8")] == "int8"
    assert PROMOTION[("uint8", "int8")] == "int16"
    assert PROMOTION[("complex64", "float64")] == "complex128"
    assert PROMOTION[("uint64", "int64")] is None
    assert promote_dtypes(F16, BF16) == F32
    assert promote_dtypes("float16", np.float32) == F32
    assert promote_dtypes(BF16) == BF16
    with pytest.raises(PromotionError):
        promote_dtypes("uint64", "int8")
    with pytest.raises(PromotionError):
        promote_dtypes(F32, "float8_e4m3fn")  # narrow dtypes promote with nothing else
    with pytest.raises(PromotionError):
        promote_dtypes("int4", "int8")


def test_contiguity_from_flags_attributes_and_strides():
    base = np.zeros((4, 6), np.float32)
    assert is_contiguous(base) and not is_contiguous(base[:, ::2]) and not is_contiguous(base.T)
    assert is_contiguous(base[1:3])  # an offset view is contiguous
    assert is_contiguous(np.zeros((0, 3))[:, ::2])  # empty: nothing to be strided
    assert not is_contiguous(SimpleNamespace(shape=(2, 3), dtype=F32, contiguous=False))
    assert is_contiguous(SimpleNamespace(shape=(2, 3), dtype=F32, strides=(12, 4)))  # bytes
    assert is_contiguous(SimpleNamespace(shape=(2, 3), dtype=F32, strides=(3, 1)))  # elements
    assert not is_contiguous(SimpleNamespace(shape=(2, 3), dtype=F32, strides=(1, 2)))
    assert is_contiguous(SimpleNamespace(shape=(2, 1), dtype=F32, strides=(1, 99)))  # size-1 dim ignored
    assert not is_contiguous(SimpleNamespace(shape=(2, 3), dtype=F32, is_contiguous=lambda: False))


def test_recorded_fact_infer_outputs_broadcast_and_promotion():
    meta = METAS["GeluBackward"]
    out = infer_outputs(meta, {"gradOutput": arr((3, 1), F16), "self": arr((2, 3, 4), F32)}, "8.0.0")
    assert out == {"gradInput": ((2, 3, 4), F32)}
    out = infer_outputs(meta, {"gradOutput": arr((4,), F16), "self": arr((4,), BF16)}, "8.5.0")
    assert out["gradInput"] == ((4,), F32)
    # a missing input is left out; nothing to infer from leaves the output out
    assert infer_outputs(meta, {"self": arr((5,), BF16)}, "8.0.0") == {"gradInput": ((5,), BF16)}
    assert infer_outputs(meta, {}, "8.0.0") == {}
    # not a tensor: left for the validator to report with its status
    assert infer_outputs(meta, {"gradOutput": [1.0], "self": arr((2,), F16)}, "8.0.0") == {"gradInput": ((2,), F16)}
    with pytest.raises(TypeError, match="gradOutput"):
        infer_outputs(meta, {"gradOutput": [1.0], "self": arr((2,), F16)}, "8.0.0", strict=True)


def test_recorded_fact_infer_outputs_does_not_raise_on_bad_inputs_unless_strict():
    meta = METAS["GeluBackward"]
    values = {"gradOutput": arr((2, 5), F16), "self": arr((2, 3), F32)}
    assert infer_outputs(meta, values, "8.0.0")["gradInput"][0] == (2, 5)
    with pytest.raises(BroadcastError):
        infer_outputs(meta, values, "8.0.0", strict=True)
    with pytest.raises(PromotionError):
        infer_outputs(meta, {"gradOutput": arr((2,), np.uint64), "self": arr((2,), np.int8)}, "8.0.0", strict=True)


@pytest.mark.parametrize(
    "self_shape, weight_shape, grad_shape",
    [
        ((2, 3, 4), (3,), (3,)),
        ((2, 3, 4), (1,), (1,)),
        ((2, 3, 4), (1, 3, 1), (3,)),  # C elements in self's rank: the gradient is still (C,)
        ((2, 3, 4), (1, 1, 1), (1, 1, 1)),  # one element: the gradient has weight's shape
        ((5,), (1,), (1,)),
        ((), (), ()),
    ],
)
def test_recorded_fact_infer_outputs_per_channel(self_shape, weight_shape, grad_shape):
    values = {"gradOutput": arr(self_shape), "self": arr(self_shape), "weight": arr(weight_shape)}
    out = infer_outputs(METAS["PreluBackward"], values, "8.0.0")
    assert out == {"gradInput": (self_shape, F32), "gradWeight": (grad_shape, F32)}


def test_recorded_fact_infer_outputs_same_shape_and_same_dtype():
    meta = METAS["SwishBackward"]
    out = infer_outputs(meta, {"gradOutput": arr((2, 3), BF16), "self": arr((2, 3), BF16)}, "8.0.0")
    assert out == {"gradInput": ((2, 3), BF16)}
    meta = METAS["HardtanhBackward"]
    assert infer_outputs(meta, {"gradOutput": arr((7,), F16), "self": arr((7,), F16)}, "8.5.0") == {"out": ((7,), F16)}


# --- validate on the real specs -----------------------------------------------------------------


def test_recorded_fact_valid_arguments_pass():
    validate(
        METAS["GeluBackward"], gelu(arr((3, 1)), arr((2, 3, 4)), arr((2, 3, 4))), family="training", version="8.0.0"
    )
    validate(
        METAS["PreluBackward"],
        prelu(arr((2, 3, 4)), arr((2, 3, 4)), arr((3,)), arr((2, 3, 4)), arr((3,))),
        family="a2",
        version="8.0.0",
    )
    validate(
        METAS["HardtanhBackward"],
        {"gradOutput": arr((4, 2)), "self": arr((4, 2)), "min": 1.2, "max": 2.4, "out": arr((4, 2))},
        family="inference",
        version="8.0.0",
    )


@pytest.mark.parametrize("op", sorted(METAS))
def test_every_required_parameter_that_is_none_or_missing_gives_161001(op):
    meta = METAS[op]
    family = supported_families(meta, "8.5.0")[0]
    names = [p["name"] for p in meta["params"] if p["role"] in ("input", "output", "scalar")]
    assert names
    for name in names:
        values = make_values(meta, "contiguous", "float32", version="8.5.0")
        values[name] = None
        err = rejected(meta, values, family=family, version="8.5.0")
        assert (err.status, err.param, err.check) == (161001, name, "null_pointer")
        assert name in str(err) and "ACLNN_ERR_PARAM_NULLPTR" in str(err)
        del values[name]
        assert rejected(meta, values, family=family, version="8.5.0").status == 161001


def test_recorded_fact_null_is_checked_before_the_product_family():
    err = rejected(METAS["PreluBackward"], {}, family="inference", version="8.5.0")
    assert err.status == 161001


def test_an_optional_scalar_may_be_none():
    meta = catalog.meta(catalog.WITH_OPTIONAL_SCALAR)
    version, (scalar, *_) = meta["cann_version"], catalog.names(meta, "optional_scalar")
    family = supported_families(meta, version)[0]
    values = make_values(meta, "contiguous", "float32", version=version)
    values[scalar] = None
    validate(meta, values, family=family, version=version)
    del values[scalar]
    validate(meta, values, family=family, version=version)


@pytest.mark.parametrize(
    "op, family, version, supported",
    [
        ("PreluBackward", "inference", "8.0.0", False),
        ("PreluBackward", "inference", "8.5.0", False),
        ("PreluBackward", "training", "8.0.0", True),
        ("GeluBackward", "atlas_200i_500_a2", "8.5.0", False),
        ("HardtanhBackward", "atlas_200i_500_a2", "8.0.0", False),
        ("HardtanhBackward", "atlas_200i_500_a2", "8.5.0", False),
        ("HardtanhBackward", "atlas_200i_500_a2", "9.0.RC1.alpha001", True),
        ("SoftshrinkBackward", "inference", "8.0.0", False),
        ("SoftshrinkBackward", "inference", "8.5.0", True),
        ("SwishBackward", "a3", "8.0.0", False),
        ("SwishBackward", "a3", "8.5.0", True),
        ("SwishBackward", "no_such_family", "8.5.0", False),
    ],
)
def test_recorded_fact_product_support_follows_the_spec(op, family, version, supported):
    meta = METAS[op]
    values = make_values(meta, "contiguous", "float16", version=version)
    assert (family in supported_families(meta, version)) is supported
    if supported:
        validate(meta, values, family=family, version=version)
    else:
        err = rejected(meta, values, family=family, version=version)
        assert (err.status, err.check, err.param) == (161002, "product", None)
        assert family in str(err)
        for other in supported_families(meta, version):
            assert other in str(err)


def test_recorded_fact_supported_families_and_dtypes():
    gelu_meta = METAS["GeluBackward"]
    assert supported_families(gelu_meta, "8.0.0") == ("training", "inference", "a2")
    assert supported_families(gelu_meta, "8.5.0") == ("training", "inference", "a2", "a3", "ascend950")
    assert supported_dtypes(gelu_meta, "self", "training", "8.5.0") == ("float16", "float32")
    assert supported_dtypes(gelu_meta, "self", "a2", "8.0.0") == ("float16", "float32", "bfloat16")
    assert supported_dtypes(gelu_meta, "self", "a3", "8.0.0") == ()
    assert supported_dtypes(METAS["PreluBackward"], "weight", "inference", "8.5.0") == ()
    soft = METAS["SoftshrinkBackward"]
    assert supported_dtypes(soft, "gradInput", "a2", "8.0.0") == ("float16", "float32")
    assert supported_dtypes(soft, "gradInput", "a2", "8.5.0") == ("float16", "float32", "bfloat16")
    assert supported_dtypes(soft, "lambda", "a2", "8.5.0") == ("float32",)
    with pytest.raises(KeyError, match="no parameter"):
        supported_dtypes(soft, "lambd", "a2", "8.5.0")


@pytest.mark.parametrize(
    "op, family, version, dtype, ok",
    [
        ("GeluBackward", "training", "8.5.0", BF16, False),
        ("GeluBackward", "a2", "8.0.0", BF16, True),
        ("GeluBackward", "a2", "8.0.0", F64, False),
        ("HardtanhBackward", "inference", "8.5.0", BF16, False),
        ("HardtanhBackward", "atlas_200i_500_a2", "9.0.RC1.alpha001", BF16, False),
        ("HardtanhBackward", "a3", "9.0.RC1.alpha001", BF16, True),
        ("SoftshrinkBackward", "a2", "8.0.0", BF16, False),
        ("SoftshrinkBackward", "a2", "8.5.0", BF16, True),
        ("SwishBackward", "training", "8.0.0", np.dtype(np.int32), False),
        ("PreluBackward", "training", "8.5.0", np.dtype(np.bool_), False),
    ],
)
def test_recorded_fact_dtype_tables_per_family_and_version(op, family, version, dtype, ok):
    meta = METAS[op]
    values = make_values(meta, "contiguous", dtype, version=version)
    if ok:
        validate(meta, values, family=family, version=version)
    else:
        err = rejected(meta, values, family=family, version=version)
        assert (err.status, err.check) == (161002, "dtype")
        text = str(err)
        assert err.param in text and dtype.name in text and family in text
        for allowed in supported_dtypes(meta, err.param, family, version):
            assert allowed in text


def test_a_big_endian_array_never_passes_for_its_native_dtype():
    meta = catalog.meta(catalog.PLAIN)
    x = arr((2, 2), np.dtype(">f4"))
    tensors = {name: x for name in catalog.names(meta, "input", "output")}
    err = rejected(meta, tensors, family=supported_families(meta, "8.5.0")[0], version="8.5.0")
    assert err.check in ("dtype", "promote") and "byte order" in str(err), str(err)


def test_gelu_promotes_its_inputs_and_checks_the_promoted_dtype():
    meta = METAS["GeluBackward"]
    # float16 + float32 -> float32 output
    validate(meta, gelu(arr((2, 3), F16), arr((2, 3), F32), arr((2, 3), F32)), family="training", version="8.0.0")
    err = rejected(meta, gelu(arr((2, 3), F16), arr((2, 3), F32), arr((2, 3), F16)), family="training", version="8.0.0")
    assert (err.param, err.status, err.found, err.allowed) == ("gradInput", 161002, "float16", "float32")
    # bfloat16 alone is not supported on training, but float16 + bfloat16 promote to float32
    validate(meta, gelu(arr((3,), F16), arr((3,), BF16), arr((3,), F32)), family="training", version="8.0.0")
    err = rejected(meta, gelu(arr((3,), BF16), arr((3,), BF16), arr((3,), BF16)), family="training", version="8.0.0")
    assert err.check == "dtype" and err.param == "gradOutput"
    # the page's own sample: an int32 gradOutput with a float32 self
    validate(meta, gelu(arr((3,), np.int32), arr((3,), F32), arr((3,), F32)), family="a2", version="8.0.0")
    # promoted to float64: not in the list
    err = rejected(meta, gelu(arr((3,), F64), arr((3,), F32), arr((3,), F64)), family="a2", version="8.0.0")
    assert err.check == "dtype" and "float64" in str(err)
    # no common dtype at all
    err = rejected(meta, gelu(arr((3,), np.uint64), arr((3,), np.int64), arr((3,), F32)), family="a2", version="8.0.0")
    assert err.check == "promote" and "no common dtype" in str(err)


def test_recorded_fact_same_dtype_and_same_shape():
    meta = METAS["SwishBackward"]
    err = rejected(
        meta,
        {"gradOutput": arr((2, 3), F16), "self": arr((2, 3), F32), "gradInput": arr((2, 3), F16)},
        family="a2",
        version="8.0.0",
    )
    assert (err.check, err.param) == ("same_dtype", "self") and "float16" in str(err) and "float32" in str(err)
    err = rejected(
        meta, {"gradOutput": arr((1, 3)), "self": arr((2, 3)), "gradInput": arr((2, 3))}, family="a2", version="8.0.0"
    )
    assert err.check == "same_shape" and "(1, 3)" in str(err) and "(2, 3)" in str(err)


def test_recorded_fact_broadcast_rule_checks_inputs_and_output():
    meta = METAS["GeluBackward"]
    err = rejected(meta, gelu(arr((2, 5)), arr((2, 3)), arr((2, 5))), family="a2", version="8.0.0")
    assert err.check == "broadcast" and "(2, 5)" in str(err) and "(2, 3)" in str(err)
    err = rejected(meta, gelu(arr((3, 1)), arr((1, 4)), arr((3, 1))), family="a2", version="8.0.0")
    assert (err.check, err.param, err.allowed) == ("broadcast", "gradInput", (3, 4))


def test_softshrink_gradinput_must_equal_self_from_8_5_0():
    meta = METAS["SoftshrinkBackward"]
    values = {"gradOutput": arr((2, 3, 4)), "self": arr((3, 1)), "lambda": 0.5, "gradInput": arr((2, 3, 4))}
    validate(meta, values, family="a2", version="8.0.0")
    err = rejected(meta, values, family="a2", version="8.5.0")
    assert err.check == "same_shape"
    values["gradOutput"] = arr((2, 3, 4), F16)
    values["self"] = arr((2, 3, 4))
    validate(meta, values, family="a2", version="8.0.0")  # the 8.0 page did not require one dtype
    assert rejected(meta, values, family="a2", version="8.5.0").check == "same_dtype"


def test_recorded_fact_broadcast_to_requires_exactly_the_target_shape():
    meta = METAS["PreluBackward"]
    x = arr((2, 3, 4))
    validate(meta, prelu(arr((3, 1)), x, arr((3,)), x, arr((3,))), family="a2", version="8.0.0")
    err = rejected(meta, prelu(arr((2, 1, 3, 4)), x, arr((3,)), x, arr((3,))), family="a2", version="8.0.0")
    assert (err.check, err.param) == ("broadcast_to", "gradOutput") and "(2, 2, 3, 4)" in str(err)
    err = rejected(meta, prelu(arr((2, 4, 4)), x, arr((3,)), x, arr((3,))), family="a2", version="8.0.0")
    assert err.check == "broadcast_to"


@pytest.mark.parametrize(
    "self_shape, weight_shape, grad_shape, bad",
    [
        ((2, 3, 4), (3,), (3,), None),
        ((2, 3, 4), (1,), (1,), None),
        ((2, 3, 4), (1, 3, 1), (3,), None),
        ((2, 3, 4), (1, 1), (1, 1), None),
        ((2, 3, 4), (4,), (4,), "weight"),
        ((2, 3, 4), (2,), (2,), "weight"),
        ((2, 3, 4), (3,), (1, 3), "gradWeight"),
        ((2, 3, 4), (1, 3, 1), (1, 3, 1), "gradWeight"),  # C elements: the gradient is (C,)
        ((2, 3, 4), (1,), (), "gradWeight"),  # one element: the gradient has weight's shape
        ((5,), (1,), (1,), None),
        ((5,), (5,), (5,), "weight"),  # rank 1: one channel
        ((), (), (), None),
        ((), (1,), (1,), None),
        ((), (2,), (2,), "weight"),  # 0-d self with more than one weight
        ((0, 3, 4), (3,), (3,), None),
    ],
)
def test_recorded_fact_per_channel_weight_and_its_gradient(self_shape, weight_shape, grad_shape, bad):
    meta = METAS["PreluBackward"]
    values = prelu(arr(self_shape), arr(self_shape), arr(weight_shape), arr(self_shape), arr(grad_shape))
    if bad is None:
        validate(meta, values, family="training", version="8.0.0")
    else:
        err = rejected(meta, values, family="training", version="8.0.0")
        assert (err.check, err.param, err.status) == ("per_channel", bad, 161002)
        assert bad in str(err)


def test_recorded_fact_max_rank_follows_the_version():
    meta = METAS["SoftshrinkBackward"]
    x = arr((1,) * 9)
    values = {"gradOutput": x, "self": x, "lambda": 0.5, "gradInput": x}
    validate(meta, values, family="a2", version="8.0.0")
    err = rejected(meta, values, family="a2", version="8.5.0")
    assert err.check == "max_rank" and "9 dims" in str(err) and "8" in str(err)
    x = arr((1,) * 8)
    validate(meta, {"gradOutput": x, "self": x, "lambda": 0.5, "gradInput": x}, family="a2", version="8.5.0")


def test_hardtanh_rejects_empty_tensors_from_8_5_0():
    meta = METAS["HardtanhBackward"]
    x = arr((2, 0))
    values = {"gradOutput": x, "self": x, "min": -1.0, "max": 1.0, "out": x}
    validate(meta, values, family="a2", version="8.0.0")
    err = rejected(meta, values, family="a2", version="8.5.0")
    assert (err.check, err.param) == ("empty", "gradOutput") and "(2, 0)" in str(err)


def test_softshrink_lambda_constraint_holds_from_8_5_0():
    meta = METAS["SoftshrinkBackward"]
    values = make_values(meta, "contiguous", "float32", version="8.5.0")
    values["lambda"] = -0.5
    err = rejected(meta, values, family="a2", version="8.5.0")
    assert (err.status, err.param, err.check) == (161002, "lambda", "scalar_range")
    assert "-0.5" in str(err) and ">= 0" in str(err)
    validate(meta, values, family="a2", version="8.0.0")
    values["lambda"] = 0
    validate(meta, values, family="a2", version="8.5.0")
    values["lambda"] = math.nan
    assert "NaN" in str(rejected(meta, values, family="a2", version="8.5.0"))
    values["lambda"] = math.inf
    validate(meta, values, family="a2", version="8.5.0")


@pytest.mark.parametrize("op", sorted(METAS))
@pytest.mark.parametrize("version", ["8.0.0", "8.5.0"])
def test_every_scalar_violation_is_rejected_with_its_status(op, version):
    meta = METAS[op]
    family = supported_families(meta, version)[0]
    for param, bad, status in scalar_violations(meta, version):
        values = make_values(meta, "contiguous", "float32", version=version)
        values[param] = bad
        err = rejected(meta, values, family=family, version=version)
        assert (err.status, err.param) == (status, param)


def test_recorded_fact_scalars_must_be_real_numbers():
    meta = METAS["HardtanhBackward"]
    for bad in ("1.0", 1 + 2j, [1.0], object()):
        values = make_values(meta, "contiguous", "float32", version="8.0.0")
        values["max"] = bad
        err = rejected(meta, values, family="a2", version="8.0.0")
        assert (err.status, err.param) == (161002, "max")
    values["max"] = np.float32(2.0)
    validate(meta, values, family="a2", version="8.0.0")


def _integer_op_with_a_scalar():
    """Some op, family, release and integer dtype where every tensor may be that dtype and a
    scalar takes part (found in the specs, not named)."""
    for meta in METAS.values():
        scalars = [p["name"] for p in meta["params"] if p["role"] in ("scalar", "optional_scalar")]
        tensors = [p["name"] for p in meta["params"] if p["role"] in ("input", "output")]
        if not scalars:
            continue
        for version in sorted({meta["cann_version"], *validation_versions(meta)}):
            for family in supported_families(meta, version):
                common = set.intersection(*(set(supported_dtypes(meta, t, family, version)) for t in tensors))
                for dtype in sorted(d for d in common if d.startswith(("int", "uint"))):
                    return meta, scalars[0], family, version, dtype
    raise AssertionError("no spec has an op whose tensors all take an integer dtype beside a scalar")


def validation_versions(meta):
    return {d["since"] for p in meta["params"] for d in p.get("dtypes", ()) if d.get("since")}


def test_a_non_finite_scalar_in_an_integer_computation_is_rejected():
    """Integers hold no NaN or inf: such a scalar beside integer tensors is 161002 (as torch refuses
    it), not a kernel failure at launch."""
    meta, scalar, family, version, dtype = _integer_op_with_a_scalar()
    values = make_values(meta, "contiguous", dtype, version=version)
    for bad in (float("nan"), float("inf"), -float("inf")):
        values[scalar] = bad
        err = rejected(meta, values, family=family, version=version)
        assert (err.status, err.param) == (161002, scalar), err
    values[scalar] = 1.0
    validate(meta, values, family=family, version=version)


def test_a_tensor_parameter_that_is_not_a_tensor_is_rejected():
    meta = catalog.meta(catalog.PLAIN)
    family, tensor = supported_families(meta, "8.5.0")[0], catalog.names(meta, "input")[-1]
    for bad in ([1.0, 2.0], 3.0, "x", SimpleNamespace(shape=(2, -1), dtype=F32), SimpleNamespace(shape=(2,))):
        values = make_values(meta, "contiguous", "float32", version="8.5.0")
        values[tensor] = bad
        err = rejected(meta, values, family=family, version="8.5.0")
        assert (err.status, err.param) == (161002, tensor) and "tensor" in str(err)


def test_array_likes_other_than_numpy_are_read_through_shape_and_dtype():
    meta = catalog.meta(catalog.WITH_SAME_DTYPE)
    version = meta["cann_version"]
    family = next(
        f
        for f in supported_families(meta, version)
        if "float16" in supported_dtypes(meta, catalog.names(meta, "input")[0], f, version)
    )
    values = make_values(meta, "contiguous", "float16", version=version)
    t = SimpleNamespace(shape=(2, 3), dtype="float16", strides=(6, 2))
    tensors = catalog.names(meta, "input", "output")
    validate(meta, {**values, **{name: t for name in tensors}}, family=family, version=version)
    o = SimpleNamespace(shape=(2, 3), dtype="float32")
    held = next(r["params"] for r in meta["rules"] if r["kind"] == "same_dtype")
    wrong = {**values, **{name: t for name in tensors}, held[-1]: o}
    assert rejected(meta, wrong, family=family, version=version).check == "same_dtype"


# --- rule kinds the real specs leave untested: synthetic METAs ----------------------------------


def variant(snake, **changes):
    """A deep copy of a catalog op's META (tests/catalog.py), renamed, with `changes`."""
    meta = copy.deepcopy(catalog.meta(snake))
    meta["name"] = f"{meta['name']}Variant"
    for key, value in changes.items():
        meta[key] = value
    return meta


def _plain_call(meta, **tensors):
    """The values of a call of a plain op (tests/catalog.py) from its inputs and output by role."""
    (go, x), (out,) = catalog.names(meta, "input"), catalog.names(meta, "output")
    return {go: tensors["grad"], x: tensors["x"], out: tensors["out"]}


def test_non_contiguous_tensors_rejected_when_a_rule_disallows_them():
    meta = variant(catalog.PLAIN)
    meta["rules"] = [r for r in meta["rules"] if r["kind"] != "non_contiguous"]
    tensors = catalog.names(meta, "input", "output")
    meta["rules"].append(
        {"kind": "non_contiguous", "status": 161002, "families": [], "when": {}, "params": tensors, "allowed": False}
        | {"since": None, "until": None}
    )
    family = supported_families(meta, "8.5.0")[0]
    (x_name,), (out_name,) = catalog.names(meta, "input")[1:], catalog.names(meta, "output")
    x = arr((4, 6))
    validate(meta, _plain_call(meta, grad=x, x=x, out=x), family=family, version="8.5.0")
    validate(meta, _plain_call(meta, grad=x[1:3], x=x[1:3], out=x[1:3]), family=family, version="8.5.0")
    err = rejected(meta, _plain_call(meta, grad=x, x=x.T.copy().T, out=x), family=family, version="8.5.0")
    assert (err.check, err.param) == ("non_contiguous", x_name)
    flagged = SimpleNamespace(shape=(4, 6), dtype=F32, contiguous=False)
    err = rejected(meta, _plain_call(meta, grad=x, x=x, out=flagged), family=family, version="8.5.0")
    assert err.param == out_name


def test_attribute_type_and_choices():
    meta = variant(catalog.PLAIN)
    meta["params"].append(
        {
            "name": "approximate",
            "py": "approximate",
            "role": "attribute",
            "optional": False,
            "dtypes": [],
            "scalar_dtype": None,
            "scalar_dtypes": [],
            "default": None,
            "constraints": [],
            "attr_type": "char*",
            "choices": ["none", "tanh"],
        }
    )
    meta["params"].append(
        {
            "name": "keepDim",
            "py": "keep_dim",
            "role": "attribute",
            "optional": False,
            "dtypes": [],
            "scalar_dtype": None,
            "scalar_dtypes": [],
            "default": False,
            "constraints": [],
            "attr_type": "bool",
            "choices": [],
        }
    )
    family = supported_families(meta, "8.5.0")[0]  # read once the META is complete: op_meta caches it
    values = make_values(meta, "contiguous", "float32", version="8.5.0")
    assert values["approximate"] == "none" and values["keepDim"] is False
    validate(meta, values, family=family, version="8.5.0")
    values["approximate"] = "erf"
    err = rejected(meta, values, family=family, version="8.5.0")
    assert (err.param, err.check) == ("approximate", "attribute") and "'tanh'" in str(err)
    values["approximate"] = None
    assert rejected(meta, values, family=family, version="8.5.0").status == 161001
    values["approximate"] = "tanh"
    values["keepDim"] = 1
    assert rejected(meta, values, family=family, version="8.5.0").param == "keepDim"
    values["keepDim"] = None  # has a default
    validate(meta, values, family=family, version="8.5.0")


def test_scalar_constraints_of_every_operator_and_their_statuses():
    meta = variant(catalog.WITH_TWO_SCALARS)
    low, high = catalog.names(meta, "scalar")[:2]
    by_name = {p["name"]: p for p in meta["params"]}
    by_name[low]["constraints"] = [{"op": "<", "value": 0, "status": 161002, "since": None, "until": None}]
    by_name[high]["constraints"] = [
        {"op": ">", "value": 0, "status": 161002, "since": None, "until": None},
        {"op": "<=", "value": 10, "status": 161002, "since": None, "until": "8.5.0"},
        {"op": "!=", "value": 5, "status": 161002, "since": None, "until": None},
    ]
    family = supported_families(meta, "8.0.0")[0]  # read once the META is complete: op_meta caches it
    values = make_values(meta, "contiguous", "float32", version="8.0.0")
    validate(meta, values, family=family, version="8.0.0")
    for param, bad, status in scalar_violations(meta, "8.0.0"):
        trial = dict(values, **{param: bad})
        assert rejected(meta, trial, family=family, version="8.0.0").param == param
    assert (high, 10.625, 161002) in scalar_violations(meta, "8.0.0")
    assert all(bad != 10.625 for _, bad, _ in scalar_violations(meta, "8.5.0"))
    validate(meta, {**values, high: 11.0}, family=family, version="8.5.0")
    assert rejected(meta, {**values, high: 5}, family=family, version="8.5.0").check == "scalar_range"
    assert rejected(meta, {**values, low: 0.0}, family=family, version="8.5.0").param == low


# --- caching ------------------------------------------------------------------------------------


def test_the_plan_is_built_once_per_meta_family_and_version():
    meta = catalog.meta(catalog.WITH_MAX_RANK)
    version = meta["cann_version"]
    family, other = supported_families(meta, version)[:2]
    validation.clear_cache()
    first = validation._PLANS.get(meta, family, version)
    assert validation._PLANS.get(meta, family, version) is first
    assert validation._PLANS.get(meta, other, version) is not first
    values = make_values(meta, "contiguous", "float32", version=version)
    validate(meta, values, family=family, version=version)
    assert validation._PLANS.get(meta, family, version) is first
    # a copy under the same name is a different META: its own plan, its own rules
    changed = copy.deepcopy(meta)
    rank = max(len(values[t].shape) for t in catalog.names(meta, "input"))
    for rule in changed["rules"]:
        if rule["kind"] == "max_rank":
            rule["rank"] = rank - 1
    assert validation._PLANS.get(changed, family, version) is not first
    assert rejected(changed, values, family=family, version=version).check == "max_rank"
    validate(meta, values, family=family, version=version)


def test_a_malformed_version_is_a_value_error():
    with pytest.raises(ValueError, match="8.5"):
        validate(catalog.meta(catalog.PLAIN), {}, family="a2", version="8.5")


# --- nothing but AclnnValidationError, whatever the values --------------------------------------

_JUNK = [
    None,
    [1, 2],
    "x",
    3,
    2.5,
    object(),
    SimpleNamespace(shape=(2,)),
    SimpleNamespace(shape="ab", dtype=F32),
    SimpleNamespace(shape=(2, 3), dtype=None),
    SimpleNamespace(shape=(2, 3), dtype=F32, strides=None),
]


@st.composite
def tensors(draw):
    shape = tuple(draw(st.lists(st.integers(0, 3), max_size=10)))
    dtype = draw(st.sampled_from(ALL_DTYPES + ("float8_e4m3b11fnuz", ">f4", "U3", "O")))
    dt = NUMPY_DTYPES.get(dtype) or np.dtype(getattr(ml_dtypes, dtype, dtype))
    array = np.zeros(shape, dtype=dt)
    if draw(st.booleans()) and array.ndim and array.shape[-1] > 1:
        array = array[..., ::2]
    return array


scalars = st.one_of(
    st.none(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**40), 10**40),
    st.booleans(),
    st.text(max_size=3),
    st.complex_numbers(max_magnitude=10),
    st.sampled_from([np.float16(-1.0), np.int8(3)]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_validate_raises_nothing_but_validation_errors(data):
    op = data.draw(st.sampled_from(sorted(METAS)))
    meta = METAS[op]
    version = data.draw(st.sampled_from(["8.0.RC1", "8.0.0", "8.5.0", "9.0.RC1.alpha001"]))
    family = data.draw(st.sampled_from(["training", "inference", "a2", "a3", "ascend950", "atlas_200i_500_a2", "x"]))
    dtype = data.draw(st.sampled_from(ALL_DTYPES))
    values = make_values(meta, "contiguous", dtype, version="8.5.0")
    for p in meta["params"]:
        if not data.draw(st.booleans()):
            continue  # keep the valid value, so later checks are reached too
        if p["role"] in ("input", "output"):
            values[p["name"]] = data.draw(st.one_of(tensors(), st.sampled_from(_JUNK)))
        else:
            values[p["name"]] = data.draw(scalars)
    inferred = infer_outputs(meta, values, version)  # never raises unless strict
    assert set(inferred) <= set(meta["outputs"])
    try:
        validate(meta, values, family=family, version=version)
    except AclnnValidationError as err:
        assert err.status in (161001, 161002)
        assert str(err) and err.op == op
        if err.param is not None:
            assert err.param in str(err)
