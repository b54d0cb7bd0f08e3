"""Rules of the hand-written test suite itself, read from its source with `ast`: every `slow` mark
says why the test is slow (`pytest.mark.slow(reason="...")`), and every test module sits in the
folder of a package (docs/architecture.md, "The tests"), not at the top of tests/."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

from repo_paths import REPO, TESTS, hand_written_tests

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


# --- built-in ops in hand-written tests ---------------------------------------------------------
#
# A hand-written test picks the op it needs by property (tests/catalog.py) or writes a made-up spec
# (tests/data), so a changed spec moves it to another op instead of breaking it. A test of a fact
# recorded for one op says so in its name: the op's short name (`swish` for swish_backward) or
# `recorded_fact`; so does a module-level helper or table naming one (`RECORDED_FACTS = ...`), or its module.

RECORDED = "recorded_fact"


def built_in_ops(specs: Path = REPO / "specs" / "ops") -> dict[str, str]:
    """Each built-in op's names (snake file stem, CamelCase spec name) -> its short name."""
    names = {}
    for path in sorted(specs.glob("*.yaml")):
        short = path.stem.replace("_backward", "")
        names[path.stem] = short
        found = re.search(r"^name:\s*(\w+)\s*$", path.read_text(encoding="utf-8"), re.M)
        if found:
            names[found.group(1)] = short
    return names


def op_mentions(source: str, ops: dict[str, str]) -> set[str]:
    """The short names of the built-in ops a piece of source names (aten's ops of the same name,
    written `aten.x`, are torch's, not ours)."""
    return {ops[m.group(1)] for m in _mentions_pattern(tuple(sorted(ops))).finditer(source)}


@functools.lru_cache(maxsize=8)
def _mentions_pattern(names: tuple[str, ...]) -> re.Pattern:
    words = "|".join(sorted(map(re.escape, names), key=len, reverse=True))
    return re.compile(rf"(?<![\w.])(?:aclnn)?({words})(?!\w)")


def _statement_names(node: ast.stmt) -> str:
    """What a module-level statement is called: a function's or class's name, an assignment's targets."""
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name
    targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
    return " ".join(ast.unparse(t) for t in targets if t is not None)


def unnamed_op_mentions(source: str, module: str, ops: dict[str, str]) -> list[str]:
    """`name: op` for each test (or module-level statement) naming a built-in op that neither it nor
    its module carries in its name."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    found = []
    nodes = [n for n in tree.body if not isinstance(n, ast.ClassDef)]
    nodes += [m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body]
    for node in nodes:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a docstring
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        text = "".join(lines[first - 1 : node.end_lineno])  # the statement and its decorators
        is_test = isinstance(node, ast.FunctionDef) and node.name.startswith("test_")
        owner = node.name if is_test else f"{module} {_statement_names(node)}"
        for short in sorted(op_mentions(text, ops)):
            if not (RECORDED in owner.lower() or short in owner.lower()):
                found.append(f"{node.name if is_test else f'{module}:{node.lineno}'}: {short}")
    return found


def test_a_test_naming_a_built_in_op_it_does_not_say_is_found():
    ops = {"demo_backward": "demo", "DemoBackward": "demo"}
    source = (
        "X = 'demo_backward'\n"
        "RECORDED_FACTS = {'DemoBackward': 1}\n"
        "def test_any(): f('aclnnDemoBackward')\n"
        "def test_demo_fact(): f('DemoBackward')\n"
        "def test_recorded_fact_of_one(): f('demo_backward')\n"
        "def test_aten(): torch.ops.aten.demo_backward\n"
    )
    assert unnamed_op_mentions(source, "test_m", ops) == ["test_m:1: demo", "test_any: demo"]


def test_no_hand_written_test_names_a_built_in_op_without_saying_so():
    ops = built_in_ops()
    assert ops, "no built-in spec found"
    found = [
        f"{path.relative_to(TESTS).as_posix()}: {what}"
        for path in hand_written_tests()
        for what in unnamed_op_mentions(path.read_text(encoding="utf-8"), path.stem, ops)
    ]
    assert found == [], "pick the op by property (tests/catalog.py) or say the op in the test's name:\n" + "\n".join(
        found
    )


def test_a_renamed_copy_of_an_op_adds_no_representative():
    import copy

    import catalog

    original = catalog.meta(catalog.PLAIN)
    renamed = copy.deepcopy(original)
    renamed |= {"name": "CopyBackward", "snake": "copy_backward", "symbol": "aclnnCopyBackward"}
    renamed["cdef"] = original["cdef"].replace(original["symbol"], "aclnnCopyBackward")
    assert catalog.structure(renamed) == catalog.structure(original)
    changed = copy.deepcopy(original)
    changed["params"][0]["dtypes"] = changed["params"][0]["dtypes"][:1]
    assert catalog.structure(changed) != catalog.structure(original)
    assert catalog.PLAIN in catalog.representatives()
