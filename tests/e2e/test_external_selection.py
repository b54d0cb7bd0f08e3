"""The external material's nested runs keep the tests that reach tests/external.py
(tests/external_selection.py): through the test's function, a fixture, a helper at any depth, a
local import or a decorator's wrapper; a test that only asks where the material would be is left
out, as is one that reaches nothing."""

from __future__ import annotations

from types import SimpleNamespace

import external as material
from hypothesis import given, strategies as st

import external_selection

# the resolver under another name, as a module may hold it (and not `from external import`, which
# would put this module in the external material's nested runs: test_fresh_checkout._external_tests)
resolve = material.external


def _sheet():
    return resolve("reference", "cann-abi.md")


def _indirect():
    return _sheet()


def sample_direct():
    resolve("seeds")


def sample_through_a_helper_of_a_helper():
    _indirect()


def sample_through_the_module():
    material.external("seeds")


def sample_by_a_local_import():
    from external import external as inner

    inner("seeds")


def sample_through_a_closure():
    helper = _sheet

    def inner():
        return helper()

    return inner


@given(st.integers())
def sample_under_given(n):
    _indirect()


def sample_only_where_it_would_be():
    return material.location("seeds")


def sample_nothing():
    return len("x")


def _item(function, fixtures=()):
    defs = {f.__name__: [SimpleNamespace(func=f)] for f in fixtures}
    return SimpleNamespace(
        nodeid=function.__name__, function=function, cls=None, _fixtureinfo=SimpleNamespace(name2fixturedefs=defs)
    )


def _kept(items) -> list[str]:
    config = SimpleNamespace(hook=SimpleNamespace(pytest_deselected=lambda items: None))
    external_selection.pytest_collection_modifyitems(config, items)
    return [i.nodeid for i in items]


def test_each_way_of_reaching_the_material_is_kept_and_the_rest_left_out():
    reaching = [sample_direct, sample_through_a_helper_of_a_helper, sample_through_the_module, sample_by_a_local_import]
    reaching += [sample_under_given]
    others = [sample_only_where_it_would_be, sample_nothing]
    assert _kept([_item(f) for f in reaching + others]) == [f.__name__ for f in reaching]


def test_a_closure_over_a_helper_reaches_it():
    assert external_selection.reaches(sample_through_a_closure())


def test_a_fixture_that_reaches_the_material_keeps_its_test():
    assert _kept([_item(sample_nothing, fixtures=[_indirect]), _item(sample_only_where_it_would_be)]) == [
        "sample_nothing"
    ]
