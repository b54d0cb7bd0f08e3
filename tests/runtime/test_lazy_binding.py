"""runtime/binding.py: a generated binding's `bind(META)` only announces the op; the first use
turns the Binding into the op's call.BoundOp (its class and state), so every later call is a
BoundOp's, and a bad META is refused at that first use with the BoundOp's own error."""

from __future__ import annotations

import importlib
import threading

import numpy as np
import pytest

import catalog
from aclnngen.core.meta import MetaError
from aclnngen.runtime import bound_ops, call
from aclnngen.runtime.binding import Binding, bind

META = importlib.import_module(f"aclnngen.generated.meta.{catalog.PLAIN}").META


def _args():
    x = np.linspace(-2, 2, 6, dtype=np.float32)
    return (x, x, None)


def test_announced_at_bind_built_at_first_use():
    heard = []
    bound_ops.on_bind(heard.append)
    try:
        lazy = bind(META)
        assert type(lazy) is Binding and heard[-1] is META  # announced, not built
        assert "not called yet" in repr(lazy)
        assert lazy.symbol == call.bind(META).symbol  # the first attribute read builds it
        assert type(lazy) is call.BoundOp and "not called yet" not in repr(lazy)
    finally:
        bound_ops._listeners.remove(heard.append)


def test_the_first_call_gives_the_eager_binds_result():
    want = call.bind(META).call(_args(), None, True, None)
    lazy = bind(META)
    got = lazy(*_args())  # __call__ on a Binding
    assert type(lazy) is call.BoundOp
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(lazy.call(_args(), None, True, None), want)


def test_a_bad_meta_is_refused_with_the_bound_ops_error_and_withdrawn(monkeypatch):
    bad = {k: v for k, v in META.items() if k != "params"}
    with pytest.raises(MetaError) as eager:
        call.bind(bad)
    # no listener reads it (the simulator not loaded yet): refused at the first use
    monkeypatch.setattr(bound_ops, "_listeners", [])
    lazy = bind(bad)
    assert any(m is bad for m in bound_ops._bound)
    with pytest.raises(MetaError) as first:
        lazy.no_outputs
    assert str(first.value) == str(eager.value) and type(lazy) is Binding
    assert not any(m is bad for m in bound_ops._bound)  # no listener registered later hears of it
    # a listener that reads the META (the simulator's kernels) refuses it at bind, and it is withdrawn
    monkeypatch.setattr(bound_ops, "_listeners", [lambda m: call.op_meta(m)])
    with pytest.raises(MetaError) as at_bind:
        bind(bad)
    assert str(at_bind.value) == str(eager.value) and not any(m is bad for m in bound_ops._bound)


def test_threads_using_a_new_binding_at_once_all_get_the_bound_op():
    lazy = bind(META)
    start = threading.Barrier(4)
    seen, errors = [], []

    def use():
        start.wait()
        try:
            seen.append(lazy.no_outputs)
        except Exception as exc:  # noqa: BLE001 (any failure fails the test below)
            errors.append(exc)

    threads = [threading.Thread(target=use) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and len(seen) == 4 and type(lazy) is call.BoundOp


def test_package_of_names_the_package_that_defines_the_very_dict():
    assert bound_ops.package_of(META) == "aclnngen.generated"
    assert bound_ops.package_of(dict(META)) is None  # an equal dict is not the package's
    assert bound_ops.package_of(call.op_meta(META)) is None  # an OpMeta is no META dict: none, no error
