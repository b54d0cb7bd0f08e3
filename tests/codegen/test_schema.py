"""The JSON Schema an editor reads (specs/schema/op.schema.json): draft 2020-12 with an $id, a
description on every field, enums for dtypes and product families, reserved names refused for
py_name; every spec of the repository is valid against it, and typical mistakes are not."""

from __future__ import annotations

import copy
import json
import keyword

import pytest
import yaml

from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products, spec_paths
from aclnngen.codegen.model import DTYPES, RESERVED_PY_NAMES

jsonschema = pytest.importorskip("jsonschema", reason="jsonschema is in the test extra: pip install -e '.[test]'")

SCHEMA = json.loads((DEFAULT_SPECS_DIR / "schema" / "op.schema.json").read_text(encoding="utf-8"))
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


# PyYAML's safe loader as an editor's YAML reader would read a spec, libyaml's when PyYAML has it
# (several times faster than the pure-Python one, the same data)
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _spec(path=None) -> dict:
    return yaml.load((path or spec_paths()[0]).read_text(encoding="utf-8"), Loader=_LOADER)


def _properties(node, where="$"):
    if isinstance(node, dict):
        for name, sub in (node.get("properties") or {}).items():
            yield f"{where}.{name}", sub
        for key, value in node.items():
            yield from _properties(value, f"{where}.{key}")
    elif isinstance(node, list):
        for i, item in enumerate(node):
            yield from _properties(item, f"{where}[{i}]")


def test_the_schema_declares_its_draft_and_id():
    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert SCHEMA["$id"].endswith("/op.schema.json")
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


def test_every_field_has_a_description():
    undescribed = [where for where, sub in _properties(SCHEMA) if not sub.get("description")]
    assert not undescribed, undescribed


@pytest.mark.parametrize("path", spec_paths(), ids=lambda p: p.stem)
def test_every_spec_is_valid_against_the_schema(path):
    errors = [e.message for e in VALIDATOR.iter_errors(_spec(path))]
    assert not errors, errors


def test_families_and_dtypes_are_enums_of_the_tables():
    family = SCHEMA["$defs"]["ProductSupport"]["properties"]["family"]
    assert family["enum"] == list(load_products().ids)
    dtypes = SCHEMA["$defs"]["DTypeSupport"]["properties"]["dtypes"]["items"]
    assert dtypes["enum"] == list(DTYPES)


def test_keywords_are_reserved_for_py_name():
    assert set(keyword.kwlist) <= set(RESERVED_PY_NAMES)


def _with(mutate) -> list[str]:
    data = copy.deepcopy(_spec())
    mutate(data)
    return [e.message for e in VALIDATOR.iter_errors(data)]


def test_an_unknown_family_is_rejected_by_the_schema():
    errors = _with(lambda d: d["products"][0].update(family="inferense"))
    assert any("'inferense' is not one of" in e for e in errors), errors
    errors = _with(lambda d: next(p for p in d["parameters"] if p.get("dtypes"))["dtypes"][0]["families"].append("a9"))
    assert any("'a9' is not one of" in e for e in errors), errors


@pytest.mark.parametrize("name", ["lambda", "class", "None"])
def test_a_keyword_py_name_is_rejected_by_the_schema(name):
    errors = _with(lambda d: d["parameters"][0].update(py_name=name))
    assert any("should not be valid" in e for e in errors), errors


def test_an_unknown_dtype_and_an_unknown_key_are_rejected_by_the_schema():
    errors = _with(
        lambda d: next(p for p in d["parameters"] if p.get("dtypes"))["dtypes"][0]["dtypes"].append("float8")
    )
    assert any("'float8' is not one of" in e for e in errors), errors
    assert _with(lambda d: d.update(author="someone"))
