"""The NumPy numerics behind rendered formulas: precision model, shapes, dtypes, and the recorded
facts of five ops, their spec formulas read from specs/ops and run against PyTorch on the CPU (the
oracle conventions of torch-oracle.md §2-§4)."""

from __future__ import annotations

import functools
import math
import warnings

import ml_dtypes
import numpy as np
import pytest

from aclnngen.codegen import metadata
from aclnngen.codegen.formula import comparison_boundaries, parse_program, render_program
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products, load_spec
from aclnngen.core import externs
from aclnngen.evaluate import numerics
from aclnngen.evaluate.numerics import Numerics, evaluate

BF16 = np.dtype(ml_dtypes.bfloat16)
FP16, FP32, FP64 = np.dtype(np.float16), np.dtype(np.float32), np.dtype(np.float64)
DTYPES = [FP16, BF16, FP32, FP64]
DTYPE_IDS = [d.name for d in DTYPES]

# The formulas come from the specs themselves (parsed as the generator parses them), so a changed
# spec is tested as it now reads; the tests below compare them against PyTorch, a second source.
RECORDED_FACT_SPEC_OF = {
    "hardtanh": "hardtanh_backward",
    "softshrink": "softshrink_backward",
    "prelu": "prelu_backward",
    "gelu": "gelu_backward",
    "swish": "swish_backward",
}


@functools.cache
def _spec(op):
    return load_spec(DEFAULT_SPECS_DIR / "ops" / f"{RECORDED_FACT_SPEC_OF[op]}.yaml", load_products()).spec


def names_of(op) -> dict[str, str]:
    return {p.py_name: p.role for p in _spec(op).parameters}


def program(op):
    spec = _spec(op)
    return metadata.program(spec, spec.formula)


def compile_body(prog, names):
    """What the generator's template does: wrap the rendered lines in a function."""
    params = [n for n, k in names.items() if k != "output"]
    source = f"def body(m, *, {', '.join(params)}):\n" + "".join(f"    {line}\n" for line in render_program(prog))
    namespace: dict = {}
    exec(compile(source, "<rendered formula>", "exec"), namespace)  # rendered code, not spec text
    return namespace["body"]


def run(op, mode="opmath", **values):
    names = names_of(op)
    by_kind = lambda *kinds: {k: v for k, v in values.items() if names[k] in kinds}  # noqa: E731
    inputs = by_kind("input")
    dtype = np.asarray(values["self"]).dtype
    outputs = {n: dtype for n, k in names.items() if k == "output"}
    return evaluate(
        compile_body(program(op), names),
        inputs=inputs,
        scalars=by_kind("scalar", "optional_scalar"),
        attributes=by_kind("attribute"),
        output_dtypes=outputs,
        mode=mode,
    )


# --- data ------------------------------------------------------------------------------------------

_UINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}


def neighbours(value: float, dtype: np.dtype, steps: int = 3) -> np.ndarray:
    """`value` rounded to `dtype` and its `steps` representable neighbours on each side."""
    if not math.isfinite(value):
        return np.array([value], dtype)
    bits = np.array([value], dtype).view(_UINT[dtype.itemsize]).astype(np.int64)
    around = bits + np.arange(-steps, steps + 1)
    around = around[(around >= 0) & (around < 2 ** (8 * dtype.itemsize))]
    values = around.astype(_UINT[dtype.itemsize]).view(dtype)
    return values[np.isfinite(values.astype(np.float64))]


def adversarial(rng, dtype, thresholds=(), n=3000) -> np.ndarray:
    """Normal values plus boundaries and their neighbours, ±0, ±inf, NaN, huge and tiny values."""
    info = ml_dtypes.finfo(dtype)
    special = [
        0.0,
        -0.0,
        np.inf,
        -np.inf,
        np.nan,
        float(info.max),
        -float(info.max),
        float(info.tiny),
        -float(info.tiny),
        float(info.smallest_subnormal),
    ]
    edges = [neighbours(t, dtype) for t in thresholds] + [neighbours(0.0, dtype)]
    normal = rng.normal(0, 3, n).astype(dtype)
    x = np.concatenate([normal, np.array(special, dtype)] + edges)
    rng.shuffle(x)
    return x


def gradient(rng, n, dtype) -> np.ndarray:
    g = rng.normal(0, 1, n)
    wide = rng.random(n) < 0.05
    g[wide] = rng.uniform(-100, 100, int(wide.sum()))
    return g.astype(dtype)


def thresholds(op, **scalars) -> list[float]:
    """The boundaries the formula compares against, evaluated for these scalar values."""
    return [
        float(eval(text, {"math": math, "__builtins__": {}}, scalars))  # our threshold text
        for _, text in comparison_boundaries(program(op))
    ]


# --- precision model -------------------------------------------------------------------------------


@pytest.mark.parametrize("storage,compute", [(FP16, FP32), (BF16, FP32), (FP32, FP32), (FP64, FP64)])
def test_opmath_computes_in_float32_or_float64(storage, compute):
    m = Numerics("opmath", {"self": storage})
    assert m.dtype == compute
    assert m.lit(0.1).dtype == compute and m.pi.dtype == compute
    assert Numerics("golden", {"self": storage}).dtype == FP64


def test_mixed_storage_computes_in_the_widest():
    assert Numerics("opmath", {"a": FP16, "b": FP64}).dtype == FP64
    assert Numerics("opmath", {"a": FP16, "b": BF16}).dtype == FP32


def test_literals_do_not_promote_float32_work():
    m = Numerics("opmath", {"self": FP32})
    x = np.ones(3, FP32)
    assert (x * m.lit(0.1)).dtype == FP32
    assert m.sqrt(2).dtype == FP32 and m.exp(m.lit(2) * m.pi).dtype == FP32
    assert m.where(x > m.lit(0), x, m.lit(0)).dtype == FP32


def test_fp16_is_computed_in_float32_and_rounded_once():
    body = lambda m, *, a, b: ((a + b) - a,)  # noqa: E731
    a, b = np.array([1.0], FP16), np.array([2**-11 + 2**-20], FP16)
    (out,) = evaluate(body, inputs={"a": a, "b": b}, scalars={}, attributes={}, output_dtypes={"out": FP16})
    assert out.dtype == FP16 and out[0] == b[0]  # per-op fp16 arithmetic would give 2**-10


@pytest.mark.parametrize("dtype,step", [(FP16, 2**-10), (BF16, 2**-7)])
def test_output_rounding_is_round_to_nearest_even(dtype, step):
    body = lambda m, *, a, b: (a + b,)  # noqa: E731
    a = np.array([1.0, 1.0], dtype)
    b = np.array([step / 2, 3 * step / 2], dtype)  # exact ties in float32
    (out,) = evaluate(body, inputs={"a": a, "b": b}, scalars={}, attributes={}, output_dtypes={"out": dtype})
    assert out.dtype == dtype
    assert out.astype(np.float64).tolist() == [1.0, 1.0 + 2 * step]


def test_golden_returns_float64_and_computes_in_float64():
    x = np.array([0.1, 3.0], FP16)
    (out,) = evaluate(
        lambda m, *, x: (x * m.lit(0.1),),
        inputs={"x": x},
        scalars={},
        attributes={},
        output_dtypes={"y": FP16},
        mode="golden",
    )
    assert out.dtype == FP64
    np.testing.assert_array_equal(out, x.astype(FP64) * 0.1)


def test_scalars_are_cast_to_the_compute_dtype():
    seen = {}

    def body(m, *, x, alpha):
        seen["alpha"] = alpha
        return (x * alpha,)

    evaluate(body, inputs={"x": np.ones(2, FP16)}, scalars={"alpha": 0.1}, attributes={}, output_dtypes={"y": FP16})
    assert type(seen["alpha"]) is np.float32 and seen["alpha"] == np.float32(0.1)


@pytest.mark.parametrize("bad", [np.longdouble, np.dtype("datetime64[s]"), np.dtype(">f4"), np.object_, np.str_])
def test_dtypes_no_spec_can_name_are_rejected(bad):
    body = lambda m, *, x: (x,)  # noqa: E731
    name = str(np.dtype(bad))
    with pytest.raises(TypeError, match="not supported"):
        evaluate(body, inputs={"x": np.zeros(2, bad)}, scalars={}, attributes={}, output_dtypes={"y": FP32})
    with pytest.raises(TypeError, match=name.replace("[", r"\[").replace("]", r"\]")):
        evaluate(body, inputs={"x": np.zeros(2, FP32)}, scalars={}, attributes={}, output_dtypes={"y": bad})


# --- dtype categories: integer, bool and complex tensors ----------------------------------------


@pytest.mark.parametrize("dtype", [np.int8, np.int16, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("mode", numerics.MODES)
def test_integer_formulas_compute_exactly(dtype, mode):
    """Integer-only ops compute in int64 in both modes: no float detour rounds a large product."""
    info = np.iinfo(dtype)
    x = np.array([info.min, info.min + 1, -1 if info.min < 0 else 0, 0, 1, info.max - 1, info.max], dtype=dtype)
    g = np.array([3, -2, 7, 5, -9, 4, 1], dtype=dtype) if info.min < 0 else np.arange(7, dtype=dtype)
    names = {"grad_output": "input", "self": "input", "threshold": "scalar", "grad_input": "output"}
    prog = parse_program({"grad_input": "where(self > threshold, grad_output * self, 0)"}, names, loc=("formula",))
    body = compile_body(prog, names)
    (got,) = evaluate(
        body,
        inputs={"grad_output": g, "self": x},
        scalars={"threshold": 0},
        attributes={},
        output_dtypes={"grad_input": dtype},
        mode=mode,
    )
    exact = np.where(x.astype(object) > 0, g.astype(object) * x.astype(object), 0)
    want = np.array([(int(v) + 2**63) % 2**64 - 2**63 for v in exact], dtype=np.int64)  # two's complement
    if mode == "opmath":
        assert got.dtype == np.dtype(dtype)
        want = want.astype(dtype)  # wraps like the device's integer multiply
    else:
        assert got.dtype == np.int64
    np.testing.assert_array_equal(got, want)


def test_large_int64_values_are_not_rounded_through_float():
    big = np.array([2**62 + 1, -(2**62) - 3], dtype=np.int64)
    (got,) = evaluate(
        lambda m, *, x: (x + m.lit(1),), inputs={"x": big}, scalars={}, attributes={}, output_dtypes={"y": np.int64}
    )
    assert got.tolist() == [2**62 + 2, -(2**62) - 2]


def test_bool_tensors_compute_as_integers_and_store_as_bool():
    x = np.array([True, False, True])
    (got,) = evaluate(
        lambda m, *, x: (x * m.lit(2),), inputs={"x": x}, scalars={}, attributes={}, output_dtypes={"y": np.bool_}
    )
    assert got.dtype == np.bool_ and got.tolist() == [True, False, True]


def test_float_among_integers_decides_the_compute_dtype():
    """An integer input with a float gradient (a mixed-category op) computes in float32."""
    seen = {}

    def body(m, *, g, x):
        seen["dtype"] = (g * x).dtype
        return (g * x,)

    (got,) = evaluate(
        body,
        inputs={"g": np.ones(3, FP16), "x": np.array([1, 2, 3], np.int32)},
        scalars={},
        attributes={},
        output_dtypes={"y": FP16},
    )
    assert seen["dtype"] == FP32 and got.dtype == FP16 and got.tolist() == [1, 2, 3]


@pytest.mark.parametrize("dtype, opmath", [(np.complex64, np.complex64), (np.complex128, np.complex128)])
def test_complex_tensors_compute_in_complex(dtype, opmath):
    x = (np.array([1 + 2j, -0.5 - 1j, 3j])).astype(dtype)
    seen = {}

    def body(m, *, x, s):
        seen["dtype"] = (x * s).dtype
        return (x * s,)

    (got,) = evaluate(body, inputs={"x": x}, scalars={"s": 2.0}, attributes={}, output_dtypes={"y": dtype})
    assert seen["dtype"] == np.dtype(opmath) and got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, (x.astype(np.complex128) * 2).astype(dtype))
    (golden,) = evaluate(
        body, inputs={"x": x}, scalars={"s": 2.0}, attributes={}, output_dtypes={"y": dtype}, mode="golden"
    )
    assert golden.dtype == np.complex128


def test_complex_scalar_into_a_real_formula_is_an_error():
    with pytest.raises(TypeError, match="complex"):
        evaluate(
            lambda m, *, x, s: (x * s,),
            inputs={"x": np.ones(2, FP32)},
            scalars={"s": 1 + 1j},
            attributes={},
            output_dtypes={"y": FP32},
        )


@pytest.mark.parametrize(
    "bound, kept", [(float("nan"), [0, 0, 0]), (float("inf"), [0, 0, 0]), (float("-inf"), [1, 2, 3])]
)
def test_a_non_finite_scalar_compares_with_integers_as_a_float(bound, kept):
    """No integer holds NaN or inf: such a scalar stays a float, so a comparison keeps its meaning."""
    body = lambda m, *, x, s: (m.where(x > s, x, m.lit(0)),)  # noqa: E731
    (got,) = evaluate(
        body,
        inputs={"x": np.array([1, 2, 3], np.int32)},
        scalars={"s": bound},
        attributes={},
        output_dtypes={"y": np.int32},
    )
    assert got.dtype == np.int32 and got.tolist() == kept


def test_missing_optional_scalar_and_bad_mode_are_errors():
    body = lambda m, *, x, beta: (x * beta,)  # noqa: E731
    with pytest.raises(TypeError, match="beta"):
        evaluate(body, inputs={"x": np.ones(2, FP32)}, scalars={"beta": None}, attributes={}, output_dtypes={"y": FP32})
    with pytest.raises(ValueError, match="mode"):
        evaluate(
            body,
            inputs={"x": np.ones(2, FP32)},
            scalars={"beta": 1.0},
            attributes={},
            output_dtypes={"y": FP32},
            mode="fast",
        )


def test_output_count_must_match():
    with pytest.raises(ValueError, match="2 output"):
        evaluate(
            lambda m, *, x: (x,),
            inputs={"x": np.ones(2, FP32)},
            scalars={},
            attributes={},
            output_dtypes={"a": FP32, "b": FP32},
        )


@pytest.mark.parametrize(
    "shape_g,shape_x,expected",
    [((), (), ()), ((0, 3), (0, 3), (0, 3)), ((4, 1), (1, 5), (4, 5)), ((3,), (2, 3), (2, 3))],
)
def test_outputs_keep_their_natural_broadcast_shape(shape_g, shape_x, expected):
    g, x = np.ones(shape_g, FP16), np.full(shape_x, 0.5, FP16)
    (out,) = run("hardtanh", grad_output=g, self=x, min=-1.0, max=1.0)
    assert isinstance(out, np.ndarray) and out.shape == expected and out.dtype == FP16
    assert np.all(out == 1)


def test_floating_point_warnings_are_suppressed():
    body = lambda m, *, x: (m.log(x) + m.lit(1) / x + m.exp(x * m.lit(1e30)),)  # noqa: E731
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (out,) = evaluate(
            body,
            inputs={"x": np.array([0.0, -1.0, 70000.0], FP32)},
            scalars={},
            attributes={},
            output_dtypes={"y": FP16},
        )
    assert np.isnan(out[1]) and np.isinf(out[2])


def test_sigmoid_is_stable_and_accurate():
    from scipy.special import expit

    m = Numerics("opmath", {"x": FP32})
    x = np.array([-1e4, -100.0, -20.0, -1.0, 0.0, 1.0, 20.0, 100.0, 1e4, np.inf, -np.inf], FP32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s = m.sigmoid(x)
    assert s.dtype == FP32
    np.testing.assert_allclose(s, expit(x.astype(FP64)), rtol=2e-7, atol=1e-44)  # 1e-44: subnormals
    assert s[1] > 0  # the naive 1/(1+exp(100)) gives 0: exp(100) overflows float32
    assert np.isnan(m.sigmoid(np.float32(np.nan)))


def test_round_to_uses_the_storage_dtype_in_both_modes():
    for mode in ("opmath", "golden"):
        m = Numerics(mode, {"self": FP16})
        assert m.round_to(0.1, "self") == float(np.float16(0.1))
        assert m.round_to(0.1, "self").dtype == m.dtype
    with pytest.raises(ValueError, match="weight"):
        Numerics("opmath", {"self": FP16}).round_to(0.1, "weight")


def test_per_channel_broadcasts_along_dim_1():
    m = Numerics("opmath", {"w": FP32})
    w = np.arange(3, dtype=FP32)
    assert m.per_channel(w, np.zeros((2, 3, 4, 5))).shape == (1, 3, 1, 1)
    assert m.per_channel(w, np.zeros((2, 3))).shape == (1, 3)
    assert m.per_channel(np.array([2.0], FP32), np.zeros(())).shape == ()  # numel 1: a scalar
    assert m.per_channel(np.array([2.0], FP32), np.zeros((7,))).shape == ()
    for x in (np.zeros((7,)), np.zeros(()), np.zeros((2, 4, 5))):
        with pytest.raises(ValueError, match="3 channels"):
            m.per_channel(w, x)
    # A weight of self's rank with its C along dim 1 (or any single element) is the same weight.
    assert m.per_channel(np.ones((1, 3), FP32), np.zeros((2, 3))).shape == (1, 3)
    assert m.per_channel(np.ones((1, 1, 1), FP32), np.zeros((2, 3))).shape == ()
    # Any shape with C elements: its elements are the channels in row-major order (as the vendor
    # flattens the weight); the element count alone decides.
    square = np.arange(4, dtype=FP32).reshape(2, 2)
    np.testing.assert_array_equal(m.per_channel(square, np.zeros((2, 4))), square.reshape(1, 4))
    with pytest.raises(ValueError, match="6 channels"):
        m.per_channel(np.zeros((2, 3), FP32), np.zeros((2, 3)))


def test_sum_per_channel_and_sum():
    m = Numerics("opmath", {"w": FP32})
    e = np.arange(2 * 3 * 4, dtype=FP32).reshape(2, 3, 4)
    np.testing.assert_array_equal(m.sum_per_channel(e, np.zeros(3, FP32)), e.sum(axis=(0, 2)))
    assert m.sum_per_channel(e, np.zeros(1, FP32)).shape == (1,)
    assert m.sum_per_channel(e, np.zeros((), FP32)).shape == ()
    assert m.sum_per_channel(e, np.zeros(1, FP32))[0] == e.sum()
    np.testing.assert_array_equal(m.sum_per_channel(np.zeros((0, 3, 2), FP32), np.zeros(3, FP32)), np.zeros(3))
    with pytest.raises(ValueError, match="3 channels"):
        m.sum_per_channel(np.zeros((2, 4)), np.zeros(3))
    np.testing.assert_array_equal(m.sum(e, (0, 2)), e.sum(axis=(0, 2)))
    np.testing.assert_array_equal(m.sum(e, (-1,)), e.sum(axis=-1))
    assert m.sum(e, (0, 2)).dtype == FP32


def test_sum_over_attribute_dims_through_a_formula():
    names = {"x": "input", "dims": "attribute", "y": "output"}
    prog = parse_program({"y": "sum(x * 2, dims)"}, names, loc=("f",))
    (out,) = evaluate(
        compile_body(prog, names),
        inputs={"x": np.ones((2, 3, 4), FP16)},
        scalars={},
        attributes={"dims": (0, 2)},
        output_dtypes={"y": FP16},
    )
    assert out.dtype == FP16 and out.tolist() == [16.0, 16.0, 16.0]


def test_extern_kernel_is_called_with_the_numerics(monkeypatch):
    calls = []

    def clamp_grad(m, g, x):
        calls.append(m.dtype)
        return np.where(np.abs(x) < m.lit(1), g, m.lit(0))

    monkeypatch.setitem(externs.EXTERN_KERNELS, "clamp_grad", clamp_grad)
    names = {"g": "input", "x": "input", "y": "output"}
    prog = parse_program({"y": 'extern("clamp_grad", g, x) * 2'}, names, loc=("f",))
    (out,) = evaluate(
        compile_body(prog, names),
        inputs={"g": np.ones(3, BF16), "x": np.array([0.0, 2.0, -0.5], BF16)},
        scalars={},
        attributes={},
        output_dtypes={"y": BF16},
    )
    assert calls == [FP32] and out.dtype == BF16 and out.astype(FP32).tolist() == [2.0, 0.0, 2.0]
    with pytest.raises(ValueError, match="nope"):
        Numerics().extern("nope")


def test_register_extern_refuses_duplicates(monkeypatch):
    monkeypatch.setattr(externs, "EXTERN_KERNELS", {})
    externs.register_extern("k")(lambda m, x: x)
    with pytest.raises(ValueError, match="already registered"):
        externs.register_extern("k")(lambda m, x: x)


# --- conventions that fall out of the natural formulas ---------------------------------------------


@pytest.mark.parametrize("dtype", [FP16, BF16, FP32], ids=["float16", "bfloat16", "float32"])
def test_recorded_fact_hardtanh_compares_against_float32_scalars_and_zeroes_boundaries(dtype):
    lo, hi = -0.3, 0.7
    x = np.concatenate([neighbours(lo, dtype), neighbours(hi, dtype), np.array([np.nan, 0.0], dtype)])
    (out,) = run("hardtanh", grad_output=np.ones_like(x), self=x, min=lo, max=hi)
    x32 = x.astype(FP32)
    expected = np.where((x32 > np.float32(lo)) & (x32 < np.float32(hi)), 1.0, 0.0)
    np.testing.assert_array_equal(out.astype(FP64), expected)
    assert out[-2] == 0 and out[-1] == 1  # NaN self gives 0
    assert 0 < expected[:-2].sum() < expected.size - 2  # the neighbours straddle the boundaries


def test_recorded_fact_softshrink_rounds_lambda_to_the_tensor_dtype():
    x = np.array([0.5 + 2**-11, -(0.5 + 2**-11), 0.5, -0.5], FP16)
    lambd = 0.5 + 2**-11 - 2**-13  # rounds to 0.5 + 2**-11 in fp16
    (out,) = run("softshrink", grad_output=np.ones_like(x), self=x, lambd=lambd)
    assert out.tolist() == [0.0, 0.0, 0.0, 0.0]  # |x| <= fp16(lambda) everywhere
    (out,) = run("softshrink", grad_output=np.ones_like(x), self=x, lambd=0.5)
    assert out.tolist() == [1.0, 1.0, 0.0, 0.0]


def test_recorded_fact_prelu_sends_zero_and_negative_zero_to_the_negative_branch():
    x = np.array([[0.0, -0.0, 1.0, -2.0]], FP32).reshape(1, 1, 4)
    g = np.full_like(x, 3.0)
    gi, gw = run("prelu", grad_output=g, self=x, weight=np.array([0.25], FP32))
    assert gi.ravel().tolist() == [0.75, 0.75, 3.0, 0.75]
    assert gw.shape == (1,) and gw[0] == -6.0


# --- against PyTorch -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def to_torch(torch, a):
    a = np.array(a, order="C")  # a copy; keeps 0-d arrays 0-d (ascontiguousarray would not)
    if a.dtype == BF16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(a)


def from_torch(torch, t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(BF16)
    return t.numpy()


def assert_bit_exact(ours, theirs, dtype, mask=None):
    """Equal values (±0 equal, NaN equal) in the storage dtype."""
    assert ours.dtype == dtype and theirs.dtype == dtype
    assert ours.shape == theirs.shape
    a, b = ours.astype(FP64), theirs.astype(FP64)
    if mask is not None:
        a, b = a[mask], b[mask]
    np.testing.assert_array_equal(a, b)


RTOL = {FP16: 1e-3, BF16: 1.6e-2, FP32: 1.3e-6, FP64: 1e-7}


def assert_transcendental_close(ours, theirs, grad, dtype):
    """torch-oracle.md §4: default rtol, atol scaled by max|dy|."""
    assert ours.dtype == dtype and ours.shape == theirs.shape
    scale = max(1.0, float(np.max(np.abs(grad.astype(FP64)), initial=0)))
    atol = (1e-7 if dtype == FP64 else 1e-5) * scale
    np.testing.assert_allclose(ours.astype(FP64), theirs.astype(FP64), rtol=RTOL[dtype], atol=atol, equal_nan=True)


@pytest.mark.needs_torch
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("lo,hi", [(-1.0, 1.0), (-0.3, 0.7), (0.1 - 1e-12, 2.5), (0.5, -0.5)])
def test_recorded_fact_hardtanh_matches_torch_bit_exactly(torch, dtype, lo, hi):
    rng = np.random.default_rng(1)
    x = adversarial(rng, dtype, thresholds("hardtanh", min=lo, max=hi))
    g = gradient(rng, x.size, dtype)
    (ours,) = run("hardtanh", grad_output=g, self=x, min=lo, max=hi)
    theirs = from_torch(torch, torch.ops.aten.hardtanh_backward(to_torch(torch, g), to_torch(torch, x), lo, hi))
    nan_x = np.isnan(x.astype(FP64))
    assert_bit_exact(ours, theirs, dtype, mask=~nan_x)  # torch's NaN result depends on position
    assert np.all(ours[nan_x].astype(FP64) == 0)


@pytest.mark.needs_torch
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_recorded_fact_hardtanh_broadcast_and_special_shapes_match_torch(torch, dtype):
    rng = np.random.default_rng(2)
    for shape_g, shape_x in [((4, 1), (1, 5)), ((), ()), ((0, 2), (0, 2)), ((3,), (2, 3))]:
        g = rng.normal(size=shape_g).astype(dtype)
        x = rng.normal(size=shape_x).astype(dtype)
        (ours,) = run("hardtanh", grad_output=g, self=x, min=-0.5, max=0.5)
        theirs = from_torch(torch, torch.ops.aten.hardtanh_backward(to_torch(torch, g), to_torch(torch, x), -0.5, 0.5))
        assert_bit_exact(ours, theirs, dtype)


@pytest.mark.needs_torch
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("lambd", [0.5, 0.3, 0.5 + 2**-12 + 2**-30, 0.5 + 2**-9 + 2**-30, 0.0])
def test_recorded_fact_softshrink_matches_torch_bit_exactly(torch, dtype, lambd):
    rng = np.random.default_rng(3)
    x = adversarial(rng, dtype, thresholds("softshrink", lambd=lambd))
    g = gradient(rng, x.size, dtype)
    (ours,) = run("softshrink", grad_output=g, self=x, lambd=lambd)
    theirs = from_torch(torch, torch.ops.aten.softshrink_backward(to_torch(torch, g), to_torch(torch, x), lambd))
    nan_x = np.isnan(x.astype(FP64))
    assert_bit_exact(ours, theirs, dtype, mask=~nan_x)
    assert np.all(ours[nan_x].astype(FP64) == 0)


PRELU_SHAPES = [((4, 3, 5, 6), 3), ((4, 3, 5, 6), 1), ((8, 5), 5), ((7,), 1), ((), 1), ((0, 3, 2), 3)]


def prelu_torch(torch, g, x, w):
    c = w.size
    wb = w.reshape((1, c) + (1,) * (x.ndim - 2)) if x.ndim >= 2 else w.reshape(())
    gi, gw_elements = torch.ops.aten._prelu_kernel_backward(to_torch(torch, g), to_torch(torch, x), to_torch(torch, wb))
    return from_torch(torch, gi).reshape(np.broadcast_shapes(g.shape, x.shape)), from_torch(torch, gw_elements)


@pytest.mark.needs_torch
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("shape,channels", PRELU_SHAPES)
def test_recorded_fact_prelu_matches_torch(torch, dtype, shape, channels):
    rng = np.random.default_rng(4)
    x = rng.normal(0, 3, shape).astype(dtype)
    if x.size:
        flat = x.reshape(-1)
        flat[:6] = np.array([0.0, -0.0, np.inf, -np.inf, 1e-3, -1e-3], dtype)[: flat.size]
        rng.shuffle(flat)
    g = rng.normal(0, 1, shape).astype(dtype)
    w = rng.uniform(-1, 1, channels).astype(dtype)
    gi, gw = run("prelu", grad_output=g, self=x, weight=w)
    torch_gi, torch_products = prelu_torch(torch, g, x, w)
    assert_bit_exact(gi, torch_gi, dtype)

    assert gw.dtype == dtype and gw.shape == w.shape
    # gradWeight is a reduction: compare with the fp64 sum of torch's own products (§4)
    products = torch_products.astype(FP64)
    assert products.shape == x.shape
    axes = tuple(d for d in range(products.ndim) if d != 1) if channels > 1 else None
    exact = np.asarray(products.sum(axis=axes)).reshape(w.shape)
    magnitude = np.asarray(np.abs(products).sum(axis=axes)).reshape(w.shape)
    n = max(2, products.size // channels)
    unit = {FP16: 2**-11, BF16: 2**-8, FP32: 2**-24 * math.log2(n), FP64: 2**-53 * math.log2(n)}[dtype]
    rtol = {FP16: 1e-2, BF16: 1.6e-2, FP32: 1e-5, FP64: 1e-12}[dtype]
    ours, finite = gw.astype(FP64), np.isfinite(exact)
    np.testing.assert_array_equal(ours[~finite], exact[~finite])  # -inf inputs give -inf sums
    atol = unit * np.where(finite, magnitude, 0)
    assert np.all(np.abs(ours[finite] - exact[finite]) <= atol[finite] + rtol * np.abs(exact[finite])), (ours, exact)


@pytest.mark.needs_torch
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_recorded_fact_gelu_matches_torch_within_tolerance(torch, dtype):
    rng = np.random.default_rng(5)
    x = np.concatenate(
        [
            rng.normal(0, 3, 20000),
            rng.uniform(-10, 10, 4000),
            -0.7518 + rng.normal(0, 1e-3, 200),
            [0.0, -0.0, 1e30, -1e30, np.inf, -np.inf, np.nan],
        ]
    )
    with np.errstate(over="ignore"):  # 1e30 becomes inf in float16
        x = x.astype(dtype)
    g = rng.normal(0, 1, x.size).astype(dtype)
    (ours,) = run("gelu", grad_output=g, self=x)
    with torch.backends.mkldnn.flags(enabled=False):
        theirs = from_torch(
            torch, torch.ops.aten.gelu_backward(to_torch(torch, g), to_torch(torch, x), approximate="none")
        )
    assert_transcendental_close(ours, theirs, g, dtype)


@pytest.mark.needs_torch
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_recorded_fact_swish_with_beta_1_matches_silu_backward(torch, dtype):
    rng = np.random.default_rng(6)
    x = np.concatenate(
        [rng.normal(0, 3, 20000), rng.uniform(-1e4, 1e4, 500), -1.2785 + rng.normal(0, 1e-3, 200), [0.0, -0.0]]
    ).astype(dtype)
    g = rng.normal(0, 1, x.size).astype(dtype)
    (ours,) = run("swish", grad_output=g, self=x, beta=1.0)
    theirs = from_torch(torch, torch.ops.aten.silu_backward(to_torch(torch, g), to_torch(torch, x)))
    assert_transcendental_close(ours, theirs, g, dtype)


@pytest.mark.needs_torch
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("beta", [1.702, -1.0, 0.5])
def test_recorded_fact_swish_with_beta_matches_float32_autograd(torch, dtype, beta):
    rng = np.random.default_rng(7)
    x = rng.normal(0, 3, 20000).astype(dtype)
    g = rng.normal(0, 1, x.size).astype(dtype)
    (ours,) = run("swish", grad_output=g, self=x, beta=beta)
    compute = torch.float64 if dtype == FP64 else torch.float32
    v = to_torch(torch, x).to(compute).requires_grad_()
    (grad,) = torch.autograd.grad(v * torch.sigmoid(beta * v), v, to_torch(torch, g).to(compute))
    theirs = from_torch(torch, grad.to(to_torch(torch, x).dtype))
    assert_transcendental_close(ours, theirs, g, dtype)


@pytest.mark.needs_torch
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_golden_mode_is_float64_and_matches_torch_in_float64(torch, dtype):
    rng = np.random.default_rng(8)
    x, g = rng.normal(0, 3, 5000).astype(dtype), rng.normal(0, 1, 5000).astype(dtype)
    (golden,) = run("gelu", mode="golden", grad_output=g, self=x)
    assert golden.dtype == FP64
    with torch.backends.mkldnn.flags(enabled=False):
        reference = torch.ops.aten.gelu_backward(
            torch.from_numpy(g.astype(FP64)), torch.from_numpy(x.astype(FP64))
        ).numpy()
    np.testing.assert_allclose(golden, reference, rtol=1e-12, atol=1e-14)
    (opmath,) = run("gelu", grad_output=g, self=x)
    assert opmath.dtype == dtype
    gi, gw = run(
        "prelu", mode="golden", grad_output=g.reshape(50, 100), self=x.reshape(50, 100), weight=np.ones(100, dtype)
    )
    assert gi.dtype == FP64 and gw.dtype == FP64 and gw.shape == (100,)
