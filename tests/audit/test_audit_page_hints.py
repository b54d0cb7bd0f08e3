"""audit --page sets what a page hints against the spec: the rules its notes suggest and the side
of each formula boundary (audit/page_hints.py). Made-up specs and page text, no built-in op."""

from __future__ import annotations

import pytest

from aclnngen.audit import page_hints

SPEC = {
    "name": "MadeUpBackward",
    "parameters": [
        {"name": "gradOutput", "py_name": "grad_output", "role": "input"},
        {"name": "self", "py_name": "self", "role": "input"},
        {"name": "lambd", "py_name": "lambd", "role": "scalar"},
        {"name": "out", "py_name": "out", "role": "output"},
    ],
    "rules": [{"kind": "same_dtype", "params": ["gradOutput", "self", "out"]}],
    "formula": {"outputs": {"out": "where(self > lambd, grad_output, where(self < -lambd, grad_output, 0))"}},
    "defects": [],
}


def test_a_hinted_rule_the_spec_does_not_state_is_a_finding():
    draft = {"rules": [{"kind": "promote", "inputs": ["gradOutput", "self"], "output": "out"}]}
    (finding,) = page_hints.rule_findings(SPEC, draft, "8.5.0")
    assert finding.group == "mismatch" and "promote" in finding.subject
    held = {"rules": [{"kind": "same_dtype", "params": ["gradOutput", "self"]}]}
    assert page_hints.rule_findings(SPEC, held, "8.5.0") == []


def test_a_hint_the_spec_records_as_a_defect_is_a_page_defect():
    spec = {**SPEC, "defects": [{"kind": "rule", "note": "n", "checks": ["promote"]}]}
    draft = {"rules": [{"kind": "promote", "inputs": ["gradOutput", "self"], "output": "out"}]}
    (finding,) = page_hints.rule_findings(spec, draft, "8.5.0")
    assert finding.group == "page_defect"
    later = {**SPEC, "defects": [{"kind": "rule", "note": "n", "checks": ["promote"], "since": "9.0.0"}]}
    assert page_hints.rule_findings(later, draft, "8.5.0")[0].group == "mismatch"


@pytest.mark.parametrize(
    "latex, agrees",
    [
        (r"gradOutput_i & \text{if } x_i > \lambda \\ gradOutput_i & x_i < -\lambda \\ 0 & \text{otherwise}", True),
        (r"gradOutput_i & \text{if } self(i) \ge \lambda \\ gradOutput_i & self(i) < -\lambda", False),
        (r"0 & \lambda \geq \mathit{self} \\ g & \text{otherwise}", True),  # the threshold on the left
        (r"g & -\lambda \lt self_{i}", False),  # x > -lambda puts x = -lambda on the lower side
    ],
)
def test_the_side_of_each_formula_boundary_is_compared(latex, agrees):
    spec = {**SPEC, "parameters": SPEC["parameters"] + [{"name": "x", "py_name": "x", "role": "input"}]}
    spec["formula"] = {"outputs": {"out": SPEC["formula"]["outputs"]["out"].replace("self", "x")}}
    found, compared = page_hints.boundary_findings(spec, [latex.replace("self", "x")], "8.5.0")
    assert compared >= 1
    assert (found == []) is agrees, [f.observed for f in found]


def test_a_recorded_formula_defect_makes_a_boundary_a_page_defect():
    spec = {**SPEC, "defects": [{"kind": "wrong_formula", "note": "n", "claimed": {"outputs": {"out": "0"}}}]}
    found, _ = page_hints.boundary_findings(spec, [r"g & self \ge \lambda"], "8.5.0")
    assert [f.group for f in found] == ["page_defect"]


def test_sides_of_the_spec_formula():
    from aclnngen.codegen import formula

    names = {"grad_output": "input", "self": "input", "lambd": "scalar", "out": "output"}
    program = formula.parse_program({"out": "where(self <= 0, 0, where(lambd < self, grad_output, 1))"}, names, loc=())
    assert page_hints.spec_boundaries(program, ["grad_output", "self"]) == {"0.0": "lower", "lambd": "lower"}


def test_every_rule_kind_says_what_it_relates():
    from aclnngen.core.kinds import KINDS
    from aclnngen.core.kinds.base import RELATIONS

    assert all(k.relation in RELATIONS for k in KINDS), [k.name for k in KINDS if k.relation not in RELATIONS]


def test_shape_hints_are_held_by_the_shape_rules_together_and_ranks_by_the_inputs():
    spec = {
        **SPEC,
        "rules": [
            {"kind": "broadcast_to", "param": "gradOutput", "target": "self"},
            {"kind": "same_shape", "params": ["self", "out"]},
            {"kind": "max_rank", "params": ["gradOutput", "self"], "rank": 8},
        ],
    }
    loose = {"rules": [{"kind": "same_shape", "params": ["gradOutput", "self", "out"]}]}
    assert page_hints.rule_findings(spec, loose, "8.5.0") == []
    ranks = {"rules": [{"kind": "max_rank", "params": ["gradOutput", "self", "out"], "rank": 8}]}
    assert page_hints.rule_findings(spec, ranks, "8.5.0") == []
    unknown_tensor = {"rules": [{"kind": "same_shape", "params": ["gradOutput", "lambd"]}]}
    assert len(page_hints.rule_findings(spec, unknown_tensor, "8.5.0")) == 1


def test_a_note_that_names_another_input_relates_both(tmp_path):
    from aclnngen.codegen.importer.draft import _with_named

    text = {"a": "", "b": "dtype promotes with a (promotion rules)", "c": ""}
    assert _with_named(["b"], ["a", "b", "c"], text) == ["a", "b"]
