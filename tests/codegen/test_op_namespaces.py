"""An op is its package and its name: a custom package may define an op named like a built-in one.

The custom package is generated from a copy of a built-in spec whose output formula is replaced
by `2 * <first input>`; both packages then run side by side on the simulator, each with its own
formula, and the built-in op's results are bit-identical to a process that never saw the
custom package. Where one symbol would have to serve two packages, the call fails with
OpNamespaceError naming both (never the other package's op, silently).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from aclnngen.codegen import generate
from aclnngen.runtime.sim import kernels as simkernels
from aclnngen.runtime.errors import OpNamespaceError

from simtools import sim_backend
from repo_paths import REPO, TESTS

BUILTIN = "aclnngen.generated"


def _first_single_output_op():
    """A built-in spec with one output whose formula is one `name: expression` line and no required
    scalar or attribute, and the py name of its first input (the spec is data: no op is named here)."""
    for path in sorted((REPO / "specs" / "ops").glob("*.yaml")):
        text = path.read_text(encoding="utf-8")
        snake = path.stem
        meta = __import__(f"aclnngen.generated.meta.{snake}", fromlist=["META"]).META
        if len(meta["outputs"]) != 1:
            continue
        # the prelude passes float32 arrays for the inputs, positionally, and nothing else
        required = [
            p for p in meta["params"] if p["role"] not in ("output", "optional_scalar") and p.get("default") is None
        ]
        if any(p["role"] != "input" for p in required):
            continue
        inputs = [p["py"] for p in meta["params"] if p["role"] == "input"]
        out = next(p["py"] for p in meta["params"] if p["name"] == meta["outputs"][0])
        line = re.search(rf"^(\s+){re.escape(out)}: .+$", text, re.MULTILINE)
        if line and inputs:
            return path, meta, text[: line.start()] + f"{line.group(1)}{out}: {inputs[0]} * 2" + text[line.end() :]
    pytest.skip("no built-in spec with a one-line single-output formula")


@pytest.fixture(scope="module")
def twin(tmp_path_factory):
    """(snake name, META of the built-in, folder holding the custom package `twin_ops`)."""
    path, meta, changed = _first_single_output_op()
    root = tmp_path_factory.mktemp("twin")
    (root / "specs" / "ops").mkdir(parents=True)
    (root / "specs" / "ops" / path.name).write_text(changed, encoding="utf-8")
    out = root / "pkg" / "twin_ops"
    # generated in this process (the generator's API, as `generate --specs --out` calls it): the
    # subject is the packages side by side in the processes below, not the command line
    layout = generate.package_layout(out)
    generate.write(generate.plan(root / "specs", layout), out, layout)
    return path.stem, meta, out.parent


def _run(code: str, pkg_root: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(pkg_root), str(TESTS)]))
    for name in ("ACLNNGEN_BACKEND", "PYTEST_XDIST_WORKER"):
        env.pop(name, None)
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


_PRELUDE = """
    import importlib, json
    import numpy as np
    snake = {snake!r}
    builtin = getattr(importlib.import_module("aclnngen.generated.ops." + snake), snake)
    META = importlib.import_module("aclnngen.generated.meta." + snake).META
    inputs = [p for p in META["params"] if p["role"] == "input"]
    rng = np.random.default_rng(7)
    args = [rng.standard_normal(6).astype(np.float32) for _ in inputs]
    def bits(a):
        return np.asarray(a).tobytes().hex()
"""


def test_a_custom_op_named_like_a_builtin_keeps_both_behaviours(twin):
    snake, meta, pkg_root = twin
    alone = _run(
        _PRELUDE.format(snake=snake)
        + """
    print(json.dumps({"builtin": bits(builtin(*args))}))
    """,
        pkg_root,
    )
    both = _run(
        _PRELUDE.format(snake=snake)
        + """
    from aclnngen.runtime.sim import kernels as simkernels
    custom = getattr(importlib.import_module("twin_ops.ops." + snake), snake)
    first = bits(builtin(*args))
    mine = custom(*args)
    again = bits(builtin(*args))
    mine_again = custom(*args)
    packages = sorted({r["package"] for r in simkernels.recorded()})
    print(json.dumps({"first": first, "again": again, "mine": bits(mine), "mine_again": bits(mine_again),
                      "expected": bits(args[0] * np.float32(2)), "packages": packages}))
    """,
        pkg_root,
    )
    assert both["first"] == both["again"] == alone["builtin"]  # the built-in, bit for bit
    assert both["mine"] == both["mine_again"] == both["expected"]  # the custom formula
    assert both["mine"] != alone["builtin"]
    assert both["packages"] == sorted([BUILTIN, "twin_ops"])  # the hooks saw each package's op


def test_a_package_imported_after_the_first_call_needs_a_reset(twin):
    snake, meta, pkg_root = twin
    got = _run(
        _PRELUDE.format(snake=snake)
        + """
    from aclnngen.runtime import session
    from aclnngen.runtime.errors import BackendError
    before = bits(builtin(*args))                       # the simulator is built now
    custom = getattr(importlib.import_module("twin_ops.ops." + snake), snake)
    try:
        custom(*args)
        refused = ""
    except BackendError as exc:
        refused = str(exc)
    session.reset()
    print(json.dumps({"refused": refused, "mine": bits(custom(*args)), "expected": bits(args[0] * np.float32(2)),
                      "before": before, "after": bits(builtin(*args))}))
    """,
        pkg_root,
    )
    assert "twin_ops" in got["refused"] and "session.reset()" in got["refused"]
    assert got["mine"] == got["expected"] and got["before"] == got["after"]


def test_one_symbol_for_two_packages_is_refused_naming_both():
    """A package without entry points of its own would get the built-in's symbol: refused."""
    b = sim_backend()
    meta = _a_builtin_meta()
    with pytest.raises(OpNamespaceError) as info:
        b.op_functions(meta, "someone_elses_ops")
    text = str(info.value)
    assert "'someone_elses_ops'" in text and f"'{BUILTIN}'" in text and meta["symbol"] in text
    assert info.value.package == "someone_elses_ops" and info.value.holder == BUILTIN
    b.op_functions(meta, BUILTIN)  # the built-in package itself is served


def test_on_libraries_of_unknown_packages_the_first_package_keeps_the_symbol():
    """CANN's op libraries carry no package: one process, one aclnnXxx, claimed by first use."""
    b = sim_backend()
    b._claim("aclnnNamespaceProbe", "pkg_one", None, "libcust_opapi.so")
    b._claim("aclnnNamespaceProbe", "pkg_one", None, "libcust_opapi.so")  # the same package again
    with pytest.raises(OpNamespaceError) as info:
        b._claim("aclnnNamespaceProbe", "pkg_two", None, "libcust_opapi.so")
    assert "'pkg_one'" in str(info.value) and "'pkg_two'" in str(info.value)


def test_op_ids_carry_the_package():
    assert simkernels.split_op_id(f"{BUILTIN}:aclnnX") == (BUILTIN, "aclnnX")
    assert simkernels.split_op_id(":aclnnX") == (None, "aclnnX")
    assert simkernels.split_op_id("aclnnX") == (None, "aclnnX")
    assert 'ACLSIM_OP_ID("' in (REPO / "generated" / "c" / "sim_ops.c").read_text(encoding="utf-8")


def _a_builtin_meta():
    snake = next(p.stem for p in sorted((REPO / "generated" / "meta").glob("*.py")) if p.stem != "__init__")
    return __import__(f"aclnngen.generated.meta.{snake}", fromlist=["META"]).META


def test_directives_are_scoped_by_package(tmp_path, monkeypatch):
    """Guard: directives are found beside the tests they are about (directives.near), so the
    repository's file reaches the built-in ops' tests only, never a custom package's op of the same
    name, and a package's own file reaches its own tests."""
    from aclnngen.verify import directives

    monkeypatch.delenv(directives.ENV, raising=False)
    repo_file = (REPO / "tests" / directives.FILE_NAME).resolve()
    builtin_test = next((REPO / "tests" / "generated").glob("test_*.py"))
    assert directives.near(builtin_test).resolve() == repo_file
    package_tests = tmp_path / "twin_ops" / "tests"
    package_tests.mkdir(parents=True)
    test_file = package_tests / "test_swish.py"
    test_file.write_text("", encoding="utf-8")
    assert directives.near(test_file) is None
    own = package_tests / directives.FILE_NAME
    own.write_text("expected_failures: []\n", encoding="utf-8")
    assert directives.near(test_file) == own.resolve()


def test_generated_cases_are_marked_with_their_package(twin):
    import importlib

    from aclnngen.verify.opcheck import OpUnderTest

    snake, meta, _ = twin
    reference = importlib.import_module(f"aclnngen.generated.reference.{snake}")
    op = OpUnderTest(meta, reference=reference, binding=None, version=meta["cann_version"])
    marker = op.case("reference", None, "float32", id="x").marks[0]
    assert op.package == BUILTIN and marker.kwargs["package"] == BUILTIN


def test_entry_points_without_their_package_are_refused(twin, tmp_path):
    """Guard: backend._check_op_ids (an old package's entry points would reach the built-in op)."""
    import shutil

    snake, meta, pkg_root = twin
    old = tmp_path / "old"
    shutil.copytree(pkg_root / "twin_ops", old / "old_twin_ops")
    c = old / "old_twin_ops" / "c" / "sim_ops.c"
    c.write_text(re.sub(r"ACLSIM_OP_ID\(([^)]*)\)", r"\1", c.read_text(encoding="utf-8")), encoding="utf-8")
    code = f"""
        import importlib, json
        from aclnngen.runtime import session
        from aclnngen.runtime.errors import BackendError
        importlib.import_module("old_twin_ops.ops.{snake}")
        try:
            session.backend()
            print(json.dumps({{"refused": None}}))
        except BackendError as exc:
            print(json.dumps({{"refused": str(exc)}}))
    """
    got = _run(code, old)
    assert got["refused"] and "old_twin_ops" in got["refused"] and "ACLSIM_OP_ID" in got["refused"]
