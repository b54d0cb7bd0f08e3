"""The rule-kind registry (aclnngen/core/kinds): every kind is complete, and the consumers read
their kinds from it rather than listing them."""

from __future__ import annotations

from typing import get_args

import pytest

from aclnngen.codegen import model, profiles
from aclnngen.core.kinds import BY_NAME, KIND_NAMES, KINDS, RuleKind, UnknownRuleKind, kind_of
from aclnngen.core.kinds.base import FIELD_TYPES


def test_names_and_models_are_unique():
    assert len(set(KIND_NAMES)) == len(KINDS)
    assert len({k.model for k in KINDS}) == len(KINDS)
    assert all(isinstance(k, RuleKind) and BY_NAME[k.name] is k for k in KINDS)


def test_the_spec_model_the_checks_and_the_profiles_are_built_from_the_registry():
    members = get_args(get_args(model.Rule)[0])
    assert [get_args(m.model_fields["kind"].annotation)[0] for m in members] == list(KIND_NAMES)
    assert [m.__name__ for m in members] == [k.model for k in KINDS]
    assert set(KIND_NAMES) <= set(get_args(model.Check))
    assert set(get_args(profiles.ProfileChange.model_fields["rule"].annotation)) == set(KIND_NAMES)


@pytest.mark.parametrize("kind", KINDS, ids=KIND_NAMES)
def test_every_kind_declares_its_fields_an_example_and_a_sentence(kind):
    assert kind.kind_doc.startswith(f"{kind.name}: ")
    assert kind.fields and all(f.type in FIELD_TYPES and f.doc for f in kind.fields)
    rule = model.RULE_MODELS[kind.name](kind=kind.name, **kind.example)
    sentence = kind.sentence(rule)
    assert all(name in sentence for name in kind.names(rule)), sentence
    param_fields = {f.name for f in kind.fields if f.type in ("param list", "param", "optional param")}
    assert kind.named(rule) and {loc[0] for loc, _ in kind.named(rule)} <= param_fields


@pytest.mark.parametrize("kind", KINDS, ids=KIND_NAMES)
def test_every_kind_plans_cases_the_planner_knows(kind):
    from aclnngen.core.planning import SHAPE_CASES

    assert set(kind.cases) <= set(SHAPE_CASES)
    assert set(kind.accepted_change) <= set(kind.cases)


def test_an_unknown_kind_is_a_typed_error_naming_the_kinds():
    with pytest.raises(UnknownRuleKind, match="unknown rule kind 'same_shapes'.*same_shape"):
        kind_of({"kind": "same_shapes"})


def test_the_registry_names_every_kind_module_by_its_kind():
    """KIND_NAMES lists the kinds without importing them (a binding loads only the kinds its rules
    use): every public module of aclnngen/core/kinds is one of them, defining that kind."""
    from pathlib import Path

    import aclnngen.core.kinds as kinds

    modules = sorted(p.stem for p in Path(kinds.__file__).parent.glob("*.py") if not p.stem.startswith("_"))
    assert sorted(KIND_NAMES) == sorted(m for m in modules if m != "base")
    assert [k.name for k in KINDS] == list(KIND_NAMES)
