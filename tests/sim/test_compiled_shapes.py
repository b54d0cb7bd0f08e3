"""Compiled kernels of the two loop shapes beyond elementwise (codegen/formula_c.py): per-channel
operands and sums (one element per channel of dim 1, or one) and sums along a dim kept as size 1.
Every op of the catalog with a per_channel rule or a dim attribute, over ranks, dims, one-element
weights and empty tensors, against the NumPy reference; split across threads or not, the same bits."""

from __future__ import annotations

import importlib

import catalog
import ml_dtypes
import numpy as np
import pytest

from aclnngen.core.meta import op_meta
from aclnngen.core.rules import supported_dtypes, supported_families
from aclnngen.generated import OPS
from aclnngen.runtime import session
from aclnngen.runtime.sim import compiled
from aclnngen.verify import cases, opcheck

CHANNEL_OPS = [s for s in catalog.representatives() if catalog.has_rule("per_channel")(catalog.meta(s))]
DIM_OPS = [s for s in catalog.representatives() if any(p.get("dim_of") for p in catalog.meta(s)["params"])]
DTYPES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64}


def _with_dtypes(snakes: list[str]) -> list[tuple[str, str]]:
    """(op, dtype) for every float dtype the op's first input takes on its first family."""
    pairs = []
    for snake in snakes:
        m = catalog.meta(snake)
        version = op_meta(m).cann_version
        first = catalog.names(m, "input")[0]
        taken = supported_dtypes(m, first, supported_families(m, version)[0], version)
        pairs += [(snake, d) for d in DTYPES if d in taken]
    return pairs


def _op(snake: str) -> opcheck.OpUnderTest:
    meta = catalog.meta(snake)
    reference = importlib.import_module(f"aclnngen.generated.reference.{snake}")
    return opcheck.OpUnderTest(
        meta, reference=reference, binding=catalog.binding(snake), version=op_meta(meta).cann_version
    )


def _call(op: opcheck.OpUnderTest, values: dict) -> tuple:
    positional, keywords, _ = op.split(values)
    before = compiled.stats()["compiled"]
    result = op.binding(*positional, **keywords)
    assert compiled.stats()["compiled"] == before + 1, "the compiled kernel ran"
    return result if isinstance(result, tuple) else (result,)


def _check(op: opcheck.OpUnderTest, values: dict) -> tuple:
    got = _call(op, values)
    want = op.run_reference(values)
    for p, g, w in zip(op.of_roles("output"), got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, p.name
        opcheck.renderings_agree(op, values, p.py, g, w)
    return got


def _values(op: opcheck.OpUnderTest, dtype, shapes: dict, seed: int = 0) -> dict:
    """The made case's scalars and attributes, its tensors replaced by random ones of `shapes`
    (by C name; the others of shapes["*"])."""
    values = dict(cases.make_values(op.meta, "contiguous", "float32", version=op.version))
    rng = np.random.default_rng(seed)
    for p in op.of_roles("input"):
        shape = shapes.get(p.name, shapes["*"])
        values[p.name] = rng.normal(0.0, 2.0, shape).astype(dtype)
    for p in op.of_roles("output"):
        values.pop(p.name, None)
    return values


@pytest.fixture
def forced(monkeypatch):
    """Compiled kernels forced (a launch that cannot run one fails), pieces from a few hundred
    elements so that threads split the units."""
    monkeypatch.setenv(compiled.MODE_ENV, "compiled")
    monkeypatch.setattr(compiled, "MIN_PARALLEL", 256)
    with session.simulated():
        yield


def _channel_rule(op) -> dict:
    return next(r for r in op.meta["rules"] if r["kind"] == "per_channel")


@pytest.mark.parametrize("shape", [(7,), (4, 3), (2, 3, 4, 5), (6, 5, 40), (0, 3, 2), (3, 2, 0)])
@pytest.mark.parametrize("one_weight", [False, True])
@pytest.mark.parametrize("snake, dtype", _with_dtypes(CHANNEL_OPS))
def test_per_channel_kernels_match_the_reference(snake, one_weight, shape, dtype, forced):
    op = _op(snake)
    channels = shape[1] if len(shape) >= 2 else 1
    weight = (1,) if one_weight else (channels,)
    _check(op, _values(op, DTYPES[dtype], {_channel_rule(op)["weight"]: weight, "*": shape}))


@pytest.mark.parametrize("shape", [(), (9,), (3, 4, 5), (2, 1, 70), (4, 0, 3)])
@pytest.mark.parametrize("snake, dtype", _with_dtypes(DIM_OPS))
def test_sums_along_a_dim_match_the_reference_for_every_dim(snake, shape, dtype, forced):
    op = _op(snake)
    dim = next(p["name"] for p in op.meta["params"] if p.get("dim_of"))
    span = max(len(shape), 1)
    for d in range(-span, span):
        _check(op, {**_values(op, DTYPES[dtype], {"*": shape}, seed=d + span), dim: d})


@pytest.mark.parametrize("snake", CHANNEL_OPS + DIM_OPS)
def test_pieces_on_threads_give_the_bits_of_one_piece(snake, forced, monkeypatch):
    """Each unit (a channel, a line) is summed by one piece in memory order: splitting the call
    across threads changes no bit."""
    op = _op(snake)
    shapes = {"*": (8, 6, 50)}
    if snake in CHANNEL_OPS:
        shapes[_channel_rule(op)["weight"]] = (6,)
    values = _values(op, np.float32, shapes)
    split = _call(op, values)
    monkeypatch.setattr(compiled, "MIN_PARALLEL", 1 << 40)
    whole = _call(op, values)
    for a, b in zip(split, whole):
        assert opcheck.same_bits(a, b)


def test_channel_tensors_are_the_per_channel_rules():
    """The call path sends a tensor of another shape to a kernel only when a per_channel rule
    names it (the C rendering reads exactly those per channel)."""
    for snake in CHANNEL_OPS:
        rule = _channel_rule(_op(snake))
        names = compiled._channel_tensors(op_meta(catalog.meta(snake)))
        assert names == {rule["weight"], rule["grad"]} - {None}
    for snake in OPS:
        if not catalog.has_rule("per_channel")(catalog.meta(snake)):
            assert compiled._channel_tensors(op_meta(catalog.meta(snake))) == frozenset()


def test_per_channel_and_dim_ops_are_compiled_not_listed_as_falling_back():
    from aclnngen.runtime.sim.kernels import BUILTIN_PACKAGE

    assert CHANNEL_OPS and DIM_OPS, "the catalog has an op of each loop shape"
    falls = compiled.fallbacks(BUILTIN_PACKAGE, session.backend().libraries["nnopbase"])
    assert [s for s in CHANNEL_OPS + DIM_OPS if catalog.meta(s)["symbol"] in falls] == []


@pytest.mark.parametrize(
    "formula, why",
    [
        ({"out": "g * sum_keepdim(x, (0, 1))"}, "sum_keepdim() over several dims"),
        ({"out": "g * sum_keepdim(x, 0) * sum_keepdim(x, 1)"}, "sums along different dims"),
        ({"out": "g * sum_keepdim(sum_keepdim(x, 0), 0)"}, "sum_keepdim() of a sum"),
        ({"out": "g * per_channel(x, g)"}, "no per_channel rule names its weight"),
        ({"out": "g * per_channel(w, g) * sum_keepdim(x, 0)"}, "per-channel operands and a sum along a dim"),
        ({"out": "g + w"}, "reads the per-channel w element by element"),
        ({"out": "g", "gw": "sum_per_channel(g, w) * 2"}, "sum_per_channel() inside an expression"),
        ({"out": "g", "gw": "g * per_channel(w, g)"}, "output gw is per-channel without being a sum_per_channel()"),
    ],
)
def test_the_c_rendering_names_the_shapes_it_cannot_loop_over(formula, why):
    from aclnngen.codegen import formula_c
    from aclnngen.codegen.formula import parse_program

    names = {"x": "input", "g": "input", "w": "input", "out": "output"}
    names.update({"gw": "output"} if "gw" in formula else {})
    prog = parse_program(formula, names, loc=("formula",))
    params = [
        formula_c.KernelParam("x", "x", "input", ""),
        formula_c.KernelParam("g", "g", "input", ""),
        formula_c.KernelParam("w", "w", "input", "", channel=True),
        formula_c.KernelParam("out", "out", "output", ""),
        formula_c.KernelParam("gw", "gw", "output", "", channel=True),
    ]
    kernel = formula_c.kernel_for("aclnnX", "x", prog, [p for p in params if p.py in names])
    assert kernel.reason is not None and why in kernel.reason, kernel.reason
