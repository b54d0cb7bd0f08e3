"""Binding-tier specs (aclnngen/core/tiers.py): everything a page states but the numerics. `validate`
holds each tier to its keys, and `generate` renders a binding, metadata, tests and an op page, but
no reference; the simulator answers with its outputs poisoned. Driven through a made-up op
(tests/data/binding_specs: LowerBand) and the built-in specs."""

from __future__ import annotations

import itertools

import importlib
from pathlib import Path

import numpy as np
import pytest

from packages import generated_package, run_generated_tests
from repo_paths import DATA, REPO
from aclnngen.codegen import metadata
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.core.meta import op_meta
from aclnngen.runtime import session
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.poison import is_poisoned

SPECS = DATA / "binding_specs"
SPEC = SPECS / "ops" / "lower_band.yaml"
PACKAGE = "band_ops"
PRODUCTS = load_products()
BUILT_IN = sorted((REPO / "specs" / "ops").glob("*.yaml"))


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    with generated_package(tmp_path_factory.mktemp("band"), SPECS, PACKAGE) as out:
        importlib.import_module(f"{PACKAGE}.ops")
        session.reset()  # the package's simulator entry points, registered by that import, get built in
        yield out


def _load_text(tmp_path: Path, text: str, name: str):
    path = tmp_path / f"{name}.yaml"
    path.write_text(text, encoding="utf-8")
    return load_spec(path, PRODUCTS).spec


def test_binding_tier_spec_validates_without_numerics():
    spec = load_spec(SPEC, PRODUCTS).spec
    assert spec.tier == "binding" and not spec.computes
    assert spec.formula is None and spec.oracle is None


def test_binding_tier_spec_refuses_a_formula(tmp_path):
    built_in = BUILT_IN[0].read_text(encoding="utf-8")  # any full-tier spec's formula section
    head, *rest = built_in.split("\nformula:", 1)[1].split("\n")
    body = itertools.takewhile(lambda line: not line or line[0].isspace(), rest)
    formula = "\nformula:" + head + "".join("\n" + line for line in body if line)
    text = SPEC.read_text(encoding="utf-8").replace("\nreturn_codes:", formula + "\nreturn_codes:")
    with pytest.raises(SpecError) as info:
        _load_text(tmp_path, text, "lower_band")
    message = info.value.problems[0].message
    assert "binding-tier spec has no formula" in message and "tier: binding" in message


@pytest.mark.parametrize("path", BUILT_IN[:1] + BUILT_IN[-1:], ids=lambda p: p.stem)
def test_full_tier_spec_names_its_missing_numerics(tmp_path, path):
    text = path.read_text(encoding="utf-8")
    start = text.index("\noracle:")
    rest = text[start + 1 :]
    end = next((i for i, line in enumerate(rest.splitlines()) if i and line and not line[0].isspace()), None)
    lines = rest.splitlines()
    cut = text[:start] + ("\n" + "\n".join(lines[end:]) if end is not None else "") + "\n"
    with pytest.raises(SpecError) as info:
        _load_text(tmp_path, cut, path.stem)
    problem = info.value.problems[0]
    assert "full-tier spec needs oracle" in problem.message and "tier: binding" in problem.message


@pytest.mark.parametrize("path", BUILT_IN, ids=lambda p: p.stem)
def test_built_in_specs_are_full_tier_and_their_meta_says_nothing_of_tiers(path):
    spec = load_spec(path, PRODUCTS).spec
    meta = metadata.build(spec)
    assert spec.tier == "full" and "tier" not in meta and op_meta(meta).computes


def test_binding_tier_meta_has_no_numerics():
    meta = metadata.build(load_spec(SPEC, PRODUCTS).spec)
    assert meta["tier"] == "binding" and "formula" not in meta and "oracle" not in meta
    assert not op_meta(meta).computes


def test_generated_package_has_no_reference_for_a_binding_tier_op(package):
    assert (package / "ops" / "lower_band.py").is_file() and (package / "meta" / "lower_band.py").is_file()
    assert not (package / "reference" / "lower_band.py").exists()
    assert "lower_band" not in (package / "reference" / "__init__.py").read_text(encoding="utf-8")
    page = (package / "docs" / "lower_band.md").read_text(encoding="utf-8")
    assert "binding-tier" in page and "add `formula`" in page and "## Formula" not in page


def test_simulator_poisons_a_binding_tier_ops_outputs(package):
    binding = importlib.import_module(f"{PACKAGE}.ops.lower_band").lower_band
    session.reset()  # a simulator built earlier in this worker lacks the entry points the import registered
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    with session.simulated(family="a2"):
        out = binding(x, 0)
        assert out.shape == x.shape and out.dtype == x.dtype and is_poisoned(out)
        with pytest.raises(AclnnValidationError) as info:
            binding(x.astype(np.float64), 0)
    assert info.value.status == 161002 and info.value.param == "self"


def test_a_binding_tier_list_output_is_the_callers_arrays_poisoned(package):
    binding = importlib.import_module(f"{PACKAGE}.ops.split_pieces").split_pieces
    session.reset()
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    pieces = [np.zeros((3, 2), np.float32), np.zeros((3, 2), np.float32)]
    with session.simulated(family="a2"):
        got = binding(x, 2, 1, 0, out=pieces)
        assert isinstance(got, list) and len(got) == 2
        assert all(a is b and is_poisoned(a) for a, b in zip(got, pieces))
        with pytest.raises(AclnnValidationError) as info:
            binding(x, 2, 1, 0)  # no arrays: the binding cannot tell how many pieces
    assert info.value.status == 161001 and info.value.param == "out"


def test_an_op_writing_only_an_in_place_const_input_returns_it_poisoned(package):
    binding = importlib.import_module(f"{PACKAGE}.ops.inplace_scale_ref").inplace_scale_ref
    session.reset()
    x = np.ones((2, 3), np.float32)
    with session.simulated(family="a2"):
        got = binding(x, 2.0)
    assert got is x and is_poisoned(x)


def test_an_in_place_tensor_list_is_written_back_into_the_callers_arrays(package):
    binding = importlib.import_module(f"{PACKAGE}.ops.foreach_scale_inplace").foreach_scale_inplace
    session.reset()
    xs = [np.ones((2, 3), np.float32), np.ones((4,), np.float32)]
    with session.simulated(family="a2"):
        got = binding(xs, 2.0)
    assert isinstance(got, list) and all(a is b and is_poisoned(a) for a, b in zip(got, xs))


def test_generated_tests_of_a_binding_tier_op_pass(package):
    done = run_generated_tests(package, "-n", "0")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    assert "test_reference" not in (package / "tests" / "test_lower_band.py").read_text(encoding="utf-8")
    assert (package / "tests" / "test_split_pieces.py").is_file()  # a list output's tests ran too


def test_a_spec_without_an_output_tensor_is_refused(tmp_path):
    text = SPEC.read_text(encoding="utf-8").replace("role: output", "role: input")
    with pytest.raises(SpecError) as info:
        _load_text(tmp_path, text, "lower_band")
    assert "writes no tensor" in info.value.problems[0].message
