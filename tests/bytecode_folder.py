"""The bytecode folder the suite's processes share (tests/conftest.py sets PYTHONPYCACHEPREFIX to
it): what it starts with (the libraries' own bytecode), and the workers' shares of the test
modules' rewritten bytecode, written before they collect."""

from __future__ import annotations

import os
import sys
import sysconfig
from pathlib import Path

from isolated import dependency_folders

# Folders no test imports from: the libraries' own test suites; each site-packages is a root of its own.
_NOT_WALKED = {"test", "tests", "site-packages", "dist-packages"}


def memory_folder() -> str | None:
    """A folder in memory for the bytecode folder, where the system has one (Linux's /dev/shm):
    thousands of links and files made and removed per run cost a loaded disk seconds (3.6 s to
    link, 2.4 s to remove here), memory a tenth of a second; else None (the default temporary
    folder). A module whose bytecode cannot be written there (a full folder) is only compiled."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK | os.X_OK) else None


def library_folders() -> list[str]:
    """The standard library's folders and the dependencies' (this interpreter's site-packages)."""
    paths = sysconfig.get_paths()
    found = [paths["stdlib"], paths["platstdlib"], *dependency_folders()]
    return list(dict.fromkeys(os.path.abspath(f) for f in found if os.path.isdir(f)))


def link_installed_bytecode(folder: str, roots: list[str] | None = None) -> int:
    """Links into `folder` the bytecode the libraries already have beside their sources (the
    standard library's, and what pip wrote at install), where a bytecode folder makes Python look
    for it: Python reads a module's bytecode from that folder only, so without the links every
    worker compiled torch, NumPy, hypothesis and pytest again (4 to 5 CPU-s each, in a fresh
    folder). A link is read like the file; a module whose source changed since is compiled and its
    new bytecode replaces the link, never the file linked to. The checkout's modules have none to
    link: the first process that imports one compiles it into the folder. Returns the count."""
    tag = f".{sys.implementation.cache_tag}.pyc"
    linked = 0
    for root in library_folders() if roots is None else roots:
        for here, dirs, files in os.walk(root):
            if os.path.basename(here) != "__pycache__":
                dirs[:] = [d for d in dirs if d == "__pycache__" or d not in _NOT_WALKED]
                continue
            names = [n for n in files if n.endswith(tag) and "." not in n[: -len(tag)]]
            if not names:
                continue
            mirror = os.path.join(folder, os.path.dirname(here).lstrip(os.sep))
            os.makedirs(mirror, exist_ok=True)
            for name in names:
                try:
                    os.symlink(os.path.join(here, name), os.path.join(mirror, name))
                except FileExistsError:  # a folder reached from two roots
                    continue
                linked += 1
    return linked


def rewrite_ahead(config, modules: list[Path]) -> int:
    """Writes pytest's rewritten bytecode of this worker's share of `modules` (the test modules)
    into the bytecode folder before the worker collects them; returns how many it wrote.

    Every worker collects every test module, and each rewrote each one's asserts (4 CPU-s for the
    suite's, in a fresh folder) while the others did the same. Worker k of n (k > 0) rewrites
    every n-th module from the k-th first, so by the time a worker imports a module another has
    usually written it: each is rewritten about once. The bytecode is pytest's own (its rewrite,
    its file name, its atomic write), read by its import hook as if that worker had written it; a
    pytest whose internals differ, or one not rewriting (--assert=plain), is left to do its work."""
    workerinput = getattr(config, "workerinput", None)
    if not workerinput or sys.dont_write_bytecode or not sys.pycache_prefix:
        return 0
    index, count = (
        int(str(workerinput.get("workerid", "gw0")).removeprefix("gw") or 0),
        workerinput.get("workercount", 1),
    )
    if index == 0 or count < 2:
        return 0  # the first worker's share is what it collects itself
    try:
        from _pytest.assertion import rewrite

        hook = config.pluginmanager.rewrite_hook
        if not isinstance(hook, rewrite.AssertionRewritingHook):
            return 0
        state = config.stash[rewrite.assertstate_key]
        written = 0
        for module in modules[index::count]:
            cache = rewrite.get_cache_dir(module)
            pyc = cache / (module.name[:-3] + rewrite.PYC_TAIL)
            if rewrite._read_pyc(module, pyc) is not None:
                continue
            cache.mkdir(parents=True, exist_ok=True)
            source_hash, code = rewrite._rewrite_test(module, config)
            written += bool(rewrite._write_pyc(state, code, source_hash, pyc))
        return written
    except (ImportError, AttributeError, TypeError, OSError):
        return 0
