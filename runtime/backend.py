"""Backends: the real CANN libraries, or the simulator built from C on first use.

Selection (`select_backend_name`): an explicit name, else `$ACLNNGEN_BACKEND` (`cann` or `sim`),
else CANN when it is found and the simulator otherwise.

Finding CANN (`find_cann`), the way an Ascend user expects:
  1. `$ASCEND_HOME_PATH`, then `$ASCEND_TOOLKIT_HOME`: their `lib64/` and `<arch>-linux/lib64/`;
  2. the directories of `$LD_LIBRARY_PATH`;
  3. a plain `dlopen` by file name (the loader's own search: rpath, ldconfig cache, ...).
The runtime API comes from `libascendcl.so`, else `libacl_rt.so` (generated/abi.py LIBRARIES);
the tensor API from `libnnopbase.so`. Op symbols are searched in op-plugin's order: custom
`libcust_opapi.so` under `$ASCEND_CUSTOM_OPP_PATH/*/op_api/lib/` and the vendors listed in
`$ASCEND_OPP_PATH/vendors/config.ini`, then LIBRARIES["opapi"] in the library directories
(`libcust_opapi.so`, `libopapi_*.so`, `libopapi.so`, the feature libraries), then those names through
the loader. An op's symbols are looked up on its first use only: an op missing from every op library
raises BackendError naming the op, the CANN version and every library searched, and the other ops
keep working.

The simulator is another package (aclnngen.runtime.sim, see its SimBackend): it registers itself
here with `register_backend("sim", ...)` when imported, and `backend_factory("sim")` imports it by
name (BACKEND_PROVIDERS) the first time the simulator is chosen, so the call path never imports it.

Both backends expose the same things: `api` (every runtime/tensor function of
generated/abi.py FUNCTIONS, None for a missing optional one), `ffi`, `libraries` (purpose -> path),
`op_functions(meta)`, `soc_name()`, `family()`, `version_info()`, per-thread device setup
(`ensure_thread`) and `shutdown()`.
"""

from __future__ import annotations

import glob
import importlib
import itertools
import os
import platform
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping

from aclnngen.core.meta import op_meta
from aclnngen.generated import abi

from . import ffi as ffimod
from . import acl
from .errors import AclRuntimeError, BackendError, CannNotFoundError, OpNamespaceError
from .products import family_of

__all__ = [
    "BACKEND_ENV",
    "Backend",
    "CannBackend",
    "register_backend",
    "backend_factory",
    "CannInstall",
    "find_cann",
    "load_backend",
    "select_backend_name",
]

BACKEND_ENV = "ACLNNGEN_BACKEND"
DEVICE_ENV = "ACLNNGEN_DEVICE"
BACKEND_NAMES = ("cann", "sim")
VERSION_PACKAGES = (b"cann", b"runtime", b"toolkit", b"opp")
VERSION_BUFFER = 256

ACL_ERROR_REPEAT_INITIALIZE = acl.status_code("ACL_ERROR_REPEAT_INITIALIZE")
ACL_MEM_MALLOC_HUGE_FIRST = acl.enum_value("ACL_MEM_MALLOC_HUGE_FIRST")

_generations = itertools.count(1)


def select_backend_name(name: str | None = None) -> str | None:
    """ "cann", "sim", or None (= auto: CANN when found, else the simulator)."""
    chosen = name if name is not None else os.environ.get(BACKEND_ENV, "").strip() or None
    if chosen is None or chosen == "auto":
        return None
    chosen = chosen.lower()
    if chosen not in BACKEND_NAMES:
        source = "argument" if name is not None else f"${BACKEND_ENV}"
        raise BackendError(reason=f"unknown backend {chosen!r} ({source}); use 'cann' or 'sim'")
    return chosen


# --- the runtime API facade -----------------------------------------------------------------------


class RuntimeApi:
    """The functions of generated/abi.py FUNCTIONS as attributes, each from its own library.

    A required function the library lacks is reported at load time; an optional one (newer
    releases only) is None."""

    def __init__(self, libs: Mapping[str, Any], paths: Mapping[str, str]):
        # An out-of-line FFI's library is closed when its object goes: keep them with their functions.
        self._handles = dict(libs)
        missing = []
        self.optional_missing: list[str] = []
        for name, (key, optional) in abi.FUNCTIONS.items():
            fn = ffimod.lookup(libs[key], name)
            if fn is None:
                if optional:
                    self.optional_missing.append(name)
                else:
                    missing.append(f"{name} ({paths.get(key, key)})")
            setattr(self, name, fn)
        if missing:
            raise BackendError(
                reason="the runtime libraries lack required functions: " + ", ".join(missing),
                searched=paths.values(),
                hint="the install is incomplete or too old; check ASCEND_HOME_PATH",
            )


# --- the common part ------------------------------------------------------------------------------


class Backend:
    """What the runtime needs from a backend; see the module docstring."""

    kind = "?"

    def __init__(self):
        self.ffi = ffimod.runtime_ffi()
        self.api: RuntimeApi
        self.libraries: dict[str, str] = {}  # purpose -> path
        self.generation = next(_generations)
        self.alive = True
        self.device = int(os.environ.get(DEVICE_ENV, "0") or 0)
        self._lock = threading.RLock()
        self._tls = threading.local()
        self._initialized = False
        self.owns_init = False
        self._devices_set: dict[int, int] = {}
        self._ops: dict[tuple, tuple[Any, Any, str]] = {}  # (package, symbol, cdef) -> functions
        self._missing_ops: dict[tuple, BackendError] = {}
        self._symbol_owner: dict[str, str] = {}  # C symbol -> the package whose op first used it
        self._op_libs: list[Any] = []

    # -- errors --------------------------------------------------------------------------------
    def recent_error(self) -> str:
        """aclGetRecentErrMsg() (which also clears it); '' when there is none."""
        fn = self.api.aclGetRecentErrMsg
        try:
            ptr = fn()
        except Exception:  # noqa: BLE001 - diagnostics must never raise
            return ""
        if ptr == self.ffi.NULL:
            return ""
        return self.ffi.string(ptr).decode("utf-8", "replace").strip()

    def check(self, function: str, rc: int) -> None:
        if rc != 0:
            raise AclRuntimeError(status=rc, function=function, detail=self.recent_error() or None)

    # -- process and thread setup --------------------------------------------------------------
    def ensure_init(self) -> None:
        if self._initialized:
            return
        with self._lock:
            if self._initialized:
                return
            if not self.alive:
                raise BackendError(reason=f"the {self.kind} backend was shut down")
            rc = self.api.aclInit(self.ffi.NULL)
            if rc == 0:
                self.owns_init = True
            elif rc == ACL_ERROR_REPEAT_INITIALIZE:
                # Someone else initialised ACL in this process: use it, never finalise it.
                self.owns_init = False
                self.recent_error()
            else:
                self.check("aclInit", rc)
            self._initialized = True

    def ensure_thread(self) -> None:
        """Make sure the calling thread can issue work: ACL initialised, and a current context
        (the thread's own, or the device's default context through aclrtSetDevice)."""
        tls = self._tls
        if getattr(tls, "ready", False):
            return
        self.ensure_init()
        dev = self.ffi.new("int32_t *")
        if self.api.aclrtGetDevice(dev) == 0:
            tls.ready = True  # the thread already has a context (set by the user, or shared)
            return
        self.recent_error()  # the expected "no context" message
        self.set_device(self.device)
        tls.ready = True

    def set_device(self, device: int) -> None:
        self.ensure_init()
        self.check("aclrtSetDevice", self.api.aclrtSetDevice(int(device)))
        with self._lock:
            self._devices_set[device] = self._devices_set.get(device, 0) + 1

    def reset_device(self, device: int) -> None:
        self.check("aclrtResetDevice", self.api.aclrtResetDevice(int(device)))
        with self._lock:
            count = self._devices_set.get(device, 0) - 1
            if count > 0:
                self._devices_set[device] = count
            else:
                self._devices_set.pop(device, None)

    def mark_thread_ready(self, ready: bool) -> None:
        self._tls.ready = ready

    def shutdown(self) -> None:
        """Release what this process set up: the devices it set, and ACL when it initialised it.
        Called at exit; safe to call twice; never raises."""
        with self._lock:
            if not self.alive:
                return
            self.alive = False
            if not self._initialized:
                return
            try:
                for device, count in list(self._devices_set.items()):
                    for _ in range(count):
                        self.api.aclrtResetDevice(device)
                self._devices_set.clear()
                if self.owns_init:
                    self.api.aclFinalize()
            except Exception:  # noqa: BLE001 - at exit, nothing may raise
                pass

    # -- facts ---------------------------------------------------------------------------------
    def soc_name(self) -> str | None:
        ptr = self.api.aclrtGetSocName()
        if ptr == self.ffi.NULL:
            self.recent_error()
            return None
        return self.ffi.string(ptr).decode("utf-8", "replace")

    def family(self) -> str:
        return family_of(self.soc_name())

    def library_version(self) -> str | None:
        """aclsysGetVersionStr, when the library offers it."""
        fn = self.api.aclsysGetVersionStr
        if fn is None:
            return None
        # one answer buffer per thread, made once: this is asked on every call
        buf = getattr(self._tls, "version_buffer", None)
        if buf is None:
            buf = self._tls.version_buffer = self.ffi.new("char[]", VERSION_BUFFER)
        for package in VERSION_PACKAGES:
            if fn(package, buf) == 0:
                text = self.ffi.string(buf).decode("utf-8", "replace").strip()
                if text:
                    return text
        self.recent_error()
        return None

    def version_info(self) -> tuple[str | None, str]:
        """(CANN version or None, where it came from)."""
        version = self.library_version()
        if version is not None:
            return version, "aclsysGetVersionStr"
        return None, "unknown (aclsysGetVersionStr missing or failed)"

    def version(self) -> str | None:
        return self.version_info()[0]

    # -- op symbols ----------------------------------------------------------------------------
    def op_library_candidates(self, package: str | None = None) -> list[str]:
        raise NotImplementedError

    def library_package(self, candidate: str) -> str | None:
        """The package whose entry points an op library holds, when the backend knows it (the
        simulator does: it builds one library per package); None: unknown (CANN's libraries)."""
        return None

    def op_functions(self, meta: Mapping[str, Any], package: str | None = None):
        """(GetWorkspaceSize function, launch function, library path) of the op `meta` of
        `package` (None: a META of no known package), looked up on first use and cached.

        An op is its package and its symbol. When the symbol this package's op would bind to is
        already another package's (one process has one `aclnnXxx`: on CANN always, on the
        simulator when the package brought no entry points of its own), OpNamespaceError names
        both packages instead of silently calling the other package's op. BackendError when no
        op library exports both symbols."""
        op = op_meta(meta)
        key = (package, op.symbol, op.cdef)
        found = self._ops.get(key)
        if found is not None:
            return found
        error = self._missing_ops.get(key)
        if error is not None:
            raise error
        with self._lock:
            found = self._ops.get(key)
            if found is not None:
                return found
            op_ffi = ffimod.op_ffi(meta, package)
            symbol = op.symbol
            gws_name, launch_name = symbol + "GetWorkspaceSize", symbol
            searched = []
            for candidate in self.op_library_candidates(package):
                try:
                    lib = ffimod.dlopen(op_ffi, candidate)
                except OSError as exc:
                    searched.append(f"{candidate} ({_load_failure(candidate, exc)})")
                    continue
                gws, launch = ffimod.lookup(lib, gws_name), ffimod.lookup(lib, launch_name)
                if gws is not None and launch is not None:
                    self._claim(symbol, package, self.library_package(candidate), candidate)
                    self._op_libs.append(lib)  # never let the handle go while its functions are used
                    self._ops[key] = found = (gws, launch, candidate)
                    return found
                if gws is not None or launch is not None:
                    searched.append(f"{candidate} (exports only {gws_name if gws is not None else launch_name})")
                else:
                    searched.append(candidate)
            error = self._missing_op_error(meta, searched)
            self._missing_ops[key] = error
            raise error

    def _claim(self, symbol: str, package: str | None, owner: str | None, library: str) -> None:
        """Records that `package` uses `symbol` from `library` (whose entry points belong to
        `owner`, when known); refuses a symbol that is another package's."""
        if package is None:
            return  # a META of no package: it asked for the symbol, whoever defines it
        holder = owner if owner is not None else self._symbol_owner.get(symbol)
        if holder is not None and holder != package:
            raise OpNamespaceError(symbol=symbol, package=package, holder=holder, library=library, backend=self.kind)
        if owner is None:
            self._symbol_owner.setdefault(symbol, package)

    def _missing_op_error(self, meta, searched) -> BackendError:
        op = op_meta(meta)
        return BackendError(
            reason=f"{op.symbol}GetWorkspaceSize/{op.symbol} is not exported by any op library",
            op=op.name or op.symbol,
            cann_version=self.version(),
            searched=searched,
            hint="the installed CANN may predate the op; the other ops still work",
        )

    def describe(self) -> dict:
        version, source = self.version_info()
        return {"backend": self.kind, "libraries": dict(self.libraries), "version": version, "version_source": source}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    text = text.splitlines()[0] if text else type(exc).__name__
    # cffi appends its ctypes.util.find_library() retry to every loader message: noise here
    return text.split("  Additionally, ctypes.util.find_library()")[0].strip()


def _load_failure(candidate: str, exc: BaseException) -> str:
    """Why an op library candidate did not load, short: a bare name the loader does not know is
    the common case (most installs have only some of the names)."""
    text = _first_line(exc)
    if os.sep not in candidate and "No such file or directory" in text:
        return "not found by the dynamic loader"
    return f"not loadable: {text}"


# --- CANN -----------------------------------------------------------------------------------------


@dataclass
class CannInstall:
    """Where CANN was found: the library files, the install home (if known) and the search log."""

    runtime: str
    nnopbase: str
    home: Path | None
    lib_dirs: list[Path]
    searched: list[str] = field(default_factory=list)


def _arch_dir() -> str:
    machine = platform.machine() or "x86_64"
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(machine.lower(), machine) + "-linux"


def install_homes(env: Mapping[str, str] | None = None) -> list[tuple[str, Path]]:
    env = os.environ if env is None else env
    homes = []
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        value = (env.get(var) or "").strip()
        if value:
            homes.append((var, Path(value)))
    return homes


def _home_lib_dirs(home: Path) -> list[Path]:
    return [home / "lib64", home / _arch_dir() / "lib64"]


def _loader_dirs(env: Mapping[str, str]) -> list[Path]:
    return [Path(d) for d in (env.get("LD_LIBRARY_PATH") or "").split(":") if d.strip()]


def _loaded_path(name: str) -> str:
    """The file the loader picked for `name` (from /proc/self/maps), else the bare name."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            for line in maps:
                parts = line.split(None, 5)
                if len(parts) == 6 and os.path.basename(parts[5].strip()).startswith(name):
                    return parts[5].strip()
    except OSError:
        pass
    return f"{name} (found by the dynamic loader)"


def find_cann(env: Mapping[str, str] | None = None) -> tuple[CannInstall | None, list[str]]:
    """Locates libascendcl/libacl_rt and libnnopbase; (None, searched) when CANN is absent.
    Raises BackendError when a library file exists but cannot be loaded."""
    env = os.environ if env is None else env
    ffi = ffimod.runtime_ffi()
    libraries = abi.LIBRARIES
    rt_names = libraries["ascendcl"][1]
    nn_names = libraries["nnopbase"][1]
    searched: list[str] = []
    dirs: list[tuple[Path | None, Path]] = []
    seen: set[str] = set()
    for home, d in [(h, d) for _, h in install_homes(env) for d in _home_lib_dirs(h)] + [
        (None, d) for d in _loader_dirs(env)
    ]:
        real = os.path.realpath(d)
        if real not in seen:  # lib64 is often a symlink to <arch>-linux/lib64
            seen.add(real)
            dirs.append((home, d))

    def try_load(path: str) -> str | None:
        try:
            ffimod.dlopen(ffi, path)
            return None
        except OSError as exc:
            return _first_line(exc)

    def search(candidates, names, what):
        """The first of `names` in the directories `candidates` ((home, dir) pairs), else by the
        dynamic loader: (path, home, dir), or (None, None, None)."""
        for home, d in candidates:
            for name in names:
                path = d / name
                searched.append(str(path))
                if path.exists():
                    problem = try_load(str(path))
                    if problem is not None:
                        raise BackendError(
                            reason=f"CANN's {what} library {path} exists but cannot be loaded: {problem}",
                            searched=searched,
                            hint=f"source the install's set_env.sh, or use the simulator with {BACKEND_ENV}=sim",
                        )
                    return str(path), home, d
        for name in names:
            searched.append(f"{name} (dynamic loader search)")
            if try_load(name) is None:
                return _loaded_path(name), None, None
        return None, None, None

    runtime, home_found, rt_dir = search(dirs, rt_names, "runtime")
    if runtime is None:
        return None, searched
    # libnnopbase beside the runtime library first, then the other directories
    nn_dirs = ([(home_found, rt_dir)] if rt_dir else []) + [(h, d) for h, d in dirs if d != rt_dir]
    nnopbase, _, _ = search(nn_dirs, nn_names, "tensor")
    if nnopbase is None:
        raise BackendError(
            reason=f"CANN's runtime library was found ({runtime}) but libnnopbase.so was not",
            searched=searched,
            hint=f"set ASCEND_HOME_PATH to a complete install, or use the simulator with {BACKEND_ENV}=sim",
        )
    lib_dirs: list[Path] = []
    for home, d in sorted(dirs, key=lambda hd: hd[0] != home_found):  # the install's own first
        if d.is_dir() and d not in lib_dirs:
            lib_dirs.append(d)
    return CannInstall(runtime, nnopbase, home_found, lib_dirs, searched), searched


def cann_not_found(searched, instead: str | None = None) -> CannNotFoundError:
    """`instead`: what runs without CANN for the caller (default: the simulator backend)."""
    return CannNotFoundError(
        reason="CANN was not found (no libascendcl.so or libacl_rt.so)",
        searched=searched,
        hint=(
            f"Set ASCEND_HOME_PATH (source <install>/set_env.sh) or install CANN; "
            f"{instead or f'to run on the simulator instead, set {BACKEND_ENV}=sim'}"
        ),
    )


def _custom_opapi_libs(env: Mapping[str, str]) -> list[str]:
    found = []
    for root in (env.get("ASCEND_CUSTOM_OPP_PATH") or "").split(":"):
        root = root.strip()
        if not root:
            continue
        # op-plugin: $ASCEND_CUSTOM_OPP_PATH/*/op_api/lib/libcust_opapi.so, and the path itself
        found += sorted(glob.glob(os.path.join(root, "*", "op_api", "lib", "libcust_opapi.so")))
        direct = os.path.join(root, "op_api", "lib", "libcust_opapi.so")
        if os.path.exists(direct):
            found.append(direct)
    opp = (env.get("ASCEND_OPP_PATH") or "").strip()
    if opp:
        config = Path(opp) / "vendors" / "config.ini"
        if config.is_file():
            import configparser  # deferred: only the custom vendors' config.ini of a CANN install

            parser = configparser.ConfigParser()
            try:
                parser.read_string("[vendors]\n" + config.read_text(encoding="utf-8", errors="replace"))
                order = parser.get("vendors", "load_priority", fallback="")
            except configparser.Error:
                order = ""
            for vendor in (v.strip() for v in order.split(",")):
                path = Path(opp) / "vendors" / vendor / "op_api" / "lib" / "libcust_opapi.so"
                if vendor and path.exists():
                    found.append(str(path))
    return found


class CannBackend(Backend):
    kind = "cann"

    def __init__(self, install: CannInstall, env: Mapping[str, str] | None = None):
        super().__init__()
        self.install = install
        self.env = dict(os.environ if env is None else env)
        rt = ffimod.dlopen(self.ffi, install.runtime)
        nn = ffimod.dlopen(self.ffi, install.nnopbase)
        self.libraries = {"ascendcl": install.runtime, "nnopbase": install.nnopbase}
        self.api = RuntimeApi({"ascendcl": rt, "nnopbase": nn}, self.libraries)
        self._candidates: list[str] | None = None
        self._version: tuple[str | None, str] | None = None

    def op_library_candidates(self, package: str | None = None) -> list[str]:
        if self._candidates is not None:
            return self._candidates
        names = abi.LIBRARIES["opapi"][1]
        found: list[str] = _custom_opapi_libs(self.env)
        for name in names:
            for d in self.install.lib_dirs:
                pattern = str(d / name)
                hits = sorted(glob.glob(pattern)) if "*" in name else ([pattern] if os.path.exists(pattern) else [])
                for hit in hits:
                    if hit not in found:
                        found.append(hit)
        located = {os.path.basename(p) for p in found}
        for name in names:  # the loader's own search for names no directory had
            if "*" not in name and name not in located:
                found.append(name)
        self._candidates = found
        return found

    def version_info(self) -> tuple[str | None, str]:
        if self._version is None:
            version = self.library_version()
            if version is not None:
                self._version = (version, "aclsysGetVersionStr")
            else:
                self._version = self._version_from_files()
        return self._version

    def _version_from_files(self) -> tuple[str | None, str]:
        """version= of ascend_toolkit_install.info: under the install's home (<home>/<arch>-linux/
        or <home>/), else beside the runtime library's directory (a CANN found through the loader
        path: <home>/lib64 or <home>/<arch>-linux/lib64, each as given and resolved)."""
        arch = _arch_dir()
        homes = [self.install.home] if self.install.home else []
        homes += [h for _, h in install_homes(self.env) if h not in homes]
        places: list[Path] = []
        for home in homes:
            places += [home / arch, home]
        lib_dir = Path(self.install.runtime).parent
        if lib_dir != Path("."):
            for d in dict.fromkeys((lib_dir, Path(os.path.realpath(lib_dir)))):
                places += [d.parent / arch, d.parent]
        for d in dict.fromkeys(places):
            info = d / "ascend_toolkit_install.info"
            try:
                text = info.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                key, _, value = line.partition("=")
                if key.strip() == "version" and value.strip():
                    return value.strip().strip('"'), str(info)
        return None, "unknown (no aclsysGetVersionStr, no ascend_toolkit_install.info)"


# --- the registry: backends that live in other packages ------------------------------------------

#: backend kind -> the module that registers it (`register_backend`) when imported. The call path
#: imports it by name, and only when that backend is chosen: it never imports a backend's
#: implementation itself (the simulator lives in aclnngen.runtime.sim).
BACKEND_PROVIDERS: dict[str, str] = {"sim": "aclnngen.runtime.sim"}
_FACTORIES: dict[str, Callable[[], Backend]] = {}


def register_backend(kind: str, factory: Callable[[], Backend]) -> None:
    """Makes `factory()` the way to create a backend of `kind` (called by the provider module)."""
    _FACTORIES[kind] = factory


def backend_factory(kind: str) -> Callable[[], Backend]:
    """The factory of backend `kind`, importing its provider module on first use."""
    factory = _FACTORIES.get(kind)
    if factory is None:
        provider = BACKEND_PROVIDERS.get(kind)
        if provider is None:
            raise BackendError(reason=f"no provider is known for backend {kind!r}")
        importlib.import_module(provider)  # registers the factory
        factory = _FACTORIES.get(kind)
        if factory is None:
            raise BackendError(reason=f"{provider} did not register a {kind!r} backend")
    return factory


def load_backend(name: str | None = None, *, env: Mapping[str, str] | None = None) -> Backend:
    """The backend `name` ("cann" | "sim" | None = $ACLNNGEN_BACKEND, else auto)."""
    chosen = select_backend_name(name)
    if chosen == "sim":
        return backend_factory("sim")()
    install, searched = find_cann(env)
    if install is not None:
        return CannBackend(install, env)
    if chosen == "cann":
        raise cann_not_found(searched)
    return backend_factory("sim")()
