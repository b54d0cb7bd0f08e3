"""The call plans (runtime/callplan.py): the later calls of a signature, made by one C helper call,
give what the Python path gives: the same results bit for bit, the same errors, nothing leaked;
a changed SoC sends the call back to the Python path; without a C compiler every call goes the
Python way and `aclnngen info` says so."""

from __future__ import annotations

import contextlib
import importlib

import numpy as np
import pytest

from aclnngen.codegen.commands import info
from aclnngen.core.rules import supported_dtypes, supported_families
from aclnngen.runtime import callplan, products, session
from aclnngen.runtime.arrays import DeviceArray
from aclnngen.runtime.call import NO_PLAN
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.sim.kernels import Profile
from aclnngen.verify import cases
from aclnngen.verify.opcheck import binding_args
import catalog
from catalog import PLAIN
from simtools import no_leaks_around, same_bits

VERSION = "8.5.0"


def _op(snake):
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    module = importlib.import_module(f"aclnngen.generated.ops.{snake}")
    return meta, getattr(module, snake), module._CALL


@contextlib.contextmanager
def _mode(value: str):
    before = callplan.mode()
    callplan.set_mode(value)
    try:
        yield
    finally:
        callplan.set_mode(before)


def _args(meta, dtype, family, device: bool):
    values = dict(cases.make_values(meta, "contiguous", dtype, version=VERSION))
    positional, keywords = binding_args(meta, values)

    def arg(a):  # a view of a whole array (as a reshape gives), on the device when asked
        if not isinstance(a, np.ndarray):
            return a
        whole = np.array(a).reshape(a.shape)
        assert whole.base is not None
        return DeviceArray.from_host(whole) if device else whole

    return [arg(a) for a in positional], {k: arg(a) for k, a in keywords.items()}


def _host(result):
    results = result if isinstance(result, tuple) else (result,)
    return [r.to_host() if isinstance(r, DeviceArray) else r for r in results]


def _counting(bound, key):
    """The plan of `key`, its C helper call counted."""
    plan = bound.plans.get(key)
    assert plan is not None and plan is not NO_PLAN, f"{bound.symbol}: no plan after a successful call"
    calls = []
    inner = plan.call

    def call(*a):
        calls.append(1)
        return inner(*a)

    plan.call = call
    return plan, calls


def _signatures(meta):
    family = supported_families(meta, VERSION)[0]
    tensors = [p["name"] for p in meta["params"] if p["role"] in ("input", "output")]
    dtypes = [d for d in supported_dtypes(meta, tensors[0], family, VERSION) if d in ("float32", "float16")]
    return family, [d for d in dtypes if all(d in supported_dtypes(meta, t, family, VERSION) for t in tensors)]


@pytest.mark.parametrize("snake", catalog.representatives())
def test_plan_and_python_path_agree(snake):
    meta, binding, bound = _op(snake)
    family, dtypes = _signatures(meta)
    assert dtypes, f"{snake}: no float dtype every tensor takes on {family}"
    with session.simulated(family=family, version=VERSION):
        for dtype in dtypes:
            for device in (False, True):
                positional, keywords = _args(meta, dtype, family, device)
                where = f"{snake} {dtype} {'device' if device else 'NumPy'} arrays"
                with no_leaks_around():
                    with _mode("python"):
                        want = _host(binding(*positional, **keywords))
                    first = _host(binding(*positional, **keywords))  # the Python path, which plans
                    key = bound.plan_key(_in_order(bound, positional, keywords))
                    assert key is not None, f"{where}: the call is not one a plan makes"
                    plan, calls = _counting(bound, key)
                    got = _host(binding(*positional, **keywords))
                assert calls == [1], f"{where}: the second call did not go through the C helper"
                for w, f, g in zip(want, first, got):
                    assert same_bits(f, w) and same_bits(g, w), f"{where}: {g} != {w}"


def _in_order(bound, positional, keywords):
    """The binding's arguments in prototype order, as the binding hands them to its BoundOp."""
    by_py = dict(keywords)
    found, rest = [], list(positional)
    for p in bound.params:
        if p.output:
            found.append(None)
        elif p.py in by_py:
            found.append(by_py[p.py])
        else:
            found.append(rest.pop(0))
    return tuple(found)


def _refusing(meta, values, *, family, version):
    raise AclnnValidationError(
        status=161002,
        op="x",
        param="self",
        family=family,
        check="made-up",
        detail="refused by the test's profile",
        found=None,
        allowed=None,
    )


REFUSE = Profile(name="refuse", description="refuses every call", check=_refusing)
HUGE_WORKSPACE = Profile(
    name="huge", description="announces more workspace than exists", workspace=lambda m, a: 1 << 62
)


def _error(call):
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - compared below
        return exc
    raise AssertionError("no error")


@pytest.mark.parametrize("snake", catalog.representatives())
def test_plan_raises_what_the_python_path_raises(snake):
    meta, binding, bound = _op(snake)
    family, dtypes = _signatures(meta)
    positional, keywords = _args(meta, dtypes[0], family, device=False)
    with session.simulated(family=family, version=VERSION), no_leaks_around():
        binding(*positional, **keywords)
        positional, keywords = _args(meta, dtypes[0], family, device=False)  # not the planned arrays
        _, calls = _counting(bound, bound.plan_key(_in_order(bound, positional, keywords)))
        for profile in (REFUSE, HUGE_WORKSPACE):
            with session.simulated(profile=profile):
                with _mode("python"):
                    want = _error(lambda: binding(*positional, **keywords))
                got = _error(lambda: binding(*positional, **keywords))
            where = f"{snake}, profile {profile.name}"
            assert type(got) is type(want) and str(got) == str(want), f"{where}: {got!r} != {want!r}"
            assert getattr(got, "status", None) == getattr(want, "status", None), where
        assert len(calls) == 2, f"{snake}: the plan did not make the failing calls"


def test_a_changed_soc_sends_the_call_back_to_the_python_path():
    meta, binding, bound = _op(PLAIN)
    family, dtypes = _signatures(meta)
    socs = _socs_of(family)
    assert len(socs) >= 2, f"family {family} has one SoC name: the test needs two"
    positional, keywords = _args(meta, dtypes[0], family, device=False)
    with session.simulated(soc=socs[0], version=VERSION):
        want = _host(binding(*positional, **keywords))
        key = bound.plan_key(_in_order(bound, positional, keywords))
        old, calls = _counting(bound, key)
    with session.simulated(soc=socs[1], version=VERSION):
        got = _host(binding(*positional, **keywords))  # the helper finds another SoC: Python decides
        new = bound.plans[key]
    assert calls == [1] and new is not old, "the stale plan was not replaced"
    assert all(same_bits(g, w) for g, w in zip(got, want))


def _socs_of(family):
    """Two SoC names of `family`: its first exact name, or its first prefix with two suffixes."""
    f = next(f for f in products.families() if f["id"] == family)
    if len(f.get("soc_names") or ()) >= 2:
        return f["soc_names"][:2]
    prefix = (f.get("soc_prefixes") or [None])[0]
    return [prefix + "9579", prefix + "9580"] if prefix else list(f.get("soc_names") or ())


def test_without_a_compiler_every_call_goes_the_python_way(monkeypatch):
    meta, binding, bound = _op(PLAIN)
    family, dtypes = _signatures(meta)
    monkeypatch.setenv("CC", "/nonexistent/aclnngen-test-cc")
    monkeypatch.setattr(callplan, "_LIBRARIES", {})
    monkeypatch.setattr(bound, "plans", {})
    positional, keywords = _args(meta, dtypes[0], family, device=False)
    with session.simulated(family=family, version=VERSION):
        with _mode("python"):
            want = _host(binding(*positional, **keywords))
        got = [_host(binding(*positional, **keywords)) for _ in range(3)]
    assert list(bound.plans.values()) == [NO_PLAN]
    assert all(same_bits(g, w) for results in got for g, w in zip(results, want))
    (reason,) = callplan.status()["helpers"].values()
    assert "no C compiler" in reason
    # what `aclnngen info` prints on its "call path" row
    row = info._call_path()
    assert row.startswith("Python: the C helper is unavailable") and "no C compiler" in row


def test_info_names_the_c_helper_when_it_builds():
    with _mode("auto"):
        assert info._call_path().startswith("C helper"), info._call_path()
    with _mode("python"):
        assert info._call_path() == f"Python ({callplan.MODE_ENV}=python)"


def test_a_bad_call_path_setting_is_a_clear_error(monkeypatch):
    meta, binding, _ = _op(PLAIN)
    family, dtypes = _signatures(meta)
    positional, keywords = _args(meta, dtypes[0], family, device=False)
    monkeypatch.setattr(callplan, "_mode", "fast")
    with pytest.raises(ValueError, match=r"ACLNNGEN_CALL_PATH=.fast. is not one of auto, python"):
        binding(*positional, **keywords)
    with pytest.raises(ValueError, match="is not one of auto, python"):
        callplan.set_mode("fast")
