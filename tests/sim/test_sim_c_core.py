"""The simulator's generic C core and its automatic build, exercised through cffi ABI mode.

A small test-only op entry file (written into a temporary directory, the way the generated
`sim_ops.c` will be) is compiled with the core by `build_simulator`; the hooks are Python
callbacks that read and write the simulated device memory through the executor view.
"""

from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import cffi
import numpy as np
import pytest

from aclnngen.runtime.sim import build as simbuild
from aclnngen.runtime.sim.backend import CORE_OPTIMIZE
from aclnngen.runtime.sim.build import SIM_DIR, SimulatorBuildError, build_simulator, sim_header_text
from repo_paths import REPO
from simcache import tiny_core

# Status codes (cann-abi.md 1.1, 2.4)
OK = 0
ACL_ERROR_INVALID_PARAM = 100000
ACL_ERROR_UNINITIALIZE = 100001
ACL_ERROR_REPEAT_INITIALIZE = 100002
ACL_ERROR_INVALID_FILE = 100003
ACL_ERROR_REPEAT_FINALIZE = 100037
ACL_ERROR_RT_PARAM_INVALID = 107000
ACL_ERROR_RT_CONTEXT_NULL = 107002
ACL_ERROR_RT_AICORE_EXCEPTION = 507015
ACLNN_ERR_PARAM_NULLPTR = 161001
ACLNN_ERR_PARAM_INVALID = 161002
ACLNN_ERR_RUNTIME_ERROR = 361001
ACLNN_ERR_INNER = 561000
ACLNN_ERR_INNER_FIND_KERNEL_ERROR = 561003
ACLNN_ERR_INNER_NULLPTR = 561103

ACL_FLOAT, ACL_FLOAT16, ACL_INT32, ACL_INT64, ACL_DOUBLE, ACL_BOOL, ACL_BF16 = 0, 1, 3, 9, 11, 12, 27
ACL_INT4, ACL_STRING = 29, 13
ACL_FORMAT_ND, ACL_FORMAT_NCHW = 2, 0
H2H, H2D, D2H, D2D, DEFAULT = 0, 1, 2, 3, 4
NP_DTYPES = {
    ACL_FLOAT: np.float32,
    ACL_FLOAT16: np.float16,
    ACL_INT32: np.int32,
    ACL_INT64: np.int64,
    ACL_DOUBLE: np.float64,
}

OPS_C = r"""
#include "aclsim_core.h"

aclnnStatus aclnnSimAxpyGetWorkspaceSize(const aclTensor *x, const aclTensor *yOptional,
                                         const aclScalar *alpha, int64_t mode, aclTensor *out,
                                         uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const sim_arg args[] = {
        {SIM_ARG_TENSOR_IN, "x", x, 0},
        {SIM_ARG_TENSOR_OPTIONAL, "yOptional", yOptional, 0},
        {SIM_ARG_SCALAR, "alpha", alpha, 0},
        {SIM_ARG_INT64, "mode", NULL, mode},
        {SIM_ARG_TENSOR_OUT, "out", out, 0},
    };
    return sim_prepare("aclnnSimAxpy", args, 5, workspaceSize, executor);
}

aclnnStatus aclnnSimAxpy(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                         aclrtStream stream)
{
    return sim_launch("aclnnSimAxpy", workspace, workspaceSize, executor, stream);
}

aclnnStatus aclnnSimAttrsGetWorkspaceSize(const aclTensor *self, char *approximate, double eps,
                                          bool flag, const aclIntArray *dims,
                                          const aclFloatArray *weights, const aclBoolArray *mask,
                                          const aclScalar *betaOptional, aclTensor *out,
                                          uint64_t *workspaceSize, aclOpExecutor **executor)
{
    const sim_arg args[] = {
        {SIM_ARG_TENSOR_IN, "self", self, 0},
        {SIM_ARG_STRING, "approximate", approximate, 0},
        {SIM_ARG_DOUBLE, "eps", &eps, 0},
        {SIM_ARG_BOOL, "flag", NULL, (int64_t)flag},
        {SIM_ARG_INT_ARRAY, "dims", dims, 0},
        {SIM_ARG_FLOAT_ARRAY, "weights", weights, 0},
        {SIM_ARG_BOOL_ARRAY, "mask", mask, 0},
        {SIM_ARG_SCALAR_OPTIONAL, "betaOptional", betaOptional, 0},
        {SIM_ARG_TENSOR_OUT, "out", out, 0},
    };
    return sim_prepare("aclnnSimAttrs", args, 9, workspaceSize, executor);
}

aclnnStatus aclnnSimAttrs(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                          aclrtStream stream)
{
    return sim_launch("aclnnSimAttrs", workspace, workspaceSize, executor, stream);
}
"""

OPS_CDEF = """
aclnnStatus aclnnSimAxpyGetWorkspaceSize(const aclTensor *x, const aclTensor *yOptional,
    const aclScalar *alpha, int64_t mode, aclTensor *out, uint64_t *workspaceSize,
    aclOpExecutor **executor);
aclnnStatus aclnnSimAxpy(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);
aclnnStatus aclnnSimAttrsGetWorkspaceSize(const aclTensor *self, char *approximate, double eps,
    bool flag, const aclIntArray *dims, const aclFloatArray *weights, const aclBoolArray *mask,
    const aclScalar *betaOptional, aclTensor *out, uint64_t *workspaceSize,
    aclOpExecutor **executor);
aclnnStatus aclnnSimAttrs(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
    aclrtStream stream);
"""

COUNTER_FIELDS = (
    "tensors",
    "scalars",
    "int_arrays",
    "executors",
    "allocations",
    "allocated_bytes",
    "streams",
    "contexts",
    "queued_launches",
    "float_arrays",
    "bool_arrays",
    "tensor_lists",
    "scalar_lists",
)


def make_ffi(extra: str = OPS_CDEF) -> cffi.FFI:
    ffi = cffi.FFI()
    ffi.cdef(sim_header_text("aclsim_abi.h") + sim_header_text("aclsim_controls.h") + extra)
    return ffi


# ------------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="session")
def sim_cache() -> Path:
    """The cache the session's simulator uses: the test library is built once for every test
    worker (its key is its content, wherever its source is), as fakecann.py's builds are."""
    return simbuild.cache_root()


@pytest.fixture(scope="session")
def lib_path(sim_cache, tmp_path_factory) -> Path:
    src = tmp_path_factory.mktemp("ops") / "sim_ops.c"
    src.write_text(OPS_C)
    return build_simulator([src], cache_dir=sim_cache, optimize=CORE_OPTIMIZE)  # as the simulator's core


class Kernels:
    """Python prepare/run hooks implementing the test ops on simulated device memory."""

    def __init__(self, sim: "Sim"):
        self.sim = sim
        self.workspace = 0
        self.prepare_status = 0
        self.prepare_message = b""
        self.run_status = 0
        self.on_run = None  # extra callable(view) inside the run hook
        self.prepared: list[dict] = []
        self.runs: list[tuple[str, int, int]] = []
        self.seen_flags: list[int] = []
        ffi = sim.ffi
        self.c_prepare = ffi.callback("aclsim_prepare_hook", self._prepare, error=ACLNN_ERR_INNER)
        self.c_run = ffi.callback("aclsim_run_hook", self._run, error=ACLNN_ERR_INNER)

    def _prepare(self, op, view, ws, msg, cap):
        self.seen_flags.append(self.sim.lib.aclsim_view_flags(view))
        self.prepared.append({a["name"]: a for a in self.sim.view(view)})
        if self.prepare_status:
            text = self.prepare_message[: cap - 1]
            self.sim.ffi.memmove(msg, text + b"\0", len(text) + 1)
            return self.prepare_status
        ws[0] = self.workspace
        return 0

    def _run(self, op, view, workspace, workspace_size, msg, cap):
        name = self.sim.ffi.string(op).decode()
        self.runs.append((name, int(self.sim.ffi.cast("uintptr_t", workspace)), workspace_size))
        if self.on_run is not None:
            self.on_run(view)
        if self.run_status:
            self.sim.ffi.memmove(msg, b"kernel exploded\0", 16)
            return self.run_status
        args = {a["name"]: a for a in self.sim.view(view)}
        if name == "aclnnSimAxpy":
            x = args["x"]["array"]
            alpha = args["alpha"]["value"]
            y = args["yOptional"]
            result = alpha * x.astype(np.float64) + (0 if y["is_null"] else y["array"])
            args["out"]["array"][...] = result.astype(args["out"]["array"].dtype)
        elif name == "aclnnSimAttrs":
            args["out"]["array"][...] = args["self"]["array"] * args["eps"]["f"]
        if workspace_size:
            # the workspace is device memory the kernel may scribble on
            self.sim.ffi.memmove(workspace, b"\x00" * workspace_size, workspace_size)
        return 0


class Sim:
    def __init__(self, ffi, lib):
        self.ffi = ffi
        self.lib = lib
        self.kernels = Kernels(self)
        self.keep = []

    def install_hooks(self):
        self.lib.aclsim_set_hooks(self.kernels.c_prepare, self.kernels.c_run)

    # -- helpers --------------------------------------------------------------------------------
    def err(self) -> str:
        return self.ffi.string(self.lib.aclGetRecentErrMsg()).decode()

    def counters(self) -> dict:
        c = self.ffi.new("struct aclsim_counters *")
        self.lib.aclsim_get_counters(c)
        return {f: getattr(c, f) for f in COUNTER_FIELDS}

    def start(self, device=0):
        assert self.lib.aclInit(self.ffi.NULL) == OK
        assert self.lib.aclrtSetDevice(device) == OK

    def malloc(self, size) -> "cffi.CData":
        p = self.ffi.new("void **")
        rc = self.lib.aclrtMalloc(p, size, 0)
        assert rc == OK, (rc, self.err())
        return p[0]

    def upload(self, array: np.ndarray):
        array = np.ascontiguousarray(array)
        dev = self.malloc(array.nbytes)
        rc = self.lib.aclrtMemcpy(dev, array.nbytes, self.ffi.from_buffer(array), array.nbytes, H2D)
        assert rc == OK, (rc, self.err())
        return dev

    def download(self, dev, shape, dtype) -> tuple[int, np.ndarray]:
        out = np.empty(shape, dtype)
        rc = self.lib.aclrtMemcpy(self.ffi.from_buffer(out), out.nbytes, dev, out.nbytes, D2H)
        return rc, out

    def tensor(self, shape, acl_dtype, data, strides=None, offset=0, storage=None, fmt=ACL_FORMAT_ND):
        shape = list(shape)
        if strides is None:
            strides = [1] * len(shape)
            for k in range(len(shape) - 2, -1, -1):
                strides[k] = strides[k + 1] * shape[k + 1]
        storage = shape if storage is None else storage
        dims = self.ffi.new("int64_t[]", shape or [0])
        st = self.ffi.new("int64_t[]", list(strides) or [0])
        sd = self.ffi.new("int64_t[]", list(storage) or [0])
        return self.lib.aclCreateTensor(dims, len(shape), acl_dtype, st, offset, fmt, sd, len(storage), data)

    def scalar(self, value, acl_dtype):
        ctype = {
            ACL_FLOAT: "float",
            ACL_DOUBLE: "double",
            ACL_INT64: "int64_t",
            ACL_INT32: "int32_t",
            ACL_BOOL: "bool",
            ACL_FLOAT16: "uint16_t",
            ACL_BF16: "uint16_t",
        }[acl_dtype]
        buf = self.ffi.new(f"{ctype} *", value)
        return self.lib.aclCreateScalar(buf, acl_dtype)

    def view(self, view) -> list[dict]:
        """All arguments of an executor as dicts; tensors get a NumPy view of device memory."""
        ffi, lib = self.ffi, self.lib
        n = lib.aclsim_view_num_args(view)
        assert n >= 0
        out = []
        for i in range(n):
            a = ffi.new("struct aclsim_arg_view *")
            assert lib.aclsim_view_arg(view, i, a) == OK
            d = {
                "kind": a.kind,
                "name": ffi.string(a.name).decode(),
                "is_null": a.is_null,
                "i": a.i,
                "f": a.f,
                "dtype": a.dtype,
                "count": a.count,
                "nbytes": a.nbytes,
            }
            if a.kind in (0, 1, 2, 3) and not a.is_null:
                dims = [a.dims[k] for k in range(a.ndim)]
                strides = [a.strides[k] for k in range(a.ndim)]
                d.update(
                    dims=dims,
                    strides=strides,
                    offset=a.offset,
                    format=a.format,
                    data=int(ffi.cast("uintptr_t", a.data)),
                    storage=[a.storage_dims[k] for k in range(a.storage_ndim)],
                )
                dt = np.dtype(NP_DTYPES[a.dtype])
                if 0 in dims:
                    d["array"] = np.zeros(dims, dt)
                else:
                    end = a.offset + sum((n_ - 1) * s for n_, s in zip(dims, strides)) + 1
                    base = np.frombuffer(ffi.buffer(ffi.cast("char *", a.data), end * dt.itemsize), dtype=dt)
                    d["array"] = np.lib.stride_tricks.as_strided(
                        base[a.offset :], shape=dims, strides=[s * dt.itemsize for s in strides]
                    )
            elif a.kind in (4, 5) and not a.is_null:
                ctype = {
                    ACL_FLOAT: "float",
                    ACL_DOUBLE: "double",
                    ACL_INT64: "int64_t",
                    ACL_INT32: "int32_t",
                    ACL_BOOL: "bool",
                    ACL_FLOAT16: "uint16_t",
                    ACL_BF16: "uint16_t",
                }[a.dtype]
                d["value"] = ffi.cast(f"{ctype} *", a.value)[0]
            elif a.kind in (9, 10) and not a.is_null:
                d["value"] = ffi.string(ffi.cast("char *", a.value)).decode()
            elif a.kind in (11, 12, 13, 14) and not a.is_null:
                ctype = {11: "int64_t", 12: "int64_t", 13: "float", 14: "bool"}[a.kind]
                ptr = ffi.cast(f"{ctype} *", a.value)
                d["value"] = [ptr[k] for k in range(a.count)]
            out.append(d)
        return out

    def prepare_axpy(self, x, alpha, out, y=None, mode=0, ws=True, ex=True):
        wsp = self.ffi.new("uint64_t *") if ws else self.ffi.NULL
        exp = self.ffi.new("aclOpExecutor **") if ex else self.ffi.NULL
        rc = self.lib.aclnnSimAxpyGetWorkspaceSize(x, y if y is not None else self.ffi.NULL, alpha, mode, out, wsp, exp)
        return rc, (wsp[0] if ws and rc == OK else None), (exp[0] if ex and rc == OK else None)


@pytest.fixture(scope="session")
def _sim_session(lib_path):
    ffi = make_ffi()
    return Sim(ffi, ffi.dlopen(str(lib_path)))


@pytest.fixture
def sim(_sim_session, monkeypatch):
    s = _sim_session
    assert s.lib.aclsim_reset() == OK
    s.kernels.__init__(s)
    s.install_hooks()
    assert s.lib.aclsim_set_soc_name(s.ffi.NULL) == OK
    assert s.lib.aclsim_set_version(s.ffi.NULL) == OK
    assert s.lib.aclsim_set_device_count(1) == OK
    monkeypatch.delenv("ACLNNGEN_SIM_SOC", raising=False)
    s.err()  # drop messages left by earlier tests on this thread
    yield s
    assert s.lib.aclsim_reset() == OK


def axpy_setup(sim, n=8, alpha=2.0, with_y=True):
    """Device buffers and descriptors for out = alpha * x + y (float32, shape [2, n/2])."""
    x_host = np.arange(n, dtype=np.float32)
    y_host = np.full(n, 10.0, np.float32)
    shape = [2, n // 2]
    dx = sim.upload(x_host)
    dy = sim.upload(y_host) if with_y else None
    dout = sim.malloc(n * 4)
    tx = sim.tensor(shape, ACL_FLOAT, dx)
    ty = sim.tensor(shape, ACL_FLOAT, dy) if with_y else None
    tout = sim.tensor(shape, ACL_FLOAT, dout)
    s_alpha = sim.scalar(alpha, ACL_FLOAT)
    expected = (alpha * x_host + (y_host if with_y else 0)).reshape(shape)
    return dict(dx=dx, dy=dy, dout=dout, tx=tx, ty=ty, tout=tout, alpha=s_alpha, expected=expected, shape=shape)


def in_thread(fn):
    box = {}

    def body():
        try:
            box["result"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller
            box["error"] = exc

    t = threading.Thread(target=body)
    t.start()
    t.join(60)
    assert not t.is_alive(), "thread hung"
    if "error" in box:
        raise box["error"]
    return box["result"]


# ------------------------------------------------------------------------------------------------
# init, devices, contexts


def test_init_repeat_and_finalize(sim):
    lib, ffi = sim.lib, sim.ffi
    assert lib.aclrtSetDevice(0) == ACL_ERROR_UNINITIALIZE
    assert "aclInit" in sim.err()
    assert lib.aclFinalize() == ACL_ERROR_REPEAT_FINALIZE
    assert "not initialized" in sim.err()
    assert lib.aclInit(ffi.NULL) == OK
    assert sim.err() == ""
    assert lib.aclInit(b"/nonexistent/acl.json") == ACL_ERROR_REPEAT_INITIALIZE
    assert "already initialized" in sim.err()
    assert lib.aclrtSetDevice(0) == OK
    assert lib.aclFinalize() == OK  # one aclFinalize ends it, despite two aclInit calls
    assert lib.aclFinalize() == ACL_ERROR_REPEAT_FINALIZE
    assert sim.counters()["contexts"] == 0 and sim.counters()["streams"] == 0
    assert lib.aclrtSetDevice(0) == ACL_ERROR_UNINITIALIZE


def test_device_ids_and_get_device(sim):
    lib, ffi = sim.lib, sim.ffi
    assert lib.aclInit(ffi.NULL) == OK
    dev = ffi.new("int32_t *", 99)
    assert lib.aclrtGetDevice(dev) == ACL_ERROR_RT_CONTEXT_NULL
    assert lib.aclrtSetDevice(1) == ACL_ERROR_RT_PARAM_INVALID
    assert "device 1 does not exist" in sim.err()
    assert lib.aclrtSetDevice(-1) == ACL_ERROR_RT_PARAM_INVALID
    assert lib.aclsim_set_device_count(2) == OK
    assert lib.aclrtSetDevice(1) == OK
    assert lib.aclrtGetDevice(dev) == OK and dev[0] == 1
    assert lib.aclsim_set_device_count(1) == ACL_ERROR_RT_PARAM_INVALID  # device 1 is set
    assert lib.aclrtGetDevice(ffi.NULL) == ACL_ERROR_INVALID_PARAM
    # each SetDevice takes one ResetDevice
    assert lib.aclrtSetDevice(1) == OK
    assert lib.aclrtResetDevice(1) == OK
    assert sim.counters()["contexts"] == 1
    assert lib.aclrtResetDevice(1) == OK
    assert sim.counters()["contexts"] == 0
    assert lib.aclrtResetDevice(1) == ACL_ERROR_RT_PARAM_INVALID
    assert lib.aclrtGetDevice(dev) == ACL_ERROR_RT_CONTEXT_NULL


def test_context_null_in_a_fresh_thread(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    ctx = ffi.new("aclrtContext *")
    assert lib.aclrtGetCurrentContext(ctx) == OK
    main_ctx = ctx[0]
    dev = sim.malloc(64)
    host = np.zeros(16, np.float32)
    t = axpy_setup(sim)
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert rc == OK

    def worker():
        p = ffi.new("void **")
        results = {
            "malloc": lib.aclrtMalloc(p, 64, 0),
            "malloc_msg": sim.err(),
            "stream": lib.aclrtCreateStream(ffi.new("aclrtStream *")),
            "memcpy": lib.aclrtMemcpy(dev, 64, ffi.from_buffer(host), 64, H2D),
            "launch": lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL),
            "launch_msg": sim.err(),
            "sync_default": lib.aclrtSynchronizeStream(ffi.NULL),
            "get_ctx": lib.aclrtGetCurrentContext(ffi.new("aclrtContext *")),
        }
        # a shared context makes the thread usable
        results["set_ctx"] = lib.aclrtSetCurrentContext(main_ctx)
        results["malloc_after"] = lib.aclrtMalloc(p, 64, 0)
        results["free_after"] = lib.aclrtFree(p[0])
        return results

    r = in_thread(worker)
    assert r["malloc"] == ACL_ERROR_RT_CONTEXT_NULL
    assert "no current context" in r["malloc_msg"]
    assert r["stream"] == ACL_ERROR_RT_CONTEXT_NULL
    assert r["memcpy"] == ACL_ERROR_RT_CONTEXT_NULL
    assert r["launch"] == ACL_ERROR_RT_CONTEXT_NULL
    assert "no current context" in r["launch_msg"]
    assert r["sync_default"] == ACL_ERROR_RT_CONTEXT_NULL
    assert r["get_ctx"] == ACL_ERROR_RT_CONTEXT_NULL
    assert (r["set_ctx"], r["malloc_after"], r["free_after"]) == (OK, OK, OK)
    # aclrtSetDevice in the thread works too
    assert in_thread(lambda: (lib.aclrtSetDevice(0), lib.aclrtResetDevice(0))) == (OK, OK)
    # the executor was not consumed by the failed launch
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == OK
    assert lib.aclrtSynchronizeStream(ffi.NULL) == OK


def test_user_contexts(sim):
    lib, ffi = sim.lib, sim.ffi
    ctx = ffi.new("aclrtContext *")
    assert lib.aclrtCreateContext(ctx, 0) == ACL_ERROR_UNINITIALIZE
    assert lib.aclInit(ffi.NULL) == OK
    assert lib.aclrtCreateContext(ctx, 3) == ACL_ERROR_RT_PARAM_INVALID
    assert lib.aclrtCreateContext(ctx, 0) == OK
    cur = ffi.new("aclrtContext *")
    assert lib.aclrtGetCurrentContext(cur) == OK and cur[0] == ctx[0]
    p = sim.malloc(32)  # the created context is current
    stream = ffi.new("aclrtStream *")
    assert lib.aclrtCreateStream(stream) == OK
    assert sim.counters()["streams"] == 2  # its default stream and ours
    assert lib.aclrtDestroyContext(ctx[0]) == OK  # takes its streams along
    assert sim.counters()["streams"] == 0 and sim.counters()["contexts"] == 0
    assert lib.aclrtDestroyContext(ctx[0]) == ACL_ERROR_RT_PARAM_INVALID
    assert lib.aclrtSetCurrentContext(ctx[0]) == ACL_ERROR_RT_PARAM_INVALID
    assert lib.aclrtMalloc(ffi.new("void **"), 32, 0) == ACL_ERROR_RT_CONTEXT_NULL
    assert lib.aclrtFree(p) == OK  # freeing needs no context
    # the default context belongs to aclrtResetDevice
    assert lib.aclrtSetDevice(0) == OK
    assert lib.aclrtGetCurrentContext(cur) == OK
    assert lib.aclrtDestroyContext(cur[0]) == ACL_ERROR_RT_PARAM_INVALID
    assert "aclrtResetDevice" in sim.err()


# ------------------------------------------------------------------------------------------------
# device memory


def test_malloc_rules(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    p = ffi.new("void **")
    assert lib.aclrtMalloc(p, 0, 0) == ACL_ERROR_INVALID_PARAM
    assert "size must not be 0" in sim.err()
    assert lib.aclrtMalloc(ffi.NULL, 16, 0) == ACL_ERROR_INVALID_PARAM
    assert lib.aclrtMalloc(p, 16, 99) == ACL_ERROR_INVALID_PARAM
    ptrs = [sim.malloc(size) for size in (1, 32, 33, 1000)]
    assert all(int(ffi.cast("uintptr_t", q)) % 64 == 0 for q in ptrs)
    c = sim.counters()
    # rounded up to 32 bytes, then 32 more
    assert c["allocations"] == 4
    assert c["allocated_bytes"] == (32 + 32) + (32 + 32) + (64 + 32) + (1024 + 32)
    for q in ptrs:
        assert lib.aclrtFree(q) == OK
    assert lib.aclrtFree(ptrs[0]) == ACL_ERROR_RT_PARAM_INVALID
    assert "not a live device allocation" in sim.err()
    host = np.zeros(4, np.float32)
    assert lib.aclrtFree(ffi.from_buffer(host)) == ACL_ERROR_RT_PARAM_INVALID
    q = sim.malloc(128)
    assert lib.aclrtFree(ffi.cast("char *", q) + 64) == ACL_ERROR_RT_PARAM_INVALID
    assert "inside a device allocation" in sim.err()
    assert lib.aclrtFree(ffi.NULL) == ACL_ERROR_INVALID_PARAM
    assert lib.aclrtFree(q) == OK
    assert sim.counters()["allocations"] == 0 and sim.counters()["allocated_bytes"] == 0


def test_fresh_device_memory_is_poisoned(sim):
    sim.start()
    dev = sim.malloc(16)
    rc, out = sim.download(dev, (4,), np.float32)
    assert rc == OK and np.isnan(out).all()


def test_memcpy_checks(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    dev = sim.malloc(64)
    dev2 = sim.malloc(64)
    host = np.arange(32, dtype=np.float32)  # 128 bytes
    hp = ffi.from_buffer(host)
    # count > destMax
    assert lib.aclrtMemcpy(dev, 16, hp, 32, H2D) == ACL_ERROR_INVALID_PARAM
    assert "destMax" in sim.err()
    # device range runs past the block (the padding does not count)
    assert lib.aclrtMemcpy(dev, 128, hp, 65, H2D) == ACL_ERROR_RT_PARAM_INVALID
    assert "past the end" in sim.err()
    assert lib.aclrtMemcpy(ffi.cast("char *", dev) + 32, 64, hp, 33, H2D) == ACL_ERROR_RT_PARAM_INVALID
    # wrong direction: host pointer as device side, device pointer as host side
    assert lib.aclrtMemcpy(hp, 128, dev, 64, H2D) == ACL_ERROR_RT_PARAM_INVALID
    assert lib.aclrtMemcpy(dev, 64, hp, 64, D2H) == ACL_ERROR_RT_PARAM_INVALID
    assert "device memory" in sim.err()
    assert lib.aclrtMemcpy(hp, 128, dev, 64, H2H) == ACL_ERROR_RT_PARAM_INVALID
    assert lib.aclrtMemcpy(dev, 64, hp, 64, 8) == ACL_ERROR_INVALID_PARAM
    assert lib.aclrtMemcpy(ffi.NULL, 64, hp, 64, H2D) == ACL_ERROR_INVALID_PARAM
    # valid copies of every kind move the bytes
    assert lib.aclrtMemcpy(dev, 64, hp, 64, H2D) == OK
    assert lib.aclrtMemcpy(dev2, 64, dev, 64, D2D) == OK
    back = np.zeros(16, np.float32)
    assert lib.aclrtMemcpy(ffi.from_buffer(back), 64, dev2, 64, D2H) == OK
    assert (back == host[:16]).all()
    back2 = np.zeros(16, np.float32)
    assert lib.aclrtMemcpy(ffi.from_buffer(back2), 64, ffi.from_buffer(host), 64, H2H) == OK
    assert (back2 == host[:16]).all()
    back3 = np.zeros(8, np.float32)
    assert lib.aclrtMemcpy(ffi.from_buffer(back3), 32, ffi.cast("char *", dev) + 32, 32, DEFAULT) == OK
    assert (back3 == host[8:16]).all()
    assert lib.aclrtMemcpy(dev, 64, hp, 0, H2D) == OK  # nothing to copy
    # a freed block is no longer device memory
    assert lib.aclrtFree(dev2) == OK
    assert lib.aclrtMemcpy(dev2, 64, hp, 64, H2D) == ACL_ERROR_RT_PARAM_INVALID
    assert "not in a live device allocation" in sim.err()


# ------------------------------------------------------------------------------------------------
# descriptors


def test_tensor_creation_and_getters(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    dev = sim.malloc(256)
    t = sim.tensor([2, 3], ACL_FLOAT16, dev, strides=[4, 1], offset=5, storage=[64], fmt=ACL_FORMAT_NCHW)
    assert t != ffi.NULL
    dims, num = ffi.new("int64_t **"), ffi.new("uint64_t *")
    assert lib.aclGetViewShape(t, dims, num) == OK
    assert [dims[0][k] for k in range(num[0])] == [2, 3]
    lib.aclsim_free(dims[0])
    assert lib.aclGetViewStrides(t, dims, num) == OK
    assert [dims[0][k] for k in range(num[0])] == [4, 1]
    lib.aclsim_free(dims[0])
    assert lib.aclGetStorageShape(t, dims, num) == OK
    assert [dims[0][k] for k in range(num[0])] == [64]
    lib.aclsim_free(dims[0])
    off = ffi.new("int64_t *")
    assert lib.aclGetViewOffset(t, off) == OK and off[0] == 5
    fmt = ffi.new("aclFormat *")
    assert lib.aclGetFormat(t, fmt) == OK and fmt[0] == ACL_FORMAT_NCHW
    dt = ffi.new("aclDataType *")
    assert lib.aclGetDataType(t, dt) == OK and dt[0] == ACL_FLOAT16
    # null pointers -> 161001
    assert lib.aclGetViewShape(ffi.NULL, dims, num) == ACLNN_ERR_PARAM_NULLPTR
    assert lib.aclGetViewShape(t, ffi.NULL, num) == ACLNN_ERR_PARAM_NULLPTR
    assert lib.aclGetViewOffset(t, ffi.NULL) == ACLNN_ERR_PARAM_NULLPTR
    # aclInitTensor re-describes it
    d2 = ffi.new("int64_t[]", [7])
    s2 = ffi.new("int64_t[]", [1])
    assert lib.aclInitTensor(t, d2, 1, ACL_INT32, s2, 0, ACL_FORMAT_ND, d2, 1, dev) == OK
    assert lib.aclGetDataType(t, dt) == OK and dt[0] == ACL_INT32
    neg = ffi.new("int64_t[]", [-1])
    assert lib.aclInitTensor(t, neg, 1, ACL_INT32, s2, 0, ACL_FORMAT_ND, d2, 1, dev) == ACLNN_ERR_PARAM_INVALID
    assert lib.aclGetViewShape(t, dims, num) == OK and dims[0][0] == 7  # unchanged on failure
    lib.aclsim_free(dims[0])
    # the caller's arrays are copied
    shape = ffi.new("int64_t[]", [4])
    t2 = lib.aclCreateTensor(shape, 1, ACL_FLOAT, s2, 0, ACL_FORMAT_ND, shape, 1, dev)
    shape[0] = 99
    assert lib.aclGetViewShape(t2, dims, num) == OK and dims[0][0] == 4
    lib.aclsim_free(dims[0])
    # a 0-dim tensor
    t0 = lib.aclCreateTensor(ffi.NULL, 0, ACL_FLOAT, ffi.NULL, 0, ACL_FORMAT_ND, ffi.NULL, 0, dev)
    assert t0 != ffi.NULL
    assert lib.aclGetViewShape(t0, dims, num) == OK and num[0] == 0
    lib.aclsim_free(dims[0])
    assert sim.counters()["tensors"] == 3
    for x in (t, t2, t0):
        assert lib.aclDestroyTensor(x) == OK
    assert lib.aclDestroyTensor(t) == ACLNN_ERR_PARAM_INVALID  # destroyed twice
    assert "not a live aclTensor" in sim.err()
    assert lib.aclGetViewOffset(t, off) == ACLNN_ERR_PARAM_INVALID
    assert lib.aclDestroyTensor(ffi.NULL) == OK
    assert sim.counters()["tensors"] == 0


@pytest.mark.parametrize(
    "case",
    ["null_dims", "null_strides", "null_storage", "neg_dim", "neg_stride", "neg_offset", "neg_storage"],
)
def test_create_tensor_rejects(sim, case):
    lib, ffi = sim.lib, sim.ffi
    ok = ffi.new("int64_t[]", [2, 2])
    st = ffi.new("int64_t[]", [2, 1])
    neg = ffi.new("int64_t[]", [2, -1])
    args = dict(dims=ok, ndim=2, strides=st, offset=0, storage=ok, nstorage=2)
    args.update(
        {
            "null_dims": dict(dims=ffi.NULL),
            "null_strides": dict(strides=ffi.NULL),
            "null_storage": dict(storage=ffi.NULL),
            "neg_dim": dict(dims=neg),
            "neg_stride": dict(strides=neg),
            "neg_offset": dict(offset=-3),
            "neg_storage": dict(storage=neg),
        }[case]
    )
    t = lib.aclCreateTensor(
        args["dims"],
        args["ndim"],
        ACL_FLOAT,
        args["strides"],
        args["offset"],
        ACL_FORMAT_ND,
        args["storage"],
        args["nstorage"],
        ffi.NULL,
    )
    assert t == ffi.NULL
    assert "aclCreateTensor" in sim.err()
    assert sim.counters()["tensors"] == 0


def test_scalars_and_arrays(sim):
    lib, ffi = sim.lib, sim.ffi
    cases = [
        (ACL_FLOAT, "float", 1.5, 4),
        (ACL_FLOAT16, "uint16_t", 0x3C00, 2),
        (ACL_BF16, "uint16_t", 0x3F80, 2),
        (ACL_DOUBLE, "double", 2.25, 8),
        (ACL_INT64, "int64_t", -(2**40), 8),
        (ACL_BOOL, "bool", True, 1),
        (ACL_INT32, "int32_t", 7, 4),
    ]
    made = []
    for acl_dtype, ctype, value, _ in cases:
        buf = ffi.new(f"{ctype} *", value)
        s = lib.aclCreateScalar(buf, acl_dtype)
        assert s != ffi.NULL, sim.err()
        buf[0] = 0  # the value was copied
        made.append(s)
    assert lib.aclCreateScalar(ffi.NULL, ACL_FLOAT) == ffi.NULL
    assert "value is NULL" in sim.err()
    assert lib.aclCreateScalar(ffi.new("int64_t *"), ACL_INT4) == ffi.NULL
    assert lib.aclCreateScalar(ffi.new("int64_t *"), ACL_STRING) == ffi.NULL
    assert sim.counters()["scalars"] == len(cases)
    ia = lib.aclCreateIntArray(ffi.new("int64_t[]", [1, 2, 3]), 3)
    fa = lib.aclCreateFloatArray(ffi.new("float[]", [0.5]), 1)
    ba = lib.aclCreateBoolArray(ffi.new("bool[]", [True, False]), 2)
    empty = lib.aclCreateIntArray(ffi.NULL, 0)
    assert ffi.NULL not in (ia, fa, ba, empty)
    assert lib.aclCreateIntArray(ffi.NULL, 2) == ffi.NULL
    c = sim.counters()
    assert (c["int_arrays"], c["float_arrays"], c["bool_arrays"]) == (2, 1, 1)
    assert lib.aclDestroyIntArray(ia) == OK and lib.aclDestroyIntArray(empty) == OK
    assert lib.aclDestroyFloatArray(fa) == OK and lib.aclDestroyBoolArray(ba) == OK
    assert lib.aclDestroyIntArray(ia) == ACLNN_ERR_PARAM_INVALID
    # a scalar handle is not an array
    assert lib.aclDestroyIntArray(ffi.cast("aclIntArray *", made[0])) == ACLNN_ERR_PARAM_INVALID
    for s in made:
        assert lib.aclDestroyScalar(s) == OK
    assert all(v == 0 for v in sim.counters().values())


def test_tensor_lists_own_their_tensors(sim):
    lib, ffi = sim.lib, sim.ffi
    t1 = sim.tensor([2], ACL_FLOAT, ffi.NULL)
    t2 = sim.tensor([3], ACL_FLOAT, ffi.NULL)
    arr = ffi.new("aclTensor *[]", [t1, t2])
    lst = lib.aclCreateTensorList(arr, 2)
    assert lst != ffi.NULL
    assert lib.aclDestroyTensor(t1) == ACLNN_ERR_PARAM_INVALID
    assert "belongs to an aclTensorList" in sim.err()
    assert lib.aclCreateTensorList(ffi.new("aclTensor *[]", [t1]), 1) == ffi.NULL  # owned already
    assert lib.aclDestroyTensorList(lst) == OK
    assert sim.counters()["tensors"] == 0 and sim.counters()["tensor_lists"] == 0
    s1 = sim.scalar(1.0, ACL_FLOAT)
    sl = lib.aclCreateScalarList(ffi.new("aclScalar *[]", [s1, s1]), 2)
    assert sl == ffi.NULL and "twice" in sim.err()
    sl = lib.aclCreateScalarList(ffi.new("aclScalar *[]", [s1]), 1)
    assert lib.aclDestroyScalarList(sl) == OK
    assert all(v == 0 for v in sim.counters().values())


# ------------------------------------------------------------------------------------------------
# the op protocol


def test_full_run_writes_device_memory(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    stream = ffi.new("aclrtStream *")
    assert lib.aclrtCreateStream(stream) == OK
    t = axpy_setup(sim, n=8, alpha=2.0)
    rc, ws, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"], mode=3)
    assert rc == OK and ws == 0
    seen = sim.kernels.prepared[-1]
    assert seen["mode"]["i"] == 3 and seen["alpha"]["value"] == 2.0
    assert seen["x"]["dims"] == [2, 4] and seen["x"]["strides"] == [4, 1]
    assert seen["x"]["data"] == int(ffi.cast("uintptr_t", t["dx"]))
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, stream[0]) == OK
    # the vendor glue destroys descriptors right after launch, before the sync
    for h in ("tx", "ty", "tout"):
        assert lib.aclDestroyTensor(t[h]) == OK
    assert lib.aclDestroyScalar(t["alpha"]) == OK
    assert sim.kernels.runs == []  # queued, not run
    assert sim.counters()["queued_launches"] == 1
    rc, _ = sim.download(t["dout"], t["shape"], np.float32)
    assert rc == ACL_ERROR_RT_PARAM_INVALID  # reading an output before the sync
    assert "queued launch of aclnnSimAxpy" in sim.err()
    assert lib.aclrtSynchronizeStream(stream[0]) == OK
    assert [r[0] for r in sim.kernels.runs] == ["aclnnSimAxpy"]
    rc, out = sim.download(t["dout"], t["shape"], np.float32)
    assert rc == OK
    np.testing.assert_array_equal(out, t["expected"])
    assert sim.counters()["executors"] == 0  # freed after it ran
    assert sim.counters()["queued_launches"] == 0


def test_launches_run_in_order_on_a_stream(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    t = axpy_setup(sim, n=4, alpha=3.0, with_y=False)
    # second op reads the first one's output: out2 = 3 * out
    dout2 = sim.malloc(16)
    tout2 = sim.tensor(t["shape"], ACL_FLOAT, dout2)
    rc, _, ex1 = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"])
    assert rc == OK
    rc, _, ex2 = sim.prepare_axpy(t["tout"], t["alpha"], tout2)
    assert rc == OK
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex1, ffi.NULL) == OK  # NULL: the default stream
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex2, ffi.NULL) == OK
    assert lib.aclrtSynchronizeStream(ffi.NULL) == OK
    rc, out2 = sim.download(dout2, t["shape"], np.float32)
    assert rc == OK
    np.testing.assert_array_equal(out2, 3.0 * t["expected"])


def test_strided_view_with_offset(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    base = np.arange(24, dtype=np.float32)
    dev = sim.upload(base)
    # a transposed [3, 4] view of elements 4..15 arranged [4, 3] (offset 4, strides 1, 4)
    x = sim.tensor([3, 4], ACL_FLOAT, dev, strides=[1, 3], offset=4, storage=[24])
    dout = sim.malloc(48)
    out = sim.tensor([3, 4], ACL_FLOAT, dout)
    one = sim.scalar(1.0, ACL_FLOAT)
    rc, _, ex = sim.prepare_axpy(x, one, out)
    assert rc == OK, sim.err()
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == OK
    assert lib.aclrtSynchronizeStream(ffi.NULL) == OK
    rc, got = sim.download(dout, (3, 4), np.float32)
    np.testing.assert_array_equal(got, base[4:16].reshape(4, 3).T)
    # the same view one element further runs past the 24-element block
    bad = sim.tensor([3, 4], ACL_FLOAT, dev, strides=[1, 3], offset=13, storage=[24])
    rc, _, _ = sim.prepare_axpy(bad, one, out)
    assert rc == ACLNN_ERR_PARAM_INVALID
    assert "past the end" in sim.err()


def test_tensor_outside_device_memory(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    t = axpy_setup(sim)
    host = np.zeros(64, np.float32)  # 32-byte alignment is not the point here
    host_tensor = sim.tensor([2, 4], ACL_FLOAT, ffi.from_buffer(host))
    rc, _, _ = sim.prepare_axpy(host_tensor, t["alpha"], t["tout"])
    assert rc == ACLNN_ERR_PARAM_INVALID
    msg = sim.err()
    assert "x" in msg and ("not in a live device allocation" in msg or "aligned" in msg)
    # an output in host memory is rejected too
    aligned = sim.ffi.cast("void *", (int(ffi.cast("uintptr_t", ffi.from_buffer(host))) + 63) // 64 * 64)
    host_out = sim.tensor([2, 4], ACL_FLOAT, aligned)
    rc, _, _ = sim.prepare_axpy(t["tx"], t["alpha"], host_out)
    assert rc == ACLNN_ERR_PARAM_INVALID
    assert "out" in sim.err()
    # misaligned device address
    mis = sim.tensor([2], ACL_FLOAT, ffi.cast("char *", t["dx"]) + 4)
    rc, _, _ = sim.prepare_axpy(mis, t["alpha"], t["tout"])
    assert rc == ACLNN_ERR_PARAM_INVALID and "32-byte aligned" in sim.err()
    # a tensor larger than its block
    big = sim.tensor([2, 8], ACL_FLOAT, t["dx"])
    rc, _, _ = sim.prepare_axpy(big, t["alpha"], t["tout"])
    assert rc == ACLNN_ERR_PARAM_INVALID and "past the end" in sim.err()
    # empty tensors need no memory at all
    empty = sim.tensor([0, 4], ACL_FLOAT, ffi.NULL)
    empty_out = sim.tensor([0, 4], ACL_FLOAT, ffi.NULL)
    rc, _, ex = sim.prepare_axpy(empty, t["alpha"], empty_out)
    assert rc == OK, sim.err()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    # the host buffer was never written
    assert not host.any()
    assert sim.kernels.prepared and len(sim.kernels.prepared) == 1  # only the empty one reached it


def test_null_handles_give_161001(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    t = axpy_setup(sim)
    rc, _, _ = sim.prepare_axpy(ffi.NULL, t["alpha"], t["tout"])
    assert rc == ACLNN_ERR_PARAM_NULLPTR
    assert "x is a null pointer" in sim.err()
    rc, _, _ = sim.prepare_axpy(t["tx"], ffi.NULL, t["tout"])
    assert rc == ACLNN_ERR_PARAM_NULLPTR and "alpha" in sim.err()
    rc, _, _ = sim.prepare_axpy(t["tx"], t["alpha"], ffi.NULL)
    assert rc == ACLNN_ERR_PARAM_NULLPTR and "out" in sim.err()
    # an optional tensor may be NULL; the hook sees it as null
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], y=None)
    assert rc == OK
    assert sim.kernels.prepared[-1]["yOptional"]["is_null"] == 1
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ffi.NULL, ffi.NULL) == ACLNN_ERR_PARAM_NULLPTR
    assert "executor" in sim.err()
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    # a destroyed descriptor is not a live one
    assert lib.aclDestroyScalar(t["alpha"]) == OK
    rc, _, _ = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"])
    assert rc == ACLNN_ERR_PARAM_INVALID and "not a live aclScalar" in sim.err()
    # a tensor passed where a scalar is expected
    rc, _, _ = sim.prepare_axpy(t["tx"], ffi.cast("aclScalar *", t["ty"]), t["tout"])
    assert rc == ACLNN_ERR_PARAM_INVALID


def test_null_out_pointers_follow_the_hook(sim):
    sim.start()
    t = axpy_setup(sim)
    # a profile that checks them: the hook answers 161001
    sim.kernels.prepare_status = ACLNN_ERR_PARAM_NULLPTR
    sim.kernels.prepare_message = b"workspaceSize is NULL"
    rc, _, _ = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], ws=False)
    assert rc == ACLNN_ERR_PARAM_NULLPTR
    assert sim.kernels.seen_flags[-1] == 1
    assert "workspaceSize is NULL" in sim.err()
    # a profile that does not check them: the simulator refuses to pretend it worked
    sim.kernels.prepare_status = 0
    rc, _, _ = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], ex=False)
    assert rc == ACLNN_ERR_INNER_NULLPTR
    assert sim.kernels.seen_flags[-1] == 2
    assert "does not check" in sim.err()
    assert sim.counters()["executors"] == 0


def test_no_hook_means_no_kernel(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    t = axpy_setup(sim)
    lib.aclsim_set_hooks(ffi.NULL, ffi.NULL)
    rc, _, _ = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"])
    assert rc == ACLNN_ERR_INNER_FIND_KERNEL_ERROR
    assert "no kernel" in sim.err()
    assert sim.counters()["executors"] == 0
    # with a prepare hook but no run hook, the failure shows at the sync
    lib.aclsim_set_hooks(sim.kernels.c_prepare, ffi.NULL)
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"])
    assert rc == OK
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == OK
    assert lib.aclrtSynchronizeStream(ffi.NULL) == ACL_ERROR_RT_AICORE_EXCEPTION
    assert "no run hook" in sim.err()


def test_prepare_hook_rejection_is_returned(sim):
    sim.start()
    t = axpy_setup(sim)
    sim.kernels.prepare_status = ACLNN_ERR_PARAM_INVALID
    sim.kernels.prepare_message = b"x and out must have the same dtype"
    rc, _, _ = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"])
    assert rc == ACLNN_ERR_PARAM_INVALID
    assert "aclnnSimAxpyGetWorkspaceSize: x and out must have the same dtype" in sim.err()
    assert sim.counters()["executors"] == 0


def test_workspace_announced_by_the_hook(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    t = axpy_setup(sim)
    sim.kernels.workspace = 1000
    rc, ws, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert rc == OK and ws == 1000
    assert lib.aclsim_view_workspace_size(ex) == 1000
    wsdev = sim.malloc(1000)
    small = sim.malloc(512)
    host = np.zeros(1024, np.uint8)
    assert lib.aclnnSimAxpy(ffi.NULL, 1000, ex, ffi.NULL) == ACLNN_ERR_PARAM_NULLPTR
    assert "workspace is a null pointer" in sim.err()
    assert lib.aclnnSimAxpy(wsdev, 999, ex, ffi.NULL) == ACLNN_ERR_PARAM_INVALID
    assert "smaller than the 1000 bytes" in sim.err()
    assert lib.aclnnSimAxpy(ffi.from_buffer(host), 1000, ex, ffi.NULL) == ACLNN_ERR_PARAM_INVALID
    assert "workspace" in sim.err()
    assert lib.aclnnSimAxpy(small, 1000, ex, ffi.NULL) == ACLNN_ERR_PARAM_INVALID
    assert lib.aclnnSimAxpy(wsdev, 1000, ex, ffi.NULL) == OK
    # the workspace is in use until the sync
    assert lib.aclrtFree(wsdev) == ACL_ERROR_RT_PARAM_INVALID
    assert lib.aclrtSynchronizeStream(ffi.NULL) == OK
    assert sim.kernels.runs == [("aclnnSimAxpy", int(ffi.cast("uintptr_t", wsdev)), 1000)]
    rc, out = sim.download(t["dout"], t["shape"], np.float32)
    np.testing.assert_array_equal(out, t["expected"])
    assert lib.aclrtFree(wsdev) == OK


def test_second_launch_and_repeatable_executors(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    t = axpy_setup(sim)
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == OK
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == ACLNN_ERR_PARAM_INVALID
    assert "already ran" in sim.err()
    # launched, so released by the library: neither destroy nor make repeatable now
    assert lib.aclDestroyAclOpExecutor(ex) == ACLNN_ERR_PARAM_INVALID
    assert "destroy only repeatable" in sim.err()
    assert lib.aclSetAclOpExecutorRepeatable(ex) == ACLNN_ERR_PARAM_INVALID
    assert lib.aclrtSynchronizeStream(ffi.NULL) == OK
    assert len(sim.kernels.runs) == 1
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == ACLNN_ERR_PARAM_INVALID  # freed now
    assert "not live" in sim.err()
    assert lib.aclDestroyAclOpExecutor(ex) == ACLNN_ERR_PARAM_INVALID
    # repeatable: runs every time until destroyed
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert lib.aclSetAclOpExecutorRepeatable(ex) == OK
    for _ in range(3):
        assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == OK
    assert lib.aclrtSynchronizeStream(ffi.NULL) == OK
    assert len(sim.kernels.runs) == 4
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == OK
    assert lib.aclDestroyAclOpExecutor(ex) == OK  # destroyed while queued: freed after its run
    assert sim.counters()["executors"] == 1
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == ACLNN_ERR_PARAM_INVALID
    assert lib.aclrtSynchronizeStream(ffi.NULL) == OK
    assert len(sim.kernels.runs) == 5
    assert sim.counters()["executors"] == 0
    # an executor of one op cannot be launched through another op's entry point
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert lib.aclnnSimAttrs(ffi.NULL, 0, ex, ffi.NULL) == ACLNN_ERR_PARAM_INVALID
    assert "made by aclnnSimAxpyGetWorkspaceSize" in sim.err()
    assert lib.aclSetAclOpExecutorRepeatable(ffi.NULL) == ACLNN_ERR_INNER_NULLPTR  # documented
    assert lib.aclDestroyAclOpExecutor(ffi.NULL) == ACLNN_ERR_INNER_NULLPTR
    assert lib.aclDestroyAclOpExecutor(ex) == OK  # never launched: may be abandoned


def test_free_while_queued_is_refused(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    t = axpy_setup(sim)
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == OK
    for name in ("dx", "dy", "dout"):
        assert lib.aclrtFree(t[name]) == ACL_ERROR_RT_PARAM_INVALID
        assert "still used by a queued launch of aclnnSimAxpy" in sim.err()
    # writing an input that a queued launch reads is a race as well
    host = np.zeros(8, np.float32)
    assert lib.aclrtMemcpy(t["dx"], 32, ffi.from_buffer(host), 32, H2D) == ACL_ERROR_RT_PARAM_INVALID
    # reading an input is fine (two readers)
    assert lib.aclrtMemcpy(ffi.from_buffer(host), 32, t["dx"], 32, D2H) == OK
    assert lib.aclrtSynchronizeStream(ffi.NULL) == OK
    for name in ("dx", "dy", "dout"):
        assert lib.aclrtFree(t[name]) == OK


def test_memory_freed_between_prepare_and_launch(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    t = axpy_setup(sim)
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert lib.aclrtFree(t["dy"]) == OK
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == ACLNN_ERR_PARAM_INVALID
    assert "memory of yOptional was freed" in sim.err()
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_kernel_failure_at_sync(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    t = axpy_setup(sim)
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == OK
    sim.kernels.run_status = 1
    assert lib.aclrtSynchronizeStream(ffi.NULL) == ACL_ERROR_RT_AICORE_EXCEPTION
    assert "kernel aclnnSimAxpy failed (status 1): kernel exploded" in sim.err()
    assert sim.counters()["executors"] == 0 and sim.counters()["queued_launches"] == 0
    sim.kernels.run_status = 0
    assert lib.aclrtSynchronizeStream(ffi.NULL) == OK  # nothing left


def test_stream_destroy_runs_queued_work(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    t = axpy_setup(sim)
    stream = ffi.new("aclrtStream *")
    assert lib.aclrtCreateStream(stream) == OK
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, stream[0]) == OK
    assert lib.aclrtSynchronizeStream(ffi.NULL) == OK  # the default stream is another queue
    assert sim.kernels.runs == []
    assert lib.aclrtDestroyStream(stream[0]) == OK
    assert len(sim.kernels.runs) == 1
    assert lib.aclrtDestroyStream(stream[0]) == ACL_ERROR_RT_PARAM_INVALID
    assert lib.aclrtSynchronizeStream(stream[0]) == ACL_ERROR_RT_PARAM_INVALID
    assert lib.aclrtDestroyStream(ffi.NULL) == ACL_ERROR_INVALID_PARAM
    # a launch onto a dead stream
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, stream[0]) == ACLNN_ERR_RUNTIME_ERROR
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_reset_device_runs_default_stream_work(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    t = axpy_setup(sim)
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == OK
    assert lib.aclrtResetDevice(0) == OK
    assert len(sim.kernels.runs) == 1
    assert sim.counters()["executors"] == 0


def test_tensor_on_another_device(sim):
    lib, ffi = sim.lib, sim.ffi
    assert lib.aclsim_set_device_count(2) == OK
    sim.start(0)
    t = axpy_setup(sim)
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert lib.aclrtSetDevice(1) == OK
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == ACLNN_ERR_PARAM_INVALID
    msg = sim.err()
    assert "x is on device 0" in msg and "belongs to device 1" in msg
    assert lib.aclDestroyAclOpExecutor(ex) == OK


def test_view_of_attributes_strings_and_arrays(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    dx = sim.upload(np.array([1.0, 2.0], np.float32))
    dout = sim.malloc(8)
    x = sim.tensor([2], ACL_FLOAT, dx)
    out = sim.tensor([2], ACL_FLOAT, dout)
    dims = lib.aclCreateIntArray(ffi.new("int64_t[]", [0, -1]), 2)
    weights = lib.aclCreateFloatArray(ffi.new("float[]", [0.25, 4.0, 8.0]), 3)
    mask = lib.aclCreateBoolArray(ffi.new("bool[]", [True, False]), 2)
    approx = ffi.new("char[]", b"tanh")
    wsp, exp = ffi.new("uint64_t *"), ffi.new("aclOpExecutor **")
    rc = lib.aclnnSimAttrsGetWorkspaceSize(x, approx, 0.5, True, dims, weights, mask, ffi.NULL, out, wsp, exp)
    assert rc == OK, sim.err()
    seen = sim.kernels.prepared[-1]
    assert seen["approximate"]["value"] == "tanh"
    assert seen["eps"]["f"] == 0.5
    assert seen["flag"]["i"] == 1
    assert seen["dims"]["value"] == [0, -1]
    assert seen["weights"]["value"] == [0.25, 4.0, 8.0]
    assert seen["mask"]["value"] == [True, False]
    assert seen["betaOptional"]["is_null"] == 1
    # the snapshot survives the descriptors
    approx[0:4] = b"none"
    for h in (dims,):
        assert lib.aclDestroyIntArray(h) == OK
    assert lib.aclDestroyFloatArray(weights) == OK and lib.aclDestroyBoolArray(mask) == OK
    assert sim.view(exp[0])[1]["value"] == "tanh"
    assert lib.aclnnSimAttrs(ffi.NULL, 0, exp[0], ffi.NULL) == OK
    assert lib.aclrtSynchronizeStream(ffi.NULL) == OK
    rc, got = sim.download(dout, (2,), np.float32)
    np.testing.assert_array_equal(got, [0.5, 1.0])
    # NULL string is a null pointer argument
    rc = lib.aclnnSimAttrsGetWorkspaceSize(
        x, ffi.NULL, 0.5, True, ffi.NULL, ffi.NULL, ffi.NULL, ffi.NULL, out, wsp, exp
    )
    assert rc == ACLNN_ERR_PARAM_NULLPTR and "approximate" in sim.err()


def test_view_rejects_dead_executors(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    t = axpy_setup(sim)
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert lib.aclsim_view_num_args(ex) == 5
    assert ffi.string(lib.aclsim_view_op(ex)) == b"aclnnSimAxpy"
    a = ffi.new("struct aclsim_arg_view *")
    assert lib.aclsim_view_arg(ex, 5, a) == ACLNN_ERR_PARAM_INVALID
    assert lib.aclDestroyAclOpExecutor(ex) == OK
    assert lib.aclsim_view_num_args(ex) == -1
    assert lib.aclsim_view_arg(ex, 0, a) == ACLNN_ERR_PARAM_INVALID
    assert lib.aclsim_view_op(ex) == ffi.NULL
    assert lib.aclsim_view_num_args(ffi.cast("void *", 12345)) == -1


def test_hooks_may_call_back_into_the_library(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    t = axpy_setup(sim)
    seen = {}

    def on_run(view):
        x = sim.view(view)[0]
        host = np.zeros(8, np.float32)
        # a kernel may copy its own operands; it must not wait for its own stream
        seen["memcpy"] = lib.aclrtMemcpy(ffi.from_buffer(host), 32, ffi.cast("void *", x["data"]), 32, D2H)
        seen["host"] = host.copy()
        seen["sync"] = lib.aclrtSynchronizeStream(ffi.NULL)
        seen["sync_msg"] = sim.err()
        seen["free"] = lib.aclrtFree(ffi.cast("void *", x["data"]))
        seen["reset"] = lib.aclsim_reset()

    sim.kernels.on_run = on_run
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == OK
    assert lib.aclrtSynchronizeStream(ffi.NULL) == OK
    assert seen["memcpy"] == OK
    np.testing.assert_array_equal(seen["host"], np.arange(8, dtype=np.float32))
    assert seen["sync"] == ACL_ERROR_RT_PARAM_INVALID
    assert "inside a kernel" in seen["sync_msg"]
    assert seen["free"] == OK  # its own operand; the kernel reads through the snapshot pointer
    assert seen["reset"] == ACL_ERROR_RT_PARAM_INVALID


def test_error_messages_stack_and_clear(sim):
    lib, ffi = sim.lib, sim.ffi
    assert sim.err() == ""
    assert lib.aclrtSetDevice(0) == ACL_ERROR_UNINITIALIZE
    assert lib.aclrtMalloc(ffi.NULL, 1, 0) == ACL_ERROR_INVALID_PARAM
    msg = sim.err()
    assert msg.index("aclrtMalloc") < msg.index("aclrtSetDevice")  # newest first
    assert sim.err() == ""
    # per thread
    assert lib.aclrtSetDevice(0) == ACL_ERROR_UNINITIALIZE
    assert in_thread(sim.err) == ""
    assert "aclrtSetDevice" in sim.err()


def test_counters_back_to_zero(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    stream = ffi.new("aclrtStream *")
    assert lib.aclrtCreateStream(stream) == OK
    t = axpy_setup(sim)
    sim.kernels.workspace = 64
    rc, ws, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    wsdev = sim.malloc(ws)
    c = sim.counters()
    assert (c["tensors"], c["scalars"], c["executors"], c["allocations"], c["streams"], c["contexts"]) == (
        3,
        1,
        1,
        4,
        2,
        1,
    )
    assert lib.aclnnSimAxpy(wsdev, ws, ex, stream[0]) == OK
    assert sim.counters()["queued_launches"] == 1
    assert lib.aclrtSynchronizeStream(stream[0]) == OK
    for h in ("tx", "ty", "tout"):
        assert lib.aclDestroyTensor(t[h]) == OK
    assert lib.aclDestroyScalar(t["alpha"]) == OK
    for p in (t["dx"], t["dy"], t["dout"], wsdev):
        assert lib.aclrtFree(p) == OK
    assert lib.aclrtDestroyStream(stream[0]) == OK
    assert lib.aclrtResetDevice(0) == OK
    assert lib.aclFinalize() == OK
    assert sim.counters() == {f: 0 for f in COUNTER_FIELDS}


def test_reset_frees_everything(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    t = axpy_setup(sim)
    rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
    assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, ffi.NULL) == OK
    assert any(sim.counters().values())
    assert lib.aclsim_reset() == OK
    assert sim.counters() == {f: 0 for f in COUNTER_FIELDS}
    assert sim.kernels.runs == []  # discarded, not run
    assert lib.aclrtSetDevice(0) == ACL_ERROR_UNINITIALIZE
    assert lib.aclDestroyTensor(t["tx"]) == ACLNN_ERR_PARAM_INVALID


def test_concurrent_threads(sim):
    lib, ffi = sim.lib, sim.ffi
    sim.start()
    errors = []

    def worker(seed):
        try:
            assert lib.aclrtSetDevice(0) == OK
            stream = ffi.new("aclrtStream *")
            assert lib.aclrtCreateStream(stream) == OK
            for k in range(20):
                t = axpy_setup(sim, n=4, alpha=float(seed))
                rc, _, ex = sim.prepare_axpy(t["tx"], t["alpha"], t["tout"], t["ty"])
                assert rc == OK, sim.err()
                assert lib.aclnnSimAxpy(ffi.NULL, 0, ex, stream[0]) == OK
                for h in ("tx", "ty", "tout"):
                    assert lib.aclDestroyTensor(t[h]) == OK
                assert lib.aclDestroyScalar(t["alpha"]) == OK
                assert lib.aclrtSynchronizeStream(stream[0]) == OK
                rc, out = sim.download(t["dout"], t["shape"], np.float32)
                assert rc == OK
                np.testing.assert_array_equal(out, t["expected"])
                for p in (t["dx"], t["dy"], t["dout"]):
                    assert lib.aclrtFree(p) == OK
            assert lib.aclrtDestroyStream(stream[0]) == OK
            assert lib.aclrtResetDevice(0) == OK
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i + 1,)) for i in range(6)]
    for th in threads:
        th.start()
    for th in threads:
        th.join(120)
    assert not errors, errors[0]
    assert len(sim.kernels.runs) == 6 * 20
    c = sim.counters()
    assert (
        c["tensors"],
        c["scalars"],
        c["executors"],
        c["allocations"],
        c["queued_launches"],
        c["streams"],
        c["contexts"],
    ) == (0, 0, 0, 0, 0, 1, 1)  # the main thread's device


# ------------------------------------------------------------------------------------------------
# SoC name and versions


def test_soc_name_default_env_and_override(sim, monkeypatch):
    lib, ffi = sim.lib, sim.ffi
    assert ffi.string(lib.aclrtGetSocName()) == b"Ascend910B2"
    monkeypatch.setenv("ACLNNGEN_SIM_SOC", "Ascend310P3")
    assert ffi.string(lib.aclrtGetSocName()) == b"Ascend310P3"
    assert lib.aclsim_set_soc_name(b"Ascend910_9392") == OK
    assert ffi.string(lib.aclrtGetSocName()) == b"Ascend910_9392"
    assert lib.aclsim_set_soc_name(b"") == ACL_ERROR_INVALID_PARAM
    assert lib.aclsim_set_soc_name(ffi.NULL) == OK
    assert ffi.string(lib.aclrtGetSocName()) == b"Ascend310P3"
    monkeypatch.setenv("ACLNNGEN_SIM_SOC", "")
    assert ffi.string(lib.aclrtGetSocName()) == b"Ascend910B2"


def test_soc_name_from_environment_in_a_new_process(lib_path, tmp_path):
    script = textwrap.dedent(f"""
        import cffi
        ffi = cffi.FFI()
        ffi.cdef("const char *aclrtGetSocName(void);")
        lib = ffi.dlopen({str(lib_path)!r})
        print(ffi.string(lib.aclrtGetSocName()).decode())
    """)
    env = dict(os.environ, ACLNNGEN_SIM_SOC="Ascend950PR_9579")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "Ascend950PR_9579"
    env.pop("ACLNNGEN_SIM_SOC")
    out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "Ascend910B2"


@pytest.mark.parametrize(
    "version, number",
    [
        ("8.5.0", 80500000),
        ("8.5.1", 80501000),
        ("9.0.0", 90000000),
        ("8.5.0-beta.1", 80499801),
        ("9.0.0-rc.2", 89999902),
        ("9.0.0-alpha.1", 89999701),
        ("8.0.RC1", 79999901),
        ("8.0.rc3", 79999903),
    ],
)
def test_versions(sim, version, number):
    lib, ffi = sim.lib, sim.ffi
    assert lib.aclsim_set_version(version.encode()) == OK
    buf = ffi.new("char[128]")
    assert lib.aclsysGetVersionStr(b"runtime", buf) == OK
    assert ffi.string(buf).decode() == version
    num = ffi.new("int32_t *")
    assert lib.aclsysGetVersionNum(b"runtime", num) == OK
    assert num[0] == number


def test_version_errors(sim):
    lib, ffi = sim.lib, sim.ffi
    num = ffi.new("int32_t *")
    assert lib.aclsysGetVersionNum(b"cann", num) == OK and num[0] == 80500000  # default 8.5.0
    assert lib.aclsysGetVersionNum(b"no-such-package", num) == ACL_ERROR_INVALID_FILE
    assert "no-such-package" in sim.err()
    assert lib.aclsysGetVersionNum(ffi.NULL, num) == ACL_ERROR_INVALID_PARAM
    for bad in (b"8", b"8.5", b"8.5.x", b"8.5.0-gamma.1", b"8.0.alpha1", b"8.5.0-rc.0", b""):
        assert lib.aclsim_set_version(bad) == ACL_ERROR_INVALID_PARAM, bad
    major, minor, patch = ffi.new("int32_t *"), ffi.new("int32_t *"), ffi.new("int32_t *")
    assert lib.aclrtGetVersion(major, minor, patch) == OK
    assert (major[0], minor[0], patch[0]) == (1, 17, 0)
    assert lib.aclrtGetVersion(ffi.NULL, minor, patch) == ACL_ERROR_INVALID_PARAM


def test_aclnn_init_finalize(sim):
    assert sim.lib.aclnnInit(sim.ffi.NULL) == OK
    assert sim.lib.aclnnFinalize() == OK


# ------------------------------------------------------------------------------------------------
# headers and the build


def test_headers_are_cdef_text():
    for name in ("aclsim_abi.h", "aclsim_controls.h"):
        text = sim_header_text(name)
        assert not [ln for ln in text.splitlines() if ln.lstrip().startswith("#")], name
    ffi = cffi.FFI()
    ffi.cdef(sim_header_text("aclsim_controls.h"))  # self-contained
    assert ffi.sizeof("struct aclsim_counters") == 13 * 8
    consts = ffi.dlopen(None)  # enum constants are reachable through any library object
    assert consts.SIM_ARG_SCALAR_OPTIONAL == 5 and consts.ACLSIM_NULL_EXECUTOR_PTR == 2
    with pytest.raises(FileNotFoundError):
        sim_header_text("../simbuild.py")


def test_sources_ship_as_package_data():
    import tomllib

    data = tomllib.loads((REPO / "pyproject.toml").read_text())
    globs = data["tool"]["setuptools"]["package-data"]["aclnngen.runtime.sim"]
    shipped = {p.name for g in globs for p in SIM_DIR.glob(Path(g).name)}
    assert {p.name for p in SIM_DIR.iterdir() if p.suffix in (".c", ".h")} == shipped
    assert {"aclsim_core.h", "aclsim_controls.h", "aclsim_abi.h"} <= shipped


def test_lib_names_load_as_one_library(sim_cache, tmp_path):
    src = tmp_path / "sim_ops.c"
    src.write_text(OPS_C)
    wanted = ("libascendcl.so", "libnnopbase.so", "libopapi.so")
    first = build_simulator([src], cache_dir=sim_cache, lib_names=wanted, optimize=CORE_OPTIMIZE)  # lib_path's build
    assert first.name == "libascendcl.so"
    names = [first.parent / n for n in wanted]
    assert all(p.is_symlink() and p.resolve() == first.resolve() for p in names)
    script = textwrap.dedent(f"""
        import cffi
        ffi = cffi.FFI()
        ffi.cdef('''int aclInit(const char *); int aclrtSetDevice(int32_t);
                    int aclrtMalloc(void **, size_t, int);
                    struct aclsim_counters {{ int64_t v[13]; }};
                    void aclsim_get_counters(struct aclsim_counters *);''')
        rt = ffi.dlopen({str(names[0])!r})
        nn = ffi.dlopen({str(names[1])!r})
        assert rt.aclInit(ffi.NULL) == 0 and rt.aclrtSetDevice(0) == 0
        assert rt.aclrtMalloc(ffi.new("void **"), 64, 0) == 0
        c = ffi.new("struct aclsim_counters *")
        nn.aclsim_get_counters(c)
        print(c.v[4])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "1"  # the allocation made through one name counts in the other


# The tests of the build's mechanism (keys, the lock, errors, the cache's place) build a core of two
# files (simcache.tiny_core): what they prove holds for any core, and it compiles ~30 times faster.


def _marker_source(tmp_path: Path, marker: str) -> Path:
    src = tmp_path / "sim_ops.c"
    src.write_text(f'#include "probe.h"\nconst char *aclsim_test_marker(void) {{ return "{marker}"; }}\n')
    return src


def _marker_of(path: Path) -> str:
    """The library's marker (its extra source) and probe value (its core), e.g. "one 1"."""
    lib = ctypes.CDLL(str(path))
    lib.aclsim_test_marker.restype = ctypes.c_char_p
    return f"{lib.aclsim_test_marker().decode()} {lib.aclsim_probe()}"


def test_concurrent_builds_from_four_processes(tmp_path):
    cache = tmp_path / "cache"
    core = tiny_core(tmp_path / "core")
    marker = uuid.uuid4().hex
    src = _marker_source(tmp_path, marker)
    go = tmp_path / "go"
    script = textwrap.dedent(f"""
        import os, sys, time
        from pathlib import Path
        from aclnngen.runtime.sim.build import build_simulator
        go = Path({str(go)!r})
        while not go.exists():
            time.sleep(0.005)
        p = build_simulator([{str(src)!r}], cache_dir={str(cache)!r}, core_dir={str(core)!r})
        print(p, os.stat(p).st_ino)
    """)
    procs = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(4)
    ]
    go.touch()
    results = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [r[1] for r in results]
    lines = {r[0].strip() for r in results}
    assert len(lines) == 1, lines  # same path, same file (one compile, never replaced)
    path = Path(lines.pop().split()[0])
    build_dir = path.parent
    assert sorted(p.name for p in build_dir.iterdir()) == [
        "_aclsim.so",
        "_aclsim.so.sha256",
        "build-info.json",
        "libaclsim.so",
    ]
    assert list(build_dir.parent.glob("*/")) == [build_dir]
    assert _marker_of(path) == f"{marker} 1"


def test_rebuilds_when_any_input_changes(tmp_path):
    cache = tmp_path / "cache"
    core = tiny_core(tmp_path / "core", value=1)
    src = _marker_source(tmp_path, "one")
    first = build_simulator([src], cache_dir=cache, core_dir=core)
    real = first.resolve()
    mtime = real.stat().st_mtime_ns
    # unchanged inputs: the cached library, not rebuilt
    assert build_simulator([src], cache_dir=cache, core_dir=core) == first
    assert real.stat().st_mtime_ns == mtime
    # the op entry file changes
    src.write_text(src.read_text().replace('"one"', '"two"'))
    second = build_simulator([src], cache_dir=cache, core_dir=core)
    assert second != first and _marker_of(second) == "two 1"
    assert _marker_of(first) == "one 1"  # the old build is untouched
    # a header beside the extra source (what the generator will render) changes
    (tmp_path / "acl_extra.h").write_text("/* v1 */\n")
    third = build_simulator([src], cache_dir=cache, core_dir=core)
    (tmp_path / "acl_extra.h").write_text("/* v2 */\n")
    assert build_simulator([src], cache_dir=cache, core_dir=core) not in (second, third)
    # a define changes
    assert build_simulator([src], cache_dir=cache, core_dir=core, defines={"SOMETHING": 1}) != third
    # a core source changes (a header of the core, and then its source)
    tiny_core(core, value=2)
    fourth = build_simulator([src], cache_dir=cache, core_dir=core)
    assert _marker_of(fourth) == "two 2"
    (core / "probe.c").write_text((core / "probe.c").read_text().replace("PROBE_VALUE", "PROBE_VALUE + 1"))
    assert _marker_of(build_simulator([src], cache_dir=cache, core_dir=core)) == "two 3"


def test_abi_header_is_one_switch(tmp_path):
    """The core compiles against another declarations header given by name."""
    gen = tmp_path / "generated"
    gen.mkdir()
    (gen / "acl_runtime.h").write_text(sim_header_text("aclsim_abi.h") + "\ntypedef int aclsim_generated_marker_t;\n")
    src = tmp_path / "sim_ops.c"
    src.write_text(OPS_C + "\naclsim_generated_marker_t aclsim_uses_marker = 0;\n")
    quick = {"cache_dir": tmp_path / "cache", "optimize": 0}  # what compiles does not depend on the level
    with pytest.raises(SimulatorBuildError, match="aclsim_generated_marker_t"):
        build_simulator([src], **quick)  # the stand-in lacks the marker
    path = build_simulator([src], abi_header=gen / "acl_runtime.h", **quick)
    ffi = make_ffi()
    assert path.exists()
    # and the same through include_dirs + defines: abi_header is their shorthand, the very build
    built = path.resolve().stat().st_mtime_ns
    path2 = build_simulator([src], include_dirs=[gen], defines={"ACLSIM_ABI_HEADER": '"acl_runtime.h"'}, **quick)
    assert path2 == path and path.resolve().stat().st_mtime_ns == built
    del ffi


def test_compile_error_is_typed(tmp_path):
    src = tmp_path / "broken.c"
    src.write_text('#include "probe.h"\nint broken(void) { return undeclared_name; }\n')
    with pytest.raises(SimulatorBuildError) as info:
        build_simulator([src], cache_dir=tmp_path / "cache", core_dir=tiny_core(tmp_path / "core"))
    err = info.value
    assert "undeclared_name" in err.stderr
    assert "compiling the simulator failed" in str(err) and "undeclared_name" in str(err)
    assert err.__cause__ is None and err.__context__ is None  # no chained traceback
    # nothing half-built is left behind
    leftovers = [p for p in (tmp_path / "cache").rglob("*") if p.is_file() and p.suffix == ".so"]
    assert leftovers == []


def test_warnings_are_errors(tmp_path):
    src = tmp_path / "warn.c"
    src.write_text('#include "probe.h"\nint warn(void) { int unused; return 0; }\n')
    with pytest.raises(SimulatorBuildError, match="unused"):
        build_simulator([src], cache_dir=tmp_path / "cache", core_dir=tiny_core(tmp_path / "core"))


def test_missing_compiler_is_typed(tmp_path, monkeypatch):
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    with pytest.raises(SimulatorBuildError, match="no C compiler"):
        build_simulator(cache_dir=tmp_path / "cache")


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError):
        build_simulator(cache_dir=tmp_path, lib_names=("../evil.so",))
    with pytest.raises(ValueError):
        build_simulator(cache_dir=tmp_path, lib_names=())
    with pytest.raises(ValueError):
        build_simulator(cache_dir=tmp_path, defines={"not a macro": 1})
    with pytest.raises(SimulatorBuildError, match="does not exist"):
        build_simulator([tmp_path / "missing.c"], cache_dir=tmp_path)
    for level in (4, -1, "2", 2.0, True, None):
        with pytest.raises(ValueError, match="optimize"):
            build_simulator(cache_dir=tmp_path, optimize=level)


def test_the_optimisation_level_is_part_of_the_build(tmp_path):
    core = tiny_core(tmp_path / "core")
    default = build_simulator(cache_dir=tmp_path / "cache", core_dir=core)
    lowest = build_simulator(cache_dir=tmp_path / "cache", core_dir=core, optimize=0)
    assert lowest.parent != default.parent  # a build of its own, not the default one's

    def command(built):
        return json.loads((built.parent / "build-info.json").read_text())["command"]

    assert "-O2" in command(default) and "-O0" in command(lowest) and "-O2" not in command(lowest)


def test_the_core_is_built_at_its_level_and_the_kernels_at_the_default():
    """The core (protocol code) compiles at CORE_OPTIMIZE; the compiled kernels keep -O2, at which
    their loops vectorise (test_compiled_line_blocks.py)."""
    from aclnngen.runtime.sim import compiled
    from aclnngen.runtime.sim.backend import build_core
    from aclnngen.runtime.sim.kernels import BUILTIN_PACKAGE

    core = build_core()
    info = json.loads((core.parent / "build-info.json").read_text())["command"]
    assert f"-O{CORE_OPTIMIZE}" in info and CORE_OPTIMIZE < 2
    kernels = compiled.library(BUILTIN_PACKAGE, str(core.parent / "libnnopbase.so"), compiled.FALLBACKS_ONLY)
    assert kernels.error is None, kernels.error
    built = [json.loads(p.read_text())["command"] for p in core.parent.parent.glob("*/build-info.json")]
    kernel_builds = [c for c in built if any(arg.endswith("/sim_kernels.c") for arg in c)]
    assert kernel_builds and all("-O2" in c for c in kernel_builds)


def test_cache_location(monkeypatch, tmp_path):
    monkeypatch.setenv("ACLNNGEN_CACHE_DIR", str(tmp_path / "a"))
    assert simbuild.cache_root() == tmp_path / "a"
    monkeypatch.delenv("ACLNNGEN_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert simbuild.cache_root() == tmp_path / "xdg" / "aclnngen"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert simbuild.cache_root() == tmp_path / "home" / ".cache" / "aclnngen"
    # the build goes there, not beside the sources
    core = tiny_core(tmp_path / "core")
    path = build_simulator(core_dir=core)
    assert str(path).startswith(str(tmp_path / "home" / ".cache" / "aclnngen"))
    assert not str(path).startswith(str(core)) and not list(core.glob("*.so"))
