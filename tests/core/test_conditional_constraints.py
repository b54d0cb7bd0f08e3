"""Constraints that hold only for another parameter's value (`when`): the validator applies them
only then, sweeps move a scalar inside such a bound when they switch the condition on, the
generated scalar test sets the condition, and a spec's `when` must name something real."""

from __future__ import annotations

from pathlib import Path

import pytest

from aclnngen.codegen import metadata
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.core import planning, sweeps
from aclnngen.verify import cases
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.validation import validate
from repo_paths import CUSTOM_SPECS

BASE = (CUSTOM_SPECS / "ops" / "sloped_step_backward.yaml").read_text(encoding="utf-8")
ANCHOR = "    scalar_dtype: float32\n    default: 0.01\n"


def _spec(tmp_path: Path, when: str, default: str = "-0.5"):
    assert ANCHOR in BASE
    text = BASE.replace(
        ANCHOR,
        f"    scalar_dtype: float32\n    default: {default}\n"
        f"    constraints:\n      - {{op: '>=', value: 0, when: {when}}}\n",
    )
    path = tmp_path / "sloped_step_backward.yaml"
    path.write_text(text, encoding="utf-8")
    return load_spec(path, load_products()).spec


def _rejected(meta, **values) -> bool:
    data = dict(cases.make_values(meta, "contiguous", "float32", version="8.5.0"), **values)
    try:
        validate(meta, data, family="a2", version="8.5.0")
    except AclnnValidationError as exc:
        assert exc.status == 161002 and exc.param == "negativeSlope", str(exc)
        return True
    return False


def test_the_bound_applies_only_while_its_condition_holds(tmp_path):
    meta = metadata.build(_spec(tmp_path, "{selfIsResult: true}"))
    assert not _rejected(meta, negativeSlope=-0.5, selfIsResult=False)
    assert _rejected(meta, negativeSlope=-0.5, selfIsResult=True)
    assert not _rejected(meta, negativeSlope=0.5, selfIsResult=True)


def test_cases_and_sweeps_respect_the_condition(tmp_path):
    meta = metadata.build(_spec(tmp_path, "{selfIsResult: true}"))
    assert planning.scalar_values(meta)["negativeSlope"] == -0.5  # the condition is off at the base
    assert planning.scalar_violations(meta, "8.5.0") == []
    [(name, bad, status, when)] = planning.conditional_violations(meta, "8.5.0")
    assert name == "negativeSlope" and bad < 0 and when == {"selfIsResult": True}
    overrides = sweeps.overrides_for(meta, "8.5.0", "selfIsResult", True)
    assert overrides == {"selfIsResult": True, "negativeSlope": 0}  # moved inside the bound it switched on
    assert any(n == "negativeSlope" and v < 0 for n, v in sweeps.scalar_points(meta, "8.5.0"))


@pytest.mark.parametrize(
    "when, pattern",
    [
        ("{selfIsResul: true}", r"unknown scalar or attribute 'selfIsResul'"),
        ("{selfIsResult: 1}", r"bool attribute"),
        ("{negativeSlope: 1.0}", r"unknown scalar or attribute 'negativeSlope'"),  # not itself
    ],
)
def test_a_condition_naming_nothing_real_is_an_error(tmp_path, when, pattern):
    with pytest.raises(SpecError, match=pattern) as info:
        _spec(tmp_path, when)
    assert "sloped_step_backward.yaml:" in str(info.value)


def test_a_dtype_allowed_only_under_a_condition(tmp_path):
    plain = "      - {families: [a2, a3], dtypes: [float16, float32, bfloat16]}\n"
    assert BASE.count(plain) == 3
    text = BASE.replace(plain, plain + "      - {families: [a2], dtypes: [float64], when: {selfIsResult: true}}\n")
    path = tmp_path / "sloped_step_backward.yaml"
    path.write_text(text, encoding="utf-8")
    spec = load_spec(path, load_products()).spec
    meta = metadata.build(spec)
    data = cases.make_values(meta, "contiguous", "float64", version="8.5.0")
    with pytest.raises(AclnnValidationError) as info:
        validate(meta, dict(data, selfIsResult=False), family="a2", version="8.5.0")
    assert info.value.status == 161002 and info.value.check == "dtype"
    validate(meta, dict(data, selfIsResult=True), family="a2", version="8.5.0")
    with pytest.raises(AclnnValidationError):  # the condition holds on a2 only
        validate(meta, dict(data, selfIsResult=True), family="a3", version="8.5.0")
    from aclnngen.codegen.resolve import resolve

    assert "float64" not in resolve(spec, "8.5.0").dtypes_of("gradOutput", "a2")  # not in the plain list
