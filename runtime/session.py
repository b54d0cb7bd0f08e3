"""The process-wide session: which backend is active, ACL initialisation, devices and streams.

- The backend is chosen on first use (`init(backend=...)`, else `$ACLNNGEN_BACKEND`, else CANN when
  found and the simulator otherwise) and ACL is initialised once per process with aclInit(NULL).
  When aclInit answers ACL_ERROR_REPEAT_INITIALIZE (100002) someone else owns ACL: the session uses
  it and, at exit, finalises nothing it did not initialise (torch_npu's rule). Otherwise, at exit,
  it resets the devices it set and calls aclFinalize.
- Threads: before a thread issues work the session gives it a context, the thread's own if it has
  one (aclrtGetDevice succeeds), else the device's default context through aclrtSetDevice. User
  threads therefore just work.
- `device(id)`: a context manager making device `id` current in this thread.
- `stream()`: a new `Stream` (a context manager: synchronised and destroyed on exit). A launch on an
  explicit stream keeps the memory it uses (workspace, temporaries, arguments) alive until
  `stream.synchronize()`.
- `simulated(family=..., version=..., soc=None, profile=None)`: for tests and audits; selects the
  simulator, sets its SoC name to one of the family (the first exact name, or prefix + "9579"), its
  CANN version and the behaviour profile its library checks by ("spec", "vendor", "lenient", see
  aclnngen.runtime.sim.kernels), and restores the previous backend and settings afterwards.
- `family()`: the product family from aclrtGetSocName() (runtime/products.py); an unknown SoC raises
  UnknownSocError. `version()`: the CANN version (the simulator: its configured version).
- `reset()`: shut the active backend down (the simulator: free everything) so that the next call
  starts afresh, e.g. to rebuild the simulator with newly registered op sources.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from typing import TYPE_CHECKING, Any, Iterator

from .errors import AclRuntimeError, BackendError
from .products import family_of, soc_for_family

if TYPE_CHECKING:
    from .backend import Backend

__all__ = [
    "Stream",
    "init",
    "backend",
    "family",
    "version",
    "soc_name",
    "simulated",
    "activate",
    "device",
    "stream",
    "default_stream",
    "synchronize",
    "reset",
    "describe",
]

_lock = threading.RLock()
_active: Backend | None = None
_requested: str | None = None
_sim: Backend | None = None  # the simulator, once loaded (shared by simulated())
_registered: set[int] = set()


def _register(b: Backend) -> Backend:
    if id(b) not in _registered:
        _registered.add(id(b))
        atexit.register(b.shutdown)
    return b


def init(backend: str | None = None) -> Backend:
    """Selects and loads the backend ("cann", "sim", None = $ACLNNGEN_BACKEND or auto) and
    initialises ACL. Calling it again with another name switches backends (the old one stays
    loaded for arrays that still use it)."""
    global _active, _requested
    # deferred: the backends (libraries, cffi declarations) load at the first call, not at a binding's import
    from .backend import CannBackend, cann_not_found, find_cann, select_backend_name

    with _lock:
        name = select_backend_name(backend)
        if _active is not None and _active.alive and (backend is None or _active.kind == name):
            _active.ensure_thread()
            return _active
        if name == "sim":
            b = _sim_backend()
        else:
            install, searched = find_cann()
            if install is not None:
                b = CannBackend(install)
            elif name == "cann":
                raise cann_not_found(searched)
            else:
                b = _sim_backend()
        _active = _register(b)
        _requested = backend
    b.ensure_thread()
    return b


def backend() -> Backend:
    """The active backend, loaded and ready for the calling thread."""
    b = _active
    if b is None or not b.alive:
        return init(_requested)
    b.ensure_thread()
    return b


def _sim_backend() -> Backend:
    """The simulator (aclnngen.runtime.sim's SimBackend), created through the backend registry:
    the session imports no simulator code itself."""
    global _sim
    from .backend import backend_factory  # deferred: see init()

    with _lock:
        if _sim is None or not _sim.alive:
            _sim = _register(backend_factory("sim")())
        return _sim


def soc_name() -> str | None:
    return backend().soc_name()


def family() -> str:
    """The product family of the active backend's SoC (UnknownSocError when it matches none)."""
    return backend().family()


def version() -> str | None:
    return backend().version()


def describe() -> dict:
    b = backend()
    info = b.describe()
    info["soc"] = b.soc_name()
    return info


@contextlib.contextmanager
def simulated(
    family: str | None = None,
    version: str | None = None,
    soc: str | None = None,
    profile: Any = None,
) -> Iterator[Backend]:
    """Run the body on the simulator as product `family` (or SoC `soc`) at CANN `version`, its
    library checking parameters by behaviour profile `profile` (a name of
    `aclnngen.runtime.sim.kernels.known_profiles()`: "spec", "vendor", "lenient", ...; or a
    kernels.Profile; None keeps the current one); restores the previous backend, SoC name,
    version and profile afterwards."""
    global _active
    if soc is None and family is not None:
        soc = soc_for_family(family)
    elif soc is not None and family is not None and family_of(soc) != family:
        raise ValueError(f"SoC {soc!r} belongs to family {family_of(soc)!r}, not {family!r}")
    sim = _sim_backend()
    # the simulator's own interface (SimBackend.use_profile): an unknown name fails here, before
    # anything changes
    profile_scope = sim.use_profile(profile) if profile is not None else contextlib.nullcontext()
    with _lock:
        previous_backend = _active
        previous_soc, previous_version = sim.settings
        _active = sim
    try:
        sim.ensure_thread()
        if soc is not None:
            sim.set_soc(soc)
        if version is not None:
            sim.set_version(version)
        with profile_scope:
            yield sim
    finally:
        with _lock:
            if sim.alive:
                sim.set_soc(previous_soc)
                sim.set_version(previous_version)
            _active = previous_backend


@contextlib.contextmanager
def activate(b: Backend) -> Iterator[Backend]:
    """Make backend `b` the active one for the body (e.g. a CannBackend built by hand), then
    restore the previous one."""
    global _active
    with _lock:
        previous, _active = _active, _register(b)
    try:
        b.ensure_thread()
        yield b
    finally:
        with _lock:
            _active = previous


@contextlib.contextmanager
def device(device_id: int) -> Iterator[int]:
    """Make device `device_id` current in this thread for the body (aclrtSetDevice), then restore
    the thread's previous context and release the device (aclrtResetDevice)."""
    b = backend()
    ffi, api = b.ffi, b.api
    previous = ffi.new("aclrtContext *")
    had_context = api.aclrtGetCurrentContext(previous) == 0
    if not had_context:
        b.recent_error()
    b.set_device(device_id)
    try:
        yield device_id
    finally:
        try:
            if had_context:
                b.check("aclrtSetCurrentContext", api.aclrtSetCurrentContext(previous[0]))
        finally:
            b.reset_device(device_id)
            if not had_context:
                b.mark_thread_ready(False)


class Stream:
    """An aclrtStream of one backend. Launches on it return at once; `synchronize()` waits for
    them and then releases what they used. The default stream (NULL, the stream of the thread's
    current context) is a Stream too (`default_stream()`)."""

    def __init__(self, b: Backend | None = None, *, _handle=None):
        self.backend = b or backend()
        ffi = self.backend.ffi
        self._pending: list[Any] = []
        self._lock = threading.Lock()
        self.destroyed = False
        if _handle is not None:
            self.handle = _handle
            self.owned = False
            return
        self.backend.ensure_thread()
        out = ffi.new("aclrtStream *")
        self.backend.check("aclrtCreateStream", self.backend.api.aclrtCreateStream(out))
        self.handle = out[0]
        self.owned = True

    @property
    def is_default(self) -> bool:
        return not self.owned

    def keep(self, *objects) -> None:
        """Keep `objects` (device buffers, arrays, anything) alive until the next synchronize."""
        with self._lock:
            for obj in objects:
                hold = getattr(obj, "_stream_hold", None)  # device arrays and buffers (arrays.py)
                if hold is not None:
                    hold(1)
                self._pending.append(obj)

    @property
    def pending(self) -> int:
        return len(self._pending)

    def _release(self) -> None:
        with self._lock:
            pending, self._pending = self._pending, []
        for obj in pending:
            hold = getattr(obj, "_stream_hold", None)
            if hold is not None:
                hold(-1)
            release = getattr(obj, "_release_after_sync", None)
            if release is not None:
                release()

    def synchronize(self) -> None:
        """aclrtSynchronizeStream; a kernel failure raises AclRuntimeError (e.g. 507015) with
        the library's message. What the queued launches used is released either way."""
        b = self.backend
        if not b.alive:
            raise BackendError(reason=f"the {b.kind} backend of this stream was shut down or reset")
        if self.owned and self.destroyed:
            raise AclRuntimeError(status=107000, function="aclrtSynchronizeStream", detail="the stream was destroyed")
        b.ensure_thread()
        rc = b.api.aclrtSynchronizeStream(self.handle)
        detail = b.recent_error() if rc != 0 else None
        self._release()
        if rc != 0:
            raise AclRuntimeError(status=rc, function="aclrtSynchronizeStream", detail=detail or None)

    def destroy(self) -> None:
        """Synchronise, then aclrtDestroyStream (a no-op for the default stream)."""
        if not self.owned or self.destroyed:
            return
        try:
            if self.backend.alive:
                self.synchronize()
        finally:
            self.destroyed = True
            if self.backend.alive:
                self.backend.check("aclrtDestroyStream", self.backend.api.aclrtDestroyStream(self.handle))

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()

    def __repr__(self) -> str:
        what = "default" if self.is_default else f"0x{int(self.backend.ffi.cast('uintptr_t', self.handle)):x}"
        return f"Stream({what}, {self.backend.kind}, pending={self.pending})"


def stream() -> Stream:
    """A new stream on the active backend (use as a context manager)."""
    return Stream(backend())


def default_stream(b: Backend | None = None) -> Stream:
    """The calling thread's default stream (NULL) of backend `b` (default: the active one)."""
    b = b or backend()
    tls = b._tls
    s = getattr(tls, "default_stream", None)
    if s is None:
        s = tls.default_stream = Stream(b, _handle=b.ffi.NULL)
    return s


def synchronize() -> None:
    """Synchronise the calling thread's default stream."""
    default_stream().synchronize()


def reset() -> None:
    """Shut the active backend down so that the next call loads one afresh. The simulator is
    reset (everything it holds is freed; device arrays from before become unusable) and rebuilt
    with the op sources registered by then."""
    global _active, _sim
    with _lock:
        b, _active = _active, None
        sim, _sim = _sim, None
        # the simulator `simulated()` loaded is reset too when no backend is active any more
        if sim is not None and sim is not b and sim.alive:
            sim.reset()
        if b is None:
            return
        if b.kind == "sim":
            b.reset()
        else:
            b.shutdown()
