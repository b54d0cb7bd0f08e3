"""Fresh environments for the tests that try aclnngen as a new user would: a copy of the
repository's tracked files with nothing beside it, a fresh virtual environment, a built wheel.

The fresh venv sees the base interpreter's site-packages (--system-site-packages), so the
dependencies need no download, but not the developer's editable install of this checkout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 1800

# Variables of the developer's shell that would point a fresh copy back at this checkout's material.
LEAKY_ENV = ("ACLNNGEN_REFERENCE", "ACLNNGEN_SEEDS", "ACLNNGEN_DIRECTIVES", "ACLNNGEN_REQUIRE_EXTERNAL",
             "ACLNNGEN_BACKEND", "ACLNNGEN_SIM_SOC", "PYTHONPATH", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS",
             "VIRTUAL_ENV")


def run(args, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=TIMEOUT, **kwargs)


def clean_env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in LEAKY_ENV}
    env.update(extra)
    return env


def tracked_files() -> list[str]:
    """The repository's files as a clone has them: tracked, plus new files not ignored."""
    out = run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=REPO)
    assert out.returncode == 0, out.stderr
    return [f for f in out.stdout.split("\0") if f and (REPO / f).is_file()]


def copy_repository(dest: Path) -> Path:
    """`dest/repo`, a copy of the tracked files; nothing is beside it (no ../shared)."""
    root = dest / "repo"
    for name in tracked_files():
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target)
    assert not (dest / "shared").exists()
    return root


def fresh_venv(where: Path) -> Path:
    """A new venv over the base interpreter (not this one's venv); returns its python."""
    base = Path(sys.base_prefix) / "bin" / "python3"
    made = run([base, "-m", "venv", "--system-site-packages", where])
    assert made.returncode == 0, made.stderr
    return where / "bin" / "python"


def pip_install(python: Path, *args) -> None:
    # --force-reinstall: an aclnngen the base interpreter may have must not satisfy the requirement
    done = run([python, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", *args], env=clean_env())
    assert done.returncode == 0, done.stdout + done.stderr


def venv_env(python: Path, **extra: str) -> dict:
    """The environment of a shell with the venv activated."""
    bin_dir = str(python.parent)
    return clean_env(VIRTUAL_ENV=str(python.parent.parent), PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), **extra)
