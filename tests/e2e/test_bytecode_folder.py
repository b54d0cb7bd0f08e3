"""The suite's bytecode folder starts with the libraries' own bytecode linked in
(tests/bytecode_folder.py), where Python looks for it under PYTHONPYCACHEPREFIX: a process reads it
instead of compiling the libraries again, and never writes through a link."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest
from bytecode_folder import library_folders, link_installed_bytecode, rewrite_ahead

TAG = sys.implementation.cache_tag


def _library(root):
    """A library folder: a package with its bytecode, its test suite's, and an optimised one."""
    for folder in ("pkg/__pycache__", "pkg/tests/__pycache__"):
        (root / folder).mkdir(parents=True)
    for name in ("pkg/__init__.py", "pkg/mod.py", "pkg/tests/test_mod.py"):
        (root / name).write_text("x = 1\n", encoding="utf-8")
    for name in (f"__init__.{TAG}.pyc", f"mod.{TAG}.pyc", f"mod.{TAG}.opt-1.pyc"):
        (root / "pkg" / "__pycache__" / name).write_bytes(b"")
    (root / "pkg" / "tests" / "__pycache__" / f"test_mod.{TAG}.pyc").write_bytes(b"")


def _looked_up(prefix, source) -> str:
    """Where Python looks for `source`'s bytecode under the bytecode folder `prefix`."""
    before = sys.pycache_prefix
    sys.pycache_prefix = str(prefix)
    try:
        return importlib.util.cache_from_source(str(source))
    finally:
        sys.pycache_prefix = before


def test_each_modules_bytecode_is_linked_where_python_looks_for_it(tmp_path):
    library, prefix = tmp_path / "lib", tmp_path / "bytecode"
    _library(library)
    assert link_installed_bytecode(str(prefix), [str(library)]) == 2
    for name in ("__init__", "mod"):
        found = _looked_up(prefix, library / "pkg" / f"{name}.py")
        assert os.path.islink(found) and os.readlink(found) == str(
            library / "pkg" / "__pycache__" / f"{name}.{TAG}.pyc"
        )
    assert not os.path.exists(_looked_up(prefix, library / "pkg" / "tests" / "test_mod.py"))  # a test suite's


def test_a_process_reads_the_linked_bytecode_of_the_standard_library_and_its_dependencies(tmp_path):
    import json

    import yaml

    # the folders linked are the libraries' (json's and yaml's alone here: the whole walk is the suite's)
    folders = [os.path.dirname(m.__file__) for m in (json, yaml)]
    assert all(any(Path(f).is_relative_to(root) for root in library_folders()) for f in folders), folders
    prefix = tmp_path / "bytecode"
    assert link_installed_bytecode(str(prefix), folders) > 0
    script = "import importlib.util as u, json, yaml; print(u.cache_from_source(json.__file__), u.cache_from_source(yaml.__file__))"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env={**env, "PYTHONPYCACHEPREFIX": str(prefix)}
    )
    assert done.returncode == 0, done.stderr
    for used in done.stdout.split():
        # still a link after the import, with writing on: read as valid, not compiled and rewritten
        assert used.startswith(str(prefix)) and os.path.islink(used), used


class _Worker:
    """`config` as an xdist worker sees it: the same configuration, with a worker's input."""

    def __init__(self, config, workerid: str, count: int):
        self._config, self.workerinput = config, {"workerid": workerid, "workercount": count}

    def __getattr__(self, name):
        return getattr(self._config, name)


def test_a_worker_writes_its_share_of_rewritten_test_modules_as_pytest_reads_them(request, tmp_path, monkeypatch):
    if request.config.getoption("assertmode") != "rewrite":
        pytest.skip("this run does not rewrite asserts (--assert=plain)")
    from _pytest.assertion import rewrite

    modules = []
    for n in range(4):
        modules.append(tmp_path / f"test_m{n}.py")
        modules[-1].write_text(f"def test_a():\n    assert {n} == 1\n", encoding="utf-8")
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "bytecode"))
    monkeypatch.setattr(sys, "dont_write_bytecode", False)

    def cached(module):
        return rewrite._read_pyc(module, rewrite.get_cache_dir(module) / (module.name[:-3] + rewrite.PYC_TAIL))

    assert (
        rewrite_ahead(_Worker(request.config, "gw0", 2), modules) == 0
    )  # the first worker's share: its own collection
    assert rewrite_ahead(_Worker(request.config, "gw1", 2), modules) == 2
    assert [cached(m) is not None for m in modules] == [False, True, False, True]
    # pytest's rewritten code, the assert turned into its explanation machinery
    assert "@pytest_ar" in cached(modules[1]).co_names
    assert rewrite_ahead(_Worker(request.config, "gw1", 2), modules) == 0  # written once
