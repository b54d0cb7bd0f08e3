"""Rules of the hand-written test suite itself, read from its source with `ast`: every `slow` mark
says why the test is slow (`pytest.mark.slow(reason="...")`), and every test module sits in the
folder of a package (docs/architecture.md, "The tests"), not at the top of tests/."""

from __future__ import annotations

import ast

import pytest

from repo_paths import TESTS, hand_written_tests

FOLDERS = {"core", "codegen", "evaluate", "runtime", "sim", "verify", "audit", "cli", "e2e"}


def _slow_marks(tree: ast.AST):
    """Every `pytest.mark.slow` or `pytest.mark.slow(...)` in a module, with its call if it has one."""
    calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "slow" and ast.unparse(node.value) == "pytest.mark":
            yield node, calls.get(id(node))


def unexplained_slow_marks(source: str) -> list[int]:
    """Lines of `slow` marks without a non-empty `reason=` string."""
    lines = []
    for mark, call in _slow_marks(ast.parse(source)):
        reason = next((k.value for k in call.keywords if k.arg == "reason"), None) if call else None
        if not (isinstance(reason, ast.Constant) and isinstance(reason.value, str) and reason.value.strip()):
            lines.append(mark.lineno)
    return lines


def test_a_slow_mark_without_a_reason_is_found():
    assert unexplained_slow_marks("import pytest\npytestmark = pytest.mark.slow\n") == [2]
    assert unexplained_slow_marks("import pytest\n@pytest.mark.slow(reason='')\ndef test_x(): pass\n") == [2]
    assert unexplained_slow_marks("import pytest\n@pytest.mark.slow(reason='a venv')\ndef test_x(): pass\n") == []


def test_every_slow_mark_says_why():
    found = {
        path.relative_to(TESTS).as_posix(): lines
        for path in hand_written_tests()
        if (lines := unexplained_slow_marks(path.read_text(encoding="utf-8")))
    }
    assert found == {}, f"pytest.mark.slow(reason=...) wanted at {found}"


def test_every_test_module_sits_in_a_package_folder():
    misplaced = [
        p.relative_to(TESTS).as_posix() for p in hand_written_tests() if p.relative_to(TESTS).parts[0] not in FOLDERS
    ]
    assert misplaced == []
    assert {p.relative_to(TESTS).parts[0] for p in hand_written_tests()} == FOLDERS


def test_a_property_no_op_of_the_catalog_has_is_a_clear_error():
    import catalog

    assert catalog.is_plain(catalog.meta(catalog.PLAIN))
    with pytest.raises(LookupError, match="no op of the catalog is an op with nine outputs: add a spec"):
        catalog.an_op("an op with nine outputs", lambda m: len(m["outputs"]) == 9)
