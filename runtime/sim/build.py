"""Builds the simulator's shared library on demand; nobody runs a compiler by hand.

`build_simulator()` compiles the generic core (`runtime/sim/*.c`) plus extra sources (the
generated `sim_ops.c`) with `$CC` (default `cc`) into a cache outside the source tree:

    $ACLNNGEN_CACHE_DIR, else $XDG_CACHE_HOME/aclnngen, else ~/.cache/aclnngen
        sim/<key>/_aclsim.so           the one real file
        sim/<key>/libaclsim.so         -> _aclsim.so   (one symlink per requested name)
        sim/<key>/_aclsim.so.sha256    the built file's own sha256, checked before every reuse
        sim/<key>/build-info.json      what was compiled, with which command
        sim/<key>.lock                 serialises builders of that key

`<key>` hashes every input that can change the result: the text of all core sources and headers,
of the extra sources and of the headers beside them or in the include directories, the flags,
the defines and the compiler's identity (`$CC --version`). Headers elsewhere (a relative
`#include "../x.h"`) are not tracked; keep what the build includes in those directories. Changing any of them builds a new library in a new
directory; an unchanged tree reuses the cached one. Builders of the same key (pytest-xdist
workers, several processes) take an exclusive `fcntl` lock, compile into a temporary file and
rename it into place, so readers never see a partial library.

Every requested name is a symlink to the same file on purpose: the dynamic loader recognises the
file behind all of them, so `libascendcl.so`, `libnnopbase.so` and `libopapi.so` built together
load as ONE library with ONE state (device memory allocated through one name is visible to
tensors checked through another). Whoever lays out a fake CANN install must link to these names
(or to the returned path), not copy them.

An op library apart from the core (`link_core=`): CANN keeps the op symbols out of the runtime
and tensor libraries (libopapi.so / libopapi_nn.so next to libascendcl.so and libnnopbase.so).
`build_simulator(ops_c, link_core=core_dir / "libnnopbase.so")` compiles ONLY the extra sources
and links them against a core built earlier (`build_simulator(lib_names=("libascendcl.so",
"libnnopbase.so"))`, no extra sources): the result has `DT_NEEDED libnnopbase.so` (the file name
of `link_core`) and `RUNPATH $ORIGIN`, like CANN's own op libraries. The loader resolves that
name in the directory the op library was loaded from (a symlink's own directory, not its
target's), so put the op library beside a `libnnopbase.so` that leads to the same core file the
runtime loaded: the loader then recognises the file (same inode) and binds the op entry points to
the ONE loaded core and its state, whatever the dlopen flags (no RTLD_GLOBAL needed) and in any
load order (an op library loaded first pulls the core in). Built with `-z defs`: an op source
that needs a symbol the core lacks fails at build time, not at dlopen.

A cached library is reused only when its content matches the sha256 recorded beside it: a
truncated or altered `_aclsim.so` is rebuilt (under the lock, temporary file + rename). An op
library (`link_core=`) also gets a link named like its core dependency (e.g. `libnnopbase.so`)
beside it, leading to the core it was linked with, so it can be loaded straight from the cache.

Every compiler run is limited to $ACLNNGEN_CC_TIMEOUT seconds (default 300); a compiler that
outlives it is killed with its process group. Failures raise `SimulatorBuildError` (compiler
missing, compile error with the compiler's stderr, timeout, unwritable cache), never a raw
subprocess traceback.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterable, Mapping
from pathlib import Path

from aclnngen.cachedir import cache_root  # noqa: F401  (part of this module's interface)

__all__ = [
    "SIM_DIR",
    "CFLAGS",
    "SimulatorBuildError",
    "build_simulator",
    "cache_root",
    "sim_header_text",
]

#: The simulator's C sources and headers (package data of aclnngen.runtime.sim, beside this file).
SIM_DIR = Path(__file__).resolve().parent

#: Compiler flags; warnings are errors so generated C stays clean.
CFLAGS = ("-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-fPIC", "-pthread")
LDFLAGS = ("-shared", "-pthread")

#: Name of the real file inside a build directory; requested names are symlinks to it.
REAL_NAME = "_aclsim.so"

#: Bump when the recipe changes in a way the hashed inputs do not show.
_RECIPE = 2

#: Seconds a compiler run may take before it is killed ($ACLNNGEN_CC_TIMEOUT overrides).
TIMEOUT_ENV = "ACLNNGEN_CC_TIMEOUT"
DEFAULT_COMPILE_TIMEOUT_S = 300.0
#: The built file's own hash, written beside it and checked before every reuse.
DIGEST_NAME = "_aclsim.so.sha256"
_LIB_NAME = re.compile(r"[A-Za-z0-9_+][A-Za-z0-9_.+-]*")
_MACRO = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

_compiler_ids: dict[tuple, str] = {}


class SimulatorBuildError(RuntimeError):
    """The simulator library could not be built. `stderr` holds the compiler's output, if any."""

    def __init__(self, message: str, *, stderr: str = "", command: Iterable[str] = ()):
        super().__init__(message)
        self.message = message
        self.stderr = stderr
        self.command = tuple(command)

    def __str__(self) -> str:
        if self.stderr.strip():
            return f"{self.message}\n{self.stderr.rstrip()}"
        return self.message




def sim_header_text(name: str, *, core_dir: str | os.PathLike | None = None) -> str:
    """Text of a simulator header, e.g. "aclsim_controls.h" (cdef text for cffi)."""
    base = Path(core_dir) if core_dir is not None else SIM_DIR
    path = base / name
    if path.suffix != ".h" or path.parent != base or not path.is_file():
        raise FileNotFoundError(f"no simulator header {name!r} in {base}")
    return path.read_text(encoding="utf-8")


def _compiler() -> list[str]:
    cc = os.environ.get("CC", "").strip() or "cc"
    try:
        argv = shlex.split(cc)
    except ValueError as exc:
        raise SimulatorBuildError(f"$CC={cc!r} cannot be parsed: {exc}") from None
    if not argv:
        raise SimulatorBuildError("$CC is empty")
    exe = shutil.which(argv[0])
    if exe is None:
        raise SimulatorBuildError(
            f"no C compiler: {argv[0]!r} was not found "
            f"({'from $CC' if os.environ.get('CC', '').strip() else 'default; set $CC'}). "
            "The simulator is compiled from C on first use; install gcc or clang."
        )
    return [exe, *argv[1:]]


def compile_timeout() -> float:
    """$ACLNNGEN_CC_TIMEOUT in seconds (a positive number), else DEFAULT_COMPILE_TIMEOUT_S."""
    text = os.environ.get(TIMEOUT_ENV, "").strip()
    if not text:
        return DEFAULT_COMPILE_TIMEOUT_S
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise SimulatorBuildError(f"${TIMEOUT_ENV}={text!r} is not a positive number of seconds")
    return value


def _run_compiler(argv: list[str], what: str) -> subprocess.CompletedProcess:
    """Runs the compiler in its own process group, killed whole (drivers fork cc1, ld, ...) when
    it outlives compile_timeout()."""
    timeout = compile_timeout()
    try:
        proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
    except OSError as exc:
        raise SimulatorBuildError(f"cannot run the C compiler {argv[0]}: {exc.strerror or exc}", command=argv) from None
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        proc.communicate()
        raise SimulatorBuildError(
            f"{what}: the C compiler {argv[0]} did not finish within {timeout:g} s and was "
            f"stopped (set ${TIMEOUT_ENV} to allow longer)",
            command=argv,
        ) from None
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _compiler_identity(cc: list[str]) -> str:
    exe = Path(cc[0])
    try:
        st = exe.stat()
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        stamp = (0, 0, 0)
    key = (tuple(cc), stamp)
    if key not in _compiler_ids:
        proc = _run_compiler([*cc, "--version"], "asking the compiler's identity")
        if proc.returncode != 0:
            raise SimulatorBuildError(
                f"the C compiler {cc[0]} does not answer --version",
                stderr=proc.stderr,
                command=[*cc, "--version"],
            )
        _compiler_ids[key] = proc.stdout.strip()
    return _compiler_ids[key]


def _check_lib_names(lib_names: Iterable[str]) -> tuple[str, ...]:
    if isinstance(lib_names, str):
        lib_names = (lib_names,)
    names = tuple(lib_names)
    if not names:
        raise ValueError("lib_names must name at least one library file")
    for name in names:
        if not isinstance(name, str) or not _LIB_NAME.fullmatch(name) or name == REAL_NAME:
            raise ValueError(
                f"lib_names: {name!r} is not a plain file name such as 'libascendcl.so'"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"lib_names has duplicates: {names}")
    return names


def _define_flags(defines: Mapping[str, object] | None) -> list[str]:
    flags = []
    for name, value in sorted((defines or {}).items()):
        if not isinstance(name, str) or not _MACRO.fullmatch(name):
            raise ValueError(f"defines: {name!r} is not a C macro name")
        flags.append(f"-D{name}" if value is None else f"-D{name}={value}")
    return flags


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise SimulatorBuildError(f"cannot read {path}: {exc.strerror or exc}") from None


def build_simulator(
    extra_sources: Iterable[str | os.PathLike] = (),
    include_dirs: Iterable[str | os.PathLike] = (),
    defines: Mapping[str, object] | None = None,
    lib_names: Iterable[str] = ("libaclsim.so",),
    *,
    abi_header: str | os.PathLike | None = None,
    cache_dir: str | os.PathLike | None = None,
    core_dir: str | os.PathLike | None = None,
    link_core: str | os.PathLike | None = None,
) -> Path:
    """Builds (or reuses) the simulator library and returns the path of `lib_names[0]`.

    extra_sources: more C files, typically the generated `sim_ops.c` (it includes
        "aclsim_core.h"; the core directory is always on the include path).
    include_dirs: searched before the core directory.
    defines: macro name -> value (None for a bare -DNAME). Values go to the compiler verbatim,
        so a string macro needs its quotes: {"ACLSIM_ABI_HEADER": '"acl_runtime.h"'}.
    lib_names: file names to produce; all are symlinks to one file (see the module docstring).
    abi_header: shorthand for the generated CANN declarations, e.g.
        Path("generated/c/acl_runtime.h"): adds its directory to the include path and defines
        ACLSIM_ABI_HEADER to its name, replacing the core's stand-in aclsim_abi.h.
    cache_dir: overrides the cache location (default: see `cache_root`).
    core_dir: the directory of the core sources (default: the installed runtime/sim).
    link_core: build an op library instead: only `extra_sources` are compiled, linked against
        this core library (a path returned by an earlier build, named as the op library should
        need it, e.g. ".../libnnopbase.so"); see the module docstring for the layout it needs.
    """
    names = _check_lib_names(lib_names)
    if isinstance(extra_sources, (str, os.PathLike)):
        extra_sources = (extra_sources,)
    extra_sources = tuple(extra_sources)
    if isinstance(include_dirs, (str, os.PathLike)):
        include_dirs = (include_dirs,)
    core = Path(core_dir).resolve() if core_dir is not None else SIM_DIR
    incs = [Path(d).resolve() for d in include_dirs]
    defs = dict(defines or {})
    hashed_files: list[Path] = []
    if abi_header is not None:
        abi = Path(abi_header).resolve()
        if not abi.is_file():
            raise SimulatorBuildError(f"abi_header {abi} does not exist")
        incs.insert(0, abi.parent)
        defs["ACLSIM_ABI_HEADER"] = f'"{abi.name}"'
        hashed_files.append(abi)
    define_flags = _define_flags(defs)

    core_sources = sorted(core.glob("*.c"))
    if not core_sources:
        raise SimulatorBuildError(f"no simulator sources (*.c) in {core}")
    link_flags: list[str] = []
    if link_core is not None:
        core_lib = Path(link_core)
        if not core_lib.is_absolute():
            core_lib = core_lib.resolve()
        if not core_lib.is_file() or not _LIB_NAME.fullmatch(core_lib.name):
            raise SimulatorBuildError(f"link_core {core_lib} is not a library file")
        if not extra_sources:
            raise SimulatorBuildError("link_core: an op library needs extra sources (the op entry points)")
        hashed_files.append(core_lib.resolve())  # the core's content, whatever the link is named
        core_sources = []  # the core's code lives in link_core; only the ops are compiled here
        link_flags = [f"-L{core_lib.parent}", f"-l:{core_lib.name}", "-Wl,-rpath,$ORIGIN", "-Wl,-z,defs"]
    extras = []
    for src in extra_sources:
        path = Path(src).resolve()
        if not path.is_file():
            raise SimulatorBuildError(f"extra source {path} does not exist")
        extras.append(path)
    for d in incs:
        if not d.is_dir():
            raise SimulatorBuildError(f"include directory {d} does not exist")

    # Headers the build can see: the core's, those beside extra sources, those in include dirs.
    header_dirs = [core, *incs, *(p.parent for p in extras)]
    for d in dict.fromkeys(header_dirs):
        hashed_files.extend(sorted(d.glob("*.h")))

    cc = _compiler()
    command = [
        *cc,
        *CFLAGS,
        *define_flags,
        *(f"-I{d}" for d in incs),
        f"-I{core}",
        *(str(p) for p in core_sources),
        *(str(p) for p in extras),
        *LDFLAGS,
        *link_flags,
    ]

    digest = hashlib.sha256()
    digest.update(f"recipe {_RECIPE}\0".encode())
    digest.update(_compiler_identity(cc).encode() + b"\0")
    digest.update("\0".join(command).encode() + b"\0")
    for path in [*core_sources, *extras, *dict.fromkeys(hashed_files)]:
        data = _read(path)
        digest.update(f"{path}\0{len(data)}\0".encode())
        digest.update(data)
    key = digest.hexdigest()[:32]

    root = cache_root(cache_dir) / "sim"
    out_dir = root / key
    real = out_dir / REAL_NAME
    neighbours = {}
    if link_core is not None:
        # the op library's DT_NEEDED name, beside it, leads to the very core it was linked with
        neighbours[core_lib.name] = str(core_lib.resolve())
    if _complete(out_dir, names, neighbours):
        return out_dir / names[0]

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        lock_fd = os.open(root / f"{key}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise SimulatorBuildError(
            f"cannot use the cache directory {root}: {exc.strerror or exc} "
            "(set $ACLNNGEN_CACHE_DIR to a writable directory)"
        ) from None
    try:
        fcntl.flock(lock_fd, fcntl.LOCK_EX)
        _remove_stale_temporaries(out_dir)
        if not _verified(out_dir):
            _compile(command, out_dir, real, key)
        for name in names:
            _link(out_dir, name)
        for name, target in neighbours.items():
            _link(out_dir, name, target)
    except OSError as exc:
        raise SimulatorBuildError(
            f"cannot write the simulator library into {out_dir}: {exc.strerror or exc}"
        ) from None
    finally:
        os.close(lock_fd)  # closing releases the lock
    return out_dir / names[0]


def _file_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _verified(out_dir: Path) -> bool:
    """The built library is there and is the file that was built: its sha256 matches the one
    recorded beside it (a truncated or corrupted cache entry is rebuilt, not loaded)."""
    real = out_dir / REAL_NAME
    try:
        recorded = (out_dir / DIGEST_NAME).read_text(encoding="ascii").strip()
        return real.is_file() and not real.is_symlink() and _file_digest(real) == recorded
    except (OSError, UnicodeDecodeError):
        return False


def _complete(out_dir: Path, names: tuple[str, ...], neighbours: Mapping[str, str]) -> bool:
    if not _verified(out_dir):
        return False
    wanted = {name: REAL_NAME for name in names} | dict(neighbours)
    for name, target in wanted.items():
        try:
            if os.readlink(out_dir / name) != target:
                return False
        except OSError:
            return False
    return True


def _compile(command: list[str], out_dir: Path, real: Path, key: str) -> None:
    fd, tmp_name = tempfile.mkstemp(dir=out_dir, prefix=".tmp-", suffix=".so")
    os.close(fd)
    tmp = Path(tmp_name)
    full = [*command, "-o", str(tmp)]
    try:
        proc = _run_compiler(full, "compiling the simulator")
        if proc.returncode != 0:
            raise SimulatorBuildError(
                f"compiling the simulator failed ({Path(command[0]).name} exited with "
                f"{proc.returncode}); command: {shlex.join(full)}",
                stderr=proc.stderr,
                command=full,
            )
        os.chmod(tmp, 0o755)
        info = {
            "key": key,
            "command": full[:-1] + ["-o", REAL_NAME],
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "pid": os.getpid(),
            "compiler_warnings": proc.stderr,
        }
        info_tmp = out_dir / f".tmp-info-{os.getpid()}.json"
        info_tmp.write_text(json.dumps(info, indent=2) + "\n", encoding="utf-8")
        os.replace(info_tmp, out_dir / "build-info.json")
        # the digest first, then the file: a reader sees a matching pair or rebuilds
        digest_tmp = out_dir / f".tmp-digest-{os.getpid()}"
        digest_tmp.write_text(_file_digest(tmp) + "\n", encoding="ascii")
        os.replace(digest_tmp, out_dir / DIGEST_NAME)
        os.replace(tmp, real)
    finally:
        if tmp.exists():
            tmp.unlink()


def _link(out_dir: Path, name: str, to: str = REAL_NAME) -> None:
    target = out_dir / name
    try:
        if os.readlink(target) == to:
            return
    except OSError:
        pass
    tmp = out_dir / f".tmp-link-{os.getpid()}-{name}"
    if tmp.is_symlink() or tmp.exists():
        tmp.unlink()
    os.symlink(to, tmp)
    os.replace(tmp, target)


def _remove_stale_temporaries(out_dir: Path) -> None:
    """Leftovers of builders that died: the caller holds the lock, so no build is in progress."""
    for tmp in out_dir.glob(".tmp-*"):
        try:
            tmp.unlink()
        except OSError:
            pass
