"""Test-case planning works each answer out once: the cases of one META at one release and family
are planned once however often a test plan asks (codegen/testplan.py asks for a family's cases up
to three times), and the case plans of one `OpAt` infer the outputs of each distinct set of input
shapes and dtypes once. Each caller still gets a list or dict of its own to change. Over every
built-in op's META, at its newest documented release, on each family it supports."""

from __future__ import annotations

import collections

import pytest
from catalog import loaded_specs

from aclnngen.codegen.metadata import build
from aclnngen.core import dtype_combinations, planning
from aclnngen.core.releases import newest_documented
from aclnngen.core.rules import supported_families

METAS = {ls.spec.name: build(ls.spec) for ls in loaded_specs()}


def _where(name: str) -> list[tuple[str, str | None]]:
    """(release, family) pairs to plan the op at: its newest documented release, with no family
    and on each family it supports there."""
    version = str(newest_documented(METAS[name]))
    return [(version, family) for family in [None, *sorted(supported_families(METAS[name], version))]]


@pytest.fixture
def inferred(monkeypatch) -> collections.Counter:
    """Counts planning's output inferences by what they were asked (shapes, dtypes, family)."""
    asked: collections.Counter = collections.Counter()
    infer = planning.infer_output_names

    def counted(meta, shapes, dtypes, version, *, family=None, **kwargs):
        asked[(id(meta), tuple(shapes.items()), tuple(dtypes.items()), family)] += 1
        return infer(meta, shapes, dtypes, version, family=family, **kwargs)

    monkeypatch.setattr(planning, "infer_output_names", counted)
    if hasattr(planning, "_APPLICABLE"):
        planning._APPLICABLE.clear()  # planned afresh in this test, whatever ran before in the process
    return asked


@pytest.mark.parametrize("name", sorted(METAS))
def test_a_meta_s_cases_are_planned_once_and_each_caller_gets_its_own_list(inferred, name):
    meta = METAS[name]
    for version, family in _where(name):
        before = sum(inferred.values())
        first = planning.applicable_cases(meta, version, family=family)
        planned = sum(inferred.values())
        assert planned > before, (version, family)
        first.append(("changed by a caller", 1))
        again = planning.applicable_cases(meta, version, family=family)
        assert sum(inferred.values()) == planned, f"{family}: the second ask planned the cases again"
        assert again == first[:-1], family


@pytest.mark.parametrize("name", sorted(METAS))
def test_one_op_at_infers_each_distinct_case_s_outputs_once(inferred, name):
    for version, family in _where(name):
        inferred.clear()
        op = planning.op_at(METAS[name], version, family)
        assert any([planning.case_plan(op, case) for case in planning.SHAPE_CASES])
        twice = {asked: count for asked, count in inferred.items() if count > 1}
        assert not twice, f"{family}: inferred again: {twice}"


@pytest.mark.parametrize("name", sorted(METAS))
def test_a_combination_s_status_is_worked_out_once(monkeypatch, name):
    meta, worked = METAS[name], []
    resolve = dtype_combinations.resolved

    def counted(meta, combo, version, family):
        worked.append((tuple(combo.inputs.items()), family))
        return resolve(meta, combo, version, family)

    monkeypatch.setattr(dtype_combinations, "resolved", counted)
    for version, family in _where(name):
        if family is None:
            continue
        combo = dtype_combinations.Combination(dtype_combinations.combination(meta, "float32", version, family))
        worked.clear()
        first = dtype_combinations.combination_status(meta, combo, family, version)
        again = dtype_combinations.combination_status(
            meta, dtype_combinations.Combination(dict(combo.inputs)), family, version
        )
        assert first == again and len(worked) <= 1, (family, worked)


@pytest.mark.parametrize("name", sorted(METAS))
def test_one_case_at_a_time_reuses_what_earlier_asks_worked_out(inferred, name):
    """`case_shapes` (as `make_values` asks, one case per call) shares the op's OpAt per release
    and family: asking every case again infers nothing again."""
    meta = METAS[name]
    for version, family in _where(name):
        for case, _ in planning.applicable_cases(meta, version, family=family):
            planning.case_shapes(meta, case, version, family)
        inferred.clear()
        for case, _ in planning.applicable_cases(meta, version, family=family):
            planning.case_shapes(meta, case, version, family)
        assert not inferred, f"{family}: inferred again: {dict(inferred)}"
