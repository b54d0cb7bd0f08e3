"""A pytest plugin for the nested run of tests/e2e/test_fresh_checkout.py: in a copy of the checkout
with one op added, it keeps what a new op can change and records the selection for the outer test.

Kept: the tests parametrized by the new op (every catalog-wide test is parametrized by op, so each
takes it), the new op's generated tests, and the unparametrized tests of the whole-checkout command
modules. The tests parametrized by another op or by anything else, and the mechanisms the
unparametrized tests check, are the repository's own, unchanged by a new spec: the main suite runs
them. Selecting in the run's own collection spares a second collection of every module.
"""

from __future__ import annotations

import json
from pathlib import Path

# Modules whose unparametrized tests run whole-checkout commands over every op (the command line,
# the README's promises): they see a new op as a user does.
WHOLE_CHECKOUT = ("tests/cli/test_cli.py", "tests/e2e/test_readme.py")


def selected(nodeid: str, new: str) -> bool:
    return new in nodeid or ("[" not in nodeid and nodeid.split("::", 1)[0] in WHOLE_CHECKOUT)


def pytest_addoption(parser):
    parser.addoption("--new-op", required=True, help="the op added to the copy (its spec's stem)")
    parser.addoption("--selection-record", required=True, help="the JSON file the selection is written to")


def keep_only(config, items, keep) -> None:
    """Deselects (as pytest reports it) every item `keep(nodeid)` refuses; for the nested runs'
    plugins (this one and tests/one_op_selection.py)."""
    dropped = [i for i in items if not keep(i.nodeid)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [i for i in items if keep(i.nodeid)]


def pytest_collection_modifyitems(config, items):
    new = config.getoption("--new-op")
    collected = len(items)
    keep_only(config, items, lambda nodeid: selected(nodeid, new))
    Path(config.getoption("--selection-record")).write_text(
        json.dumps({"collected": collected, "selected": [i.nodeid for i in items]}), encoding="utf-8"
    )
