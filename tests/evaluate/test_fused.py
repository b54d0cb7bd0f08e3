"""A formula traced into a program of ufunc steps (evaluate/fused.py) gives, piece by piece and on
threads, the bits whole-array NumPy gives; it reads inputs of the compute dtype without a copy,
writes its last step into the output, and says when a formula cannot be traced."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from aclnngen.evaluate import chunking, fused, numerics

SPECIAL = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -1e-40, 3.4e38, -1.5, 0.5], np.float32)


def _data(n: int, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal(n) * 3).astype(np.float32)
    x[: SPECIAL.size] = SPECIAL
    return {"g": rng.standard_normal(n).astype(np.float32), "x": x}


def _body(m, g, x, alpha):
    s = m.sigmoid(alpha * x)
    e = m.where(x > m.lit(0), g * s, g * alpha * m.exp(x))
    return (m.where(m.isnan(x), m.lit(0), e) + m.erf(x) * g, m.where(x < m.lit(-1), m.lit(2), g))


def _whole(body, inputs, scalars, dtypes, mode="opmath"):
    return numerics.evaluate(body, inputs=inputs, scalars=scalars, attributes={}, output_dtypes=dtypes, mode=mode)


@pytest.mark.parametrize("chunk, threads", [(7, 1), (7, 2), (64, 2), (1 << 16, 1)])
@pytest.mark.parametrize("mode", ["opmath", "golden"])
def test_a_program_in_pieces_gives_the_bits_of_whole_arrays(chunk, threads, mode):
    inputs = _data(1000)
    dtypes = {"y": np.float16, "z": np.float32}
    plan = chunking.fused_plan(_body, {n: a.dtype for n, a in inputs.items()}, {"alpha": 0.7}, {}, dtypes, mode)
    assert plan is not None
    outputs = [np.empty(1000, d) for d in plan.dtypes]
    with ThreadPoolExecutor(1) as pool:
        fused.run(plan, inputs, outputs, chunk, threads, pool)
    for got, want in zip(outputs, _whole(_body, inputs, {"alpha": 0.7}, dtypes, mode)):
        assert got.dtype == want.dtype and np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_where_selects_bit_patterns_as_np_where_does():
    a = np.array([np.nan, -0.0, np.inf, 1.0, -np.nan, 0.0], np.float32)
    b = np.array([0.0, 0.0, -np.inf, np.nan, 2.0, -0.0], np.float32)
    cond = np.array([True, True, False, False, True, False])
    zero, minus_zero = np.float32(0.0), np.float32(-0.0)
    sides = [(a, b), (minus_zero, b), (zero, b), (a, zero)]  # the general select, and a side of zero bits

    def body(m, a, b, c):
        picked = {"a": a, "b": b, "0": m.lit(0.0), "-0": m.lit(-0.0)}
        return tuple(
            m.where(c > m.lit(0), picked[x], picked[y]) for x, y in (("a", "b"), ("-0", "b"), ("0", "b"), ("a", "0"))
        )

    inputs = {"a": a, "b": b, "c": cond.astype(np.float32)}
    dtypes = {f"y{k}": a.dtype for k in range(len(sides))}
    plan = chunking.fused_plan(body, {n: v.dtype for n, v in inputs.items()}, {}, {}, dtypes, "opmath")
    outputs = [np.empty_like(a) for _ in sides]
    fused.run(plan, inputs, outputs, 4)
    for got, (x, y) in zip(outputs, sides):
        assert got.view(np.uint32).tolist() == np.where(cond, x, y).view(np.uint32).tolist()


def test_inputs_of_the_compute_dtype_are_read_in_place_and_the_last_step_writes_the_output():
    def body(m, g, x):
        return (g * x + m.lit(1),)

    same = chunking.fused_plan(body, {"g": np.float32, "x": np.float32}, {}, {}, {"y": np.float32}, "opmath")
    assert [s.kind for s in same.steps] == ["input", "input", "ufunc", "ufunc"]  # no cast, no copy
    assert same.finals == {0: 3}  # the add writes into the output itself
    assert same.counts == {np.dtype(np.float32): 1}  # one buffer, reused
    half = chunking.fused_plan(body, {"g": np.float16, "x": np.float16}, {}, {}, {"y": np.float16}, "opmath")
    assert [s.kind for s in half.steps].count("cast") == 3  # each input widened, the result rounded once


def test_repeated_steps_are_computed_once():
    def body(m, x):
        return ((m.lit(1) + m.exp(x)) * (m.lit(1) + m.exp(x)),)

    plan = chunking.fused_plan(body, {"x": np.float32}, {}, {}, {"y": np.float32}, "opmath")
    assert [getattr(s.fn, "__name__", None) for s in plan.steps[1:]] == ["exp", "add", "multiply"]


def test_a_formula_that_is_not_elementwise_or_branches_on_values_is_not_fused():
    dtypes = {"x": np.float32}

    def branches(m, x):
        return (x if m.truth(x > m.lit(0)) else -x,)

    def reduces(m, x):
        return (x - m.sum_keepdim(x, 0),)

    for body in (branches, reduces):
        assert chunking.fused_plan(body, dtypes, {}, {}, {"y": np.float32}, "opmath") is None
    with pytest.raises(fused.NotFusable, match="Python branch"):
        fused.trace(lambda x: (x if x > 0 else -x,), dtypes)


@pytest.mark.parametrize("fusable", [True, False])
def test_an_elementwise_formula_runs_in_pieces_fused_or_not(fusable, monkeypatch):
    inputs = _data(50)
    monkeypatch.setattr(chunking, "CHUNK", 7)
    monkeypatch.setattr(chunking, "THREADED_CHUNK", 7)
    if not fusable:  # the piece-by-piece numerics.evaluate a formula the tracer refuses gets
        monkeypatch.setattr(chunking, "fused_plan", lambda *a, **k: None)
    dtypes = {"y": np.float16, "z": np.float32}
    got = chunking.evaluate_in_chunks(_body, inputs, {"alpha": 0.5}, {}, dtypes, "opmath")
    for a, b in zip(got, _whole(_body, inputs, {"alpha": 0.5}, dtypes)):
        assert a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)


def test_bad_names_are_refused_naming_them():
    with pytest.raises(ValueError, match=r"names given twice.*\['x'\]"):
        chunking.fused_plan(lambda m, x: (x,), {"x": np.float32}, {"x": 1.0}, {}, {"y": np.float32}, "opmath")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64, np.int32])
def test_where_of_whole_arrays_gives_np_where_bits_broadcasting(dtype):
    rng = np.random.default_rng(3)
    a = (rng.standard_normal((40, 3, 50)) * 3).astype(dtype)
    if a.dtype.kind == "f":
        with np.errstate(over="ignore"):  # 3.4e38 is inf in float16
            a.reshape(-1)[: SPECIAL.size] = SPECIAL.astype(dtype)
    b = np.arange(3, dtype=dtype).reshape(1, 3, 1)  # a per-channel side
    cond = rng.standard_normal((40, 1, 50)) > 0
    for x, y in ((a, b), (b, a), (a, dtype(0)), (dtype(0), a), (a, 2.5)):
        got, want = fused.where(cond, x, y), np.where(cond, x, y)
        assert got.dtype == want.dtype and got.shape == want.shape
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_a_thread_keeps_one_set_of_buffers_per_dtype_whatever_the_sizes(monkeypatch):
    from aclnngen.evaluate import fastmath

    monkeypatch.setattr(fused._LOCAL, "buffers", {})
    for size in range(1, 300, 7):  # a kept set per size would grow with every new size
        fastmath.erf_float32(np.linspace(-3, 3, size, dtype=np.float32))
    needed = fastmath._plan(fastmath._P.tobytes() + fastmath._Q.tobytes()).counts
    assert {dtype: len(pool) for dtype, pool in fused._LOCAL.buffers.items()} == needed
    assert all(len(b) == 295 for pool in fused._LOCAL.buffers.values() for b in pool)  # the longest


def test_a_target_over_an_input_is_not_written_while_steps_read_it(monkeypatch):
    def body(m, g, x):  # the first output's last step comes before the second output reads x
        return (g * m.lit(2), x + g)

    inputs = _data(100)
    want = _whole(body, inputs, {}, {"y": np.float32, "z": np.float32})
    monkeypatch.setattr(chunking, "CHUNK", 7)
    monkeypatch.setattr(chunking, "THREADED_CHUNK", 7)
    g = inputs["g"].copy()
    got = chunking.evaluate_in_chunks(
        body, {"g": g, "x": inputs["x"]}, {}, {}, {"y": np.float32, "z": np.float32}, "opmath", targets=[g, None]
    )
    for a, b in zip(got, want):
        assert np.array_equal(a, b, equal_nan=True)
