"""Builds C into shared libraries on demand (the simulator, the call plans' helper); nobody runs a
compiler by hand. The call path's C helper (runtime/callplan.py) and the simulator (runtime/sim,
which reaches this module under its old name `aclnngen.runtime.sim.build`) share it.

`build_simulator()` compiles the generic core (`runtime/sim/*.c`) plus extra sources (the
generated `sim_ops.c`) with `$CC` (default `cc`) into a cache outside the source tree:

    $ACLNNGEN_CACHE_DIR, else $XDG_CACHE_HOME/aclnngen, else ~/.cache/aclnngen
        sim/<key>/_aclsim.so           the one real file
        sim/<key>/libaclsim.so         -> _aclsim.so   (one symlink per requested name)
        sim/<key>/_aclsim.so.sha256    the built file's own sha256, checked before every reuse
        sim/<key>/build-info.json      what was compiled, with which command
        sim/<key>.lock                 serialises builders of that key
        compilers/<hash>.txt           what `$CC --version` said, per compiler file (path, times,
                                       size, inode): a warm build runs no compiler at all

`<key>` hashes every input that can change the result: the text of all core sources and headers,
of the extra sources and of the headers beside them or in the include directories, the flags,
the defines and the compiler's identity (`$CC --version`); files and folders are named in it by
their folder's place among the build's folders and their own name, not where they are, so the
same files in another folder share the library. Each file is read once, and the key
hashes exactly those bytes; a build writes those same bytes into a private staging folder
(`sim/<key>/.tmp-stage-*`, mode 0700, each file at its absolute path mirrored below it, so
`#include "x.h"` beside a source and every -I folder resolve as in the tree) and compiles the
copies: a `generate` that rewrites `sim_ops.c` meanwhile cannot put a library under a key that
does not describe it. Headers elsewhere (a relative `#include "../x.h"`) are not staged and do
not resolve; keep what the build includes in those directories. Changing any of them builds a new
library in a new directory; an unchanged tree reuses the cached one. Builders of the same key
(pytest-xdist workers, several processes) take an exclusive `fcntl` lock, compile into the
staging folder and rename the library into place, so readers never see a partial library.

The cache folder is used only when it is the user's own (aclnngen.cachedir.distrust: owned by the
user, writable by no group or other, under parents only the user or root can change); else one
warning names it and why, and the library is built into a private folder of the process (mode
0700, removed at exit): a library someone else could have planted is never loaded. No link in the
cache is followed: the key's folder, the library and its digest record are opened without
following one, and the requested names must be the links this module made.

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
outlives it is killed with its process group, as it is when the build ends any other way
(Ctrl-C, an exception, or SIGTERM, which during a build of the main thread raises SystemExit(143)
so the staging folder is removed too; after a SIGKILL the next builder of the key removes it). Failures raise `SimulatorBuildError` (compiler
missing, compile error with the compiler's stderr, timeout, unwritable cache), never a raw
subprocess traceback.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import re
import signal
import stat
import threading
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import subprocess

# The process and file tools of a build (subprocess, shutil, tempfile, shlex, json) are imported
# where a build or a compiler run needs them: a warm cache needs only a digest, and the first call
# of a binding comes through here (tests/runtime/test_startup_imports.py).

from aclnngen.cachedir import cache_root  # noqa: F401  (part of this module's interface)
from aclnngen.cachedir import foreign, make_private, private_temporary, trusted
from aclnngen.files import FileError, read_regular, write_atomic

__all__ = [
    "SIM_DIR",
    "CFLAGS",
    "SimulatorBuildError",
    "build_simulator",
    "cache_root",
    "sim_header_text",
]

#: The simulator's C sources and headers (package data of aclnngen.runtime.sim).
SIM_DIR = Path(__file__).resolve().parent / "sim"

#: Compiler flags; warnings are errors so generated C stays clean. "-O2" is the default level,
#: which a build may change (build_simulator's `optimize`).
CFLAGS = ("-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-fPIC", "-pthread")
DEFAULT_OPTIMIZE = 2
LDFLAGS = ("-shared", "-pthread", "-lm")  # libm: the compiled kernels (sim_kernels.c)

#: Name of the real file inside a build directory; requested names are symlinks to it.
REAL_NAME = "_aclsim.so"

#: Bump when the recipe changes in a way the hashed inputs do not show.
# 3: files named in the key by their folder's place and their name (_portable); 4: the headers in
# the key in the order of those names, not of how the request listed them
_RECIPE = 4

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
    import shlex
    import shutil

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
    import subprocess

    timeout = compile_timeout()
    _starting.depth += 1  # a SIGTERM or Ctrl-C now waits until the compiler can be killed (_terminate_cleanly)
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    except OSError as exc:
        raise SimulatorBuildError(f"cannot run the C compiler {argv[0]}: {exc.strerror or exc}", command=argv) from None
    finally:
        _starting.depth -= 1
    try:
        pending, _starting.pending = _starting.pending, 0
        if pending:
            _raise_for(pending)
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc)
        raise SimulatorBuildError(
            f"{what}: the C compiler {argv[0]} did not finish within {timeout:g} s and was "
            f"stopped (set ${TIMEOUT_ENV} to allow longer)",
            command=argv,
        ) from None
    except BaseException:
        # Ctrl-C (KeyboardInterrupt), SIGTERM (SystemExit, see _terminate_cleanly) or any other
        # way out: the compiler runs in its own session, so nothing else would stop it
        _kill_group(proc)
        raise
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _kill_group(proc: subprocess.Popen) -> None:
    """Stop the compiler and every process it started (drivers fork cc1, as, ld) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        pass
    try:
        proc.communicate(timeout=30)
    except BaseException:  # a second Ctrl-C while reaping: the group is already killed
        pass


class _Starting(threading.local):
    depth = 0  # inside Popen: a SIGTERM or SIGINT is held until the compiler's process is known
    pending = 0  # the signal held, 0 for none


_starting = _Starting()


@contextmanager
def _terminate_cleanly() -> Iterator[None]:
    """While building: SIGTERM raises SystemExit(143) in the main thread (when nobody else handles
    it), so the compiler's group is killed and the temporaries removed (finally blocks run)
    before the process ends, as it would have. Ctrl-C (at Python's default handler) still raises
    KeyboardInterrupt; both are held while Popen starts the compiler, which a signal raised inside
    Popen would orphan (the child exists, its Popen object does not yet)."""
    installed: dict[int, object] = {}
    if threading.current_thread() is threading.main_thread():

        def _held(signum, frame):
            if _starting.depth:
                _starting.pending = signum  # raised once Popen has returned the compiler
                return
            _raise_for(signum)

        for signum, default in ((signal.SIGTERM, signal.SIG_DFL), (signal.SIGINT, signal.default_int_handler)):
            try:
                if signal.getsignal(signum) == default:
                    signal.signal(signum, _held)
                    installed[signum] = default
            except (ValueError, OSError):
                pass
    try:
        yield
    finally:
        for signum, default in installed.items():
            signal.signal(signum, default)


def _raise_for(signum: int) -> None:
    """What the signal does at its default disposition, as an exception (finally blocks run)."""
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise SystemExit(128 + signum)


def _compiler_identity(cc: list[str], base: Path | None = None) -> str:
    """What `cc --version` says, asked once per compiler file (its path, times, size and inode)
    and kept in the user's own cache `base` (compilers/), so a process that finds its library
    built runs no compiler at all."""
    exe = Path(cc[0])
    try:
        st = exe.stat()
        stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    except OSError:
        stamp = (0, 0, 0)
    key = (tuple(cc), stamp)
    if key in _compiler_ids:
        return _compiler_ids[key]
    kept = None
    if base is not None:
        name = hashlib.sha256(repr(key).encode()).hexdigest()[:32]
        kept = base / "compilers" / f"{name}.txt"
        try:
            _compiler_ids[key] = read_regular(
                kept, what="compiler identity", limit=64 * 1024, follow_links=False, judge=foreign
            ).decode("utf-8")
            return _compiler_ids[key]
        except (FileError, UnicodeDecodeError):
            pass  # not asked yet (or not the user's own file): ask the compiler
    proc = _run_compiler([*cc, "--version"], "asking the compiler's identity")
    if proc.returncode != 0:
        raise SimulatorBuildError(
            f"the C compiler {cc[0]} does not answer --version",
            stderr=proc.stderr,
            command=[*cc, "--version"],
        )
    _compiler_ids[key] = proc.stdout.strip()
    if kept is not None:
        try:
            for folder in (base, kept.parent):
                make_private(folder)
            write_atomic(kept, _compiler_ids[key], what="compiler identity", mode=0o600, durable=False)
        except OSError:
            pass  # only saves a compiler run next time
    return _compiler_ids[key]


def _check_lib_names(lib_names: Iterable[str]) -> tuple[str, ...]:
    if isinstance(lib_names, str):
        lib_names = (lib_names,)
    names = tuple(lib_names)
    if not names:
        raise ValueError("lib_names must name at least one library file")
    for name in names:
        if not isinstance(name, str) or not _LIB_NAME.fullmatch(name) or name == REAL_NAME:
            raise ValueError(f"lib_names: {name!r} is not a plain file name such as 'libascendcl.so'")
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
        return read_regular(path, what="simulator source")
    except FileError as exc:
        raise SimulatorBuildError(str(exc)) from None


def _staged(stage: Path, path: Path) -> Path:
    """Where the copy of `path` lives in the staging folder (its absolute path mirrored below it,
    so a source's neighbours and every -I/-L folder keep their places relative to each other)."""
    return stage / path.relative_to(path.anchor)


def _stage(stage: Path, files: Mapping[Path, bytes]) -> None:
    """Write exactly the bytes that were hashed into the staging folder: the compiler reads these
    copies, never the originals, which a `generate` may rewrite meanwhile."""
    for path, data in files.items():
        target = _staged(stage, path)
        make_private(target.parent)
        write_atomic(target, data, what="staged simulator source", mode=0o600, durable=False)


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
    optimize: int = DEFAULT_OPTIMIZE,
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
    optimize: the optimisation level, 0 to 3 (-O2 by default): code whose speed does not matter
        may take less compile time.
    """
    request = _BuildRequest.of(
        extra_sources,
        include_dirs,
        defines,
        lib_names,
        abi_header=abi_header,
        core_dir=core_dir,
        link_core=link_core,
        optimize=optimize,
    )
    cc = _compiler()
    base = cache_root(cache_dir)
    if not trusted(base, what="simulator cache"):
        base = private_temporary()  # nothing of the untrusted folder is loaded; built afresh here
    key, staged = _key_and_staged(request, cc, base)
    out_dir = base / "sim" / key
    neighbours = request.neighbours()
    if _complete(out_dir, request.names, neighbours):
        return out_dir / request.names[0]
    _build_locked(request, cc, staged, base, key)
    # checked again right before the path is handed out to be loaded
    if not _complete(out_dir, request.names, neighbours):
        raise SimulatorBuildError(f"the simulator library in {out_dir} changed while it was built; build again")
    return out_dir / request.names[0]


@dataclass(frozen=True)
class _BuildRequest:
    """One build, its inputs checked and resolved (`of`): what to compile, with what, into what."""

    names: tuple[str, ...]  # the library file names asked for (symlinks to one file)
    core: Path  # the directory of the core sources and headers
    incs: tuple[Path, ...]  # include directories, searched before `core`
    define_flags: tuple[str, ...]
    core_sources: tuple[Path, ...]  # empty for an op library (`link_core`)
    extras: tuple[Path, ...]
    hashed_files: tuple[Path, ...]  # read and hashed besides the sources: headers, the core library
    core_lib: Path | None  # the core an op library links with, as named (not resolved)
    link_flags: tuple[str, ...]  # for an op library, after its -L flag
    cflags: tuple[str, ...]  # CFLAGS at the requested optimisation level

    @classmethod
    def of(
        cls, extra_sources, include_dirs, defines, lib_names, *, abi_header, core_dir, link_core, optimize
    ) -> _BuildRequest:
        """Checks the arguments of build_simulator, in its documented terms."""
        names = _check_lib_names(lib_names)
        if type(optimize) is not int or optimize not in range(4):
            raise ValueError(f"optimize: {optimize!r} is not an optimisation level 0 to 3")
        cflags = tuple(f"-O{optimize}" if flag == f"-O{DEFAULT_OPTIMIZE}" else flag for flag in CFLAGS)
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
        core_lib = None if link_core is None else _core_library(link_core, extra_sources)
        link_flags: tuple[str, ...] = ()
        if core_lib is not None:
            hashed_files.append(core_lib.resolve())  # the core's content, whatever the link is named
            core_sources = []  # the core's code lives in link_core; only the ops are compiled here
            link_flags = (f"-l:{core_lib.name}", "-Wl,-rpath,$ORIGIN", "-Wl,-z,defs")
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
        return cls(
            names,
            core,
            tuple(incs),
            tuple(define_flags),
            tuple(core_sources),
            tuple(extras),
            tuple(hashed_files),
            core_lib,
            link_flags,
            cflags,
        )

    def command(self, cc: list[str], where) -> list[str]:
        """The compile command, with each file and folder as `where` names it."""
        return [
            *cc,
            *self.cflags,
            *self.define_flags,
            *(f"-I{where(d)}" for d in self.incs),
            f"-I{where(self.core)}",
            *(where(p) for p in self.core_sources),
            *(where(p) for p in self.extras),
            *LDFLAGS,
            *((f"-L{where(self.core_lib.parent)}", *self.link_flags) if self.core_lib is not None else ()),
        ]

    def folders(self) -> list[Path]:
        """Every -I and -L folder of the command."""
        return [*self.incs, self.core, *((self.core_lib.parent,) if self.core_lib is not None else ())]

    def neighbours(self) -> dict[str, str]:
        """Links beside the library besides its names: an op library's DT_NEEDED name leads to the
        very core it was linked with."""
        return {self.core_lib.name: str(self.core_lib.resolve())} if self.core_lib is not None else {}


def _core_library(link_core: str | os.PathLike, extra_sources: tuple) -> Path:
    """The core an op library links with, as named (made absolute, not resolved)."""
    core_lib = Path(link_core)
    if not core_lib.is_absolute():
        core_lib = core_lib.resolve()
    if not core_lib.is_file() or not _LIB_NAME.fullmatch(core_lib.name):
        raise SimulatorBuildError(f"link_core {core_lib} is not a library file")
    if not extra_sources:
        raise SimulatorBuildError("link_core: an op library needs extra sources (the op entry points)")
    return core_lib


def _key_and_staged(request: _BuildRequest, cc: list[str], base: Path | None = None) -> tuple[str, dict[Path, bytes]]:
    """The build's key, and the bytes of every file the compiler reads, read ONCE: the key hashes
    these bytes, and a build compiles copies of these bytes (_stage), so what is compiled is what
    the key says, whatever is written to the sources meanwhile. Files and folders are named in the
    key as _portable names them."""
    where = _portable(request)
    command = request.command(cc, where)
    digest = hashlib.sha256()
    digest.update(f"recipe {_RECIPE}\0".encode())
    digest.update(_compiler_identity(cc, base).encode() + b"\0")
    digest.update("\0".join(command).encode() + b"\0")
    staged: dict[Path, bytes] = {}
    # the sources in the command's order; the headers by name: `abi_header=` and the same header
    # through include_dirs + defines are one build
    headers = sorted(dict.fromkeys(request.hashed_files), key=where)
    for path in [*request.core_sources, *request.extras, *headers]:
        data = _read(path)
        digest.update(f"{where(path)}\0{len(data)}\0".encode())
        digest.update(data)
        staged[path] = data
    if request.core_lib is not None:
        # the linker finds the core by the name it was given (its DT_NEEDED), with the bytes hashed
        staged[request.core_lib] = staged.pop(request.core_lib.resolve())
    return digest.hexdigest()[:32], staged


def _portable(request: _BuildRequest):
    """How the key names a file or folder of the build: by its folder's place among the build's
    folders, and its own name. Where the folders are does not change what compiles (the sources
    are staged and compiled as copies anyway), and which of them coincide is kept, so the same
    files elsewhere give the same key: the call plans' helper source (runtime/callplan.py, in the
    cache's `callplan/` folder, or a private temporary one) is built once, wherever it is."""
    folders = [request.core, *request.incs, *(p.parent for p in request.extras)]
    folders += [p.parent for p in (*request.core_sources, *request.hashed_files)]
    if request.core_lib is not None:
        folders.append(request.core_lib.parent)
    place = {folder: index for index, folder in enumerate(dict.fromkeys(folders))}

    def where(path) -> str:
        path = Path(path)
        if path in place:
            return f"<{place[path]}>"
        return f"<{place[path.parent]}>/{path.name}"

    return where


def _build_locked(request: _BuildRequest, cc: list[str], staged: Mapping[Path, bytes], base: Path, key: str) -> None:
    """Under the key's lock: compile unless a verified library is there, then make its links."""
    root = base / "sim"
    out_dir = root / key
    try:
        for folder in (base, root, out_dir):
            make_private(folder)  # a link where a folder of the cache should be is refused
        lock_fd = os.open(
            root / f"{key}.lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600
        )
    except OSError as exc:
        raise SimulatorBuildError(
            f"cannot use the cache directory {root}: {exc.strerror or exc} "
            "(set $ACLNNGEN_CACHE_DIR to a writable directory)"
        ) from None
    try:
        with _terminate_cleanly():
            fcntl.flock(lock_fd, fcntl.LOCK_EX)
            _remove_stale_temporaries(out_dir)
            if not _verified(out_dir):
                _compile(functools.partial(request.command, cc), staged, request.folders(), out_dir, key)
            for name in request.names:
                _link(out_dir, name)
            for name, target in request.neighbours().items():
                _link(out_dir, name, target)
    except OSError as exc:
        raise SimulatorBuildError(f"cannot write the simulator library into {out_dir}: {exc.strerror or exc}") from None
    finally:
        os.close(lock_fd)  # closing releases the lock


def _file_digest(path: Path, dir_fd: int | None = None) -> str | None:
    """sha256 of the regular file `path` of the user's own, opened without following a link
    (None for anything else)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or foreign(st):
            return None
        digest = hashlib.sha256()
        with os.fdopen(os.dup(fd), "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        return digest.hexdigest()
    finally:
        os.close(fd)


def _real_folder(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _verified(out_dir: Path) -> bool:
    """The built library is there and is the file that was built: its sha256 matches the one
    recorded beside it (a truncated or corrupted cache entry is rebuilt, not loaded). Neither the
    folder, the library nor its record may be a link, and both must be the user's own."""
    if not (_real_folder(out_dir.parent) and _real_folder(out_dir)):
        return False
    try:
        recorded = (
            read_regular(out_dir / DIGEST_NAME, what="library digest", limit=256, follow_links=False, judge=foreign)
            .decode("ascii")
            .strip()
        )
    except (FileError, UnicodeDecodeError):
        return False
    return _file_digest(out_dir / REAL_NAME) == recorded


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


def _compile(command_with, staged: Mapping[Path, bytes], folders: Iterable[Path], out_dir: Path, key: str) -> None:
    """Compile the staged copies in a private staging folder inside `out_dir` (removed on every
    way out; one a killed builder left is removed by the next, under the lock) and rename the
    library into place, after its digest."""
    import json
    import shlex
    import shutil
    import tempfile
    import time

    stage = Path(tempfile.mkdtemp(dir=out_dir, prefix=".tmp-stage-"))  # mode 0700
    try:
        _stage(stage, staged)
        for folder in folders:  # every -I and -L folder is there, even one without a file of its own
            make_private(_staged(stage, folder))
        tmp = stage / REAL_NAME
        full = [*command_with(lambda p: str(_staged(stage, Path(p)))), "-o", str(tmp)]
        shown = [*command_with(str), "-o", REAL_NAME]
        proc = _run_compiler(full, "compiling the simulator")
        stderr = proc.stderr.replace(str(stage), "")  # diagnostics name the original files
        if proc.returncode != 0:
            raise SimulatorBuildError(
                f"compiling the simulator failed ({Path(shown[0]).name} exited with "
                f"{proc.returncode}); command: {shlex.join(shown)}",
                stderr=stderr,
                command=shown,
            )
        os.chmod(tmp, 0o755)
        info = {
            "key": key,
            "command": shown,
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "pid": os.getpid(),
            "compiler_warnings": stderr,
        }
        write_atomic(out_dir / "build-info.json", json.dumps(info, indent=2) + "\n", what="build record", mode=0o644)
        # the digest first, then the file: a reader sees a matching pair or rebuilds
        built = _file_digest(tmp)
        if built is None:
            raise SimulatorBuildError(f"the compiler left no library at {tmp}", command=shown)
        write_atomic(out_dir / DIGEST_NAME, built + "\n", what="library digest", mode=0o644)
        os.replace(tmp, out_dir / REAL_NAME)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


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
    """Leftovers of builders that died (files, staging folders, and the atomic writer's
    temporaries): the caller holds the lock, so no build is in progress. A link is removed, never
    followed."""
    import shutil

    for tmp in [*out_dir.glob(".tmp-*"), *out_dir.glob(".*.aclnngen-tmp-*")]:
        try:
            if stat.S_ISDIR(os.lstat(tmp).st_mode):
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink()
        except OSError:
            pass
