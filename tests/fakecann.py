"""A fake CANN install for CI: the simulator built under CANN's library names, laid out like an
install, and a runner that drives the production CANN backend against it in a fresh process.

Library layout (see `LAYOUTS`; every name is a symlink to a file of the simulator build cache):

    <home>/<arch>-linux/ascend_toolkit_install.info     version=8.3.RC1
    <home>/<arch>-linux/lib64/libascendcl.so             -> core    (runtime/sim/*.c, no op)
    <home>/<arch>-linux/lib64/libnnopbase.so             -> core    (the same file)
    <home>/<arch>-linux/lib64/libopapi.so                -> op library (generated sim_ops.c only)
    <home>/lib64                                         -> <arch>-linux/lib64

The op library is a SEPARATE shared object, as in CANN: built with
`simbuild.build_simulator(sim_ops_c, link_core=<core>/libnnopbase.so)` it holds only the op entry
points, needs `libnnopbase.so` (DT_NEEDED) and finds it through `RUNPATH $ORIGIN`, i.e. in the
directory it is loaded from, where `libnnopbase.so` leads to the same core file. The loader sees
one file (same inode) behind libascendcl.so, libnnopbase.so and the op library's dependency, so
the op entry points run against the ONE core the runtime loaded (its handles, memory and hooks),
with cffi's default dlopen flags (no RTLD_GLOBAL) and in any order. Because the core has no op,
an op library that lacks an op (rendered with `render_sim_ops(ops=...)`) really lacks it: nothing
else in the install exports it.

The library answers aclsysGetVersionStr with 8.5.0 (the simulator's default) while the info file
says 8.3.RC1, so a test can tell which source a version came from; the `no-version-api` layout
uses a core built with -DACLSIM_NO_VERSION_API (no aclsysGetVersionStr/Num at all).

The fake CANN is the simulator, so its kernels are the Python hooks of runtime/sim/kernels.py. The
production CannBackend never installs simulator hooks (a real CANN has no aclsim_* controls);
the scenario scripts do it themselves with `install_kernels(b)` (PRELUDE), exactly as
tests/runtime/test_call_path.py does in-process.
"""

from __future__ import annotations

import importlib

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from aclnngen.generated import OPS as CATALOG
from aclnngen.runtime import backend as backend_mod
from aclnngen.runtime import ffi as ffimod
from aclnngen.runtime.sim import controls as simcontrols
from aclnngen.runtime.sim.backend import CORE_OPTIMIZE
from aclnngen.runtime.sim.build import build_simulator, cache_root

ARCH = backend_mod._arch_dir()
LIBRARY_VERSION = "8.5.0"  # the simulator's aclsysGetVersionStr answer (its default)
INFO_VERSION = "8.3.RC1"  # ascend_toolkit_install.info: different on purpose
#: the ops of the fake op library: the catalog's; the "missing-op" layout lacks the last one
OPS = tuple(CATALOG)
MISSING_SNAKE = OPS[-1]
MISSING_OP = importlib.import_module(f"aclnngen.generated.meta.{MISSING_SNAKE}").META["name"]

#: install name -> {library file name: which build it links to}
LAYOUTS: dict[str, dict[str, str]] = {
    "standard": {"libascendcl.so": "core", "libnnopbase.so": "core", "libopapi.so": "ops"},
    # newer CANN: the runtime API only in libacl_rt.so
    "acl-rt": {"libacl_rt.so": "core", "libnnopbase.so": "core", "libopapi.so": "ops"},
    # current open-source layout: ops in libopapi_nn.so (found by the libopapi_*.so glob)
    "split": {"libascendcl.so": "core", "libnnopbase.so": "core", "libopapi_nn.so": "ops"},
    # ops only in a feature library
    "feature-lib": {"libascendcl.so": "core", "libnnopbase.so": "core", "libaclnn_ops_train.so": "ops"},
    # an op library that predates one op (MISSING_OP)
    "missing-op": {"libascendcl.so": "core", "libnnopbase.so": "core", "libopapi.so": "ops-without-one"},
    # a release without aclsysGetVersionStr/Num
    "no-version-api": {
        "libascendcl.so": "core-no-version",
        "libnnopbase.so": "core-no-version",
        "libopapi.so": "ops-on-no-version",
    },
}


def _ops_source(ops: tuple[str, ...] | None) -> Path:
    """sim_ops.c for `ops` (None: all), content-addressed in the cache so builds are reused."""
    if ops is None:
        return simcontrols.sim_ops_path()
    from aclnngen.codegen.generate import render_sim_ops

    text = render_sim_ops(ops=ops)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    path = cache_root() / "sim-sources" / f"fake-cann-ops-{digest}.c"
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, path)
    return path


def build_core(*, no_version_api: bool = False) -> Path:
    """The runtime/tensor core without any op; returns its `libnnopbase.so` link (the name op
    libraries are linked against)."""
    defines = {"ACLSIM_NO_VERSION_API": None} if no_version_api else None
    return build_simulator(
        (),
        abi_header=ffimod.runtime_cdef_path(),
        defines=defines,
        lib_names=("libnnopbase.so", "libascendcl.so"),
        optimize=CORE_OPTIMIZE,  # as the simulator's own core
    )


def build_ops(core: Path, ops: tuple[str, ...] | None = None) -> Path:
    """An op library (the entry points of `ops`, None = all) linked against `core`."""
    return build_simulator(
        [_ops_source(ops)], abi_header=ffimod.runtime_cdef_path(), lib_names=("libopapi.so",), link_core=core
    )


def build_all() -> dict[str, Path]:
    """Every build the layouts use: name -> the real library file."""
    core = build_core()
    core_nv = build_core(no_version_api=True)
    without = tuple(op for op in OPS if op != MISSING_SNAKE)
    builds = {
        "core": core,
        "core-no-version": core_nv,
        "ops": build_ops(core),
        "ops-without-one": build_ops(core, without),
        "ops-on-no-version": build_ops(core_nv),
    }
    return {name: path.resolve() for name, path in builds.items()}


def make_install(root: Path, layout: str, builds: dict[str, Path], *, info_version: str | None = INFO_VERSION) -> Path:
    """Lays out one install under `root/layout`; returns its home (ASCEND_HOME_PATH)."""
    home = root / layout / "cann"
    lib64 = home / ARCH / "lib64"
    lib64.mkdir(parents=True)
    (home / "lib64").symlink_to(Path(ARCH) / "lib64")
    for name, build in LAYOUTS[layout].items():
        (lib64 / name).symlink_to(builds[build])
    if info_version is not None:
        (home / ARCH / "ascend_toolkit_install.info").write_text(
            f"package_name=Ascend-cann-toolkit\nversion={info_version}\narch={ARCH.split('-')[0]}\n"
        )
    return home


def make_installs(root: Path) -> dict[str, Path]:
    builds = build_all()
    return {layout: make_install(root, layout, builds) for layout in LAYOUTS}


# --- scenarios in a fresh process -----------------------------------------------------------------

#: Names removed from the environment of every scenario (the scenario sets what it needs).
_SCRUBBED = (
    "ASCEND_HOME_PATH",
    "ASCEND_TOOLKIT_HOME",
    "ASCEND_CUSTOM_OPP_PATH",
    "ASCEND_OPP_PATH",
    "LD_LIBRARY_PATH",
    "ACLNNGEN_BACKEND",
    "ACLNNGEN_SIM_SOC",
    "ACLNNGEN_DEVICE",
)

PRELUDE = '''
import importlib, json, sys
import numpy as np
from aclnngen.verify import cases
from aclnngen.verify.opcheck import binding_args
from aclnngen.runtime import session, ffi as ffimod
from aclnngen.runtime.sim import controls as simcontrols, kernels as simkernels
from aclnngen.runtime.errors import AclnnError, BackendError

def install_kernels(b):
    """Tests only: the fake CANN is the simulator, so give its library the Python kernels."""
    return simkernels.install(b, ffimod.dlopen(simcontrols.sim_ffi(), b.libraries["ascendcl"]), key="fake-cann")

def op(snake):
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake)
    reference = importlib.import_module(f"aclnngen.generated.reference.{snake}")
    return meta, binding, reference

def check_op(snake, case="non-contiguous"):
    """Calls the generated binding; True when the result equals the reference bit for bit."""
    meta, binding, reference = op(snake)
    try:
        values = dict(cases.make_values(meta, case, "float32", version="8.5.0"))
    except ValueError:
        values = dict(cases.make_values(meta, "contiguous", "float32", version="8.5.0"))
    positional, keywords = binding_args(meta, values)
    got = binding(*positional, **keywords)
    inputs = [values[p["name"]] for p in meta["params"] if p["role"] == "input"]
    rest = {p["py"]: values[p["name"]] for p in meta["params"] if p["role"] not in ("input", "output")}
    want = reference.reference(*inputs, **rest)
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    return len(got) == len(want) and all(
        g.shape == w.shape and g.dtype == w.dtype and g.tobytes() == w.tobytes() for g, w in zip(got, want))

def library_of(b, snake):
    return b.op_functions(op(snake)[0])[2]

def emit(obj):
    print("RESULT " + json.dumps(obj, default=str))
'''


def scenario_env(**env: str | None) -> dict[str, str]:
    full = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    # The scenarios test finding and loading CANN, not the kernels' numerics (the simulated tests
    # compare the compiled kernels with the reference): the fake install's core is a library of
    # its own, for which each op's kernels would compile again, cold, in every scenario's process.
    full["ACLNNGEN_SIM_KERNELS"] = "reference"
    full.update({k: v for k, v in env.items() if v is not None})
    return full


def run_scenario(code: str, env: dict[str, str], *, timeout: float = 300) -> dict:
    """Runs PRELUDE + `code` in a fresh interpreter with exactly `env` (see `scenario_env`) and
    returns what it passed to emit()."""
    script = PRELUDE + "\n" + textwrap.dedent(code)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=timeout)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise AssertionError(
            f"scenario failed (exit {proc.returncode})\n--- stdout\n{proc.stdout}\n--- stderr\n{proc.stderr}"
        )
    return json.loads(lines[-1][len("RESULT ") :])


def run_cli(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "aclnngen.codegen.cli", *args], capture_output=True, text=True, env=env, timeout=timeout
    )
