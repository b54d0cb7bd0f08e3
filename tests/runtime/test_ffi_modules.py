"""The generated out-of-line cffi modules (generated/ffi/): each op's declares its META's cdef and
includes the runtime's, so a handle is one type across the runtime, the simulator's controls and
every op; a META without a generated module gets the same from its cdef, parsed at run time."""

from __future__ import annotations

import copy
import importlib

import pytest

from aclnngen.generated import OPS
from aclnngen.runtime import ffi as ffimod
from aclnngen.runtime.errors import BackendError
from aclnngen.runtime.sim.controls import sim_ffi

HANDLES = ("aclTensor *", "aclOpExecutor *", "aclScalar *", "aclIntArray *")


def _meta(snake: str) -> dict:
    return importlib.import_module(f"aclnngen.generated.meta.{snake}").META


@pytest.mark.parametrize("snake", OPS)
def test_each_op_module_declares_its_meta_and_shares_the_runtime_types(snake):
    module = importlib.import_module(f"aclnngen.generated.ffi.{snake}")
    meta = _meta(snake)
    assert module.CDEF == meta["cdef"]
    ffi = ffimod.op_ffi(meta, "aclnngen.generated")
    assert ffi is module.ffi
    runtime = ffimod.runtime_ffi()
    for handle in HANDLES:
        assert ffi.typeof(handle) is runtime.typeof(handle)


def test_the_controls_share_the_runtime_types():
    for handle in HANDLES:
        assert sim_ffi().typeof(handle) is ffimod.runtime_ffi().typeof(handle)


def test_a_meta_without_a_generated_module_is_parsed_with_the_same_types():
    meta = copy.deepcopy(_meta(OPS[0]))
    meta["cdef"] = meta["cdef"].replace("aclOpExecutor** executor", "aclOpExecutor **executor")
    ffi = ffimod.op_ffi(meta, "aclnngen.generated")  # the module's CDEF differs: parsed
    assert ffi is not importlib.import_module(f"aclnngen.generated.ffi.{OPS[0]}").ffi
    for handle in HANDLES:
        assert ffi.typeof(handle) is ffimod.runtime_ffi().typeof(handle)
    assert ffimod.op_ffi(meta, "aclnngen.generated") is ffi, "cached per package and op"


def test_a_cdef_that_does_not_parse_is_a_backend_error():
    meta = copy.deepcopy(_meta(OPS[0]))
    meta["cdef"] = "aclnnStatus aclnnBroken(aclTensor* x"
    with pytest.raises(BackendError, match="do not parse"):
        ffimod.op_ffi(meta)


def test_a_stale_generated_module_is_named(monkeypatch):
    monkeypatch.setattr(ffimod, "runtime_cdef", lambda: "int edited(void);")
    with pytest.raises(BackendError, match="_acl_runtime do not match"):
        ffimod.generated_ffi(ffimod.RUNTIME_MODULE, ffimod.runtime_cdef(), "acl_runtime.h")


def test_an_op_parsed_without_a_package_does_not_replace_the_packages_module(monkeypatch):
    # whichever asks first (a test building a META by hand, say), the package gets its own module
    monkeypatch.setattr(ffimod, "_OPS", {})
    snake = OPS[-1]
    meta = _meta(snake)
    parsed = ffimod.op_ffi(meta)
    assert ffimod.op_ffi(meta, "aclnngen.generated") is importlib.import_module(f"aclnngen.generated.ffi.{snake}").ffi
    assert parsed.typeof("aclTensor *") is ffimod.runtime_ffi().typeof("aclTensor *")
