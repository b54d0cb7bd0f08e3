"""Directives cannot be wrong silently (verify/directives.py, verify/pytest_plugin.py): unknown
keys, tests, families, dtypes, ops and expected failures that match nothing are errors; `case`
takes a list or a glob; a tolerance applies to bit-exact outputs too, or is refused; a mismatch
prints both values exactly."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import numpy as np
import pytest

from aclnngen.generated import OPS
from aclnngen.verify import cases, directives, opcheck
from aclnngen.runtime.call import _newest_version
from forkserver import run_pytest
from repo_paths import REPO

FAMILIES = ("a2", "training")
DTYPES = ("float16", "float32")


def _parse(text: str):
    import yaml

    return directives.parse(yaml.safe_load(text), "d.yaml", families=FAMILIES, dtypes=DTYPES)


@pytest.mark.parametrize(
    "text,message",
    [
        ("expected_failures:\n  - {test: validator_dtpye, reason: r}\n", "unknown test 'validator_dtpye'"),
        ("expected_failures:\n  - {family: a9, reason: r}\n", "unknown family 'a9'"),
        ("expected_failures:\n  - {dtype: float8, reason: r}\n", "unknown dtype 'float8'"),
        ("expected_failures:\n  - {op: X, reason: r, colour: red}\n", "unknown key"),
        ("expected_failures:\n  - {op: X}\n", "needs a 'reason'"),
        ("expected_failures:\n  - {op: X, case: [], reason: r}\n", "case is a test-id substring or glob"),
        ("tolerances:\n  - {test: validator_dtype, rtol: 0.1, reason: r}\n", "applies to tests that compare numbers"),
        ("tolerances:\n  - {test: reference, rtol: -1, reason: r}\n", "rtol must be a number >= 0"),
        ("tolerances:\n  - {test: reference, reason: r}\n", "needs rtol or atol"),
    ],
)
def test_a_bad_directive_is_an_error(text, message):
    with pytest.raises(directives.DirectiveError, match=message):
        _parse(text)


def test_case_takes_a_list_or_a_glob():
    table = _parse(
        "expected_failures:\n"
        "  - {op: X, case: [A2-float16, A2-float32], reason: two cases in one entry}\n"
        "  - {op: Y, case: 'A2-*-contiguous', reason: a glob}\n"
    )
    assert table.expected_failure("X", "t", "a2", None, "test_x[A2-float32-bad]")
    assert table.expected_failure("X", "t", "a2", None, "test_x[A2-float16-bad]")
    assert not table.expected_failure("X", "t", "a2", None, "test_x[A2-bfloat16-bad]")
    assert table.expected_failure("Y", "t", "a2", None, "test_y[A2-float16-contiguous]")
    assert not table.expected_failure("Y", "t", "a2", None, "test_y[A3-float16-contiguous]")


def _collect(directives_text: str, tmp_path: Path, *args: str):
    path = tmp_path / "directives.yaml"
    path.write_text(directives_text, encoding="utf-8")
    env = dict(os.environ, ACLNNGEN_DIRECTIVES=str(path))
    env.pop("PYTEST_XDIST_WORKER", None)
    target = REPO / "tests" / "generated" / f"test_{OPS[0]}.py"
    return run_pytest(target, "-q", "-p", "no:cacheprovider", "-o", "addopts=", *args, env=env, cwd=REPO, timeout=600)


def _name(snake: str) -> str:
    return importlib.import_module(f"aclnngen.generated.meta.{snake}").META["name"]


def test_an_unknown_op_stops_the_run(tmp_path):
    result = _collect(
        f"expected_failures:\n  - {{op: {_name(OPS[0])}x, reason: misspelt}}\n", tmp_path, "--collect-only"
    )
    assert result.returncode == 4 and f"unknown op '{_name(OPS[0])}x'" in result.stderr, (
        result.stdout[-1500:] + result.stderr
    )


def test_an_expected_failure_that_matches_nothing_stops_the_run(tmp_path):
    text = f"expected_failures:\n  - {{op: {_name(OPS[0])}, test: reference, case: no-such-case, reason: r}}\n"
    result = _collect(text, tmp_path, "--collect-only")
    assert result.returncode == 4 and "matches no collected test" in result.stderr, (
        result.stdout[-1500:] + result.stderr
    )


def test_one_entry_with_a_case_list_marks_every_listed_case(tmp_path):
    text = (
        f"expected_failures:\n  - {{op: {_name(OPS[0])}, test: validator_dtype, case: [-float16-, -float32-], "
        "reason: pretend these are broken}\n"
    )
    result = _collect(text, tmp_path, "-rf", "-k", "validator_dtype")
    # the cases pass, so each strict expected failure is reported as a failure (XPASS(strict))
    # (a generated test runs a family's dtypes as one item: opcheck.check_group names each case)
    marked = [line for line in result.stdout.splitlines() if "XPASS(strict)" in line]
    assert result.returncode == 1 and marked and "FAILED" in result.stdout, result.stdout[-2000:]
    assert all("-float16-" in line or "-float32-" in line for line in marked), marked
    assert any("-float16-" in line for line in marked) and any("-float32-" in line for line in marked)


def _selection_output():
    for snake in OPS:
        meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
        for py, kind in meta["formula"]["outputs"].items():
            if kind == "selection":
                return snake, meta, py
    pytest.skip("no op has an output judged bit-exact")


def test_a_tolerance_applies_to_an_output_judged_bit_exact_and_the_mismatch_is_exact():
    snake, meta, py = _selection_output()
    reference = importlib.import_module(f"aclnngen.generated.reference.{snake}")
    op = opcheck.OpUnderTest(meta, reference=reference, binding=None, version=_newest_version(meta))
    values = dict(cases.make_values(meta, "contiguous", "float32", version=op.version))
    index = list(meta["formula"]["outputs"]).index(py)
    want = op.run_reference(values)[index]
    ours = want.copy()
    flat = ours.reshape(-1)
    flat[0] = np.nextafter(flat[0], np.float32(np.inf))  # one ULP off
    with pytest.raises(AssertionError) as err:
        opcheck.compare_within_policy(op, values, py, "selection", "float32", ours, want, None)
    text = str(err.value)
    assert (
        f"0x{int(flat[0:1].view(np.uint32)[0]):08x}" in text and "1 ulp apart" in text and repr(float(flat[0])) in text
    )
    loose = directives.Directive(scope=(meta["name"], "reference", None, "float32"), reason="r", atol=1e-3, rtol=0.0)
    opcheck.compare_within_policy(op, values, py, "selection", "float32", ours, want, loose)  # applies: passes
    tight = directives.Directive(scope=(meta["name"], "reference", None, "float32"), reason="r", atol=0.0, rtol=0.0)
    with pytest.raises(AssertionError, match="outside rtol=0, atol=0"):
        opcheck.compare_within_policy(op, values, py, "selection", "float32", ours, want, tight)


def test_the_repository_directives_are_valid():
    table = directives.load(REPO / "tests" / "directives.yaml")
    known = {_name(s) for s in OPS}
    assert all(d.scope[0] in known or d.scope[0] is None for d in table.all())
