"""The compiled kernels' float32 exp, erf and tanh (sim_kernels.c.j2: branch-free, so the loops
vectorise) against float64, within the accuracy the template states; NaN, infinities, overflow and
underflow as libm gives them."""

from __future__ import annotations

import math
import platform
import shutil
import subprocess

import numpy as np
import pytest

from aclnngen.generated.ffi._sim_kernels import ffi
from aclnngen.runtime import session
from aclnngen.runtime.sim import compiled
from aclnngen.runtime.sim.build import build_simulator
from aclnngen.runtime.sim.kernels import BUILTIN_PACKAGE

# the bounds sim_kernels.c.j2 states, in float32 ulps of the float64 result
MAX_ULPS = {"exp": 2, "erf": 8, "tanh": 2}
FLOAT64 = {"exp": np.exp, "erf": np.vectorize(math.erf, otypes=[np.float64]), "tanh": np.tanh}
RANGES = {"exp": (-104.0, 89.0), "erf": (-6.0, 6.0), "tanh": (-12.0, 12.0)}
SPECIAL = np.array(
    [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-30, -1e-30, 1e-8, 1e-4, 0.625, 4.0, 88.72, 88.73, -87.33, -103.9, -110.0],
    dtype=np.float32,
)


@pytest.fixture(scope="module")
def library():
    # the tables' build: the shared math functions are in every build, no kernel is needed
    lib = compiled.library(BUILTIN_PACKAGE, session.backend().libraries["nnopbase"], compiled.FALLBACKS_ONLY)
    assert lib.error is None, lib.error
    return lib.handle


def _run(library, name: str, x: np.ndarray) -> np.ndarray:
    y = np.empty_like(x)
    rc = library.aclk_math_f(name.encode(), ffi.from_buffer("float[]", x), ffi.from_buffer("float[]", y), x.size)
    assert rc == 0
    return y


def _inputs(name: str) -> np.ndarray:
    low, high = RANGES[name]
    rng = np.random.default_rng(24)
    tiny = np.geomspace(1e-38, 1.0, 20_000).astype(np.float32)
    return np.concatenate(
        [
            np.linspace(low, high, 200_001, dtype=np.float32),
            rng.uniform(low, high, 100_000).astype(np.float32),
            tiny,
            -tiny,
            SPECIAL,
        ]
    )


@pytest.mark.parametrize("name", sorted(MAX_ULPS))
def test_float32_function_within_its_stated_ulps(library, name):
    x = _inputs(name)
    got = _run(library, name, x)
    with np.errstate(over="ignore", invalid="ignore"):
        want = FLOAT64[name](x.astype(np.float64))
    nan = np.isnan(want)
    assert np.array_equal(np.isnan(got), nan), "NaN exactly where the float64 result is NaN"
    rounded = want.astype(np.float32)  # inf where float32 overflows, 0 or subnormal where it underflows
    finite = ~nan & np.isfinite(rounded)
    assert np.array_equal(got[~nan & ~finite], rounded[~nan & ~finite]), "overflow as libm: infinity"
    ulp = np.spacing(np.abs(rounded[finite])).astype(np.float64)
    errors = np.abs(got[finite].astype(np.float64) - want[finite]) / ulp
    worst = int(np.argmax(errors))
    assert errors[worst] <= MAX_ULPS[name], f"{name}({x[finite][worst]!r}) off by {errors[worst]:.2f} ulps"


def test_an_unknown_function_is_refused(library):
    x = np.zeros(2, np.float32)
    assert library.aclk_math_f(b"cosh", ffi.from_buffer("float[]", x), ffi.from_buffer("float[]", x), 2) == -1


@pytest.mark.skipif(platform.machine() != "x86_64" or shutil.which("nm") is None, reason="x86-64 with binutils")
def test_on_x86_64_each_kernel_has_an_avx2_version_picked_at_load():
    """sim_kernels.c.j2 builds every kernel for AVX2 and for the baseline (GCC's target_clones);
    the loader's choice is an ifunc symbol per kernel. The two give the same bits (no FMA), which
    every simulated test's comparison with the reference covers on whichever the CPU runs. A build
    for a CPU with AVX2 (compiled.host_defines) has the AVX2 version alone. Read from one op's
    build, not a build of every op."""
    from aclnngen.generated import OPS

    core = session.backend().libraries["nnopbase"]
    snake = next(s for s in OPS if compiled.library(BUILTIN_PACKAGE, core, s).kernels)
    one_op = {"ACLK_ONE_OP": None, f"ACLK_OP_{snake}": None}

    def symbols(defines) -> list[str]:
        path = build_simulator(
            [compiled.kernels_source(BUILTIN_PACKAGE)],
            defines=defines,
            lib_names=(compiled.KERNELS_LIB_NAME,),
            link_core=core,
        )
        return subprocess.run(["nm", str(path)], capture_output=True, text=True, check=True).stdout.splitlines()

    portable = symbols(one_op)
    ifuncs = [line.split()[-1] for line in portable if len(line.split()) == 3 and line.split()[1] == "i"]
    kernels = [name for name in ifuncs if name.startswith(f"aclk_{snake}__")]
    assert kernels, f"no kernel of {snake} is an ifunc"
    for name in kernels:
        assert any(line.endswith(f" {name}.avx2") for line in portable), f"{name} has no AVX2 version"
    if compiled.host_defines():  # the build the op's calls load: one version, no ifunc
        host = symbols({**one_op, **compiled.host_defines()})  # (found in the cache)
        assert not [line for line in host if f" i aclk_{snake}__" in line or ".avx2" in line]
        assert [line for line in host if f" aclk_{snake}__" in line]
