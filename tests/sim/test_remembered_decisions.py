"""The simulator's C core remembers what its hooks decided per executor signature
(runtime/sim/sim_memo.c): a repeated signature gives what its first call gave (outputs, status,
last-error text) without entering Python, and every input of the hooks' decision makes the core
ask them again. The hooks' entries are counted by the core (aclsim_memo_get_stats)."""

from __future__ import annotations


import numpy as np
import pytest

import catalog
from aclnngen.core.meta import op_meta
from aclnngen.core.rules import supported_dtypes, supported_families
from aclnngen.generated import OPS
from aclnngen.runtime import session
from aclnngen.runtime.errors import AclnnStatusError
from aclnngen.runtime.sim import compiled, kernels
from aclnngen.runtime.sim.controls import sim_ffi
from aclnngen.runtime.sim.kernels import BUILTIN_PACKAGE
from aclnngen.verify import cases, opcheck


def _stats() -> dict[str, int]:
    out = sim_ffi().new("struct aclsim_memo_stats *")
    session.backend().controls.aclsim_memo_get_stats(out)
    return {name: getattr(out, name) for name in dir(out)}


def _values(op, dtype: str = "float32") -> dict:
    values = dict(cases.make_values(op.meta, "contiguous", dtype, version=op.version))
    for p in op.of_roles("output"):
        values.pop(p.name, None)
    return values


def _call(op, values, **options):
    positional, keywords, _ = op.split(values)
    result = op.binding(*positional, **keywords, **options)
    return result if isinstance(result, tuple) else (result,)


def _fallbacks() -> dict[str, str]:
    return compiled.fallbacks(BUILTIN_PACKAGE, session.backend().libraries["nnopbase"])


@pytest.fixture
def fresh():
    """The op's own release, the spec profile, and an empty memory."""
    with session.simulated(profile="spec") as sim:
        sim.controls.aclsim_memo_clear()
        yield sim


def _unsupported(op, family: str) -> str | None:
    """A dtype no input of the op takes on `family` (the library's check rejects it)."""
    allowed = {d for p in op.of_roles("input") for d in supported_dtypes(op.meta, p.name, family, op.version)}
    return next((d for d in ("int8", "uint8", "int16", "int32", "int64", "bool") if d not in allowed), None)


# one op of each structure: the core remembers by an executor's signature, whatever the op is named
@pytest.mark.parametrize("snake", catalog.representatives())
def test_a_remembered_signature_gives_what_its_first_call_gave(snake, fresh):
    op = catalog.under_test(snake)
    family = supported_families(op.meta, op.version)[0]
    with session.simulated(family=family, version=op.version):
        values = _values(op)
        start = _stats()
        first = _call(op, values)
        after_first = _stats()
        again = _call(op, values)
        after_again = _stats()
        assert after_first["prepare_hooks"] == start["prepare_hooks"] + 1
        assert after_again["prepare_hooks"] == after_first["prepare_hooks"], f"{snake}: prepare asked Python again"
        assert after_again["prepare_hits"] == after_first["prepare_hits"] + 1
        compiled_op = op_meta(op.meta).symbol not in _fallbacks()
        runs = after_again["run_hooks"] - after_first["run_hooks"]
        assert runs == (0 if compiled_op else 1), f"{snake}: the run hook ran {runs} times"
        for a, b in zip(first, again):
            assert opcheck.same_bits(a, b), snake
        # an error the library's checks give: the same status and last-error text from memory
        dtype = _unsupported(op, family)
        assert dtype is not None
        bad = {**values, **{p.name: np.asarray(values[p.name]).astype(dtype) for p in op.of_roles("input")}}
        errors = []
        for _ in range(2):
            with pytest.raises(AclnnStatusError) as err:
                _call(op, bad, validate=False)
            errors.append((err.value.status, err.value.recent_message))
        after_errors = _stats()
        assert errors[0] == errors[1], snake
        assert after_errors["prepare_hooks"] == after_again["prepare_hooks"] + 1
        assert after_errors["prepare_hits"] == after_again["prepare_hits"] + 1


def _compiled_op_with(has) -> str:
    with session.simulated():
        falls = _fallbacks()
    for snake in sorted(OPS):
        op = catalog.under_test(snake)
        if op_meta(op.meta).symbol not in falls and has(op):
            return snake
    raise LookupError("no compiled op has it")


SCALAR_OP = _compiled_op_with(lambda op: any(p.role in ("scalar", "optional_scalar") for p in op.typed.params))


def _asks_again(op, values, what: str, **options) -> None:
    before = _stats()["prepare_hooks"]
    _call(op, values, **options)
    assert _stats()["prepare_hooks"] == before + 1, f"a changed {what} was answered from memory"


def _remembered(op, values, **options) -> None:
    _call(op, values, **options)
    before = _stats()
    _call(op, values, **options)
    after = _stats()
    assert after["prepare_hooks"] == before["prepare_hooks"] and after["run_hooks"] == before["run_hooks"]


def test_every_input_of_the_decision_makes_the_core_ask_the_hooks(fresh, monkeypatch):
    op = catalog.under_test(SCALAR_OP)
    values = _values(op)
    inputs = [p.name for p in op.of_roles("input")]
    _remembered(op, values)
    halves = {k: (np.asarray(v, np.float16) if k in inputs else v) for k, v in values.items()}
    _asks_again(op, halves, "dtype")
    grown = {k: (np.concatenate([v, v]) if k in inputs else v) for k, v in values.items()}
    _asks_again(op, grown, "shape")
    wide = np.repeat(np.asarray(values[inputs[0]]), 2, axis=-1)
    strided = {**values, inputs[0]: wide[..., ::2]}
    _asks_again(op, strided, "stride", validate=False)
    scalar = next(p.name for p in op.typed.params if p.role in ("scalar", "optional_scalar"))
    _asks_again(op, {**values, scalar: 0.375}, "scalar")
    _remembered(op, values)
    with session.simulated(profile="lenient"):
        _asks_again(op, values, "profile")
    _remembered(op, values)
    monkeypatch.setenv(kernels.PROFILE_ENV, "lenient")
    _asks_again(op, values, "profile setting")
    monkeypatch.delenv(kernels.PROFILE_ENV)
    _remembered(op, values)
    monkeypatch.setenv(compiled.MODE_ENV, "reference")
    _asks_again(op, values, "kernels setting")
    monkeypatch.delenv(compiled.MODE_ENV)
    sim = session.backend()
    _remembered(op, values)
    soc, version = sim.settings
    try:
        sim.set_version("9.0.0")
        _asks_again(op, values, "version")
    finally:
        sim.set_version(version)
    _remembered(op, values)
    sim.set_kernels(False)
    sim.set_kernels(True)
    _asks_again(op, values, "kernels control")
    _remembered(op, values)
    kernels.register_op(op.meta, package=BUILTIN_PACKAGE)  # the op registered again
    _asks_again(op, values, "registration")
    _remembered(op, values)
    sim.reset()
    assert _stats()["entries"] == 0, "aclsim_reset kept remembered decisions"
    _asks_again(op, values, "reset")


def test_an_attribute_value_is_part_of_the_signature():
    snake = _compiled_op_with(lambda op: any(p.role == "attribute" and p.attr_type != "char*" for p in op.typed.params))
    op = catalog.under_test(snake)
    values = _values(op)
    with session.simulated(profile="lenient"):  # any value passes
        _attribute_changes(op, values)


def _attribute_changes(op, values) -> None:
    _remembered(op, values, validate=False)
    attribute = next(p for p in op.typed.params if p.role == "attribute" and p.attr_type != "char*")
    value = values[attribute.name]
    changed = (not value) if isinstance(value, bool) else value * 0.5 + 0.25 if isinstance(value, float) else value - 1
    _asks_again(op, {**values, attribute.name: changed}, f"attribute {attribute.name}", validate=False)


def test_a_remembered_call_is_recorded_with_its_own_addresses(fresh):
    op = catalog.under_test(SCALAR_OP)
    values = _values(op)
    _remembered(op, values)
    kernels.clear_recorded()
    _call(op, values)
    _call(op, values)
    records = kernels.recorded(op_meta(op.meta).symbol)
    assert len(records) == 2
    first = op.of_roles("input")[0].name
    assert records[0]["args"][first]["shape"] == np.shape(values[first])
    assert all(r["args"][first]["data"] for r in records)


def test_the_memory_is_bounded_and_forgets_the_least_recently_used(fresh):
    op = catalog.under_test(SCALAR_OP)
    values = _values(op)
    inputs = [p.name for p in op.of_roles("input")]
    controls = session.backend().controls
    previous = controls.aclsim_memo_set_capacity(3)
    try:
        shapes = [{k: (np.concatenate([v] * n) if k in inputs else v) for k, v in values.items()} for n in range(1, 6)]
        for one in shapes:
            _call(op, one)
        stats = _stats()
        assert stats["entries"] == 3 and stats["capacity"] == 3
        _remembered(op, shapes[-1])  # kept
        _asks_again(op, shapes[0], "signature the memory dropped")
        controls.aclsim_memo_set_capacity(0)  # off: every call asks
        _asks_again(op, shapes[-1], "signature with the memory off")
        _asks_again(op, shapes[-1], "signature with the memory off")
    finally:
        controls.aclsim_memo_set_capacity(previous)


def test_threads_share_a_remembered_signature_and_keep_their_own_data(fresh):
    """The core runs a remembered kernel without the GIL, from every thread: each thread's call
    computes its own tensors."""
    import threading

    op = catalog.under_test(SCALAR_OP)
    values = _values(op)
    inputs = [p.name for p in op.of_roles("input")]
    per_thread = [
        {k: (np.asarray(v) * np.float32(t + 1) if k in inputs else v) for k, v in values.items()} for t in range(4)
    ]
    want = [_call(op, v) for v in per_thread]  # also makes the signature remembered
    before = _stats()
    errors: list = []

    def work(t: int) -> None:
        try:
            for _ in range(25):
                for got, expected in zip(_call(op, per_thread[t]), want[t]):
                    assert opcheck.same_bits(got, expected), f"thread {t}"
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors, errors
    after = _stats()
    assert after["prepare_hooks"] == before["prepare_hooks"] and after["launch_hits"] >= before["launch_hits"] + 100


def _early_return_case():
    """An op whose vendor profile answers an empty tensor with success before its other checks,
    and that tensor's name."""
    from aclnngen.runtime import profiles

    for snake in sorted(OPS):
        op = catalog.under_test(snake)
        for early in op_meta(profiles.apply(op.meta, "vendor", op.version)).early_returns:
            if not early.families:
                return op, early.params[0], op.version
    return None


def test_a_remembered_early_return_computes_nothing_again():
    found = _early_return_case()
    if found is None:
        pytest.skip("no op's vendor profile states an early return")
    op, empty_name, version = found
    values = _values(op)
    empty = dict(values)
    for p in op.of_roles("input"):  # every input empty alike (among them empty_name), shapes agree
        empty[p.name] = np.zeros((0,) + np.shape(values[p.name])[1:], np.asarray(values[p.name]).dtype)
    assert empty_name in empty
    with session.simulated(profile="vendor", version=version) as sim:
        sim.controls.aclsim_memo_clear()
        first = _call(op, empty, validate=False)
        before = _stats()
        again = _call(op, empty, validate=False)
        after = _stats()
    assert after["prepare_hits"] == before["prepare_hits"] + 1 and after["run_hooks"] == before["run_hooks"]
    assert [a.shape for a in again] == [a.shape for a in first]
    assert kernels.recorded(op_meta(op.meta).symbol)[-1]["workspace"] == 0
