"""The dtype_pairs rule kind, added as one module (aclnngen/core/kinds/dtype_pairs.py): every
facet of it through a made-up op (tests/data/kind_specs), none of the built-in ones."""

from __future__ import annotations


import numpy as np
import pytest

from repo_paths import DATA
from aclnngen.codegen import docs, metadata
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.importer import draft
from aclnngen.codegen.importer.facts import PageReturnCode
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.core import planning
from aclnngen.core.kinds import KINDS, kind_of
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.validation import validate

SPEC = DATA / "kind_specs" / "ops" / "pair_mix_backward.yaml"
RELEASE = "8.5.0"


@pytest.fixture(scope="module")
def products():
    return load_products()


@pytest.fixture(scope="module")
def spec(products):
    return load_spec(SPEC, products).spec


@pytest.fixture(scope="module")
def meta(spec):
    return metadata.build(spec)


def _rule(spec):
    return next(r for r in spec.rules if kind_of(r).name == "dtype_pairs")


def test_the_kind_is_registered_and_the_spec_model_has_it(spec):
    assert "dtype_pairs" in [k.name for k in KINDS]
    rule = _rule(spec)
    assert type(rule).__name__ == "DTypePairs"
    assert rule.pairs == [["float16", "float32"], ["bfloat16", "float32"]]


@pytest.mark.parametrize(
    "old, new, message",
    [
        ("pairs: [[float16, float32], [bfloat16, float32]]", "pairs: [[float32, float32]]", "is not mixed"),
        (
            "pairs: [[float16, float32], [bfloat16, float32]]",
            "pairs: [[float16, float32], [float16, float32]]",
            "twice",
        ),
        ("params: [gradOutput, self], pairs", "params: [gradOutput, self, gradInput], pairs", "names two tensors"),
        ("pairs: [[float16, float32], [bfloat16, float32]]", "pairs: [[float16, float33]]", "float33"),
        ("pairs: [[float16, float32], [bfloat16, float32]]", "pairs: [[float16]]", "at least 2 items"),
    ],
)
def test_a_bad_rule_is_a_spec_error_at_its_line(tmp_path, products, old, new, message):
    text = SPEC.read_text(encoding="utf-8")
    assert old in text
    bad = tmp_path / SPEC.name
    bad.write_text(text.replace(old, new), encoding="utf-8")
    with pytest.raises(SpecError) as err:
        load_spec(bad, products)
    line = 1 + text.splitlines().index(next(x for x in text.splitlines() if "kind: dtype_pairs" in x))
    assert any(message in p.message and p.line == line for p in err.value.problems), err.value.problems


def test_a_row_of_the_kind_needs_a_rule_of_it(tmp_path, products):
    text = SPEC.read_text(encoding="utf-8").replace("  - {kind: dtype_pairs,", "  # - {kind: dtype_pairs,")
    bad = tmp_path / SPEC.name
    bad.write_text(text, encoding="utf-8")
    with pytest.raises(SpecError, match="no rule of kind 'dtype_pairs' backs this row"):
        load_spec(bad, products)


def _values(grad_dtype, self_dtype, out_dtype="float32"):
    shape = (2, 3)
    return {
        "gradOutput": np.ones(shape, dtype=grad_dtype),
        "self": np.ones(shape, dtype=self_dtype),
        "gradInput": np.zeros(shape, dtype=out_dtype),
    }


@pytest.mark.parametrize("pair", [("float32", "float32"), ("float16", "float16"), ("float16", "float32")])
def test_validation_accepts_one_dtype_and_the_listed_pairs(meta, pair):
    validate(meta, _values(*pair), family="a2", version=RELEASE)


@pytest.mark.parametrize("pair", [("float32", "float16"), ("float32", "bfloat16")])
def test_validation_refuses_another_mixed_pair_naming_both_dtypes(meta, pair):
    import ml_dtypes

    dtypes = [ml_dtypes.bfloat16 if d == "bfloat16" else d for d in pair]
    with pytest.raises(AclnnValidationError) as err:
        validate(meta, _values(*dtypes), family="a2", version=RELEASE)
    e = err.value
    assert (e.status, e.param, e.check) == (161002, "self", "dtype_pairs")
    assert pair[0] in str(e) and pair[1] in str(e) and "(float16, float32)" in str(e)


def test_planning_expects_the_mixed_case_by_the_pairs(meta):
    # mixed-dtype gives self the other dtype: float32 with float16 is not listed, float16 with
    # float32 is
    assert dict(planning.applicable_cases(meta, RELEASE, family="a2"))["mixed-dtype"] == 161002
    assert dict(planning.applicable_cases(meta, RELEASE, family="a2", dtype="float32"))["mixed-dtype"] == 161002
    assert dict(planning.applicable_cases(meta, RELEASE, family="a2", dtype="float16"))["mixed-dtype"] == 0


def test_the_docs_state_the_pairs(spec, products):
    from aclnngen.codegen.resolve import resolve
    from aclnngen.codegen.testplan import newest_version

    sentences = docs.binding_doc(spec, products, resolve(spec, newest_version(spec)))["rules"]
    assert (
        "gradOutput and self have the same dtype or one of the pairs (float16, float32), (bfloat16, float32)"
        in sentences
    )


def test_the_importer_drafts_a_row_of_the_kind():
    params = [{"name": n, "role": r} for n, r in (("gradOutput", "input"), ("self", "input"), ("gradInput", "output"))]
    page = type("Facts", (), {})()
    page.return_codes = [
        PageReturnCode(161002, "ACLNN_ERR_PARAM_INVALID", "gradOutput和self的数据类型组合不在支持范围内。")
    ]
    todo = []
    rows = draft._return_codes(page, params, todo)
    assert rows[0]["check"] == "dtype_pairs"
    assert rows[0]["params"] == ["gradOutput", "self"]
    assert rows[0]["condition"] == "gradOutput, self are not one of the dtype combinations allowed."


def test_a_generated_test_can_break_the_rule(meta):
    kind = kind_of("dtype_pairs")
    rules = [r for r in meta["rules"] if kind_of(r) is kind]
    how = kind.provoke(rules, "self", (2, 3), "float32")
    assert how.dtype is not None and not kind.accepts(rules[0], "float32", how.dtype)
    how = kind.provoke(rules, "gradOutput", (2, 3), "float32")
    assert how.dtype is not None and not kind.accepts(rules[0], how.dtype, "float32")


def test_the_audit_folds_mixed_dtype_findings_into_the_kind():
    from aclnngen.core.kinds import cases_probing

    assert "dtype_pairs" in cases_probing()["mixed-dtype"]
