"""What a behaviour profile can state about the checks themselves: parameters the implementation
never null-checks, early returns (per family) and the order of the checks; the simulator answers
by them. The vendor facts (SoftmaxBackward's early return and check order) are checked against
the vendor's op_api code; the other facts run through a profile written here."""

from __future__ import annotations

from pathlib import Path

import catalog
import numpy as np
import pytest
from catalog import loaded_specs

from aclnngen.codegen.errors import SpecError

from aclnngen.codegen.profiles import load_profiles
from aclnngen.core.checks import STEPS, CheckOrderError, check_order
from aclnngen.generated import profiles as generated_profiles
from aclnngen.runtime import session
from aclnngen.runtime.arrays import DeviceArray
from aclnngen.runtime.errors import AclnnStatusError

PARAM_NULLPTR, PARAM_INVALID, INNER_NULLPTR = 161001, 161002, 561103
SPECS = {ls.spec.name: ls.spec for ls in loaded_specs()}


def _install(tmp_path: Path, monkeypatch, name: str, snake: str, text: str) -> None:
    """Loads a profile file `text` of op `snake` as profile `name` (through the profile loader,
    as `aclnngen generate` does) and makes it known to the simulator."""
    folder = tmp_path / "profiles" / name / "8.5.0"
    folder.mkdir(parents=True)
    (folder / f"{snake}.yaml").write_text(text)
    [(found, profile)] = load_profiles(tmp_path, SPECS)
    monkeypatch.setitem(generated_profiles.PROFILES, found, {profile.op: {"8.5.0": profile.as_data()}})


# the op the profiles written here describe: two inputs, one output, one required scalar, and a rule
# holding its output to the inputs' dtype
OP = catalog.an_op(
    "two inputs, one output, one required scalar, no attribute, the output held to one dtype",
    lambda m: (
        (len(catalog.names(m, "input")), len(m["outputs"]), len(catalog.names(m, "scalar"))) == (2, 1, 1)
        and not catalog.names(m, "optional_scalar", "attribute")
        and any(r["kind"] == "same_dtype" and m["outputs"][0] in r["params"] for r in m["rules"])
    ),
)
META = catalog.meta(OP)
(GRAD, X), (SCALAR,) = catalog.names(META, "input"), catalog.names(META, "scalar")
binding = catalog.binding(OP)
HEAD = f"""\
op: {META["name"]}
cann_version: 8.5.0
evidence: a profile written by tests/sim/test_profile_checks.py
null_out_pointers: checked
"""


# --- SoftmaxBackward: corrected from aclnn_softmax_backward.cpp at v8.5.0 ---------------------------


@pytest.mark.parametrize("family", ["training", "a2", "ascend950"])
def test_recorded_fact_softmax_backward_returns_success_for_empty_inputs_before_any_check(family):
    softmax_backward = catalog.binding("softmax_backward")
    # the parameter checks: null pointers first, then success at once when either tensor is empty,
    # before the dtype, the dim and the shapes are checked (on every SoC)
    g = np.zeros((0, 3), np.float32)
    wrong_dtype = np.zeros((0, 3), np.float16)  # output's dtype must equal gradOutput's
    with session.simulated(family=family, version="9.1.0", profile="spec"):
        with pytest.raises(AclnnStatusError) as err:
            softmax_backward(g, wrong_dtype, 5, out=np.zeros((5,), np.float32), validate=False)
        assert err.value.status == PARAM_INVALID
    with session.simulated(family=family, version="9.1.0", profile="vendor"):
        out = DeviceArray.from_host(np.full((5,), 7.0, np.float32))
        # a dim out of range, a dtype mismatch and an out of another shape: all go unreported
        result = softmax_backward(
            DeviceArray.from_host(g), DeviceArray.from_host(wrong_dtype), 5, out=out, validate=False
        )
        assert result is out
        np.testing.assert_array_equal(out.to_host(), np.full((5,), 7.0, np.float32))  # no work done
        x = np.ones((2, 3), np.float32)  # not empty: the checks run
        with pytest.raises(AclnnStatusError) as err:
            softmax_backward(x, x.astype(np.float16), 0, validate=False)
        assert err.value.status == PARAM_INVALID


def test_recorded_fact_softmax_backward_checks_dim_before_shapes():
    softmax_backward = catalog.binding("softmax_backward")
    # CheckParams: CheckDtypeValid, CheckDim, then CheckShape (max dim, then shape equality)
    x = np.ones((2, 3), np.float32)
    bad_out = np.zeros((3, 2), np.float32)
    with session.simulated(family="a2", version="9.1.0", profile="spec"):
        with pytest.raises(AclnnStatusError) as err:
            softmax_backward(x, x, 5, out=bad_out, validate=False)
    assert "same shape" in err.value.recent_message  # the spec's order: rules before attributes
    with session.simulated(family="a2", version="9.1.0", profile="vendor"):
        with pytest.raises(AclnnStatusError) as err:
            softmax_backward(x, x, 5, out=bad_out, validate=False)
        assert err.value.status == PARAM_INVALID and "dim = 5" in err.value.recent_message
        # and the dtype before the dim
        with pytest.raises(AclnnStatusError) as err:
            softmax_backward(x, x.astype(np.float16), 5, out=bad_out, validate=False)
        assert "dtype" in err.value.recent_message and "dim = 5" not in err.value.recent_message
        # max rank before the shapes
        big = np.ones((1,) * 9, np.float32)
        with pytest.raises(AclnnStatusError) as err:
            softmax_backward(big, big, 0, out=np.zeros((2,), np.float32), validate=False)
        assert "9 dims" in err.value.recent_message


# --- the facts through a profile written here -------------------------------------------------------


def test_a_null_the_implementation_never_checks_is_dereferenced(tmp_path, monkeypatch):
    _install(
        tmp_path,
        monkeypatch,
        "nullcheck",
        OP,
        HEAD + "unchecked_nulls:\n  - params: [" + SCALAR + "]\n    reason: read with ToFloat() unchecked\n",
    )
    g = np.ones((2, 3), np.float32)
    for name in ("spec", "vendor"):
        with session.simulated(family="a2", version="9.1.0", profile=name):
            with pytest.raises(AclnnStatusError) as err:
                binding(g, g, None, validate=False)
            assert err.value.status == PARAM_NULLPTR
    with session.simulated(family="a2", version="9.1.0", profile="nullcheck"):
        with pytest.raises(AclnnStatusError) as err:
            binding(g, g, None, validate=False)
        assert err.value.status == INNER_NULLPTR
        assert SCALAR in err.value.recent_message and "never checks" in err.value.recent_message
        # an earlier check still answers first
        with pytest.raises(AclnnStatusError) as err:
            binding(g, g.astype(np.float16), None, validate=False)
        assert err.value.status == PARAM_INVALID
        # a NULL tensor the profile does not name is still refused
        with pytest.raises(AclnnStatusError) as err:
            binding(None, g, 1.0, validate=False)
        assert err.value.status == PARAM_NULLPTR
        assert binding(g, g, 0.5, validate=False).shape == (2, 3)


def test_an_early_return_holds_on_its_families_only(tmp_path, monkeypatch):
    _install(
        tmp_path,
        monkeypatch,
        "earlyonly",
        OP,
        HEAD
        + "early_returns:\n  - params: ["
        + GRAD
        + ", "
        + X
        + "]\n    families: [a2]\n    reason: IsEmpty on ASCEND910B\n",
    )
    empty = np.zeros((0, 4), np.float32)
    out = np.zeros((0, 4), np.float16)  # out must have self's dtype
    with session.simulated(family="a2", version="9.1.0", profile="earlyonly"):
        assert binding(empty, empty, 1.0, out=out, validate=False) is out
    with session.simulated(family="training", version="9.1.0", profile="earlyonly"):
        with pytest.raises(AclnnStatusError) as err:
            binding(empty, empty, 1.0, out=out, validate=False)
        assert err.value.status == PARAM_INVALID


@pytest.mark.parametrize(
    "extra, message",
    [
        ("unchecked_nulls:\n  - params: [nope]\n    reason: x\n", "no required tensor or scalar 'nope'"),
        (f"early_returns:\n  - params: [{SCALAR}]\n    reason: x\n", f"no tensor '{SCALAR}'"),
        (f"early_returns:\n  - params: [{X}]\n    families: [mars]\n    reason: x\n", "'mars'"),
        ("check_order:\n  steps: [dtype, per_channel]\n  reason: x\n", "no 'per_channel' rule"),
        ("check_order:\n  steps: [dtype, dtype]\n  reason: x\n", "named twice"),
        ("check_order:\n  steps: [dtypes]\n  reason: x\n", "dtypes"),
    ],
)
def test_a_wrong_statement_about_the_checks_is_refused_at_its_line(tmp_path, extra, message):
    folder = tmp_path / "profiles" / "bad" / "8.5.0"
    folder.mkdir(parents=True)
    (folder / f"{OP}.yaml").write_text(HEAD + extra)
    with pytest.raises(SpecError) as info:
        load_profiles(tmp_path, SPECS)
    assert message in str(info.value) and f"{OP}.yaml:" in str(info.value)


def test_the_check_order_puts_unstated_steps_after_the_stated_ones():
    assert check_order() == STEPS
    stated = ("null_pointer", "dtype", "same_shape", "attributes")
    full = check_order(stated)
    assert full[: len(stated)] == stated and set(full) == set(STEPS) | {"same_shape"}
    with pytest.raises(CheckOrderError, match="twice"):
        check_order(("dtype", "dtype"))
    with pytest.raises(CheckOrderError, match="unknown check step"):
        check_order(("shapes",))


def test_a_saved_profile_keeps_the_stated_facts_about_the_checks():
    from aclnngen.audit import observed  # deferred: only this test needs the audit

    saved = {
        "op": "DemoBackward",
        "changes": [],
        "dtypes": [],
        "notes": [],
        "evidence": "e",
        "early_returns": [{"params": ["gradOutput"], "families": [], "reason": "r"}],
        "check_order": {"steps": ["dtype"], "reason": "r"},
    }
    new = {"op": "DemoBackward", "changes": [], "dtypes": [], "notes": [], "evidence": "e"}
    merged = observed.merge(saved, new)
    assert merged["early_returns"] == saved["early_returns"] and merged["check_order"] == saved["check_order"]
    assert "unchecked_nulls" not in merged
