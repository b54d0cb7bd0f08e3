"""The castable and min_rank rule kinds, on a made-up spec: the validator, output inference and the
case builders follow them, and a spec names them like any rule."""

from __future__ import annotations


import numpy as np
import pytest

from aclnngen.codegen import metadata
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.core import planning
from aclnngen.core import dtypes
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.shapes import infer_outputs
from aclnngen.runtime.validation import validate
from repo_paths import CATEGORY_SPECS

BASE = (CATEGORY_SPECS / "ops" / "product_probe.yaml").read_text(encoding="utf-8")
RULES = (
    "  - {kind: same_shape, params: [gradOutput, self, gradInput]}\n"
    "  - {kind: same_dtype, params: [gradOutput, self, gradInput]}\n"
)
NEW_RULES = (
    "  - {kind: broadcast, inputs: [gradOutput, self], output: gradInput}\n"
    "  - {kind: castable, inputs: [gradOutput, self], output: gradInput}\n"
    "  - {kind: min_rank, params: [gradOutput, self], rank: 1}\n"
)
ROWS = (
    "  - status: 161002\n    check: castable\n    params: [gradInput]\n    condition: not castable.\n"
    "  - status: 161002\n    check: min_rank\n    params: [gradOutput, self]\n    condition: 0-d.\n"
)


@pytest.fixture(scope="module")
def meta(tmp_path_factory):
    assert RULES in BASE and "return_codes:\n" in BASE
    path = tmp_path_factory.mktemp("rules") / "product_probe.yaml"
    path.write_text(
        BASE.replace(RULES, NEW_RULES).replace("return_codes:\n", "return_codes:\n" + ROWS), encoding="utf-8"
    )
    return metadata.build(load_spec(path, load_products()).spec)


def _values(g, x, out):
    return {"gradOutput": g, "self": x, "gradInput": out}


def _status(meta, values):
    try:
        validate(meta, values, family="a2", version="8.5.0")
    except AclnnValidationError as exc:
        return exc.status, exc.param
    return 0, None


@pytest.mark.parametrize(
    "source, target, ok",
    [
        ("float32", "float32", True),
        ("float32", "float64", True),
        ("float32", "complex64", True),
        ("int8", "float16", True),
        ("bool", "int8", True),
        ("float64", "float16", True),
        ("complex64", "float32", False),
        ("float32", "int32", False),
        ("int32", "bool", False),
    ],
)
def test_can_cast_follows_torch(source, target, ok):
    assert dtypes.can_cast(source, target) is ok
    torch = pytest.importorskip("torch")
    assert torch.can_cast(getattr(torch, source), getattr(torch, target)) is ok


def test_castable_accepts_any_cast_target_and_refuses_a_cast_down(meta):
    g = np.ones((2, 3), np.float32)
    assert _status(meta, _values(g, g, np.zeros((2, 3), np.complex64))) == (0, None)
    assert _status(meta, _values(g, g, np.zeros((2, 3), np.float64))) == (0, None)
    assert _status(meta, _values(g, g, np.zeros((2, 3), np.int32))) == (161002, "gradInput")
    assert _status(meta, _values(g.astype(np.complex64), g, np.zeros((2, 3), np.float32))) == (161002, "gradInput")


def test_a_castable_output_takes_the_promoted_dtype(meta):
    inferred = infer_outputs(meta, _values(np.ones(3, np.float16), np.ones(3, np.float32), None), "8.5.0")
    assert inferred["gradInput"][1] == np.float32


def test_min_rank_refuses_fewer_dims(meta):
    one = np.ones((1,), np.float32)
    assert _status(meta, _values(one, one, np.zeros((1,), np.float32))) == (0, None)
    scalar = np.ones((), np.float32)
    assert _status(meta, _values(scalar, one, np.zeros((1,), np.float32))) == (161002, "gradOutput")


def test_the_rank0_case_is_expected_to_be_rejected(meta):
    statuses = dict(planning.applicable_cases(meta, "8.5.0"))
    assert statuses["rank0"] == 161002 and statuses["contiguous"] == 0


def test_every_rule_kind_reads_in_the_reference_page():
    from aclnngen.codegen import model
    from aclnngen.core.kinds import KINDS

    for kind in KINDS:
        rule = model.RULE_MODELS[kind.name](kind=kind.name, **kind.example)
        text = kind.sentence(rule)
        assert text and "a" in text
