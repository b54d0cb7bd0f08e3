"""The simulator's compiled kernels (runtime/sim/compiled.py over codegen/formula_c.py): a second
rendering of each formula, checked against the NumPy reference on random and special values; ops
the C path cannot express fall back and are listed; a wrong C rendering makes the simulated
binding test fail, so the two renderings really check each other."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import catalog
import ml_dtypes
import numpy as np
import pytest

from aclnngen.codegen import formula_c
from aclnngen.codegen.generate import render_sim_kernels
from aclnngen.core.meta import op_meta
from aclnngen.core.rules import supported_dtypes, supported_families
from aclnngen.generated import ops as generated_ops
from aclnngen.runtime import session
from aclnngen.runtime.errors import AclnnError
from aclnngen.runtime.sim import compiled
from aclnngen.runtime.sim.kernels import BUILTIN_PACKAGE
from aclnngen.verify import cases, opcheck

from packages import generated_package
from repo_paths import CUSTOM_SPECS, REPO

STORAGES = {"float16": np.float16, "bfloat16": ml_dtypes.bfloat16, "float32": np.float32, "float64": np.float64}
N = 3000  # elements: over the lowered MIN_PARALLEL below, so the pieces run on threads


def _snakes() -> list[str]:
    import pkgutil

    return sorted(m.name for m in pkgutil.iter_modules(generated_ops.__path__))


def _fallbacks() -> dict[str, str]:
    return compiled.fallbacks(BUILTIN_PACKAGE, session.backend().libraries["nnopbase"])


def _data(dtype, seed: int, specials: bool, shape=(N,)) -> np.ndarray:
    """Random values around the formulas' interesting range, then (`specials`) NaN, ±inf, ±0,
    subnormals of the storage dtype and its extremes."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 3.0, int(np.prod(shape)))
    info = ml_dtypes.finfo(dtype)
    special = [-0.0, 0.0, float(info.smallest_subnormal), -float(info.smallest_subnormal), float(info.tiny)]
    if specials:
        special += [np.nan, np.inf, -np.inf, float(info.max), -float(info.max), 20.0, -20.0, 1e-3]
    special = special[: x.size]  # a small tensor (a per-channel weight) takes the first few
    x[: len(special)] = special
    return rng.permutation(x).astype(dtype).reshape(shape)


def _values(op: opcheck.OpUnderTest, storage: str, seed: int) -> dict:
    """Scalars and attributes as the generated tests make them; every input tensor of `storage`,
    the first (the gradient, whose max scales the policy's atol) finite, the others with specials."""
    family = supported_families(op.meta, op.version)[0]
    first = op.of_roles("input")[0].name
    made = cases.make_values(
        op.meta, "contiguous", supported_dtypes(op.meta, first, family, op.version)[0], version=op.version
    )
    values = dict(made)
    # the made case's shape grown along dim 0 to about N elements; a tensor of another shape (a
    # per-channel weight) keeps its own
    full = np.shape(made[first])
    grown = (-(-N // max(int(np.prod(full[1:])), 1)),) + tuple(full[1:]) if full else (N,)
    for i, p in enumerate(op.of_roles("input")):
        shape = grown if np.shape(made[p.name]) == full else np.shape(made[p.name])
        values[p.name] = _data(STORAGES[storage], seed + i, specials=i > 0, shape=shape)
    for p in op.of_roles("output"):
        values.pop(p.name, None)
    return values


@pytest.fixture
def lenient_compiled(monkeypatch):
    """Compiled kernels forced (a launch that cannot run one fails), every dtype let through (the
    lenient profile, validate=False), and pieces on threads from a few hundred elements."""
    monkeypatch.setenv(compiled.MODE_ENV, "compiled")
    monkeypatch.setattr(compiled, "MIN_PARALLEL", 256)
    with session.simulated(profile="lenient"):
        yield


@pytest.mark.parametrize("storage", list(STORAGES))
@pytest.mark.parametrize("snake", [s for s in _snakes() if s in catalog.representatives()])
def test_compiled_kernel_matches_the_reference(snake, storage, lenient_compiled):
    op = catalog.under_test(snake)
    values = _values(op, storage, seed=len(snake))
    positional, keywords, _ = op.split(values)
    symbol = op_meta(op.meta).symbol
    falls = _fallbacks()
    if symbol in falls:  # no kernel: listed with its reason, and a forced compiled launch fails
        assert "compiled path does not render" in falls[symbol]
        with pytest.raises(AclnnError, match="no compiled kernel ran"):
            op.binding(*positional, **keywords, validate=False)
        return
    before = compiled.stats()["compiled"]
    result = op.binding(*positional, **keywords, validate=False)
    assert compiled.stats()["compiled"] == before + 1
    got = result if isinstance(result, tuple) else (result,)
    want = op.run_reference(values)
    for p, g, w in zip(op.of_roles("output"), got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        opcheck.renderings_agree(op, values, p.py, g, w)


def _compiled_selection_op() -> str:
    """A catalog op the compiled path takes whose outputs are selections (exact on both paths)."""
    fallbacks = _fallbacks()
    return catalog.an_op(
        "a compiled op whose outputs are all selections",
        lambda m: m["symbol"] not in fallbacks and set(m["formula"]["outputs"].values()) == {"selection"},
    )


def test_the_compiled_path_leaves_what_it_cannot_take_to_the_reference(monkeypatch):
    """auto: a broadcast, a strided view or mixed dtypes run the reference (same verdict)."""
    monkeypatch.setenv(compiled.MODE_ENV, "auto")
    op = catalog.under_test(_compiled_selection_op())
    go, x_name = (p.name for p in op.of_roles("input")[:2])
    values = dict(cases.make_values(op.meta, "contiguous", "float32", version=op.version))

    def call(grad, x, **options):
        positional, keywords, _ = op.split({**values, go: grad, x_name: x})
        return op.binding(*positional, **keywords, **options)

    def reference(grad, x):
        return op.run_reference({**values, go: grad, x_name: x})[0]

    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(4, 6)
    g = np.arange(24, dtype=np.float32).reshape(4, 6)
    before = compiled.stats()
    assert np.array_equal(call(g, x), reference(g, x))
    middle = compiled.stats()
    assert middle["compiled"] == before["compiled"] + 1
    strided = x[:, ::2]
    got = call(g[:, ::2], strided, validate=False)
    assert np.array_equal(got, reference(g[:, ::2], strided))
    assert compiled.stats()["reference"] >= middle["reference"]
    monkeypatch.setenv(compiled.MODE_ENV, "reference")
    before = compiled.stats()
    call(g, x)
    assert compiled.stats()["compiled"] == before["compiled"]


def test_a_bad_mode_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(compiled.MODE_ENV, "fast")
    with pytest.raises(ValueError, match="ACLNNGEN_SIM_KERNELS='fast' is not one of auto, compiled, reference"):
        compiled.mode()


def test_info_lists_the_ops_that_fall_back_with_why():
    out = subprocess.run(
        [sys.executable, "-m", "aclnngen.codegen.cli", "info", "--json"], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    info = json.loads(out.stdout)
    for symbol, reason in _fallbacks().items():
        assert f"{symbol}: {reason}" in info["reference_kernels"]
        assert symbol not in info["compiled_kernels"]
    assert catalog.meta(_compiled_selection_op())["symbol"] in info["compiled_kernels"]


def test_a_made_up_op_the_c_path_cannot_express_falls_back(tmp_path, monkeypatch):
    """A stand-alone package's own kernels: its op that sums over two dims (the C path sums along
    one) is listed with the reason and runs the reference; its elementwise op runs compiled."""
    import shutil

    specs = tmp_path / "specs"
    shutil.copytree(CUSTOM_SPECS, specs)
    spec = specs / "ops" / "log_normalise_backward.yaml"
    text = spec.read_text(encoding="utf-8")
    assert "sum_keepdim(grad_output, dim)" in text
    spec.write_text(text.replace("sum_keepdim(grad_output, dim)", "sum_keepdim(grad_output, (0, 1))"), encoding="utf-8")
    with generated_package(tmp_path, specs, "compiledpkg"):
        lognorm = importlib.import_module("compiledpkg.ops.log_normalise_backward").log_normalise_backward
        sloped = importlib.import_module("compiledpkg.ops.sloped_step_backward").sloped_step_backward
        session.reset()  # the simulator builds the package's entry points in
        monkeypatch.setenv(compiled.MODE_ENV, "auto")
        x = np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4)
        before = compiled.stats()
        lognorm(x, x, 1)
        assert compiled.stats()["reference"] == before["reference"] + 1
        sloped(x, x, 0.5)
        assert compiled.stats()["compiled"] == before["compiled"] + 1
        status = compiled.status("compiledpkg", session.backend().libraries["nnopbase"])
        assert status["error"] is None
        assert "sum_keepdim() over several dims" in status["fallbacks"]["aclnnLogNormaliseBackward"]
        assert "aclnnSlopedStepBackward" in status["ops"]


def test_a_wrong_c_rendering_fails_the_simulated_binding_test(tmp_path, monkeypatch):
    """Mutation: exp rendered as expm1 in C only. The generated test's binding check (compiled
    kernel against the NumPy reference) must fail for an op whose formula calls exp."""
    monkeypatch.setitem(formula_c._LIBM, "exp", ("expm1f", "expm1"))
    wrong = tmp_path / "sim_kernels.c"
    wrong.write_text(render_sim_kernels(), encoding="utf-8")
    monkeypatch.setenv(compiled.MODE_ENV, "compiled")
    # of each structure its first op (a renamed copy adds no case, and no kernel build of its own)
    calls_exp = [
        s
        for s in catalog.representatives()
        if "exp(" in (REPO / "specs" / "ops" / f"{s}.yaml").read_text(encoding="utf-8")
    ]
    ops = [catalog.under_test(s) for s in calls_exp if catalog.meta(s)["symbol"] not in _fallbacks()]
    assert ops, "no compiled op calls exp(): pick another function to mutate"
    compiled.use_source(BUILTIN_PACKAGE, wrong)
    caught = []
    try:
        for op in ops:  # an exp under a `where` the data never takes can pass; the others must not
            try:
                opcheck.check_binding(op, supported_families(op.meta, op.version)[0], "float32", "contiguous")
            except AssertionError as exc:
                caught.append((op.name, str(exc)))
    finally:
        compiled.use_source(BUILTIN_PACKAGE, None)
    assert caught and all("differs" in text or "outside" in text for _, text in caught), caught
    for op in ops:  # the true rendering passes
        opcheck.check_binding(op, supported_families(op.meta, op.version)[0], "float32", "contiguous")


def test_the_c_rendering_prints_literals_exactly_and_names_what_it_cannot_render():
    from aclnngen.codegen.formula import parse_program

    names = {"x": "input", "g": "input", "out": "output", "k": "attribute"}
    prog = parse_program({"out": "g * 0.1 + x ** 2"}, names, loc=("formula",))
    params = [
        formula_c.KernelParam("x", "x", "input", ""),
        formula_c.KernelParam("g", "g", "input", ""),
        formula_c.KernelParam("k", "k", "attribute", "aclIntArray*"),
        formula_c.KernelParam("out", "out", "output", ""),
    ]
    kernel = formula_c.kernel_for("aclnnX", "x", prog, params)
    (variant,) = [v for v in kernel.variants if v.storage == "float32" and v.compute == "float32"]
    assert (0.1).hex() in variant.stores[0] and "(in_x * in_x)" in variant.stores[0]
    summed = parse_program({"out": "sum(g, (0,))"}, names, loc=("formula",))
    assert "sum()" in formula_c.kernel_for("aclnnX", "x", summed, params).reason
    attr = parse_program({"out": "g * k"}, names, loc=("formula",))
    assert "aclIntArray*" in formula_c.kernel_for("aclnnX", "x", attr, params).reason


def test_kernels_that_cannot_be_built_leave_every_op_on_the_reference(monkeypatch):
    """A compiler that fails on sim_kernels.c: the simulator still works (the reference computes)
    and the status says why, for `aclnngen info`."""
    from aclnngen.runtime.sim.build import SimulatorBuildError

    binding, reference = catalog.binding(catalog.PLAIN), catalog.under_test(catalog.PLAIN).reference.reference

    def failing(*args, **kwargs):
        raise SimulatorBuildError("cc: error: made up for the test")

    monkeypatch.setattr(compiled, "build_simulator", failing)
    monkeypatch.setenv(compiled.MODE_ENV, "auto")
    compiled.use_source(BUILTIN_PACKAGE, None)  # forget the loaded library: the next call builds
    try:
        x = np.linspace(-3, 3, 12, dtype=np.float32)
        before = compiled.stats()
        assert opcheck.same_bits(binding(np.ones_like(x), x), reference(np.ones_like(x), x))
        assert compiled.stats()["reference"] == before["reference"] + 1
        status = session.backend().compiled_kernels()
        assert "made up for the test" in status["error"] and status["ops"] == []
    finally:
        monkeypatch.undo()
        compiled.use_source(BUILTIN_PACKAGE, None)
    assert session.backend().compiled_kernels()["error"] is None


def test_the_kernel_loops_have_no_branches():
    """Every built-in kernel's loop is branch-free, which is what lets GCC vectorise it: a `where`
    on data selects between both sides, one on an attribute is decided before the loop as a number
    of the compute type (a ternary, or a select on an integer, keeps the loop scalar)."""
    import re

    loops = re.findall(r"for \(int64_t aclk_i[^\n]*\n(.*?)\n    \}", render_sim_kernels(), re.S)
    assert len(loops) > 10
    assert [loop for loop in loops if " ? " in loop] == []
    assert "pick_0 != 0" in "".join(loops), "an attribute's where selects on a hoisted number"


def test_a_call_builds_its_own_ops_kernels_only():
    """The first call of an op builds that op's kernels (ACLK_ONE_OP), so a cold cache costs one op's
    compile, not the package's; the tables alone (what `aclnngen info` reads) list every op's
    kernels and compile none."""
    core = session.backend().libraries["nnopbase"]
    tables = compiled.library(BUILTIN_PACKAGE, core, compiled.FALLBACKS_ONLY)
    assert tables.error is None and not tables.kernels, "the tables' build compiled a kernel"
    every = tables.listed
    assert len(every) > 1, "needs a package with two compiled ops"
    compiled_ops = [s for s in _snakes() if catalog.meta(s)["symbol"] in every]
    for snake in compiled_ops[:2]:  # two suffice to tell one op's build from the package's
        symbol = catalog.meta(snake)["symbol"]
        own = {s for s, _, _ in compiled.library(BUILTIN_PACKAGE, core, snake).kernels}
        assert own == {symbol}, f"{snake}'s build holds {sorted(own)}"
    binding, x = catalog.binding(catalog.PLAIN), np.linspace(-3, 3, 12, dtype=np.float32)
    before = compiled.stats()["compiled"]
    binding(np.ones_like(x), x)
    assert compiled.stats()["compiled"] == before + 1, "the call ran its op's own build"
