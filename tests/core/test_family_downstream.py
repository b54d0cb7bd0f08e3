"""Rule families carried downstream (issue 23): the reference's output dtype, the reference data
compared with the oracle, the op page, and `validate`'s warning on unqualified rules that
contradict each other. Driven through a made-up op (tests/data/mixed_specs: FamilyCastBackward,
whose output follows the gradient's dtype on A2 and the promotion on the 950 family, and whose
inputs broadcast on the 950 family only)."""

from __future__ import annotations

import importlib
from pathlib import Path

import catalog
import numpy as np
import pytest

from packages import aclnngen, generated_package
from repo_paths import DATA, REPO
from aclnngen.codegen import docs, testplan
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.codegen.resolve import resolve
from aclnngen.verify import opcheck

SPECS = DATA / "mixed_specs"
SPEC = SPECS / "ops" / "family_cast_backward.yaml"
PACKAGE = "family_ops"
RELEASE = "8.5.0"


@pytest.fixture(scope="module")
def products():
    return load_products()


@pytest.fixture(scope="module")
def spec(products):
    return load_spec(SPEC, products).spec


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    with generated_package(tmp_path_factory.mktemp("family"), SPECS, PACKAGE) as out:
        yield out


def _op(package):
    meta = importlib.import_module(f"{PACKAGE}.meta.family_cast_backward").META
    reference = importlib.import_module(f"{PACKAGE}.reference.family_cast_backward")
    return opcheck.OpUnderTest(meta, reference=reference, binding=None, version=RELEASE)


def test_the_reference_takes_the_output_dtype_of_the_family_it_runs_on(package):
    reference = _op(package).reference.reference
    g = np.linspace(-2, 2, 6, dtype=np.float16).reshape(2, 3)
    x = np.linspace(1, 3, 6, dtype=np.float32).reshape(2, 3)
    assert reference(g, x, family="a2").dtype == np.float16  # same_dtype with the gradient (A2)
    assert reference(g, x, family="ascend950").dtype == np.float32  # the promotion (950)


def test_a_mixed_combination_is_planned_on_each_family_whose_output_differs(spec, products):
    plan = testplan.build(spec, products)
    mixed = {(c["family"], tuple(c["dtypes"].values())) for c in plan["binding_mixed"]}
    assert {("a2", ("float16", "float32")), ("ascend950", ("float16", "float32"))} <= mixed


def test_data_only_one_family_accepts_is_compared_with_the_oracle_there(spec, products, package):
    plan = testplan.build(spec, products)
    assert "broadcast" not in {c["data"] for c in plan["reference"]}  # A2 refuses it
    on_family = [c for c in plan["reference_mixed"] if c["data"] == "broadcast"]
    assert on_family and {c["family"] for c in on_family} == {"ascend950"}
    op = _op(package)
    for case in on_family:
        opcheck.check_reference_on_family(op, case["family"], case["dtypes"], case["outputs"], case["data"])


def test_the_op_page_states_each_rule_with_its_families(spec, products):
    text = docs.binding_doc(spec, products, resolve(spec, RELEASE))["rules"]
    assert "gradOutput, self, gradInput have the same shape (on A2 only)" in text
    assert any(t.startswith("gradOutput, self broadcast") and t.endswith("(on 950 only)") for t in text)
    assert any("promote" in t and t.endswith("(on 950 only)") for t in text)
    unqualified = catalog.an_op(
        "rules that hold on every family", lambda m: not any(r.get("families") for r in m["rules"])
    )
    plain = load_spec(REPO / "specs" / "ops" / f"{unqualified}.yaml", products).spec
    assert not any("only)" in t for t in docs.binding_doc(plain, products, resolve(plain, "8.5.0"))["rules"])


def _validate(path: Path):
    return aclnngen("validate", path)


def _without_families(tmp_path: Path, *replacements: tuple[str, str]) -> Path:
    text = SPEC.read_text(encoding="utf-8")
    for old, new in replacements:
        assert old in text, old
        text = text.replace(old, new)
    folder = tmp_path / "ops"
    folder.mkdir()
    path = folder / SPEC.name
    path.write_text(text, encoding="utf-8")
    return path


def test_validate_warns_where_unqualified_rules_contradict_each_other(tmp_path):
    assert "warning" not in _validate(SPEC).stderr  # with their families they do not
    path = _without_families(
        tmp_path,
        ("gradInput], families: [a2]}", "gradInput]}"),
        (
            "output: gradInput, families: [ascend950]}\n  - {kind: same_dtype",
            "output: gradInput}\n  - {kind: same_dtype",
        ),
    )
    done = _validate(path)
    assert done.returncode == 0, done.stdout + done.stderr  # a warning, not an error
    lines = path.read_text(encoding="utf-8").splitlines()
    same_shape = 1 + next(i for i, line in enumerate(lines) if "kind: same_shape" in line)
    expected = f"{path}:{same_shape}: warning: rule 0 (same_shape) refuses the shapes that broadcast rule 1 (broadcast)"
    assert expected in done.stderr, done.stderr


def test_validate_warns_where_unqualified_dtype_rules_contradict_each_other(tmp_path):
    path = _without_families(
        tmp_path,
        ("params: [gradOutput, gradInput], families: [a2]}", "params: [gradOutput, self, gradInput]}"),
        ("output: gradInput, families: [ascend950]}\nformula", "output: gradInput}\nformula"),
    )
    done = _validate(path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "(same_dtype) refuses the inputs of two dtypes rule 3 (promote) allows" in done.stderr, done.stderr


def test_softshrink_rules_that_only_narrow_each_other_raise_no_warning():
    # SoftshrinkBackward: gradOutput and self broadcast, self and gradInput share a shape: a
    # smaller gradOutput still broadcasts, so the rules narrow each other without contradiction
    done = _validate(REPO / "specs" / "ops" / "softshrink_backward.yaml")
    assert done.returncode == 0 and "warning" not in done.stderr, done.stderr
