"""The simulator as a backend: compiles runtime/sim/*.c with the generated `c/sim_ops.c` through
`build.build_simulator(abi_header=generated acl_runtime.h)` into the user's cache (`build_core`), and every
package of extra op sources (registered with `kernels.register_sim_sources`, or found beside the
META of a stand-alone generated package) into an op library of its own linked against that core;
it loads them with the same runtime cdef as CANN and registers the Python kernels of kernels.py as
its prepare/run hooks. Ops are looked up per package (`op_functions(meta, package)`); one symbol
never serves two packages (OpNamespaceError, see docs/runtime-limits.md). aclnngen.runtime.sim registers it with the call
path's backend registry (`backend.register_backend("sim", SimBackend)`)."""

from __future__ import annotations

import os
from pathlib import Path

from aclnngen.runtime import ffi as ffimod
from aclnngen.runtime.backend import Backend, RuntimeApi
from aclnngen.runtime.errors import AclRuntimeError, BackendError
from aclnngen.core.releases import ReleaseError, as_release, release_of, simulator_spelling

from . import compiled
from . import kernels as simkernels
from .build import SimulatorBuildError, build_simulator
from .controls import sim_ffi, sim_ops_path

__all__ = ["SimBackend", "SIM_LIB_NAMES", "build_core"]

SIM_LIB_NAMES = ("libascendcl.so", "libnnopbase.so", "libopapi.so")
SIM_OPS_LIB_NAME = "libaclsim_ops.so"  # a package's own op library (see SimBackend)
PACKAGE_DEFINE = "ACLSIM_PACKAGE"  # the package name compiled into its entry points' op identity
SIM_CANN_ENV = "ACLNNGEN_SIM_CANN"  # the CANN release the simulator reports (either spelling)


def _env_release() -> str | None:
    """$ACLNNGEN_SIM_CANN in the internal spelling; None when unset or empty."""
    text = os.environ.get(SIM_CANN_ENV, "").strip()
    if not text:
        return None
    try:
        return release_of(text, f"${SIM_CANN_ENV}")
    except ReleaseError as exc:
        raise BackendError(
            reason=str(exc), hint=f"set {SIM_CANN_ENV} to a release such as v9.1.0, or unset it"
        ) from None


#: The core's optimisation level. It is protocol code (descriptors, memory, streams), a few
#: microseconds of a binding call's ~50: at -O1 a call measured no slower than at -O2, and the
#: core compiles in a third less time (~0.65 instead of ~1 CPU-s), on every machine's first run.
#: The arithmetic, the compiled kernels (compiled.py), keeps the default -O2 its loops vectorise at.
CORE_OPTIMIZE = 1


def build_core(cache_dir: str | os.PathLike | None = None) -> Path:
    """The simulator's core with the built-in ops (the generated `c/sim_ops.c`), built into the
    cache (or found there): the path of its first name, SIM_LIB_NAMES[0]. SimBackend loads it."""
    return build_simulator(
        [sim_ops_path()],
        abi_header=ffimod.runtime_cdef_path(),
        defines={PACKAGE_DEFINE: _c_string(simkernels.BUILTIN_PACKAGE)},
        lib_names=SIM_LIB_NAMES,
        cache_dir=cache_dir,
        optimize=CORE_OPTIMIZE,
    )


class SimBackend(Backend):
    kind = "sim"
    # its family and version are the library's own state (the SoC name and version it answers),
    # which the core's remembered decisions key on (kernels.py, sim_memo.c)
    remembers_decisions = True

    def __init__(self, cache_dir: str | os.PathLike | None = None):
        super().__init__()
        # One library for the core and the built-in ops, then one op library per package of
        # extra sources (linked against the core, loaded RTLD_LOCAL): two packages that both
        # define aclnnXxx each keep their own, and their entry points name their package.
        self.sources = [sim_ops_path(), *simkernels.extra_sources()]
        abi_header = ffimod.runtime_cdef_path()
        try:
            path = build_core(cache_dir)
            directory = path.parent
            self.package_libraries: dict[str | None, str] = {}
            for package, sources in simkernels.sources_by_package().items():
                if package is not None:
                    _check_op_ids(package, sources)
                lib = build_simulator(
                    sources,
                    abi_header=abi_header,
                    defines={PACKAGE_DEFINE: _c_string(package or "")},
                    lib_names=(SIM_OPS_LIB_NAME,),
                    cache_dir=cache_dir,
                    link_core=directory / SIM_LIB_NAMES[1],
                )
                self.package_libraries[package] = str(lib)
        except SimulatorBuildError as exc:
            raise BackendError(reason=f"the simulator could not be built: {exc}") from None
        self.libraries = {
            "ascendcl": str(directory / SIM_LIB_NAMES[0]),
            "nnopbase": str(directory / SIM_LIB_NAMES[1]),
            "opapi": str(directory / SIM_LIB_NAMES[2]),
        }
        self.path = str(path)
        rt = ffimod.dlopen(self.ffi, self.libraries["ascendcl"])
        nn = ffimod.dlopen(self.ffi, self.libraries["nnopbase"])
        self.api = RuntimeApi({"ascendcl": rt, "nnopbase": nn}, self.libraries)
        self.controls = ffimod.dlopen(sim_ffi(), self.path)
        self._soc_setting: str | None = None
        self._version_setting: str | None = None
        # the release reported when none is set: $ACLNNGEN_SIM_CANN, else the newest release the
        # built ops' specs describe (the generated sim_ops.c, aclsim_specs_release)
        self._default_version = _env_release()
        if self._default_version is not None:
            self.set_version(None)
        simkernels.install(self)

    def op_library_candidates(self, package: str | None = None) -> list[str]:
        """The package's own op library first, then the core (the built-in ops), then the
        libraries of sources registered without a package."""
        own = self.package_libraries.get(package) if package != simkernels.BUILTIN_PACKAGE else None
        if own is None and package in simkernels.sources_by_package():
            raise self._late_sources_error(package)
        bare = self.package_libraries.get(None)
        return [lib for lib in (own, self.libraries["opapi"], bare) if lib is not None]

    def library_package(self, candidate: str) -> str | None:
        if candidate == self.libraries["opapi"]:
            return simkernels.BUILTIN_PACKAGE
        for package, lib in self.package_libraries.items():
            if lib == candidate:
                return package
        return None

    def _missing_op_error(self, meta, searched) -> BackendError:
        error = super()._missing_op_error(meta, searched)
        late = [str(p) for p in simkernels.extra_sources() if p not in self.sources]
        if late:
            error = BackendError(
                reason=error.reason,
                op=error.op,
                cann_version=error.cann_version,
                searched=error.searched,
                hint=_late_hint(late),
            )
        return error

    def _late_sources_error(self, package: str) -> BackendError:
        late = [str(p) for p in simkernels.sources_by_package()[package]]
        return BackendError(
            reason=f"the simulator has no entry points of package {package!r} yet",
            cann_version=self.version(),
            hint=_late_hint(late),
        )

    def version_info(self) -> tuple[str | None, str]:
        version = self.library_version()
        if version is None:
            return None, "unknown (the simulator did not answer aclsysGetVersionStr)"
        if self._version_setting is not None:
            source = "simulator setting"
        elif self._default_version is not None:
            source = f"${SIM_CANN_ENV}"
        else:
            source = "default: the newest release the ops' specs describe"
        return as_release(version) or version, f"aclsysGetVersionStr ({source})"

    def compiled_kernels(self) -> dict:
        """The built-in package's compiled kernels: setting, mode, ops, fallbacks with why, and
        the build error when there are none (compiled.status)."""
        return compiled.status(simkernels.BUILTIN_PACKAGE, self.libraries["nnopbase"])

    def use_profile(self, profile):
        """A context manager making `profile` (a name of `kernels.known_profiles()`, or a
        kernels.Profile) the one the simulated library checks by; an unknown name fails here,
        before anything changes (used by session.simulated)."""
        simkernels.resolve_profile(profile)
        return simkernels.use_profile(profile)

    # -- simulator controls --------------------------------------------------------------------
    def set_soc(self, name: str | None) -> None:
        arg = self.ffi.NULL if name is None else name.encode()
        rc = self.controls.aclsim_set_soc_name(arg)
        if rc != 0:
            raise ValueError(f"the simulator refused SoC name {name!r}: {self.recent_error()}")
        self._soc_setting = name

    def set_version(self, version: str | None) -> None:
        """The release the simulator reports (either spelling, aclnngen/core/releases.py); None restores
        the default ($ACLNNGEN_SIM_CANN, else the newest release the ops' specs describe)."""
        effective = version if version is not None else self._default_version
        # a spec's 9.0.RC1.alpha001 is CANN's 9.0.0-beta.1
        arg = self.ffi.NULL if effective is None else simulator_spelling(str(effective)).encode()
        rc = self.controls.aclsim_set_version(arg)
        if rc != 0:
            raise ValueError(f"the simulator refused CANN version {version!r}: {self.recent_error()}")
        self._version_setting = None if version is None else str(version)

    def set_kernels(self, on: bool) -> None:
        """Kernels on (the default) or off. Off, GetWorkspaceSize runs no op-specific check and a
        launch computes nothing: only the C protocol runs (descriptors, memory, the two phases,
        the stream), for benchmarks of the call path. Results are then garbage."""
        self.controls.aclsim_set_kernels(1 if on else 0)

    @property
    def settings(self) -> tuple[str | None, str | None]:
        """(SoC name, version) set through this backend; None = the simulator's default."""
        return self._soc_setting, self._version_setting

    def counters(self) -> dict[str, int]:
        sim = sim_ffi()
        c = sim.new("struct aclsim_counters *")
        self.controls.aclsim_get_counters(c)
        return {name: getattr(c, name) for name, _ in sim.typeof("struct aclsim_counters").fields}

    def reset(self) -> None:
        """Free everything the simulator holds (aclsim_reset) and forget this process's setup."""
        with self._lock:
            rc = self.controls.aclsim_reset()
            if rc != 0:
                raise AclRuntimeError(status=rc, function="aclsim_reset", detail=self.recent_error() or None)
            self.alive = False
            self._initialized = False
            self._devices_set.clear()


def _check_op_ids(package: str, sources: list[Path]) -> None:
    """A package's entry points must name their package (ACLSIM_OP_ID): entry points generated
    before op namespaces pass the bare symbol, which the hooks would resolve to the built-in op
    of that name."""
    for src in sources:
        try:
            text = Path(src).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise BackendError(reason=f"cannot read simulator source {src}: {exc.strerror or exc}") from None
        if "sim_prepare(" in text and "ACLSIM_OP_ID(" not in text:
            raise BackendError(
                reason=f"{src} of package {package!r} has entry points without their package (ACLSIM_OP_ID)",
                hint="it was generated by an older aclnngen; run `aclnngen generate --specs ... --out ...` again",
            )


def _late_hint(late: list[str]) -> str:
    return (
        "simulator sources were registered after the simulator was built ("
        + ", ".join(late)
        + "); import the package before the first call, or call "
        "aclnngen.runtime.session.reset() to rebuild"
    )


def _c_string(text: str) -> str:
    """A C string literal for a -D value (package names are checked dotted identifiers)."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
