"""Behaviour profiles: the vendor profile changes exactly the checks the fact sheet says it does."""

from __future__ import annotations

import numpy as np
import pytest

from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_all
from aclnngen.codegen.profiles import load_profiles
from aclnngen.verify import cases
from aclnngen.runtime import profiles
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.validation import validate

V = "8.5.0"


def _meta(snake):
    import importlib

    return importlib.import_module(f"aclnngen.generated.meta.{snake}").META


def _status(meta, values, family="a2"):
    try:
        validate(meta, values, family=family, version=V)
    except AclnnValidationError as exc:
        return exc.status
    return 0


@pytest.mark.parametrize(
    "snake,case,spec_status,vendor_status",
    [
        ("softshrink_backward", "mixed-dtype", 161002, 0),
        ("hardtanh_backward", "empty", 161002, 0),
        ("swish_backward", "rank9", 161002, 161002),  # checked before its >8-dim reshape
        ("gelu_backward_v2", "rank9", 161002, 0),
        ("gelu_backward", "rank9", 161002, 161002),
        ("prelu_backward", "per-channel-rejected", 161002, 161002),
    ],
)
def test_recorded_fact_vendor_profile_changes_only_the_recorded_checks(snake, case, spec_status, vendor_status):
    meta = _meta(snake)
    values = cases.make_values(meta, case, "float32", version=V)
    assert _status(profiles.apply(meta, "spec", V), values) == spec_status
    assert _status(profiles.apply(meta, "vendor", V), values) == vendor_status


def test_recorded_fact_hardtanh_backward_vendor_never_checks_out():
    meta = _meta("hardtanh_backward")
    values = dict(cases.make_values(meta, "contiguous", "float32", version=V))
    values["out"] = np.zeros((7,), dtype=np.float16)  # wrong shape and dtype (float16 is supported)
    assert _status(meta, values) == 161002
    assert _status(profiles.apply(meta, "vendor", V), values) == 0


def test_recorded_fact_null_out_pointer_checks_per_profile():
    assert profiles.null_out_pointers_checked("spec", "GeluBackward", V)
    assert not profiles.null_out_pointers_checked("vendor", "GeluBackward", V)
    assert not profiles.null_out_pointers_checked("vendor", "PreluBackward", V)
    assert profiles.null_out_pointers_checked("vendor", "SwishBackward", V)


def test_recorded_fact_profiles_hold_from_their_release_on():
    assert profiles.select("vendor", "SoftshrinkBackward", "8.0.0") is None
    assert profiles.select("vendor", "SoftshrinkBackward", "9.0.0")["cann_version"] == "8.5.0"
    with pytest.raises(ValueError, match="unknown behaviour profile"):
        profiles.select("nonsense", "SoftshrinkBackward", V)


def test_a_profile_naming_a_rule_gelu_lacks_is_rejected(tmp_path):
    import shutil

    shutil.copytree(DEFAULT_SPECS_DIR / "profiles", tmp_path / "profiles")
    bad = tmp_path / "profiles" / "vendor" / "8.5.0" / "gelu_backward.yaml"
    bad.write_text(bad.read_text().replace("changes: []", "changes:\n  - {action: drop, rule: same_shape, reason: x}"))
    specs = {ls.spec.name: ls.spec for ls in load_all()}
    with pytest.raises(SpecError) as info:
        load_profiles(tmp_path, specs)
    assert "no 'same_shape' rule" in str(info.value) and "gelu_backward.yaml:" in str(info.value)
