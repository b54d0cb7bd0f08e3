"""The spec model on the five real specs: round trip, completeness, versions, and robustness."""

from __future__ import annotations

import copy
import functools

import catalog
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aclnngen.codegen import cdecl
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import load_products, load_spec, spec_paths, validate_model
from aclnngen.codegen.model import OpSpec, dump_spec
from aclnngen.codegen.resolve import resolve
from aclnngen.codegen.yamlio import parse_yaml, read_yaml

PRODUCTS = load_products()
PATHS = spec_paths()
IDS = [p.stem for p in PATHS]


def test_specs_are_found():
    assert IDS and all(p.suffix == ".yaml" for p in PATHS)


@functools.cache
def _loaded(path):
    """The spec at `path`, loaded once for the three checks of each spec below (a frozen model)."""
    return load_spec(path, PRODUCTS).spec


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_spec_prints_back_to_what_was_parsed(path):
    data, _ = read_yaml(path)
    spec = _loaded(path)
    assert dump_spec(spec) == data


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_prototypes_round_trip(path):
    spec = _loaded(path)
    for text in (spec.prototypes.get_workspace_size, spec.prototypes.launch):
        assert str(cdecl.parse_prototype(text)) == text


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_spec_is_complete(path):
    spec = _loaded(path)
    op = resolve(spec, spec.cann_version)
    assert op.families, "no product family supports the op at its page's release"
    for family in op.families:
        for p in spec.parameters:
            if p.is_tensor:
                assert op.dtypes_of(p.name, family), f"{p.name} has no dtypes on {family}"
    assert spec.formula.outputs and spec.formula.latex
    assert {r.status for r in spec.return_codes} == {161001, 161002}
    assert spec.oracle.outputs
    # `defects` and `source.seed` are optional: a clean page has no defects, a custom op no seed page


def test_recorded_fact_softshrink_versioned_facts_follow_the_page_across_releases():
    spec = load_spec(spec_paths()[0].parent / "softshrink_backward.yaml", PRODUCTS).spec
    old, new = resolve(spec, "8.0.0"), resolve(spec, "8.5.0")
    assert "inference" not in old.families and "inference" in new.families
    assert "bfloat16" not in old.dtypes_of("self", "a2") and "bfloat16" in new.dtypes_of("self", "a2")
    lam = spec.parameter("lambda")
    assert [c.holds_at("8.0.0") for c in lam.constraints] == [False]
    assert [c.holds_at("8.5.0") for c in lam.constraints] == [True]


def test_recorded_fact_softshrink_header_prototype_differences_are_recorded():
    spec = load_spec(spec_paths()[0].parent / "softshrink_backward.yaml", PRODUCTS).spec
    header = cdecl.parse_prototype(spec.prototypes.get_workspace_size)
    page = cdecl.parse_prototype(spec.page_prototypes.get_workspace_size)
    assert any("lambd" in d for d in cdecl.diff_prototypes(header, page))


# --- robustness: random mutations of valid specs only ever raise SpecError ----------------------

# the specs mutated: one per structure (tests/catalog.py), a renamed copy has the same keys to break
BASES = [read_yaml(p)[0] for p in catalog.representative_specs()]
JUNK = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**12), 10**12),
    st.floats(allow_nan=True),
    st.text(max_size=30),
    st.lists(st.text(max_size=5), max_size=3),
    st.dictionaries(st.text(max_size=5), st.integers(), max_size=2),
    st.sampled_from(["float8", "a9", "8.0", "lambda", "aclnnX(", "where(", "__import__('os')", "{{ x }}", "'\"\\"]),
)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, prefix + (i,))


def _get(node, path):
    for part in path:
        node = node[part]
    return node


@st.composite
def mutated_specs(draw):
    data = copy.deepcopy(draw(st.sampled_from(BASES)))
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(data) if p]
        path = draw(st.sampled_from(paths))
        parent = _get(data, path[:-1])
        action = draw(st.sampled_from(["replace", "delete", "add", "duplicate"]))
        if action == "replace":
            parent[path[-1]] = draw(JUNK)
        elif action == "delete":
            del parent[path[-1]]
        elif action == "add" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=8))] = draw(JUNK)
        elif action == "duplicate" and isinstance(parent, list):
            parent.append(copy.deepcopy(parent[path[-1]]))
    return data


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_specs())
def test_mutated_specs_only_raise_spec_errors(data):
    text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    try:  # the reader's limits (docs/security.md: e.g. integers beyond 64 bits) are SpecErrors too
        parsed, lines = parse_yaml(text, "mutated.yaml")
        validate_model(OpSpec, parsed, "mutated.yaml", lines, context={"families": PRODUCTS.ids})
    except SpecError as exc:
        assert exc.problems and all(p.path == "mutated.yaml" and p.line >= 1 for p in exc.problems)


def test_every_spec_dtype_has_an_acl_data_type():
    from aclnngen.codegen.abi import default_abi
    from aclnngen.codegen.model import DTYPES

    abi = default_abi()
    for name in DTYPES:
        info = abi.dtype_for_numpy(name)
        assert info.numpy == name and info.acl_value >= 0
