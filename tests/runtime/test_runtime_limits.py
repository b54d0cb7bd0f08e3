"""The runtime fails cleanly: a corrupted simulator cache is rebuilt, a hanging compiler is
stopped, the simulated device memory is capped, a dropped prepared call gives its descriptors
back, results cannot be read before a launch, and a scalar that does not fit its dtype is refused.
Each test names the guard it exercises."""

from __future__ import annotations

import gc
import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from aclnngen.runtime import acl, session
from aclnngen.runtime.call import bind
from aclnngen.runtime.errors import AclnnValidationError, CallOrderError
from aclnngen.runtime.sim.build import DIGEST_NAME, REAL_NAME, TIMEOUT_ENV, SimulatorBuildError, build_simulator

from simcache import tiny_core
from simtools import leak_counters, sim_backend
from repo_paths import REPO

ACL_ERROR_RT_MEMORY_ALLOCATION = acl.status_code("ACL_ERROR_RT_MEMORY_ALLOCATION")
ACLNN_ERR_PARAM_INVALID = acl.status_code("ACLNN_ERR_PARAM_INVALID")


def _metas():
    for path in sorted((REPO / "generated" / "meta").glob("*.py")):
        if path.stem != "__init__":
            yield __import__(f"aclnngen.generated.meta.{path.stem}", fromlist=["META"]).META


def _elementwise_two_input_op():
    """A built-in op with two tensor inputs, one output and no required scalar (from the METAs)."""
    for meta in _metas():
        roles = [p["role"] for p in meta["params"]]
        if (
            roles.count("input") == 2
            and roles.count("output") == 1
            and "scalar" not in roles
            and "attribute" not in roles
        ):
            return meta
    pytest.skip("no built-in op with two inputs and one output only")


def _op_with_float_scalar():
    for meta in _metas():
        for p in meta["params"]:
            if p["role"] in ("scalar", "optional_scalar") and (p.get("scalar_dtype") or "float32").startswith("float"):
                return meta, p
    pytest.skip("no built-in op with a floating-point scalar")


def _args(meta, **by_role):
    """Arguments in prototype order: inputs from by_role['inputs'], None elsewhere."""
    inputs = iter(by_role.get("inputs", ()))
    scalars = by_role.get("scalars", {})
    out = []
    for p in meta["params"]:
        if p["role"] == "input":
            out.append(next(inputs))
        elif p["name"] in scalars:
            out.append(scalars[p["name"]])
        elif p["role"] == "scalar":
            out.append(1.0)
        else:
            out.append(None)
    return out


# --- the simulator cache ------------------------------------------------------------------------


def test_a_corrupted_cached_library_is_detected_and_rebuilt(tmp_path):
    """Guard: simbuild._verified (the built file's own sha256, recorded beside it)."""
    cache, core = tmp_path / "cache", tiny_core(tmp_path / "core")
    lib = build_simulator(cache_dir=cache, core_dir=core)
    real = lib.parent / REAL_NAME
    good = real.read_bytes()
    assert (lib.parent / DIGEST_NAME).read_text().strip()
    real.write_bytes(good[: len(good) // 2])  # truncated, as by a full disk or a killed copy
    again = build_simulator(cache_dir=cache, core_dir=core)
    assert again == lib and real.read_bytes() == good  # rebuilt in place, byte for byte
    real.write_bytes(good[:-1] + bytes([good[-1] ^ 0xFF]))  # same size, one byte flipped
    build_simulator(cache_dir=cache, core_dir=core)
    assert real.read_bytes() == good


def test_processes_that_find_a_corrupted_library_at_once_rebuild_it_once(tmp_path):
    """Guard: _verified under the build lock, digest then file renamed into place."""
    cache, core = tmp_path / "cache", tiny_core(tmp_path / "core")
    lib = build_simulator(cache_dir=cache, core_dir=core)
    real = lib.parent / REAL_NAME
    good = real.read_bytes()
    real.write_bytes(b"\x7fELF truncated")
    go = tmp_path / "go"
    script = textwrap.dedent(f"""
        import hashlib, time
        from pathlib import Path
        from aclnngen.runtime.sim.build import build_simulator
        while not Path({str(go)!r}).exists():
            time.sleep(0.005)
        path = build_simulator(cache_dir={str(cache)!r}, core_dir={str(core)!r})
        print(path, hashlib.sha256(path.read_bytes()).hexdigest())
    """)
    procs = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    go.touch()
    results = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [r[1] for r in results]
    assert {r[0].strip() for r in results} == {f"{lib} {hashlib.sha256(good).hexdigest()}"}
    assert real.read_bytes() == good and not list(lib.parent.glob(".tmp-*"))


@pytest.fixture
def sleeping_compiler(tmp_path):
    """A compiler that answers --version and then hangs (and forks a child that hangs too)."""
    cc = tmp_path / "slowcc"
    cc.write_text(
        textwrap.dedent("""\
        #!/bin/sh
        if [ "$1" = "--version" ]; then echo "slowcc 1.0"; exit 0; fi
        sleep 120 &
        sleep 120
    """)
    )
    cc.chmod(0o755)
    return cc


def test_a_hanging_compiler_is_stopped_after_the_timeout(tmp_path, sleeping_compiler, monkeypatch):
    """Guard: simbuild._run_compiler (ACLNNGEN_CC_TIMEOUT, the process group killed)."""
    monkeypatch.setenv("CC", str(sleeping_compiler))
    monkeypatch.setenv(TIMEOUT_ENV, "1.5")
    start = time.monotonic()
    with pytest.raises(SimulatorBuildError) as info:
        build_simulator(cache_dir=tmp_path / "cache")
    elapsed = time.monotonic() - start
    assert elapsed < 20, elapsed
    text = str(info.value)
    assert str(sleeping_compiler) in text and "1.5 s" in text and TIMEOUT_ENV in text


@pytest.mark.parametrize("value", ["0", "-3", "soon", "inf"])
def test_a_bad_timeout_setting_is_named(tmp_path, sleeping_compiler, monkeypatch, value):
    monkeypatch.setenv("CC", str(sleeping_compiler))
    monkeypatch.setenv(TIMEOUT_ENV, value)
    with pytest.raises(SimulatorBuildError, match=TIMEOUT_ENV):
        build_simulator(cache_dir=tmp_path / "cache")


def test_the_timeout_setting_is_in_the_readme():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert TIMEOUT_ENV in text and "ACLNNGEN_SIM_MEMORY_LIMIT" in text


# --- device memory --------------------------------------------------------------------------------


def _subprocess(code: str, **env) -> dict:
    full = {k: v for k, v in os.environ.items() if k not in ("ACLNNGEN_BACKEND", "ACLNNGEN_SIM_MEMORY_LIMIT")}
    full.update(env)  # the default memory limit unless the test sets one
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=full, timeout=300
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


_BROADCAST = """
    import json, resource, importlib
    import numpy as np
    from aclnngen.runtime.call import bind
    from aclnngen.runtime.errors import AclRuntimeError
    meta = importlib.import_module("aclnngen.generated.meta.{snake}").META
    a = np.ones((1 << 16, 1), np.float32)
    b = np.ones((1, 1 << 15), np.float32)    # broadcast together: 2**31 elements, 8 GiB
    result = {{}}
    try:
        bind(meta)(*[a if p["name"] == {first!r} else b if p["role"] == "input" else None for p in meta["params"]], validate={validate})
        result["error"] = None
    except AclRuntimeError as exc:
        result["error"] = [exc.status, str(exc)]
    result["rss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps(result))
"""


@pytest.mark.parametrize("validate", [True, False])
def test_broadcasting_to_two_to_the_31_elements_fails_with_207001(validate):
    """Guard: the device-memory cap in aclrtMalloc (runtime/sim/sim_runtime.c, default 4 GiB at
    most); without it the output alone is 8 GiB and the kernel's temporaries several times that."""
    meta = _elementwise_two_input_op()
    first = next(p["name"] for p in meta["params"] if p["role"] == "input")
    got = _subprocess(_BROADCAST.format(snake=meta["snake"], first=first, validate=validate))
    assert got["error"] is not None, got
    status, text = got["error"]
    assert status == ACL_ERROR_RT_MEMORY_ALLOCATION and "ACLNNGEN_SIM_MEMORY_LIMIT" in text
    assert got["rss_mib"] < 1024  # refused before anything of that size was touched


def test_the_memory_limit_is_configurable():
    meta = _elementwise_two_input_op()
    code = f"""
        import json, importlib
        import numpy as np
        from aclnngen.runtime.call import bind
        from aclnngen.runtime.errors import AclRuntimeError
        meta = importlib.import_module("aclnngen.generated.meta.{meta["snake"]}").META
        op = bind(meta)
        def call(n):
            x = np.ones(n, np.float32)
            try:
                op(*[x if p["role"] == "input" else None for p in meta["params"]])
                return None
            except AclRuntimeError as exc:
                return [exc.status, str(exc)]
        print(json.dumps({{"small": call(1000), "large": call(1 << 20)}}))
    """
    got = _subprocess(code, ACLNNGEN_SIM_MEMORY_LIMIT="1M")
    assert got["small"] is None
    assert got["large"][0] == ACL_ERROR_RT_MEMORY_ALLOCATION and "1048576 bytes" in got["large"][1]
    bad = _subprocess(code, ACLNNGEN_SIM_MEMORY_LIMIT="lots")
    assert bad["small"][0] == ACL_ERROR_RT_MEMORY_ALLOCATION and "ACLNNGEN_SIM_MEMORY_LIMIT=lots" in bad["small"][1]


# --- prepared calls -------------------------------------------------------------------------------


def test_a_dropped_prepared_call_frees_its_descriptors():
    """Guard: the weakref.finalize of Prepared (call._Descriptors.release)."""
    meta = _elementwise_two_input_op()
    op = bind(meta)
    x = np.ones(4, np.float32)
    sim_backend()
    session.synchronize()
    before = leak_counters()
    prepared = op.prepare(*_args(meta, inputs=(x, x)))
    during = leak_counters()
    assert during["tensors"] > before["tensors"] and during["executors"] == before["executors"] + 1
    del prepared  # neither launched nor closed
    gc.collect()
    assert leak_counters() == before


def test_finish_before_launch_is_refused():
    """Guard: Prepared.finish checks `launched` (else the outputs' uninitialised memory, NaN)."""
    meta = _elementwise_two_input_op()
    x = np.ones(4, np.float32)
    with bind(meta).prepare(*_args(meta, inputs=(x, x))) as prepared:
        with pytest.raises(CallOrderError, match="before a successful launch"):
            prepared.finish()
        prepared.launch()
        result = prepared.finish()  # still usable after the refusal
    assert np.isfinite(np.asarray(result)).all()
    with pytest.raises(CallOrderError, match="closed"):
        prepared.finish()


# --- scalars ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("validate", [True, False])
def test_a_scalar_that_does_not_fit_its_dtype_is_refused(validate):
    """Guard: validation.scalar_misfit, in validate() and in the binding's aclScalar conversion
    (the only guard with validate=False: the library only ever sees the converted value)."""
    meta, p = _op_with_float_scalar()
    x = np.ones(3, np.float16)
    args = _args(meta, inputs=[x] * sum(q["role"] == "input" for q in meta["params"]), scalars={p["name"]: 1e300})
    with pytest.raises(AclnnValidationError) as info:
        bind(meta)(*args, validate=validate)
    err = info.value
    assert err.status == ACLNN_ERR_PARAM_INVALID and err.param == p["name"]
    assert "1e+300" in str(err) and (p.get("scalar_dtype") or "float32") in str(err)
    # with validation on, the validator refuses it (its errors name the family), before any copy
    # to the device; without, the binding's conversion does (it knows no family)
    assert (err.family is not None) == validate


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 0.5])
def test_nan_inf_and_ordinary_values_fit(value):
    from aclnngen.runtime.validation import scalar_misfit

    assert scalar_misfit(value, "float16") is None


@pytest.mark.parametrize(
    ("value", "dtype"),
    [(1e300, "float32"), (70000.0, "float16"), (10**400, "float64"), (2**63, "int64"), (1.5, "int32"), (2, "bool")],
)
def test_values_that_do_not_fit(value, dtype):
    from aclnngen.runtime.validation import scalar_misfit

    assert dtype in scalar_misfit(value, dtype)
