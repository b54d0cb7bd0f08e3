"""The META-driven case builders: which case kinds apply to each real op (expectations written out
from the specs), that the built values are what each case says, and that the validator agrees with
every case's expected status on every family and dtype."""

from __future__ import annotations

import copy

import catalog
import ml_dtypes
import numpy as np
import pytest

from aclnngen.codegen.loader import DEFAULT_SPECS_DIR, load_products, load_spec
from aclnngen.codegen.metadata import build
from aclnngen.core.dtypes import ALL_DTYPES
from aclnngen.core.planning import (
    SHAPE_CASES,
    applicable_cases,
    dtype_cases,
    null_cases,
    scalar_values,
    scalar_violations,
)
from aclnngen.verify.cases import make_values
from aclnngen.runtime.errors import AclnnValidationError
from aclnngen.runtime.shapes import dtype_name_of, infer_outputs
from aclnngen.core.rules import supported_dtypes, supported_families
from aclnngen.runtime.validation import validate


class _Metas(dict):
    """Op name -> the META built from its spec, on first use: loading every spec when the module
    is collected would cost each worker time in proportion to the catalog."""

    def __missing__(self, name: str) -> dict:
        snake = next(s for s in catalog.OPS if catalog.meta(s)["name"] == name)
        self[name] = built = build(load_spec(DEFAULT_SPECS_DIR / "ops" / f"{snake}.yaml", load_products()).spec)
        return built


METAS = _Metas()
# the builders, the planner and the validator read an op's META alone: an op that differs from
# another only by its name (tests/catalog.py) adds nothing to the checks that walk every case
SHAPES = sorted(catalog.meta(snake)["name"] for snake in catalog.representatives())
VERSIONS = ("8.0.0", "8.5.0")
REJECTED = 161002

# Which check rejects each rejected case (AclnnValidationError.check).
CASE_CHECKS = {
    "broadcast-rejected": {"broadcast", "broadcast_to", "same_shape"},
    "shape-mismatch": {"broadcast", "same_shape"},
    "rank8": {"max_rank"},
    "rank9": {"max_rank"},
    "rank0": {"min_rank"},
    "empty": {"empty"},
    "non-contiguous": {"non_contiguous"},
    "per-channel-rejected": {"per_channel"},
    "grad-shape-rejected": {"per_channel"},
    "mixed-dtype": {"same_dtype", "promote", "dtype"},
}

# Written out from the specs (rules and their `since`), not computed.
_COMMON = {
    "contiguous": 0,
    "rank0": 0,
    "rank8": 0,
    "rank9": REJECTED,
    "empty": 0,
    "non-contiguous": 0,
    "offset": 0,
    "broadcast-rejected": REJECTED,
    "shape-mismatch": REJECTED,
}
RECORDED_FACT_CASES = {
    ("GeluBackward", "8.0.0"): {**_COMMON, "broadcast": 0, "mixed-dtype": 0},
    ("GeluBackward", "8.5.0"): {**_COMMON, "broadcast": 0, "mixed-dtype": 0},
    ("HardtanhBackward", "8.0.0"): {**_COMMON, "mixed-dtype": REJECTED},
    ("HardtanhBackward", "8.5.0"): {**_COMMON, "empty": REJECTED, "mixed-dtype": REJECTED},
    ("PreluBackward", "8.0.0"): {
        **_COMMON,
        "broadcast": 0,
        "mixed-dtype": REJECTED,
        "per-channel-single": 0,
        "per-channel-rejected": REJECTED,
        "grad-shape-rejected": REJECTED,
    },
    ("PreluBackward", "8.5.0"): {
        **_COMMON,
        "broadcast": 0,
        "mixed-dtype": REJECTED,
        "per-channel-single": 0,
        "per-channel-rejected": REJECTED,
        "grad-shape-rejected": REJECTED,
    },
    # the 8.0 page has no rank limit and no same-dtype rule; 8.5 adds both
    ("SoftshrinkBackward", "8.0.0"): {**_COMMON, "broadcast": 0, "rank9": 0, "mixed-dtype": 0},
    ("SoftshrinkBackward", "8.5.0"): {**_COMMON, "broadcast": 0, "mixed-dtype": REJECTED},
    ("SwishBackward", "8.0.0"): {**_COMMON, "mixed-dtype": REJECTED},
    ("SwishBackward", "8.5.0"): {**_COMMON, "mixed-dtype": REJECTED},
}


def combos():
    for op in SHAPES:
        for version in VERSIONS:
            for family in supported_families(METAS[op], version):
                yield pytest.param(op, version, family, id=f"{op}-{version}-{family}")


@pytest.mark.parametrize("op, version", sorted(RECORDED_FACT_CASES))
def test_applicable_cases_follow_the_spec(op, version):
    got = applicable_cases(METAS[op], version)
    assert dict(got) == RECORDED_FACT_CASES[(op, version)]
    assert [c for c, _ in got] == [c for c in SHAPE_CASES if c in RECORDED_FACT_CASES[(op, version)]]


@pytest.mark.parametrize("op, version, family", list(combos()))
def test_validate_agrees_with_every_applicable_case(op, version, family):
    meta = METAS[op]
    problems = []
    checked = 0
    first_input = next(p["name"] for p in meta["params"] if p["role"] == "input")
    for dtype in supported_dtypes(meta, first_input, family, version):
        for case, expected in applicable_cases(meta, version):
            values = make_values(meta, case, dtype, version=version, seed=checked)
            checked += 1
            try:
                validate(meta, values, family=family, version=version)
            except AclnnValidationError as err:
                if err.status != expected:
                    problems.append(f"{case}/{dtype}: expected {expected}, got {err}")
                elif err.check not in CASE_CHECKS.get(case, ()):
                    problems.append(f"{case}/{dtype}: rejected by {err.check}, not {CASE_CHECKS.get(case)}: {err}")
                elif err.param is None or err.param not in str(err):
                    problems.append(f"{case}/{dtype}: the message names no parameter: {err}")
            else:
                if expected != 0:
                    problems.append(f"{case}/{dtype}: expected {expected}, accepted")
    assert checked >= 2 * len(SHAPE_CASES) // 2
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("op", SHAPES)
@pytest.mark.parametrize("version", VERSIONS)
def test_with_family_and_dtype_the_expectation_covers_the_dtype_tables(op, version):
    meta = METAS[op]
    for family in ("training", "inference", "a2", "a3", "atlas_200i_500_a2", "ascend950"):
        for dtype in ("float16", "bfloat16", "float32", "int32"):
            for case, expected in applicable_cases(meta, version, family=family, dtype=dtype):
                values = make_values(meta, case, dtype, version=version)
                try:
                    validate(meta, values, family=family, version=version)
                    got = 0
                except AclnnValidationError as err:
                    got = err.status
                assert got == expected, (family, dtype, case)


def test_mixed_dtype_promoting_to_an_unsupported_dtype_is_foreseen():
    meta = copy.deepcopy(catalog.meta(catalog.an_op("an op that promotes", catalog.has_rule("promote"))))
    meta["name"] = "HalfOnly"
    for p in meta["params"]:
        p["dtypes"] = [{"families": ["a2"], "dtypes": ["float16"], "since": None, "until": None}]
    assert dict(applicable_cases(meta, "8.0.0"))["mixed-dtype"] == 0  # without a family: float32 assumed
    assert dict(applicable_cases(meta, "8.0.0", family="a2", dtype="float16"))["mixed-dtype"] == 161002
    with pytest.raises(AclnnValidationError, match="promoted to float32"):
        validate(meta, make_values(meta, "mixed-dtype", "float16", version="8.0.0"), family="a2", version="8.0.0")


# --- what the values are ------------------------------------------------------------------------


def tensors_of(meta, values):
    return {p["name"]: values[p["name"]] for p in meta["params"] if p["role"] in ("input", "output")}


def inputs_of(meta, values):
    return {p["name"]: values[p["name"]] for p in meta["params"] if p["role"] == "input"}


@pytest.mark.parametrize("op", SHAPES)
@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32"])
def test_each_case_builds_what_it_says(op, dtype):
    meta = METAS[op]
    version = "8.5.0"
    cases = dict(applicable_cases(meta, version))
    want = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
    for case in cases:
        values = make_values(meta, case, dtype, version=version)
        tensors = tensors_of(meta, values)
        assert all(isinstance(t, np.ndarray) for t in tensors.values())
        if case != "mixed-dtype":
            assert all(t.dtype == want for t in tensors.values()), case
        inputs = inputs_of(meta, values)
        big = [t for t in tensors.values() if t.size > 1]
        if case == "contiguous":
            assert all(t.flags.c_contiguous for t in tensors.values())
            assert all(np.isfinite(t.astype(np.float32)).all() for t in inputs.values())
            assert any(np.unique(t.astype(np.float32)).size > 3 for t in inputs.values())  # not constant
        elif case == "non-contiguous":
            assert big and all(not t.flags.c_contiguous for t in big)
        elif case == "offset":
            for t in tensors.values():
                assert t.flags.c_contiguous and t.base is not None
                start = t.__array_interface__["data"][0] - t.base.__array_interface__["data"][0]
                assert start > 0
        elif case in ("rank0", "rank8", "rank9"):
            ndim = {"rank0": 0, "rank8": 8, "rank9": 9}[case]
            assert any(t.ndim == ndim for t in tensors.values())
            assert all(t.ndim in (ndim, 1) for t in tensors.values())  # 1: a per-channel weight
        elif case == "empty":
            assert all(t.size == 0 for n, t in inputs.items() if n != "weight")
        elif case == "broadcast":
            assert len({t.shape for t in inputs.values()}) > 1
        elif case == "mixed-dtype":
            assert len({t.dtype for t in inputs.values()}) == 2
        elif case == "per-channel-single":
            assert values["weight"].size == 1 and values["gradWeight"].shape == values["weight"].shape
        elif case == "per-channel-rejected":
            assert values["weight"].size == values["self"].shape[1] + 1
        elif case == "grad-shape-rejected":
            assert values["gradWeight"].shape == (1, values["self"].shape[1])
        # outputs: zero-filled, of the inferred shape and dtype unless the case breaks them on purpose
        inferred = infer_outputs(meta, values, version)
        for name in meta["outputs"]:
            out = values[name]
            assert not np.any(out.astype(np.float32) != 0)
            if case not in ("shape-mismatch", "grad-shape-rejected"):
                assert (out.shape, out.dtype) == inferred[name], (case, name)


def test_strided_views_leave_junk_in_their_gaps():
    meta = catalog.meta(catalog.PLAIN)
    values = make_values(meta, "non-contiguous", "float32", version="8.5.0")
    x = values[catalog.names(meta, "input")[0]]
    assert x.base is not None and (x.base == 1000).any() and not (x == 1000).any()


def test_mixed_dtype_promotes_for_gelu_and_pairs_float16_with_float32():
    meta = METAS["GeluBackward"]
    values = make_values(meta, "mixed-dtype", "float16", version="8.0.0")
    assert (values["gradOutput"].dtype, values["self"].dtype, values["gradInput"].dtype) == (
        np.float16,
        np.float32,
        np.float32,
    )
    values = make_values(meta, "mixed-dtype", "float32", version="8.0.0")
    assert values["self"].dtype == np.float16 and values["gradInput"].dtype == np.float32


def test_per_channel_cases_of_prelu_use_dim_1_as_the_channel_count():
    meta = METAS["PreluBackward"]
    values = make_values(meta, "contiguous", "float32", version="8.0.0")
    assert values["weight"].shape == (values["self"].shape[1],) == values["gradWeight"].shape
    assert (values["weight"] > 0).all()
    rank0 = make_values(meta, "rank0", "float32", version="8.0.0")
    assert rank0["weight"].shape == () == rank0["gradWeight"].shape


def test_values_are_deterministic_per_seed():
    meta = catalog.meta(catalog.PLAIN)
    x = catalog.names(meta, "input")[-1]
    a = make_values(meta, "contiguous", "float32", version="8.5.0", seed=3)
    b = make_values(meta, "contiguous", "float32", version="8.5.0", seed=3)
    c = make_values(meta, "contiguous", "float32", version="8.5.0", seed=4)
    assert np.array_equal(a[x], b[x]) and not np.array_equal(a[x], c[x])


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_every_numpy_dtype_can_be_built(dtype):
    meta = catalog.meta(catalog.PLAIN)
    values = make_values(meta, "contiguous", dtype, version="8.5.0")
    for tensor in catalog.names(meta, "input", "output"):
        assert dtype_name_of(values[tensor].dtype) == dtype, tensor


def test_unknown_or_inapplicable_cases_are_errors():
    meta = catalog.meta(catalog.PLAIN)
    with pytest.raises(ValueError, match="unknown case"):
        make_values(meta, "sideways", "float32", version="8.5.0")
    with pytest.raises(ValueError, match="does not apply"):
        make_values(meta, "per-channel-single", "float32", version="8.5.0")
    with pytest.raises(ValueError, match="dtype"):
        make_values(meta, "contiguous", "float8_e4m3b11fnuz", version="8.5.0")


def test_recorded_fact_scalar_values_are_sensible():
    assert scalar_values(METAS["HardtanhBackward"]) == {"min": -1.0, "max": 1.0}
    assert scalar_values(METAS["SoftshrinkBackward"]) == {"lambda": 0.5}
    assert scalar_values(METAS["SwishBackward"]) == {"betaOptional": 1.0}  # the documented default
    meta = copy.deepcopy(METAS["HardtanhBackward"])
    meta["name"] = "HardtanhPositive"
    meta["params"][2]["constraints"] = [{"op": ">", "value": 0, "status": 161002, "since": "8.5.0", "until": None}]
    lo, hi = scalar_values(meta)["min"], scalar_values(meta)["max"]
    assert 0 < lo < hi  # moved inside the constraint of every version, still below max


# --- nulls, scalar violations, dtypes -----------------------------------------------------------


def test_recorded_fact_null_cases():
    assert null_cases(METAS["SwishBackward"]) == ["gradOutput", "self", "gradInput"]  # beta may be NULL
    assert null_cases(METAS["HardtanhBackward"]) == ["gradOutput", "self", "min", "max", "out"]
    assert null_cases(METAS["SoftshrinkBackward"]) == ["gradOutput", "self", "lambda", "gradInput"]
    assert null_cases(METAS["PreluBackward"]) == ["gradOutput", "self", "weight", "gradInput", "gradWeight"]


@pytest.mark.parametrize("op", SHAPES)
def test_null_cases_give_161001(op):
    meta = METAS[op]
    for name in null_cases(meta):
        values = make_values(meta, "contiguous", "float32", version="8.5.0")
        values[name] = None
        with pytest.raises(AclnnValidationError) as info:
            validate(meta, values, family="a2", version="8.5.0")
        assert (info.value.status, info.value.param) == (161001, name)


def test_recorded_fact_scalar_violations():
    soft = METAS["SoftshrinkBackward"]
    assert scalar_violations(soft, "8.0.0") == []
    found = scalar_violations(soft, "8.5.0")
    assert [(p, s) for p, _, s in found] == [("lambda", 161002), ("lambda", 161002)]
    outside, nan = found[0][1], found[1][1]
    assert -1 < outside < 0 and nan != nan
    for op in ("GeluBackward", "HardtanhBackward", "PreluBackward", "SwishBackward"):
        assert scalar_violations(METAS[op], "8.5.0") == []


def dtypes_ok(cases):
    return {d for d, ok in cases if ok}


@pytest.mark.parametrize(
    "op, family, version, accepted",
    [
        ("PreluBackward", "inference", "8.0.0", set()),
        ("PreluBackward", "inference", "8.5.0", set()),
        ("PreluBackward", "training", "8.5.0", {"float16", "float32"}),
        ("PreluBackward", "a2", "8.0.0", {"float16", "float32", "bfloat16"}),
        ("GeluBackward", "training", "8.0.0", {"float16", "float32"}),
        ("GeluBackward", "a2", "8.0.0", {"float16", "float32", "bfloat16"}),
        ("GeluBackward", "a3", "8.0.0", set()),
        ("GeluBackward", "atlas_200i_500_a2", "8.5.0", set()),
        ("SwishBackward", "a3", "8.0.0", set()),
        ("SwishBackward", "a3", "8.5.0", {"float16", "float32", "bfloat16"}),
        ("SwishBackward", "inference", "8.5.0", {"float16", "float32"}),
        ("SoftshrinkBackward", "a2", "8.0.0", {"float16", "float32"}),
        ("SoftshrinkBackward", "a2", "8.5.0", {"float16", "float32", "bfloat16"}),
        ("SoftshrinkBackward", "inference", "8.0.0", set()),
        ("SoftshrinkBackward", "inference", "8.5.0", {"float16", "float32"}),
        ("HardtanhBackward", "atlas_200i_500_a2", "8.0.0", set()),
        ("HardtanhBackward", "atlas_200i_500_a2", "8.5.0", set()),
        ("HardtanhBackward", "atlas_200i_500_a2", "9.0.RC1.alpha001", {"float16", "float32"}),
        ("HardtanhBackward", "inference", "8.5.0", {"float16", "float32"}),
    ],
)
def test_recorded_fact_dtype_cases_follow_the_spec(op, family, version, accepted):
    meta = METAS[op]
    cases = dtype_cases(meta, family, version)
    assert [d for d, _ in cases] == list(ALL_DTYPES)
    assert dtypes_ok(cases) == accepted
    for dtype, ok in cases:
        values = make_values(meta, "contiguous", dtype, version=version)
        try:
            validate(meta, values, family=family, version=version)
            got = True
        except AclnnValidationError as err:
            assert err.status == 161002 and err.check in ("dtype", "product")
            got = False
        assert got is ok, dtype


# --- a synthetic op with rules no real spec has -------------------------------------------------


def test_cases_follow_rules_that_forbid_non_contiguous_and_high_ranks():
    meta = copy.deepcopy(catalog.meta(catalog.PLAIN))
    meta["name"] = "Strict"
    tensors = catalog.names(meta, "input", "output")
    common = {"status": 161002, "families": [], "when": {}, "params": tensors, "since": None, "until": None}
    meta["rules"] = [r for r in meta["rules"] if r["kind"] not in ("non_contiguous", "max_rank")]
    meta["rules"] += [{"kind": "non_contiguous", "allowed": False, **common}, {"kind": "max_rank", "rank": 3, **common}]
    family = supported_families(meta, "8.5.0")[0]
    cases = dict(applicable_cases(meta, "8.5.0"))
    assert cases["non-contiguous"] == 161002 and cases["rank8"] == 161002 and cases["offset"] == 0
    for case, expected in cases.items():
        values = make_values(meta, case, "float32", version="8.5.0")
        try:
            validate(meta, values, family=family, version="8.5.0")
            got = 0
        except AclnnValidationError as err:
            got = err.status
        assert got == expected, case


def test_a_param_taking_every_wide_dtype_is_violated_by_a_narrow_one(monkeypatch):
    from types import SimpleNamespace

    from aclnngen.core.dtypes import NARROW
    from aclnngen.verify import opcheck

    wide = [d for d in ALL_DTYPES if d not in NARROW]
    monkeypatch.setattr(opcheck, "supported_dtypes", lambda meta, param, family, version: wide)
    op = SimpleNamespace(meta={}, version="8.5.0")
    assert opcheck._unsupported_dtype(op, "self", "a2") in NARROW
    monkeypatch.setattr(opcheck, "supported_dtypes", lambda meta, param, family, version: list(ALL_DTYPES))
    with pytest.raises(AssertionError, match="supports every dtype"):
        opcheck._unsupported_dtype(op, "self", "a2")
