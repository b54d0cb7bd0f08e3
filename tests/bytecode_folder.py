"""The bytecode folder the suite's processes share (tests/conftest.py sets PYTHONPYCACHEPREFIX to
it): what it starts with."""

from __future__ import annotations

import os
import sys
import sysconfig

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
