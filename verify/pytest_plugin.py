"""pytest plugin (registered through the `pytest11` entry point): applies the test directives.

Generated tests mark each case with `aclnngen_case(op, test, family, dtype)`. Each test file's
directives are the `directives.yaml` near it (verify/directives.py). An expected failure that
matches becomes a strict xfail, so a case that starts passing is reported as XPASS(strict), a
failure that tells someone to drop the directive. A directive that names an op no generated test
of its folder tests, or an expected failure that matches no collected test, stops the run with a
usage error instead of being ignored.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import directives

#: per grouped item (opcheck.check_group), the expected failure of each of its cases by case id
EXPECTED = pytest.StashKey[dict]()


def pytest_configure(config):
    config.addinivalue_line("markers", "aclnngen_case(op, test, family, dtype): a generated test case, for directives")
    config.addinivalue_line("markers", "needs_runtime: calls the C library through the runtime")
    config.addinivalue_line("markers", "needs_torch: uses PyTorch on the CPU as the oracle")


def _tested_ops(path: Path) -> set[str]:
    """Snake names of the ops whose generated tests (test_<op>.py) live beside the directives or in
    their generated/ subfolder (a bounded look: the file may be anywhere via $ACLNNGEN_DIRECTIVES)."""
    found = [*path.parent.glob("test_*.py"), *path.parent.glob("generated/test_*.py")]
    return {p.stem.removeprefix("test_") for p in found}


def _selected_by_node_id(config) -> bool:
    return any("::" in str(arg) for arg in config.args)


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection: every collected case counts
def pytest_collection_modifyitems(config, items):
    groups: dict[Path, list] = {}
    for item in items:
        marker = item.get_closest_marker("aclnngen_case")
        if marker is None:
            continue
        path = directives.near(item.path)
        if path is not None:
            groups.setdefault(path, []).append((item, marker.kwargs))
    for path, group in groups.items():
        try:
            table = directives.load(path)
            _check(table, path, group, config)
        except directives.DirectiveError as exc:
            raise pytest.UsageError(str(exc)) from None
        for item, k in group:
            if "cases" in k:  # a grouped item: each case is judged in the test (opcheck.check_group)
                item.stash[EXPECTED] = {
                    case_id: found
                    for case_id, dtype, node_id in _cases(item, k)
                    if (found := table.expected_failure(k.get("op"), k.get("test"), k.get("family"), dtype, node_id))
                }
                continue
            found = table.expected_failure(k.get("op"), k.get("test"), k.get("family"), k.get("dtype"), item.nodeid)
            if found is not None:
                item.add_marker(pytest.mark.xfail(strict=True, reason=found.reason))


def _cases(item, k) -> list[tuple[str, str, str]]:
    """The cases of an item: (case id, dtype, the node id the case would have on its own), so a
    directive's `case` pattern matches a grouped case as it matched the case's own item."""
    if "cases" not in k:
        return [("", k.get("dtype"), item.nodeid)]
    base = item.nodeid.partition("[")[0]
    return [(case_id, dtype, f"{base}[{case_id}]") for case_id, dtype in k["cases"]]


def _check(table: directives.Directives, path: Path, group, config) -> None:
    collected_ops = {k.get("op") for _, k in group}
    tested = _tested_ops(path)
    for d in table.all():
        op = d.scope[0]
        if op is not None and op not in collected_ops and directives.snake(op) not in tested:
            known = sorted(collected_ops)
            raise directives.DirectiveError(
                f"{d.where}: unknown op {op!r}; the tests near {path} test {', '.join(known)}"
            )
    if _selected_by_node_id(config):
        return  # single tests were asked for: the others' directives cannot match
    for d in table.expected_failures:
        if d.scope[0] is not None and d.scope[0] not in collected_ops:
            continue  # that op's tests were not collected in this run
        if not any(
            d.matches(k.get("op"), k.get("test"), k.get("family"), dtype, node_id)
            for item, k in group
            for _, dtype, node_id in _cases(item, k)
        ):
            case = f", case {list(d.case)}" if d.case else ""
            raise directives.DirectiveError(
                f"{d.where}: matches no collected test (op {d.scope[0]}, test {d.scope[1]}, family {d.scope[2]}, "
                f"dtype {d.scope[3]}{case}); fix or drop it"
            )
