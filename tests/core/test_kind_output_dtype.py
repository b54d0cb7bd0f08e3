"""The output_dtype rule kind, added as one module (aclnngen/core/kinds/output_dtype.py): every facet
of it through two made-up binding-tier ops (tests/data/kind_specs/output_dtype): UnitArc maps
integer inputs to a float32 output, SignMatch always writes bool. None of the built-in ops."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from packages import generated_package, run_generated_tests
from repo_paths import DATA
from aclnngen.codegen import docs, metadata
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.importer import draft
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.core import planning
from aclnngen.core.kinds import KINDS, cases_probing, kind_of
from aclnngen.core.rules import infer_output_names
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.validation import validate

SPECS = DATA / "kind_specs" / "output_dtype"
MAPPED = SPECS / "ops" / "unit_arc.yaml"
FIXED = SPECS / "ops" / "sign_match.yaml"
RELEASE = "8.5.0"
KIND = kind_of("output_dtype")
PACKAGE = "output_dtype_ops"


@pytest.fixture(scope="module")
def products():
    return load_products()


@pytest.fixture(scope="module")
def specs(products):
    return {path.stem: load_spec(path, products).spec for path in (MAPPED, FIXED)}


@pytest.fixture(scope="module")
def metas(specs):
    return {name: metadata.build(spec) for name, spec in specs.items()}


def _rule(spec):
    return next(r for r in spec.rules if kind_of(r) is KIND)


def test_the_kind_is_registered_last_and_the_spec_model_has_it(specs):
    assert KINDS[-1] is KIND
    mapped, fixed = _rule(specs["unit_arc"]), _rule(specs["sign_match"])
    assert type(mapped).__name__ == "OutputDType"
    assert (mapped.output, mapped.input, mapped.dtype) == ("out", "self", None)
    assert mapped.map == [["int8", "float32"], ["int32", "float32"], ["bool", "float32"]]
    assert (fixed.output, fixed.input, fixed.map, fixed.dtype) == ("out", None, None, "bool")


_MAP = "{kind: output_dtype, output: out, input: self, map: [[int8, float32], [int32, float32], [bool, float32]]}"


@pytest.mark.parametrize(
    "new, message",
    [
        (_MAP.replace("}", ", dtype: float32}"), "either `map` (with `input`) or `dtype`, not both"),
        ("{kind: output_dtype, output: out, input: self}", "either `map` (with `input`) or `dtype`"),
        ("{kind: output_dtype, output: out, map: [[int8, float32]]}", "with `map` needs `input`"),
        ("{kind: output_dtype, output: out, input: self, dtype: float32}", "leave `input` out"),
        (_MAP.replace("[int32, float32]", "[float16, float16]"), "maps a dtype to itself"),
        (_MAP.replace("[int32, float32]", "[int8, float16]"), "input dtype int8 is mapped twice"),
        (_MAP.replace("input: self", "input: out"), "is the output itself"),
        (_MAP.replace("output: out, input: self", "output: self, input: out"), "names an output tensor; 'self'"),
        (_MAP.replace("float32]]", "float33]]"), "float33"),
        ("{kind: output_dtype, output: out, input: self, map: []}", "at least 1 item"),
    ],
)
def test_a_bad_rule_is_a_spec_error_at_its_line(tmp_path, products, new, message):
    text = MAPPED.read_text(encoding="utf-8")
    assert _MAP in text
    bad = tmp_path / MAPPED.name
    bad.write_text(text.replace(_MAP, new), encoding="utf-8")
    with pytest.raises(SpecError) as err:
        load_spec(bad, products)
    line = 1 + text.splitlines().index(next(x for x in text.splitlines() if "kind: output_dtype" in x))
    assert any(message in p.message and p.line == line for p in err.value.problems), err.value.problems


@pytest.mark.parametrize(
    "op, source, output",
    [
        ("unit_arc", "int8", "float32"),
        ("unit_arc", "bool", "float32"),
        ("unit_arc", "float16", "float16"),  # unlisted: kept
        ("sign_match", "int32", "bool"),
        ("sign_match", "float16", "bool"),
    ],
)
def test_the_output_takes_the_dtype_the_rule_gives(metas, op, source, output):
    meta = metas[op]
    inputs = [p["name"] for p in meta["params"] if p["role"] == "input"]
    found = infer_output_names(meta, dict.fromkeys(inputs, (2, 3)), dict.fromkeys(inputs, source), RELEASE)
    assert found["out"] == ((2, 3), output)


def test_the_docs_state_the_rule(specs, products):
    from aclnngen.codegen.resolve import resolve
    from aclnngen.codegen.testplan import newest_version

    def sentences(spec):
        return docs.binding_doc(spec, products, resolve(spec, newest_version(spec)))["rules"]

    assert "out has the dtype of self, except float32 where self is int8, int32 or bool" in sentences(specs["unit_arc"])
    assert "out has dtype bool whatever the inputs' dtypes" in sentences(specs["sign_match"])


def _values(self_dtype, out_dtype, other=False):
    values = {"self": np.ones((2, 3), dtype=self_dtype), "out": np.zeros((2, 3), dtype=out_dtype)}
    if other:
        values["other"] = np.ones((2, 3), dtype=self_dtype)
    return values


@pytest.mark.parametrize("source, out", [("int8", "float32"), ("int32", "float32"), ("float16", "float16")])
def test_validation_accepts_the_mapped_dtype(metas, source, out):
    validate(metas["unit_arc"], _values(source, out), family="a2", version=RELEASE)


@pytest.mark.parametrize(
    "op, source, out, want",
    [("unit_arc", "int8", "float16", "float32"), ("unit_arc", "float16", "float32", "float16")],
)
def test_validation_refuses_another_output_dtype_naming_the_one_it_needs(metas, op, source, out, want):
    with pytest.raises(AclnnValidationError) as err:
        validate(metas[op], _values(source, out), family="a2", version=RELEASE)
    e = err.value
    assert (e.status, e.param, e.check) == (161002, "out", "output_dtype")
    assert f"out has dtype {out}; it must have dtype {want} for self of dtype {source}" in str(e)


def test_the_fixed_rule_refuses_another_dtype_whatever_the_inputs():
    # checked by the kind alone: SignMatch's dtype table lists bool only for out, so the dtype
    # check would refuse a float output before the rule did
    check = KIND.checker({"kind": "output_dtype", "output": "out", "dtype": "bool", "status": 161002})
    found = check({"self": ((2,), "int32", None), "out": ((2,), "float16", None)}, lambda name: True)
    assert (found.status, found.param, found.found, found.allowed) == (161002, "out", "float16", "bool")
    assert check({"self": ((2,), "int32", None), "out": ((2,), "bool", None)}, lambda name: True) is None


def test_planning_plans_an_output_of_another_dtype(metas):
    op = planning.op_at(metas["unit_arc"], RELEASE, "a2")
    plan = planning.case_plan(op, "output-dtype", "float32")
    assert plan.output_dtypes == {"out": "float16"} and plan.expected == 161002
    assert planning.case_plan(op, "output-dtype", "float16").output_dtypes == {"out": "float32"}
    assert planning.case_plan(op, "output-dtype", "int8").output_dtypes == {"out": "float16"}
    assert dict(planning.applicable_cases(metas["unit_arc"], RELEASE, family="a2"))["output-dtype"] == 161002
    # an output whose list has one dtype cannot take another the dtype table accepts
    assert "output-dtype" not in dict(planning.applicable_cases(metas["sign_match"], RELEASE, family="a2"))


def test_the_planned_case_builds_the_wrong_output(metas):
    from verify import cases

    values = cases.make_values(metas["unit_arc"], "output-dtype", "int8", version=RELEASE, family="a2")
    assert values["self"].dtype == np.int8 and values["out"].dtype == np.float16


@pytest.mark.parametrize("op, accepted", [("unit_arc", {"int8", "int32", "bool", "float16", "float32"})])
def test_dtype_cases_check_each_output_against_the_dtype_the_rule_gives(metas, op, accepted):
    found = {d for d, ok in planning.dtype_cases(metas[op], "a2", RELEASE) if ok}
    assert found == accepted


def test_dtype_cases_of_a_fixed_output(metas):
    found = {d for d, ok in planning.dtype_cases(metas["sign_match"], "a2", RELEASE) if ok}
    assert found == {"int32", "float16", "float32"}


def _param(name, role, dtypes):
    return {"name": name, "role": role, "dtypes": dtypes}


@pytest.mark.parametrize(
    "out_dtypes, rule",
    [
        (
            ["float16", "float32"],
            {
                "kind": "output_dtype",
                "output": "out",
                "input": "self",
                "map": [["int8", "float32"], ["bool", "float32"]],
            },
        ),
        (
            ["bfloat16", "float16"],
            {
                "kind": "output_dtype",
                "output": "out",
                "input": "self",
                "map": [["int8", "bfloat16"], ["bool", "bfloat16"]],
            },
        ),
        (["bool"], {"kind": "output_dtype", "output": "out", "dtype": "bool"}),
        (["int32", "int64"], {"kind": "output_dtype", "output": "out", "dtype": "int64"}),  # indices
        (
            ["bool", "uint8"],  # a logical op
            {"kind": "output_dtype", "output": "out", "input": "self", "map": [["int8", "bool"], ["float16", "bool"]]},
        ),
        (["int8", "bool", "float16"], None),  # the output takes every dtype of its input
        (["int8", "int16"], None),  # floats and bool dropped for integers: no telling
    ],
)
def test_the_importer_drafts_the_rule_from_the_dtype_lists(out_dtypes, rule):
    params = [_param("self", "input", ["int8", "bool", "float16"]), _param("out", "output", out_dtypes)]
    assert KIND.drafts(params, {}) == ([rule] if rule else [])


def test_the_importer_limits_the_rule_to_the_families_whose_lists_differ():
    params = [
        _param("self", "input", ["int32", "float32"]),
        _param(
            "out",
            "output",
            [{"families": ["a2"], "dtypes": ["float32"]}, {"families": ["a3"], "dtypes": ["int32", "float32"]}],
        ),
    ]
    assert KIND.drafts(params, {}) == [
        {"kind": "output_dtype", "output": "out", "dtype": "float32", "families": ["a2"]}
    ]


def test_the_importer_leaves_an_output_another_dtype_rule_names_alone():
    params = [_param("self", "input", ["int8", "float32"]), _param("out", "output", ["float32"])]
    assert KIND.drafts(params, {"dtype": [{"self", "out"}]}) == []
    drafted = [{"kind": "same_dtype", "params": ["self", "out"]}, {"kind": "max_rank", "params": ["out"], "rank": 8}]
    assert draft._related(drafted) == {"dtype": [{"self", "out"}], "rank": [{"out"}]}


def test_the_importer_drafts_for_an_output_related_only_to_other_outputs():
    params = [
        _param("self", "input", ["float32", "int8"]),
        _param("values", "output", ["float32", "int8"]),
        _param("indices", "output", ["int32", "int64"]),
        _param("counts", "output", ["int32", "int64"]),
    ]
    related = {"dtype": [{"self", "values"}, {"indices", "counts"}]}
    assert KIND.drafts(params, related) == [
        {"kind": "output_dtype", "output": "indices", "dtype": "int64"},
        {"kind": "output_dtype", "output": "counts", "dtype": "int64"},
    ]


def test_the_draft_asks_every_kind_for_its_hints():
    params = [_param("self", "input", ["int8", "float32"]), _param("out", "output", ["float32"])]
    facts = type("Facts", (), {"params": []})()
    assert {"kind": "output_dtype", "output": "out", "dtype": "float32"} in draft._rules(facts, params)


def test_a_generated_test_can_break_the_rule(metas):
    rules = [r for r in metas["unit_arc"]["rules"] if kind_of(r) is KIND]
    for dtype in ("float32", "float16", "bool"):
        assert KIND.provoke(rules, "out", (2, 3), dtype).dtype not in (None, dtype)


def test_the_audit_folds_output_dtype_findings_into_the_kind():
    from audit.observed import _CASE_CHANGES

    assert cases_probing()["output-dtype"] == ("output_dtype",)
    assert _CASE_CHANGES["output-dtype"] == [{"action": "drop", "rule": "output_dtype"}]


# --- the generated package: binding, simulator and generated tests ------------------------------


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    with generated_package(tmp_path_factory.mktemp("outdtype"), SPECS, PACKAGE) as out:
        yield out


def test_the_binding_allocates_the_dtype_the_rule_gives(package):
    from aclnngen.runtime import session

    unit_arc = importlib.import_module(f"{PACKAGE}.ops.unit_arc").unit_arc
    sign_match = importlib.import_module(f"{PACKAGE}.ops.sign_match").sign_match
    session.reset()  # a simulator built earlier in this worker lacks the entry points the imports registered
    x = np.arange(6, dtype=np.int8).reshape(2, 3)
    with session.simulated(family="a2"):
        assert unit_arc(x).dtype == np.float32
        assert unit_arc(x.astype(np.float16)).dtype == np.float16
        assert sign_match(x.astype(np.int32), x.astype(np.int32)).dtype == np.bool_
        with pytest.raises(AclnnValidationError) as err:
            unit_arc(x, out=np.zeros((2, 3), dtype=np.float16))
    assert (err.value.status, err.value.param, err.value.check) == (161002, "out", "output_dtype")


def test_the_generated_tests_pass_on_the_simulator(package):
    done = run_generated_tests(package, "-n", "0")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    text = (package / "tests" / "test_unit_arc.py").read_text(encoding="utf-8")
    assert "'output-dtype', 161002" in text and "'A2-int8-accepted'" in text
