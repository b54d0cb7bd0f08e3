"""A grouped generated test (opcheck.check_group) judges each of its cases as pytest judged them
one item each: every case runs, a failure names its case, a case a directive expects to fail must
fail, and one that passes is reported as XPASS(strict)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from _pytest.outcomes import Failed, XFailed

from aclnngen.verify import opcheck
from aclnngen.verify.pytest_plugin import EXPECTED

CASES = [("A2-float16-ok", "float16", "ok"), ("A2-float32-broken", "float32", "broken"), ("A2-int8-ok", "int8", "ok")]


def _node(expected: dict) -> SimpleNamespace:
    stash = pytest.Stash()
    stash[EXPECTED] = expected
    return SimpleNamespace(stash=stash)


def _check(ran: list):
    def check(op, family, how):
        ran.append((family, how))
        if how == "broken":
            raise AssertionError("outputs differ")

    return check


def _expect(reason: str) -> SimpleNamespace:
    return SimpleNamespace(reason=reason)


def test_every_case_runs_and_a_failure_names_its_case():
    ran = []
    with pytest.raises(Failed) as failed:
        opcheck.check_group(None, _node({}), _check(ran), "a2", CASES)
    assert ran == [("a2", "ok"), ("a2", "broken"), ("a2", "ok")]
    assert "1 of 3 cases failed" in str(failed.value) and "[A2-float32-broken] AssertionError: outputs differ" in str(
        failed.value
    )
    assert "A2-float16-ok" not in str(failed.value)


def test_an_expected_failure_that_fails_makes_the_test_an_xfail():
    with pytest.raises(XFailed, match=r"\[A2-float32-broken\] known defect"):
        opcheck.check_group(None, _node({"A2-float32-broken": _expect("known defect")}), _check([]), "a2", CASES)


def test_an_expected_failure_that_passes_is_reported_beside_real_failures():
    expected = {"A2-int8-ok": _expect("pretend int8 is broken")}
    with pytest.raises(Failed) as failed:
        opcheck.check_group(None, _node(expected), _check([]), "a2", CASES)
    message = str(failed.value)
    assert "2 of 3 cases failed" in message
    assert "[A2-int8-ok] XPASS(strict): pretend int8 is broken" in message and "[A2-float32-broken]" in message


def test_all_cases_passing_passes():
    opcheck.check_group(None, _node({}), _check([]), "a2", [c for c in CASES if c[2] == "ok"])
