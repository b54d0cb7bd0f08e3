"""The wheel is complete: built with `pip wheel`, installed into a fresh venv and used from a folder
outside the checkout, aclnngen validates, generates a custom package from specs that hold only
ops/ (the tables fall back to the built-in ones), runs every op, and the custom package imports and
calls its op on the simulator. Slow (a build and a venv), but it runs in CI."""

from __future__ import annotations

import shutil
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest
from aclnngen.cachedir import cache_root
from isolated import (
    REPO,
    build_isolation,
    copy_repository,
    clean_env,
    fresh_venv,
    pip_install,
    run,
    type_check,
    venv_env,
)

pytestmark = pytest.mark.slow(
    reason="builds a wheel, installs it into a fresh venv and runs it from outside the checkout"
)

CUSTOM_SPECS = REPO / "tests" / "data" / "custom_specs" / "ops"
BUILTIN_OP = sorted((REPO / "specs" / "ops").glob("*.yaml"))[0].stem


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    dest = tmp_path_factory.mktemp("wheel")
    # built from a copy of the tracked files, as from a clone: a build without isolation writes
    # build/ and aclnngen.egg-info beside its sources, which must not be the user's checkout
    source = copy_repository(dest / "source")
    built = run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", *build_isolation(), "-w", dest / "dist", source],
        env=clean_env(),
        cwd=dest,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (dest / "dist").glob("aclnngen-*.whl")
    python = fresh_venv(dest / "venv")
    pip_install(python, wheel)
    work = dest / "work"  # outside the checkout, with nothing of it around
    work.mkdir()
    return wheel, python, work


def _cache() -> str:
    """This run's cache, for the installed aclnngen too: the simulator and kernels it builds are
    keyed by the bytes of their sources, wherever they lie, so the wheel's (installed in the venv)
    share the checkout's library when they are the same, and a source missing from the wheel or
    different in it still fails or builds a library of its own."""
    return str(cache_root())


def _aclnngen(python: Path, work: Path, *args, **env):
    return run([python.parent / "aclnngen", *args], cwd=work, env=venv_env(python, ACLNNGEN_CACHE_DIR=_cache(), **env))


def test_the_wheel_holds_the_spec_tables_schema_and_markers(installed):
    wheel, _, _ = installed
    names = set(zipfile.ZipFile(wheel).namelist())
    specs = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "specs").rglob("*") if p.is_file())
    assert {"specs/products.yaml", "specs/abi.yaml", "specs/schema/op.schema.json"} <= set(specs)
    missing = [s for s in specs if f"aclnngen/{s}" not in names]
    assert not missing, f"left out of the wheel: {missing}"
    assert {"aclnngen/__init__.py", "aclnngen/py.typed"} <= names


def test_aclnngen_resolves_to_the_venv_not_a_checkout(installed):
    _, python, work = installed
    probe = "import aclnngen, aclnngen.codegen.tables as t; print(aclnngen.__file__); print(t.BUILTIN_SPECS_DIR); print(aclnngen.__version__)"
    done = run([python, "-c", probe], cwd=work, env=venv_env(python))
    assert done.returncode == 0, done.stderr
    init, specs, version = done.stdout.split()
    site = python.parent.parent / "lib"
    for path in (init, specs):
        assert Path(path).is_relative_to(site) and not Path(path).is_relative_to(REPO), path
    shown = _aclnngen(python, work, "--version")
    assert shown.returncode == 0 and shown.stdout.strip() == f"aclnngen {version}", shown.stdout + shown.stderr


def test_type_checkers_type_each_binding_call_by_its_arrays(installed, tmp_path, mypy_cache):
    _, python, _ = installed
    checked = type_check(python, tmp_path, mypy_cache)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]


def test_an_installed_aclnngen_validates_generates_runs_and_imports_a_custom_package(installed):
    _, python, work = installed
    specs = work / "specs"
    shutil.copytree(CUSTOM_SPECS, specs / "ops")  # no products.yaml or abi.yaml: the built-in ones apply
    for args in (
        ["validate"],
        ["validate", specs],
        ["specs", "--specs", specs],
        ["generate", "--specs", specs, "--out", work / "pkg" / "custom_ops"],
        ["check", "--specs", specs, "--out", work / "pkg" / "custom_ops"],
        # one built-in op shows the installed simulator and kernels run; every op's run is the
        # suite's elsewhere (each op's kernels compile on its first call, cold in this venv)
        ["run", "--one-dtype", "--ops", BUILTIN_OP],
    ):
        done = _aclnngen(python, work, *args)
        assert done.returncode == 0, f"aclnngen {args}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        assert "Traceback" not in done.stderr
    op = sorted(CUSTOM_SPECS.glob("*.yaml"))[0].stem
    script = textwrap.dedent(f"""
        import importlib
        from aclnngen.verify import cases, opcheck
        meta = importlib.import_module("custom_ops.meta.{op}").META
        binding = getattr(importlib.import_module("custom_ops.ops.{op}"), "{op}")
        reference = importlib.import_module("custom_ops.reference.{op}")
        op = opcheck.OpUnderTest(meta, reference=reference, binding=binding, version=meta["cann_version"])
        values = dict(cases.make_values(meta, "contiguous", "float32", version=meta["cann_version"], seed=0))
        positional, keywords, _ = op.split(values)
        got = binding(*positional, **keywords)
        got = got if isinstance(got, tuple) else (got,)
        want = op.run_reference(values)
        # the simulator's compiled kernel against the reference: within the precision policy
        for p, g, w in zip(op.of_roles("output"), got, want):
            opcheck.renderings_agree(op, values, p.py, g, w)
        print("called", meta["name"], "on the simulator")
    """)
    called = run([python, "-c", script], cwd=work / "pkg", env=venv_env(python, ACLNNGEN_CACHE_DIR=_cache()))
    assert called.returncode == 0 and "called" in called.stdout, called.stdout + called.stderr
