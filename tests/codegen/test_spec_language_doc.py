"""docs/spec-language.md documents every key of the spec model, every rule kind, every formula
function and every return-code check, and validation errors point to its sections."""

from __future__ import annotations

import re
from typing import get_args

import pytest
from pydantic import BaseModel

from aclnngen.codegen import model, spec_sections
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.formula import FUNCTIONS
from aclnngen.codegen.loader import load_products, load_spec
from repo_paths import CUSTOM_SPECS, REPO

DOC = (REPO / "docs" / "spec-language.md").read_text(encoding="utf-8")


def _anchors(text: str) -> set[str]:
    return {
        re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", text, re.M)
    }


def _models(root: type) -> set[type]:
    found, todo = set(), [root]
    while todo:
        cls = todo.pop()
        if cls in found:
            continue
        found.add(cls)
        for field in cls.model_fields.values():
            stack = [field.annotation]
            while stack:
                t = stack.pop()
                if isinstance(t, type) and issubclass(t, BaseModel):
                    todo.append(t)
                stack.extend(get_args(t))
    return found


def test_every_key_of_every_model_is_documented():
    missing = sorted(
        {
            f"{cls.__name__}.{key}"
            for cls in _models(model.OpSpec)
            for name, field in cls.model_fields.items()
            for key in [field.alias or name]  # the key as a spec spells it
            if f"`{key}`" not in DOC
        }
    )
    assert not missing, f"keys missing from docs/spec-language.md: {missing}"


def test_every_rule_kind_check_and_function_is_documented_with_an_example():
    kinds = [get_args(cls.model_fields["kind"].annotation)[0] for cls in get_args(get_args(model.Rule)[0])]
    for kind in kinds:
        assert re.search(rf"\| `{kind}` \|.*\| `\{{kind: {kind},", DOC), f"rule kind {kind} has no row with an example"
    for check in get_args(model.Check):
        assert f"`{check}`" in DOC, check
    for name in FUNCTIONS:
        assert re.search(rf"\| `{name}\(.*\)` \| `[^`]*{name}\(", DOC), f"function {name} has no example"


def test_every_section_the_errors_point_to_exists():
    anchors = _anchors(DOC)
    targets = (
        set(spec_sections._TOP.values())
        | set(spec_sections._PARAMETER_KEYS.values())
        | {"top-level-keys", "parameters"}
    )
    assert targets <= anchors, sorted(targets - anchors)


@pytest.mark.parametrize(
    "old, new, section",
    [
        ("    c_type: bool\n    default: false\n", "    c_type: boolean\n    default: false\n", "attributes"),
        ("  - {kind: max_rank,", "  - {kind: max_rnk,", "rules"),
        ("  kind: steps\n", "  kind: stepz\n", "oracle"),
        ("    scalar_dtype: float32\n", "    scalar_dtype: float33\n", "scalars"),
    ],
)
def test_a_validation_error_points_to_its_section(tmp_path, old, new, section):
    base = (CUSTOM_SPECS / "ops" / "sloped_step_backward.yaml").read_text(encoding="utf-8")
    assert old in base
    path = tmp_path / "sloped_step_backward.yaml"
    path.write_text(base.replace(old, new, 1), encoding="utf-8")
    with pytest.raises(SpecError) as info:
        load_spec(path, load_products())
    assert f"docs/spec-language.md#{section}" in str(info.value), str(info.value)


def test_every_defect_kind_has_a_row():
    from aclnngen.core.defects import NAMES

    assert get_args(model.Defect.model_fields["kind"].annotation) == NAMES
    for name in NAMES:
        assert re.search(rf"^\| `{name}` \| ", DOC, re.M), f"defect kind {name} has no row in docs/spec-language.md"
