"""aclnngen's build backend: setuptools' own, except for editable installs.

The installed package is one namespace whose folders live apart in the repository (codegen/ is
aclnngen.codegen, runtime/ is aclnngen.runtime, ...: `package-dir` in pyproject.toml). setuptools
installs such a layout editable through an import hook, which type checkers and editors cannot
follow. Here an editable install instead lays `build/editable/aclnngen/`, a folder of symlinks with
the installed layout (each mapped package a link to its folder), and the editable wheel holds a
`.pth` naming `build/editable`: a plain path, which mypy, pyright and the interpreter all follow.
Edits and new modules show at once, as with the hook; deleting `build/` undoes the install, and
the README's install command lays it again.
"""

from __future__ import annotations

import base64
import hashlib
import os
import shutil
import tempfile
import zipfile
from pathlib import Path

from setuptools import build_meta as _setuptools
from setuptools.build_meta import *  # noqa: F403  (every other hook is setuptools')
from setuptools.config.pyprojecttoml import read_configuration

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "aclnngen"
TREE = ROOT / "build" / "editable"


def _package_dirs() -> dict[str, Path]:
    """Each first-level subpackage of aclnngen and its folder, from pyproject.toml's package-dir."""
    mapping = read_configuration(ROOT / "pyproject.toml", expand=False)["tool"]["setuptools"]["package-dir"]
    found = {}
    for name, folder in mapping.items():
        parts = name.split(".")
        if len(parts) != 2 or parts[0] != PACKAGE:
            raise ValueError(
                f"pyproject.toml: package-dir {name!r}: only first-level subpackages of {PACKAGE} are laid as links"
            )
        found[parts[1]] = ROOT / folder
    return found


def _lay_tree() -> Path:
    """build/editable/aclnngen: links to the top-level package's files and to each mapped folder.
    Laid in a temporary folder beside it and renamed into place, so a reader never sees half."""
    TREE.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".editable-", dir=TREE.parent))
    staging.chmod(0o755)  # mkdtemp makes it private; an installed package is readable by all
    package = staging / PACKAGE
    package.mkdir()
    links = {entry.name: entry for entry in (ROOT / PACKAGE).iterdir() if entry.name != "__pycache__"}
    links.update(_package_dirs())
    for name, target in sorted(links.items()):
        os.symlink(os.path.relpath(target, package), package / name)
    if TREE.exists():
        shutil.rmtree(TREE)
    staging.rename(TREE)
    return TREE


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    if metadata_directory is None:
        metadata_directory = tempfile.mkdtemp(prefix="aclnngen-metadata-")
        metadata_directory = os.path.join(
            metadata_directory, _setuptools.prepare_metadata_for_build_editable(metadata_directory, config_settings)
        )
    dist_info = Path(metadata_directory)
    name_version = dist_info.name.removesuffix(".dist-info")
    wheel_name = f"{name_version}-py3-none-any.whl"
    files: dict[str, bytes] = {f"__editable__.{name_version}.pth": f"{_lay_tree()}\n".encode()}
    for path in sorted(dist_info.iterdir()):
        if path.is_file() and path.name not in ("RECORD", "WHEEL"):
            files[f"{dist_info.name}/{path.name}"] = path.read_bytes()
    files[f"{dist_info.name}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: aclnngen_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = f"{dist_info.name}/RECORD"
    lines = [_record_line(n, d) for n, d in files.items()] + [f"{record},,"]
    files[record] = ("\n".join(lines) + "\n").encode()
    target = Path(wheel_directory) / wheel_name
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for n, d in files.items():
            wheel.writestr(n, d)
    return wheel_name
