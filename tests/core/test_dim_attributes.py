"""Dimension attributes (`dim_of`) and reductions along them (`sum`, `sum_keepdim`, `softmax`): the
spec states the range relative to the rank, the validator enforces it, the sweeps visit every dim,
and the numerics reduce along exactly the dim asked for (a shape with a different length per dim,
so a wrong dim cannot pass). The op is a synthetic fixture, not a vendor op."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aclnngen.codegen import metadata
from aclnngen.codegen.errors import SpecError
from aclnngen.codegen.loader import load_products, load_spec
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.validation import validate
from aclnngen.core import planning, sweeps
from aclnngen.verify import opcheck
from aclnngen.evaluate.numerics import Numerics
from repo_paths import CUSTOM_SPECS

BASE = (CUSTOM_SPECS / "ops" / "log_normalise_backward.yaml").read_text(encoding="utf-8")
DIM = "    c_type: int64_t\n    dim_of: gradOutput\n"
SHAPE = (2, 3, 5)  # every dim a different length


def _spec(tmp_path: Path, text: str = BASE):
    path = tmp_path / "log_normalise_backward.yaml"
    path.write_text(text, encoding="utf-8")
    return load_spec(path, load_products()).spec


@pytest.fixture(scope="module")
def meta(tmp_path_factory):
    return metadata.build(_spec(tmp_path_factory.mktemp("dim")))


def _values(meta, shape, dim):
    a = np.ones(shape, np.float32)
    return {"gradOutput": a, "output": a, "out": np.empty(shape, np.float32), "dim": dim}


@pytest.mark.parametrize("dim", range(-len(SHAPE), len(SHAPE)))
def test_reductions_follow_the_dim(dim):
    rng = np.random.default_rng(dim + 10)
    x = rng.standard_normal(SHAPE)
    m = Numerics("golden", {"x": np.dtype(np.float64)})
    np.testing.assert_allclose(m.sum(x, dim), x.sum(axis=dim))
    kept = m.sum_keepdim(x, dim)
    assert kept.shape == tuple(1 if i == dim % len(SHAPE) else n for i, n in enumerate(SHAPE))
    np.testing.assert_allclose(kept, x.sum(axis=dim, keepdims=True))
    soft = m.softmax(x * 400, dim)  # large values: the shift keeps exp from overflowing
    assert np.isfinite(soft).all()
    np.testing.assert_allclose(soft.sum(axis=dim), 1.0, rtol=1e-12)
    e = np.exp(x - x.max(axis=dim, keepdims=True))
    np.testing.assert_allclose(m.softmax(x, dim), e / e.sum(axis=dim, keepdims=True), rtol=1e-12)


def test_a_0d_tensor_has_dims_0_and_minus_1_only():
    m = Numerics("golden", {"x": np.dtype(np.float64)})
    x = np.asarray(2.5)
    for dim in (0, -1):
        assert m.sum_keepdim(x, dim) == 2.5 and m.softmax(x, dim) == 1.0
    with pytest.raises(ValueError, match="dim 1 is out of range for a tensor of rank 0"):
        m.sum(x, 1)
    with pytest.raises(ValueError, match=r"dim -4 is out of range for a tensor of rank 3 \(allowed -3..2\)"):
        m.sum(np.ones(SHAPE), -4)


def test_the_validator_accepts_every_dim_of_the_rank_and_nothing_else(meta):
    for rank in (0, 1, 3, 8):
        shape = (2,) * rank
        span = max(rank, 1)
        for dim in range(-span, span):
            validate(meta, _values(meta, shape, dim), family="a2", version="8.5.0")
        for dim in (-span - 1, span):
            with pytest.raises(
                AclnnValidationError,
                match=rf"dim = {dim} is not a dim of gradOutput \(rank {rank}\); "
                rf"allowed {-span}..{span - 1}",
            ) as info:
                validate(meta, _values(meta, shape, dim), family="a2", version="8.5.0")
            assert info.value.status == 161002


def test_sweeps_visit_every_dim_of_the_test_data(meta):
    swept = sorted(v for name, v in sweeps.scalar_points(meta, "8.5.0") if name == "dim")
    rank = len(planning.BASE_SHAPE)
    base = planning.scalar_values(meta)["dim"]
    assert sorted(swept + [base]) == list(range(-rank, rank))
    assert rank == len(opcheck.DATA_SHAPE)  # the sweep's dims are those of the reference data too
    assert sweeps.value_id(-2) == "minus2"


def test_the_return_code_row_is_provoked_with_dim_equal_to_the_rank(meta):
    op = opcheck.OpUnderTest(meta, reference=None, binding=None, version="8.5.0")
    values = opcheck._violate(op, _values(meta, SHAPE, 0), "attribute_value", "dim")
    assert values["dim"] == len(SHAPE)


@pytest.mark.parametrize(
    "edit,message",
    [
        (lambda t: t.replace("dim_of: gradOutput", "dim_of: weight"), "unknown tensor parameter 'weight'"),
        (lambda t: t.replace("dim_of: gradOutput", "dim_of: dim"), "unknown tensor parameter 'dim'"),
        (lambda t: t.replace(DIM, DIM + "    default: 2\n"), "is not a dim of every rank"),
        (
            lambda t: t.replace(DIM, "    c_type: double\n    dim_of: gradOutput\n").replace(
                "int64_t dim", "double dim"
            ),
            "'dim_of' applies to an int64_t attribute",
        ),
        (lambda t: t.replace(DIM, "    c_type: int64_t\n"), "no 'choices' or 'dim_of'"),
    ],
)
def test_a_bad_dim_attribute_is_refused_at_its_line(tmp_path, edit, message):
    text = edit(BASE)
    assert text != BASE
    with pytest.raises(SpecError, match=message) as info:
        _spec(tmp_path, text)
    assert "log_normalise_backward.yaml:" in str(info.value)


def test_a_default_of_0_or_minus_1_is_accepted(tmp_path):
    for default in (0, -1):
        spec = _spec(tmp_path, BASE.replace(DIM, DIM + f"    default: {default}\n"))
        assert spec.parameter("dim").default == default
