"""Sums along a dim that is not the innermost (codegen/formula_c.py's `lines` loop): a block of
consecutive lines at a time, their rows read in memory order. Each line is still summed in its own
order (m = 0, 1, ...), so the result is the line-by-line loop's to the bit, whatever the blocks,
partial blocks and thread pieces; and the blocked loops vectorise (GCC says so when it compiles
them), which the line-by-line loop, one element per row, did not."""

from __future__ import annotations

import re
import subprocess

import catalog
import ml_dtypes
import numpy as np
import pytest
import yaml

from aclnngen.runtime import session
from aclnngen.runtime.sim import build, compiled
from aclnngen.runtime.sim.kernels import BUILTIN_PACKAGE
from aclnngen.verify import opcheck

from repo_paths import REPO

DIM_OPS = [s for s in catalog.representatives() if any(p.get("dim_of") for p in catalog.meta(s)["params"])]
# the ops whose formula is softmax's gradient, which `_in_line_order` computes
GRADIENT = "output * (grad_output - sum_keepdim(grad_output * output, dim))"
SOFTMAX_GRADIENTS = [
    s
    for s in DIM_OPS
    if yaml.safe_load((REPO / "specs" / "ops" / f"{s}.yaml").read_text(encoding="utf-8"))["formula"]["outputs"]
    == {"out": GRADIENT}
]
STORAGES = ("f16", "bf16", "f32", "f64")  # formula_c's kernel name of each storage dtype
# the op's storage dtypes -> its kernel's compute dtype (the spec's arithmetic: float32)
COMPUTE = {np.float16: np.float32, ml_dtypes.bfloat16: np.float32, np.float32: np.float32}
# (shape, dim): several blocks and a partial one (a long dim makes blocks of 16 lines), a block cut
# by the outer dim, an inner dim below one block, the innermost dim (line by line)
CASES = [((3000, 37), 0), ((2, 3000, 53), 1), ((5, 7, 300, 3), 2), ((40, 3), 1), ((6, 2, 50), -3)]


@pytest.fixture
def threads(monkeypatch):
    """Compiled kernels forced; pieces from a few hundred elements on three threads, so that the
    pieces cut rows and blocks."""
    monkeypatch.setenv(compiled.MODE_ENV, "compiled")
    monkeypatch.setenv("ACLNNGEN_REFERENCE_THREADS", "3")
    monkeypatch.setattr(compiled, "MIN_PARALLEL", 256)
    with session.simulated():
        yield


def _in_line_order(g: np.ndarray, y: np.ndarray, dim: int) -> np.ndarray:
    """GRADIENT with each line summed in its own order, in the compute dtype
    (NumPy's elementwise arithmetic rounds as C's does; its np.sum would sum pairwise)."""
    compute = COMPUTE[g.dtype.type]
    g32, y32 = np.moveaxis(g.astype(compute), dim, 0), np.moveaxis(y.astype(compute), dim, 0)
    total = np.zeros_like(g32[0])
    for m in range(g32.shape[0]):
        total += g32[m] * y32[m]
    return np.moveaxis(y32 * (g32 - total), 0, dim).astype(g.dtype)


@pytest.mark.parametrize("dtype", list(COMPUTE), ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("shape, dim", CASES)
def test_blocked_lines_give_each_line_summed_in_its_order(shape, dim, dtype, threads, monkeypatch):
    assert SOFTMAX_GRADIENTS, "the catalog has an op whose formula is GRADIENT"
    rng = np.random.default_rng(len(shape) + dim)
    g = rng.normal(0.0, 2.0, shape).astype(dtype)
    y = rng.uniform(0.01, 0.99, shape).astype(dtype)
    want = _in_line_order(g, y, dim)
    binding = catalog.binding(SOFTMAX_GRADIENTS[0])
    before = compiled.stats()["compiled"]
    split = binding(g, y, dim)
    monkeypatch.setattr(compiled, "MIN_PARALLEL", 1 << 40)
    whole = binding(g, y, dim)
    assert compiled.stats()["compiled"] == before + 2, "the compiled kernel ran"
    assert opcheck.same_bits(whole, want), "one piece: each line summed in its order"
    assert opcheck.same_bits(split, want), "pieces on threads: the same bits"


def _vectorised(source: str, ops: list[str]) -> set[int]:
    """The lines of `source` where GCC reports a loop it vectorised, building `ops`' kernels as the
    simulator does (ACLK_ONE_OP); None when the compiler is not GCC (no such report)."""
    defines = ["-DACLK_ONE_OP", *(f"-DACLK_OP_{op}" for op in ops)]
    command = [*build._compiler(), *build.CFLAGS, *defines, "-fopt-info-vec-optimized", "-c", source, "-o", "/dev/null"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0 and "fopt-info" in done.stderr:
        pytest.skip("the compiler is not GCC: it reports no vectorised loops")
    assert done.returncode == 0, done.stderr
    return {int(n) for n in re.findall(r"sim_kernels\.c:(\d+):\d+: optimized: loop vectorized", done.stderr)}


def _op_of(kernel: str) -> str:
    """The op of a kernel named aclk_<op>__<storage>__<compute>."""
    return kernel.removeprefix("aclk_").rsplit("__", 2)[0]


def test_the_blocked_loops_of_every_line_sum_vectorise():
    """Both passes of a block (the sums, then the outputs) are loops over the block's consecutive
    elements of one row that GCC vectorises, in every kernel of every op with a sum along a dim
    (float16 from float rounds each row in a loop of its own, aclk_f16_store_row, vectorised too);
    but float16's outputs pass computed in double, whose rounding is libm's, scalar everywhere."""
    source = compiled.kernels_source(BUILTIN_PACKAGE)
    text = source.read_text(encoding="utf-8").splitlines()
    found: dict[str, list[int]] = {}
    innermost: list[int] = []  # along the innermost dim float16's outputs go through the buffer too
    kernel = None
    for number, line in enumerate(text, 1):
        named = re.search(r"static void (aclk_\w+)\(", line)
        kernel = named.group(1) if named else kernel
        if kernel is None or _op_of(kernel) not in DIM_OPS:  # an op of the same structure as one here
            continue
        if "for (int64_t aclk_j = 0; aclk_j < aclk_n;" in line and "aclk_row + aclk_j" in text[number]:
            found.setdefault(kernel, []).append(number)
        if "for (int64_t aclk_m = aclk_m0;" in line:
            innermost.append(number)
    assert sorted(found) == sorted(f"aclk_{op}__{s}__{c}" for op in DIM_OPS for s in STORAGES for c in ("f32", "f64"))
    assert all(len(loops) == 2 for loops in found.values()), found
    vectorised = _vectorised(str(source), DIM_OPS)
    scalar = {k: [n for n in loops if n not in vectorised] for k, loops in found.items()}
    known = {k: [loops[1]] for k, loops in found.items() if k.endswith("__f16__f64")}
    assert {k: v for k, v in scalar.items() if v} == known
    helper = next(n for n, line in enumerate(text, 1) if "static void aclk_f16_store_row_bits(" in line)
    rounding = next(n for n, line in enumerate(text, 1) if n > helper and line.strip().startswith("for ("))
    assert rounding in vectorised, "aclk_f16_store_row_bits's loop vectorises (a CPU without F16C)"
    assert len(innermost) == len(DIM_OPS) and set(innermost) <= vectorised
