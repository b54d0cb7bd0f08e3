"""A pytest plugin for nested runs that check a mechanism, not each op's facts (the external
material's skips in tests/e2e/test_fresh_checkout.py): of the tests parametrized by op it keeps
the first op's, so the nested run does not grow with the catalog. Every test without an op among
its parameters is kept."""

from __future__ import annotations

import re

from nested_selection import keep_only


def _others() -> re.Pattern | None:
    """Any op of the catalog but the first, as a whole word."""
    from aclnngen.generated import OPS  # deferred: the plugin loads before the catalog is needed

    others = list(OPS[1:])
    return (
        re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(map(re.escape, others)) + r")(?![A-Za-z0-9_])") if others else None
    )


def pytest_collection_modifyitems(config, items):
    others = _others()
    if others is None:
        return
    keep_only(config, items, lambda nodeid: "[" not in nodeid or not others.search(nodeid.partition("[")[2]))
