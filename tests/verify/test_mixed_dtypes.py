"""A test plan per parameter (issue 23): each tensor takes dtypes of its own list, and the mixed
combinations the dtype rules accept are planned and compared with the oracle and on the simulator.
Driven through a made-up op (tests/data/mixed_specs: MaskedStepBackward, whose forward input is
int8/int32/bool while its gradient is a float) and the built-in specs' META."""

from __future__ import annotations

import importlib

import numpy as np
import catalog
import pytest

from packages import generated_package, run_generated_tests
from repo_paths import DATA, REPO
from aclnngen.codegen import metadata, testplan
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.core import dtype_combinations
from aclnngen.core.dtypes import category
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.validation import validate
from aclnngen.verify import cases, opcheck

SPECS = DATA / "mixed_specs"
PACKAGE = "mixed_ops"
RELEASE = "8.5.0"
BUILT_IN = sorted(p.stem for p in (REPO / "specs" / "ops").glob("*.yaml"))
TRIED = ("float16", "float32", "bfloat16", "float64", "int8", "int32", "bool", "complex64")


@pytest.fixture(scope="module")
def products():
    return load_products()


@pytest.fixture(scope="module")
def masked(products):
    return load_spec(SPECS / "ops" / "masked_step_backward.yaml", products).spec


@pytest.fixture(scope="module")
def masked_meta(masked):
    return metadata.build(masked)


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    with generated_package(tmp_path_factory.mktemp("mixed"), SPECS, PACKAGE) as out:
        yield out


def _built_in(snake):
    return importlib.import_module(f"aclnngen.generated.meta.{snake}").META


# --- acceptance as the validator decides it ------------------------------------------------------


@pytest.mark.parametrize("snake", catalog.representatives())
def test_combination_status_is_the_validators(snake):
    """Over two inputs in every pair of dtypes tried, on each family: the planner's status (dtype
    names only) is the status validation gives the arrays."""
    meta = _built_in(snake)
    version = meta["cann_version"]
    first, second = [p["name"] for p in meta["params"] if p["role"] == "input"][:2]
    for family in ("a2", "training", "ascend950"):
        for a in TRIED:
            for b in TRIED:
                combo = dtype_combinations.Combination({first: a, second: b})
                expected = dtype_combinations.combination_status(meta, combo, family, version)
                values = cases.make_values(meta, "contiguous", a, version=version, family=family, dtypes={second: b})
                try:
                    validate(meta, values, family=family, version=version)
                    got = 0
                except AclnnValidationError as err:
                    got = err.status
                assert got == expected, (family, a, b)


# --- the made-up op: an integer or bool forward input beside float gradients ----------------------


def test_no_case_gives_the_float_gradient_an_integer_dtype(masked, products):
    plan = testplan.build(masked, products)
    assert plan["reference"] == []  # no dtype is every input's: every reference case is mixed
    pairs = {(c["dtypes"]["gradOutput"], c["dtypes"]["self"]) for c in plan["reference_mixed"]}
    assert all(category(g) == "float" for g, _ in pairs)
    # each dtype of self's own list beside a float gradient, and each float gradient beside an int
    assert {x for _, x in pairs} == {"int8", "int32", "bool"}
    assert {g for g, _ in pairs} == {"float16", "float32", "bfloat16"}
    # promoted (float16 with int32: float16), then cast to a narrower output
    assert any(c["outputs"] for c in plan["reference_mixed"])
    assert {c["data"] for c in plan["reference_mixed"]} == set(testplan.DATA_KINDS)
    assert {(c["dtypes"]["gradOutput"], c["dtypes"]["self"]) for c in plan["binding_mixed"]} == pairs


def test_each_tensor_takes_its_own_dtype_list(masked_meta):
    own = cases.make_values(masked_meta, "contiguous", "int8", version=RELEASE, family="a2", own_dtypes=True)
    assert (own["gradOutput"].dtype.name, own["self"].dtype.name) == ("float32", "int8")
    validate(masked_meta, own, family="a2", version=RELEASE)
    # every input of the one dtype (what a plan of one dtype for all tensors gave): refused
    every = cases.make_values(masked_meta, "contiguous", "int8", version=RELEASE, family="a2")
    with pytest.raises(AclnnValidationError) as err:
        validate(masked_meta, every, family="a2", version=RELEASE)
    assert err.value.param == "gradOutput" and err.value.check == "dtype"


def test_the_shape_cases_run_with_each_tensors_own_dtype(masked, products, masked_meta):
    plan = testplan.build(masked, products)
    for case in plan["shapes"]:
        values = cases.make_values(
            masked_meta, case["kind"], case["dtype"], version=RELEASE, family=case["family"], own_dtypes=True
        )
        assert values["self"].dtype.kind in "ib", case["id"]


def test_a_mixed_case_is_compared_with_the_oracle_and_can_fail(package):
    meta = importlib.import_module(f"{PACKAGE}.meta.masked_step_backward").META
    right = importlib.import_module(f"{PACKAGE}.reference.masked_step_backward")
    op = opcheck.OpUnderTest(meta, reference=right, binding=None, version=RELEASE)
    dtypes = {"gradOutput": "bfloat16", "self": "int8"}
    opcheck.check_reference_on_family(op, "a2", dtypes, {}, "adversarial")

    class Wrong:  # a reference with the sign of its result flipped
        __name__ = right.__name__
        boundaries = staticmethod(right.boundaries)

        @staticmethod
        def reference(*args, **kwargs):
            return -right.reference(*args, **kwargs)

    wrong = opcheck.OpUnderTest(meta, reference=Wrong, binding=None, version=RELEASE)
    with pytest.raises(AssertionError, match="grad_input"):
        opcheck.check_reference_on_family(wrong, "a2", dtypes, {}, "adversarial")


def test_the_oracle_result_is_cast_to_the_output_the_case_sets(package):
    meta = importlib.import_module(f"{PACKAGE}.meta.masked_step_backward").META
    reference = importlib.import_module(f"{PACKAGE}.reference.masked_step_backward")
    op = opcheck.OpUnderTest(meta, reference=reference, binding=None, version=RELEASE)
    values = opcheck.adversarial_values(op, "float16", "random", dtypes={"gradOutput": "float16", "self": "int32"})
    ours = reference.reference(
        values["gradOutput"], values["self"], threshold=0.5, out_dtypes={"gradInput": np.dtype("float32")}
    )
    assert ours.dtype == np.float32 and values["self"].dtype == np.int32 and values["gradOutput"].dtype == np.float16
    opcheck.check_reference_on_family(op, "a2", {"gradOutput": "float16", "self": "int32"}, {}, "random")


def test_the_generated_tests_of_the_made_up_ops_pass(package):
    done = run_generated_tests(package)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    for case_id in ("A2-float16-int8-adversarial", "A2-float32-bool-random", "A2-float16-int32-mixed"):
        assert any(case_id in node for node in done.collected), case_id


# --- the built-in specs: the calls users make ---------------------------------------------------


def test_leaky_relu_half_gradient_with_a_bfloat16_input_is_planned_promoted_and_cast(products):
    spec = load_spec(REPO / "specs" / "ops" / "leaky_relu_backward.yaml", products).spec
    plan = testplan.build(spec, products)
    combos = {(c["family"], tuple(c["dtypes"].values()), tuple(c["outputs"].values())) for c in plan["reference_mixed"]}
    assert ("a2", ("float16", "bfloat16"), ()) in combos  # promoted to float32
    assert ("a2", ("float16", "bfloat16"), ("float16",)) in combos  # then cast to a float16 output


@pytest.mark.parametrize("snake", catalog.representatives())
def test_planned_combinations_are_accepted_and_bounded(snake, products):
    spec = load_spec(REPO / "specs" / "ops" / f"{snake}.yaml", products).spec
    meta = metadata.build(spec)
    plan = testplan.build(spec, products, meta=meta)
    assert len(plan["binding_mixed"]) <= 16  # a few per rule and family, not the cross product
    for case in plan["binding_mixed"]:
        values = cases.make_values(
            meta,
            "contiguous",
            next(iter(case["dtypes"].values())),
            version=plan["version"],
            family=case["family"],
            dtypes={**case["dtypes"], **case["outputs"]},
        )
        validate(meta, values, family=case["family"], version=plan["version"])
        assert len({v.dtype for k, v in values.items() if k in case["dtypes"]}) > 1 or case["outputs"], case["id"]


def test_an_op_whose_rules_refuse_mixing_gets_no_mixed_case(products):
    one_dtype = catalog.an_op(
        "every tensor held to one dtype",
        lambda m: any(
            r["kind"] == "same_dtype" and set(r["params"]) >= set(catalog.names(m, "input", "output"))
            for r in m["rules"]
        ),
    )
    spec = load_spec(REPO / "specs" / "ops" / f"{one_dtype}.yaml", products).spec
    plan = testplan.build(spec, products)
    assert plan["reference_mixed"] == [] and plan["binding_mixed"] == []
