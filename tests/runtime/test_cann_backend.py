"""The CANN backend against a fake CANN install (tests/fakecann.py: the simulator built under
CANN's library names, with the op library a separate shared object linked to the core).

Every scenario runs in a fresh interpreter: dlopen and the session are per process, and CANN is
discovered from the environment the process starts with."""

from __future__ import annotations

import re
import shutil
import subprocess

import catalog
import pytest

import fakecann
from aclnngen.codegen.commands.jsonout import EXIT_NO_CANN
from aclnngen.codegen.errors import GenerateError
from aclnngen.codegen.generate import render_sim_ops
from aclnngen.runtime import ffi as ffimod
from aclnngen.runtime.sim import controls as simcontrols
from aclnngen.runtime.sim.build import SimulatorBuildError, build_simulator

ARCH = fakecann.ARCH
ALL_OPS = list(fakecann.OPS)


def _lib64(home):
    return home / "lib64"


def _info(home):
    return str(home / ARCH / "ascend_toolkit_install.info")


# --- the pieces: a subset of sim_ops.c, an op library linked to the core ---------------------------


def test_render_sim_ops_reuses_the_template_and_selects_ops():
    full = render_sim_ops()
    assert full == simcontrols.sim_ops_path().read_text(encoding="utf-8"), "must equal generated/c/sim_ops.c"
    first, second, *others = (catalog.meta(snake)["name"] for snake in fakecann.OPS)
    subset = render_sim_ops(ops=[fakecann.OPS[0], second])  # by file stem or by name
    assert f"aclnn{first}GetWorkspaceSize(" in subset and f"aclnn{second}(" in subset
    assert not [name for name in others if f"aclnn{name}(" in subset]
    assert subset.splitlines()[:3] == full.splitlines()[:3]  # the same header
    with pytest.raises(GenerateError, match="unknown op"):
        render_sim_ops(ops=["NoSuchOp"])


def _dynamic(path) -> str:
    return subprocess.run(["readelf", "-d", str(path)], capture_output=True, text=True, check=True).stdout


def _defined(path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True, text=True, check=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


def test_op_library_is_a_separate_object_that_needs_the_core():
    assert shutil.which("readelf") and shutil.which("nm"), "binutils come with the C compiler"
    core = fakecann.build_core()
    ops = fakecann.build_ops(core).resolve()
    dynamic = _dynamic(ops)
    assert "Shared library: [libnnopbase.so]" in dynamic and "[$ORIGIN]" in dynamic
    exported = _defined(ops)
    names = [catalog.meta(snake)["name"] for snake in fakecann.OPS]
    assert {f"aclnn{n}" for n in names} | {f"aclnn{n}GetWorkspaceSize" for n in names} <= exported
    assert not exported & {"aclInit", "aclCreateTensor", "sim_prepare", "aclsim_set_hooks"}, "no core code inside"
    core_syms = _defined(core.resolve())
    assert {"aclInit", "aclCreateTensor", "sim_prepare", "aclsim_set_hooks", "aclsysGetVersionStr"} <= core_syms
    assert not [s for s in core_syms if s.startswith("aclnn") and s.endswith("Backward")], "the core has no op"
    without = fakecann.build_ops(core, fakecann.OPS[1:2])  # (one op: the library grows with none)
    assert f"aclnn{names[0]}" not in _defined(without.resolve())
    assert f"aclnn{names[1]}" in _defined(without.resolve())
    no_version = fakecann.build_core(no_version_api=True).resolve()
    assert not {"aclsysGetVersionStr", "aclsysGetVersionNum"} & _defined(no_version)
    assert "aclrtGetVersion" in _defined(no_version)


def test_an_op_library_needing_what_the_core_lacks_fails_at_build_time(tmp_path):
    src = tmp_path / "bad_ops.c"
    src.write_text(
        '#include "aclsim_core.h"\nint sim_no_such_function(void);\nint f(void) { return sim_no_such_function(); }\n'
    )
    core = fakecann.build_core()
    with pytest.raises(SimulatorBuildError, match="sim_no_such_function"):
        build_simulator(
            [src],
            abi_header=ffimod.runtime_cdef_path(),
            lib_names=("libopapi.so",),
            link_core=core,
            cache_dir=tmp_path / "cache",
        )
    with pytest.raises(SimulatorBuildError, match="needs extra sources"):
        build_simulator((), lib_names=("libopapi.so",), link_core=core, cache_dir=tmp_path / "cache")


# --- discovery -------------------------------------------------------------------------------------


def _run(ops: list[str]) -> str:
    """A scenario that finds the install, calls each of `ops` and says which library served it."""
    return """
b = session.backend()
install_kernels(b)
emit({
    "kind": b.kind,
    "libraries": b.libraries,
    "home": b.install.home,
    "ops": {s: check_op(s) for s in %r},
    "op_library": {s: library_of(b, s) for s in %r},
    "version": b.version_info(),
})
""" % (ops, ops)


# Where the install is found does not change what is in it: the other ways of finding it (and
# the other layouts' library names) are shown by one op, every op by the first way.
_RUN_ONE = _run(ALL_OPS[:1])


@pytest.mark.parametrize("how", ["ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "LD_LIBRARY_PATH"])
def test_discovery_and_every_op_bit_for_bit(fake_cann_homes, how):
    home = fake_cann_homes["standard"]
    if how == "LD_LIBRARY_PATH":
        env = fakecann.scenario_env(LD_LIBRARY_PATH=str(_lib64(home)), ACLNNGEN_BACKEND="cann")
    else:
        env = fakecann.scenario_env(**{how: str(home)}, ACLNNGEN_BACKEND="cann")
    ops = ALL_OPS if how == "ASCEND_HOME_PATH" else ALL_OPS[:1]
    got = fakecann.run_scenario(_run(ops), env)
    assert got["kind"] == "cann"
    assert got["libraries"] == {
        "ascendcl": str(_lib64(home) / "libascendcl.so"),
        "nnopbase": str(_lib64(home) / "libnnopbase.so"),
    }
    assert got["home"] == (None if how == "LD_LIBRARY_PATH" else str(home))
    assert got["ops"] == {s: True for s in ops}, "every op equals its reference bit for bit"
    assert set(got["op_library"].values()) == {str(_lib64(home) / "libopapi.so")}
    assert got["version"] == [fakecann.LIBRARY_VERSION, "aclsysGetVersionStr"]


@pytest.mark.parametrize(
    "layout,key,name",
    [
        ("acl-rt", "runtime", "libacl_rt.so"),
        ("split", "ops", "libopapi_nn.so"),
        ("feature-lib", "ops", "libaclnn_ops_train.so"),
    ],
)
def test_library_fallbacks(fake_cann_homes, layout, key, name):
    home = fake_cann_homes[layout]
    got = fakecann.run_scenario(_RUN_ONE, fakecann.scenario_env(ASCEND_HOME_PATH=str(home)))
    assert got["kind"] == "cann"
    assert got["ops"] == {ALL_OPS[0]: True}
    if key == "runtime":
        assert got["libraries"]["ascendcl"] == str(_lib64(home) / name)
        assert set(got["op_library"].values()) == {str(_lib64(home) / "libopapi.so")}
    else:
        assert got["libraries"]["ascendcl"] == str(_lib64(home) / "libascendcl.so")
        assert set(got["op_library"].values()) == {str(_lib64(home) / name)}


def test_op_library_loaded_before_the_runtime_shares_its_core(fake_cann_homes):
    """Load order does not matter: an op library dlopen'd first pulls the core in (DT_NEEDED) and
    the runtime's later dlopen of libascendcl.so finds that same file."""
    home = fake_cann_homes["standard"]
    got = fakecann.run_scenario(
        f"""
        first = ffimod.dlopen(ffimod.runtime_ffi(), {str(_lib64(home) / "libopapi.so")!r})
        b = session.backend()
        install_kernels(b)
        emit({{"kind": b.kind, "ok": [check_op(s) for s in {ALL_OPS[:1]!r}]}})
        """,
        fakecann.scenario_env(ASCEND_HOME_PATH=str(home)),
    )
    assert got == {"kind": "cann", "ok": [True]}


# --- an op the install lacks -------------------------------------------------------------------------


def test_missing_op_names_op_version_and_libraries_and_the_others_keep_working(fake_cann_homes):
    home = fake_cann_homes["missing-op"]
    others = [s for s in fakecann.OPS if s != fakecann.MISSING_SNAKE]
    got = fakecann.run_scenario(
        """
        b = session.backend()
        kernels = install_kernels(b)
        sim = simcontrols.sim_ffi()

        def counters():
            c = sim.new("struct aclsim_counters *")
            kernels.controls.aclsim_get_counters(c)
            return {name: getattr(c, name) for name, _ in sim.typeof("struct aclsim_counters").fields}

        result = {"before": check_op(%(first)r)}
        start = counters()
        errors = []
        for _ in range(2):
            try:
                check_op(%(missing)r)
                errors.append(None)
            except BackendError as exc:
                errors.append({"type": type(exc).__name__, "text": str(exc), "op": exc.op,
                               "version": exc.cann_version, "searched": list(exc.searched)})
        result["errors"] = errors
        result["leak"] = counters() != start
        result["others"] = {s: check_op(s) for s in %(others)r}
        emit(result)
        """
        % {"first": fakecann.OPS[0], "missing": fakecann.MISSING_SNAKE, "others": others},
        fakecann.scenario_env(ASCEND_HOME_PATH=str(home)),
    )
    assert got["before"] is True
    first, second = got["errors"]
    assert first is not None and first["type"] == "BackendError" and second == first
    assert first["op"] == fakecann.MISSING_OP and first["version"] == fakecann.LIBRARY_VERSION
    opapi = str(_lib64(home) / "libopapi.so")
    assert first["searched"][0] == opapi
    assert "libaclnn_ops_train.so (not found by the dynamic loader)" in first["searched"]
    text = first["text"]
    assert (
        f"aclnn{fakecann.MISSING_OP}" in text and f"CANN version: {fakecann.LIBRARY_VERSION}" in text and opapi in text
    )
    assert "Additionally, ctypes" not in text, "the loader's messages are kept short"
    assert got["leak"] is False, "the refused call allocated nothing"
    assert got["others"] == {s: True for s in others}


# --- versions --------------------------------------------------------------------------------------

_VERSION = """
b = session.backend()
emit({"kind": b.kind, "version": b.version_info(), "str_fn": b.api.aclsysGetVersionStr is not None,
      "optional_missing": b.api.optional_missing})
"""


@pytest.mark.parametrize("how", ["ASCEND_HOME_PATH", "LD_LIBRARY_PATH"])
def test_version_from_the_info_file_when_the_library_has_no_version_api(fake_cann_homes, how):
    home = fake_cann_homes["no-version-api"]
    env = fakecann.scenario_env(**({how: str(_lib64(home))} if how == "LD_LIBRARY_PATH" else {how: str(home)}))
    got = fakecann.run_scenario(_VERSION, env)
    assert got["kind"] == "cann" and got["str_fn"] is False
    assert got["optional_missing"] == ["aclsysGetVersionStr", "aclsysGetVersionNum"]
    assert got["version"] == [fakecann.INFO_VERSION, _info(home)]


def test_version_from_the_library_when_it_offers_one(fake_cann_homes):
    home = fake_cann_homes["standard"]
    got = fakecann.run_scenario(_VERSION, fakecann.scenario_env(ASCEND_HOME_PATH=str(home)))
    assert got["str_fn"] is True and got["optional_missing"] == []
    assert got["version"] == [fakecann.LIBRARY_VERSION, "aclsysGetVersionStr"], "the library wins over the file"


@pytest.mark.parametrize(
    "layout,line",
    [
        ("standard", f"{fakecann.LIBRARY_VERSION} (from aclsysGetVersionStr)"),
        ("no-version-api", f"{fakecann.INFO_VERSION} (from {{info}})"),
    ],
)
def test_info_command_names_the_version_source(fake_cann_homes, layout, line):
    home = fake_cann_homes[layout]
    proc = fakecann.run_cli("info", env=fakecann.scenario_env(ASCEND_HOME_PATH=str(home)))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = dict(re.split(r"\s{2,}", line.strip(), maxsplit=1) for line in proc.stdout.splitlines() if line.strip())
    assert rows["backend"] == "cann (CANN; CANN found)"
    assert rows["runtime library"] == str(_lib64(home) / "libascendcl.so")
    assert rows["CANN version"] == line.format(info=_info(home))
    if layout == "no-version-api":
        assert rows["optional functions missing"] == "aclsysGetVersionStr, aclsysGetVersionNum"


# --- selection ---------------------------------------------------------------------------------------


def test_default_selection_picks_the_cann_it_finds(fake_cann_homes):
    code = 'b = session.backend()\nemit({"kind": b.kind})'
    found = fakecann.run_scenario(code, fakecann.scenario_env(ASCEND_HOME_PATH=str(fake_cann_homes["standard"])))
    assert found == {"kind": "cann"}
    absent = fakecann.run_scenario(
        code, fakecann.scenario_env(ASCEND_HOME_PATH=str(fake_cann_homes["standard"] / "nowhere"))
    )
    assert absent == {"kind": "sim"}
    forced = fakecann.run_scenario(
        code, fakecann.scenario_env(ASCEND_HOME_PATH=str(fake_cann_homes["standard"]), ACLNNGEN_BACKEND="sim")
    )
    assert forced == {"kind": "sim"}


def test_forced_cann_without_an_install_is_a_backend_error(tmp_path):
    nowhere = tmp_path / "nowhere"
    got = fakecann.run_scenario(
        """
        try:
            session.backend()
            emit({"raised": None})
        except BackendError as exc:
            emit({"raised": type(exc).__name__, "text": str(exc), "searched": list(exc.searched)})
        """,
        fakecann.scenario_env(ASCEND_HOME_PATH=str(nowhere), ACLNNGEN_BACKEND="cann"),
    )
    assert got["raised"] == "CannNotFoundError"  # a BackendError: every command exits with EXIT_NO_CANN for it
    assert "CANN was not found" in got["text"] and "ACLNNGEN_BACKEND=sim" in got["text"]
    assert str(nowhere / "lib64" / "libascendcl.so") in got["searched"]
    assert "libacl_rt.so (dynamic loader search)" in got["searched"]
    proc = fakecann.run_cli("info", env=fakecann.scenario_env(ASCEND_HOME_PATH=str(nowhere), ACLNNGEN_BACKEND="cann"))
    assert proc.returncode == EXIT_NO_CANN and "CANN was not found" in proc.stderr and "Traceback" not in proc.stderr


def test_the_cann_backend_never_installs_simulator_hooks(fake_cann_homes):
    """Production code treats the install as real CANN: no aclsim_* declarations, no hooks. The
    fake library, left without the tests' kernels, then has no kernel to run (561003)."""
    got = fakecann.run_scenario(
        """
        from aclnngen.runtime.errors import AclnnStatusError
        b = session.backend()
        try:
            check_op(%r)
            status = None
        except AclnnStatusError as exc:
            status = exc.status
        emit({"kind": b.kind, "status": status, "controls": hasattr(b, "controls"),
              "sim_ffi_made": simcontrols._SIM is not None})
        """
        % fakecann.OPS[0],
        fakecann.scenario_env(ASCEND_HOME_PATH=str(fake_cann_homes["standard"])),
    )
    assert got == {"kind": "cann", "status": 561003, "controls": False, "sim_ffi_made": False}


# --- op namespaces -----------------------------------------------------------------------------------

_TWO_PACKAGES = """
b = session.backend()
install_kernels(b)
snake = %r
meta = op(snake)[0]
assert check_op(snake)                                   # the built-in package uses the symbol first
try:
    b.op_functions(meta, "another_package")              # one process, one aclnnXxx on CANN
    refused = None
except BackendError as exc:
    refused = [type(exc).__name__, str(exc)]
emit({"refused": refused, "again": check_op(snake)})
""" % ALL_OPS[0]


def test_one_symbol_cannot_serve_two_packages_on_cann(fake_cann_homes):
    """Guard: Backend._claim with libraries of unknown package (CANN's)."""
    home = fake_cann_homes["standard"]
    got = fakecann.run_scenario(
        _TWO_PACKAGES, fakecann.scenario_env(ASCEND_HOME_PATH=str(home), ACLNNGEN_BACKEND="cann")
    )
    assert got["refused"] is not None, got
    kind, text = got["refused"]
    assert kind == "OpNamespaceError" and "'another_package'" in text and "'aclnngen.generated'" in text
    assert got["again"] is True  # the package that holds the symbol keeps working
