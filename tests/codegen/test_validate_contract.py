"""`validate` is the contract: a spec it accepts generates tests that run. Whatever such a test
finds is a reported mismatch (an AssertionError, or the validator's own AclnnValidationError where
the test expected acceptance), never an internal error (AttributeError, TypeError, KeyError, ...
inside verify/ or runtime/) of the machinery the generated tests call.

The specs come from three sources, as a person finishing an op meets them:
- drafts `aclnngen import` makes from synthetic pages (tests/data/pages) and from the vendor's
  seed pages (../shared/seeds, skipped with a reason when absent), finished mechanically: every
  TODO filled, a return-code row's check and parameters chosen by hypothesis among all the op's
  names (scalars and attributes included, as the importer does for a row that mentions them);
- valid specs (specs/ops) mutated in what a person edits: return-code rows, rules, constraints,
  attribute choices.

A spec `validate` refuses is fine (that is the contract working); one it accepts runs every
validator-side case its generated tests list (testplan.build: dtypes, shapes, null pointers,
scalar bounds, return codes), in-process, through the same `opcheck` functions. The numeric
cases (reference against the oracle, the binding on the simulator) need a rendered reference
and a simulator entry point per op and are not part of this property.
"""

from __future__ import annotations

import copy
import tempfile
import traceback
import typing
from pathlib import Path

import catalog
import pytest
import yaml
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from aclnngen.codegen import metadata, testplan
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.importer.draft import build_draft, snake
from aclnngen.codegen.importer.pages import read_page
from aclnngen.codegen.loader import load_products, load_spec, spec_paths
from aclnngen.codegen.model import Check
from aclnngen.codegen.yamlio import read_yaml
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.verify import opcheck

from external import location
from repo_paths import PAGES

PRODUCTS = load_products()
SYNTHETIC = sorted(p for p in PAGES.iterdir() if p.suffix in (".md", ".txt") and p.name != "README.md")
# the specs the properties start from: one per structure (tests/catalog.py), since a renamed
# copy plans the same cases and is mutated the same way
_SHAPES = set(catalog.representatives())
BASES = {p.stem: read_yaml(p)[0] for p in spec_paths() if p.stem in _SHAPES}
assert len(BASES) == len(_SHAPES), "a spec file is not named after its op: the properties would start from none"
CHECKS = typing.get_args(Check)  # every check a return-code row may name, from the spec model
TODO = "TODO"

# Which generated test runs which opcheck function, with which of the plan's case fields.
VALIDATOR_CASES = {
    "dtypes": (opcheck.check_dtype, ("family", "dtype", "accepted")),
    "shapes": (opcheck.check_shape_case, ("family", "dtype", "kind", "status")),
    "nulls": (opcheck.check_null, ("family", "param")),
    "scalars": (opcheck.check_scalar, ("family", "param", "value", "status", "context")),
    "return_codes": (opcheck.check_return_code, ("family", "row", "check", "param", "status")),
}


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data):  # a spec may not use anchors: write shared values out
        return True


def _dump(data: dict) -> str:
    return yaml.dump(data, Dumper=_NoAliases, sort_keys=False, allow_unicode=True)


# --- running what a valid spec generates -------------------------------------------------------------


def accepted(data: dict) -> object | None:
    """The spec `validate` makes of `data`, or None when it refuses it (every refusal names the
    file and a line: the other half of the contract)."""
    name = data.get("name") if isinstance(data.get("name"), str) else "op"
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{snake(name)}.yaml"  # the loader wants the file named after the op
        path.write_text(_dump(data), encoding="utf-8")
        try:
            return load_spec(path, PRODUCTS).spec
        except SpecError as exc:
            assert exc.problems and all(p.path == str(path) for p in exc.problems), exc.problems
            assert not any("this is a bug in aclnngen" in p.message for p in exc.problems), exc.problems
            return None


def internal_errors(spec) -> list[str]:
    """Every validator-side case the spec's generated tests list, run as they run it: the ones
    that failed with anything but a reported mismatch, with where it was raised."""
    meta = metadata.build(spec)
    plan = testplan.build(spec, PRODUCTS)  # what `generate` lists in tests/generated/test_<op>.py
    op = opcheck.OpUnderTest(meta, reference=None, binding=None, version=plan["version"])
    found = []
    for kind, (check, fields) in VALIDATOR_CASES.items():
        for case in plan[kind]:
            try:
                check(op, *(case[f] for f in fields))
            except (AssertionError, AclnnValidationError):
                pass  # a mismatch the test reports: what a generated test is for
            except Exception as exc:  # noqa: BLE001 - the property: nothing else escapes
                frame = traceback.extract_tb(exc.__traceback__)[-1]
                found.append(
                    f"{kind}[{case['id']}]: {type(exc).__name__}: {exc} ({Path(frame.filename).name}:{frame.lineno})"
                )
    return found


# --- finishing drafts ------------------------------------------------------------------------------


def _draft(page: Path) -> dict:
    return build_draft(read_page(page, PRODUCTS, None), PRODUCTS)


@st.composite
def finished_drafts(draw, pages):
    """A draft from one of `pages`, its TODOs written as a person might: summaries, the release,
    an identity formula, an oracle, and for a return-code row the reader could not classify (or a
    table the scrape lost) a check and parameters chosen among every check and name."""
    data = copy.deepcopy(_draft(draw(st.sampled_from(pages))))
    data.pop("todo", None)
    assume(isinstance(data.get("name"), str) and data["name"] != TODO)
    params = [p for p in data.get("parameters") or [] if isinstance(p, dict)]
    names = [p["name"] for p in params]
    inputs = [p["py_name"] for p in params if p.get("role") == "input"]
    outputs = [p["py_name"] for p in params if p.get("role") == "output"]
    assume(inputs and outputs)
    data["summary"] = "A demo op."
    if data.get("cann_version") == TODO:
        data["cann_version"] = "8.5.0"
    for p in params:
        if p.get("summary") == TODO:
            p["summary"] = "A demo parameter."
    data["formula"] = {"latex": "x", "outputs": {name: inputs[0] for name in outputs}}
    for defect in data.get("defects") or []:  # e.g. no_formula: where the formula comes from
        if isinstance(defect, dict) and defect.get("note") == TODO:
            defect["note"] = "A demo note."
    data["oracle"] = {"kind": "aten", "op": "mul", "args": inputs[:2], "outputs": outputs}

    # checks a row of this draft can name without being refused for lack of a rule: the
    # draft's rule kinds, and the checks no rule backs (mostly; any check now and then)
    kinds = sorted({r["kind"] for r in data.get("rules") or [] if isinstance(r, dict) and "kind" in r})
    plausible = st.sampled_from(["null_pointer", "dtype", "scalar_range", "attribute_value", *kinds])
    checks = st.one_of(plausible, plausible, st.sampled_from(CHECKS))

    def row(status):
        check = "null_pointer" if status == 161001 else draw(checks)
        chosen = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
        return {"status": status, "check": check, "params": chosen, "condition": "A demo condition."}

    rows = data.get("return_codes")
    if not isinstance(rows, list):  # the table was lost: a person writes one from the ABI facts
        rows = [row(161001), row(161002)]
    for r in rows:
        if r.get("check") == TODO:
            r["check"] = draw(checks)
        if r.get("params") == TODO:
            r["params"] = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
        if r.get("condition") == TODO:
            r["condition"] = "A demo condition."
    data["return_codes"] = rows
    assume(TODO not in _dump(data))  # a TODO this finisher does not know how to write
    return data


# --- mutating valid specs ----------------------------------------------------------------------------


@st.composite
def mutated_specs(draw):
    """A valid spec with one to three edits of what a person edits: a return-code row's check or
    parameters, a rule's parameters, a scalar's constraints, an attribute's choices."""
    data = copy.deepcopy(BASES[draw(st.sampled_from(sorted(BASES)))])
    names = [p["name"] for p in data["parameters"]]
    for _ in range(draw(st.integers(1, 3))):
        what = draw(st.sampled_from(["row_check", "row_params", "rule_params", "constraint", "choices", "new_row"]))
        rows = data["return_codes"]
        if what == "row_check":
            draw(st.sampled_from(rows))["check"] = draw(st.sampled_from(CHECKS))
        elif what == "row_params":
            draw(st.sampled_from(rows))["params"] = draw(
                st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)
            )
        elif what == "new_row":
            rows.append(
                {
                    "status": draw(st.sampled_from([161001, 161002])),
                    "check": draw(st.sampled_from(CHECKS)),
                    "params": draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True)),
                    "condition": "A demo condition.",
                }
            )
        elif what == "rule_params" and data.get("rules"):
            rule = draw(st.sampled_from(data["rules"]))
            if "params" in rule:
                rule["params"] = draw(st.lists(st.sampled_from(names), min_size=1, max_size=3, unique=True))
        elif what == "constraint":
            p = draw(st.sampled_from(data["parameters"]))
            p["constraints"] = [
                {
                    "op": draw(st.sampled_from([">", ">=", "<", "<=", "!="])),
                    "value": draw(st.sampled_from([0, 1, -1, 0.5, 1e30])),
                }
            ]
        elif what == "choices":
            p = draw(st.sampled_from(data["parameters"]))
            p["choices"] = draw(
                st.lists(st.sampled_from(["none", "tanh", "a", "b"]), min_size=1, max_size=2, unique=True)
            )
    return data


# --- the properties ----------------------------------------------------------------------------------


def _holds(data: dict) -> None:
    spec = accepted(data)
    if spec is None:
        return
    errors = internal_errors(spec)
    assert not errors, f"{spec.name}: validate accepted the spec, its generated tests fail inside:\n" + "\n".join(
        errors[:5]
    )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(finished_drafts(SYNTHETIC))
def test_finished_drafts_of_synthetic_pages_generate_tests_that_run(data):
    _holds(data)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(st.data())
def test_finished_drafts_of_the_seed_pages_generate_tests_that_run(data):
    seeds = location("seeds")
    if not seeds.is_dir():
        from external import external

        external("seeds")  # skips with a reason (fails under ACLNNGEN_REQUIRE_EXTERNAL=1)
    _holds(data.draw(finished_drafts(sorted(seeds.glob("*.txt")))))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_specs())
def test_mutated_valid_specs_generate_tests_that_run(data):
    _holds(data)


@pytest.mark.parametrize("name", sorted(BASES))
def test_every_spec_generates_tests_that_run(name):
    """The unmutated specs: the baseline the properties start from."""
    spec = accepted(copy.deepcopy(BASES[name]))
    assert spec is not None
    assert internal_errors(spec) == []


# --- the classes the properties found, each refused at its line ---------------------------------------


def _refusal(data: dict) -> list:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{snake(data['name'])}.yaml"
        path.write_text(_dump(data), encoding="utf-8")
        with pytest.raises(SpecError) as err:
            load_spec(path, PRODUCTS)
        text = path.read_text(encoding="utf-8").splitlines()
        return [(p.line, text[p.line - 1] if p.line else "", p.message) for p in err.value.problems]


def test_a_non_tensor_in_a_dtype_row_is_refused_at_its_line():
    """The issue's draft: a `dtype` row naming a scalar (the page's row mentions it) was valid,
    and its generated test failed inside opcheck. Every spec with a scalar or attribute: naming
    it in a dtype row is refused at that name's line."""
    tried = 0
    for name, base in sorted(BASES.items()):
        others = [p["name"] for p in base["parameters"] if p["role"] not in ("input", "output")]
        rows = [i for i, r in enumerate(base["return_codes"]) if r["check"] == "dtype"]
        if not others or not rows:
            continue
        data = copy.deepcopy(base)
        data["return_codes"][rows[0]]["params"].append(others[0])
        (line, text, message), *_ = _refusal(data)
        assert others[0] in text and "dtype row" in message and "not a tensor" in message, (name, line, text, message)
        tried += 1
    assert tried, "no spec with a scalar or attribute and a dtype row"


def test_an_oracle_recipe_that_does_not_exist_is_refused_at_its_line():
    """A recipe name verify/oracle.py does not register was valid, and every reference test of
    the op failed with a KeyError inside the oracle."""
    name, base = next((n, b) for n, b in sorted(BASES.items()) if b["oracle"]["kind"] == "recipe")
    data = copy.deepcopy(base)
    data["oracle"]["recipe"] = "no_such_recipe"
    (line, text, message), *_ = _refusal(data)
    assert "no_such_recipe" in text and "unknown recipe" in message and base["oracle"]["recipe"] in message, (
        line,
        message,
    )
