"""Fresh environments for the tests that try aclnngen as a new user would: a copy of the
repository's tracked files with nothing beside it, a fresh virtual environment, a built wheel.

The fresh venv sees the site-packages of the interpreter running the tests (a venv, a conda env or
the system Python alike), so the dependencies need no download: their folders are named in a .pth
file as plain paths, so the packages in them import but the .pth files in them (the developer's
editable install of this checkout among them) are not run.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

from repo_paths import REPO

TIMEOUT = 1800

# Variables of the developer's shell that would point a fresh copy back at this checkout's material.
LEAKY_ENV = (
    "ACLNNGEN_REFERENCE",
    "ACLNNGEN_SEEDS",
    "ACLNNGEN_DIRECTIVES",
    "ACLNNGEN_REQUIRE_EXTERNAL",
    "ACLNNGEN_BACKEND",
    "ACLNNGEN_SIM_SOC",
    "PYTHONPATH",
    "PYTEST_XDIST_WORKER",
    "PYTEST_ADDOPTS",
    "VIRTUAL_ENV",
)


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


def dependency_folders() -> list[str]:
    """The running interpreter's site-packages folders, where the tests' dependencies are; in a venv
    made by fresh_venv (a benchmark's copy of the checkout), also those its .pth file adds."""
    found = [sysconfig.get_paths()[key] for key in ("purelib", "platlib")]
    found += site.getsitepackages() + ([site.getusersitepackages()] if site.ENABLE_USER_SITE else [])
    found += [p for p in sys.path if os.path.basename(p) in ("site-packages", "dist-packages")]
    return list(dict.fromkeys(f for f in found if os.path.isdir(f)))


def _importable(*modules: str) -> bool:
    return all(importlib.util.find_spec(m) is not None for m in modules)


def fresh_venv(where: Path) -> Path:
    """A new venv of the running interpreter's Python that imports its dependencies (not its
    aclnngen); returns its python."""
    # pip, like every other dependency, comes from the running interpreter's folders: ensurepip
    # would spend seconds installing a copy of it
    made = run([sys.executable, "-m", "venv", *(["--without-pip"] if _importable("pip") else []), where])
    assert made.returncode == 0, made.stderr
    python = where / "bin" / "python"
    purelib = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"])
    assert purelib.returncode == 0, purelib.stderr
    # plain paths, appended after the venv's own site-packages: what pip installs there wins
    (Path(purelib.stdout.strip()) / "_aclnngen_test_dependencies.pth").write_text(
        "\n".join(dependency_folders()) + "\n", encoding="utf-8"
    )
    return python


def build_isolation() -> list[str]:
    """pip's flag to build aclnngen with the running interpreter's setuptools when it has one new
    enough: an isolated build installs [build-system]'s requirements into a new environment, 2 to 3
    s per build. setuptools>=77 (what pyproject.toml asks for) builds wheels by itself (its own
    bdist_wheel since 70.1), so the `wheel` package listed beside it is not needed here: a venv made
    the README's way has setuptools but not wheel."""
    if not _importable("setuptools"):
        return []
    major = importlib.metadata.version("setuptools").split(".")[0]
    return ["--no-build-isolation"] if major.isdigit() and int(major) >= 77 else []


def pip_install(python: Path, *args) -> None:
    # --force-reinstall: an aclnngen the base interpreter may have must not satisfy the requirement
    command = [python, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", *build_isolation()]
    done = run([*command, *args], env=clean_env())
    assert done.returncode == 0, done.stdout + done.stderr


def venv_env(python: Path, **extra: str) -> dict:
    """The environment of a shell with the venv activated."""
    bin_dir = str(python.parent)
    return clean_env(
        VIRTUAL_ENV=str(python.parent.parent), PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""), **extra
    )


# a value of each hint a binding's required parameter may carry, by the hint's text
_HINT_VALUES = {"float": "1.0", "bool": "True", "int": "1", "str": "'none'", "Sequence[int]": "[1]"}


def typing_script() -> str:
    """A script calling every generated binding, once with NumPy arrays and once with device arrays,
    whose annotations mypy accepts only when the overloads type each call's result as it is."""
    import importlib
    import inspect

    from aclnngen.generated import ops

    lines = [
        "import numpy as np",
        "from aclnngen.runtime.arrays import DeviceArray",
        "x = np.ones((2, 3), np.float32)",
        "d = DeviceArray.empty((2, 3), np.float32)",
    ]
    for module in sorted(ops.__all__):
        binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{module}"), module)
        signature = inspect.signature(binding)
        several = str(signature.return_annotation).startswith("tuple[")
        for tensor, result in (("x", "np.ndarray"), ("d", "DeviceArray")):
            args = []
            for p in signature.parameters.values():
                if p.kind is p.KEYWORD_ONLY or p.default is not p.empty:
                    continue
                args.append(tensor if "TensorLike" in str(p.annotation) else _HINT_VALUES[str(p.annotation)])
            hint = f"tuple[{result}, ...]" if several else result
            lines += [
                f"from aclnngen.generated.ops.{module} import {module}",
                f"{module}_{tensor}: {hint} = {module}({', '.join(args)})",
            ]
    return "\n".join(lines) + "\n"


def type_check(python: Path, where: Path, cache: Path | None = None, **env: str) -> subprocess.CompletedProcess:
    """mypy, run by `python`, on typing_script() written into `where`, with its cache in `cache`
    (default: a folder of `where`)."""
    script = where / "use_bindings.py"
    script.write_text(typing_script(), encoding="utf-8")
    cache = where / ".mypy_cache" if cache is None else cache
    return run(
        [python, "-m", "mypy", "--cache-dir", cache, "--no-error-summary", script],
        cwd=where,
        env=venv_env(python, **env),
    )
