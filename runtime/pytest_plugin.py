"""pytest plugin (registered through the `pytest11` entry point): applies tests/directives.yaml.

Generated tests mark each case with `aclnngen_case(op, test, family, dtype, package)` (an op is
its package and its name: the repository's directives never apply to a custom package's op of the
same name). An expected failure
that matches becomes a strict xfail, so a case that starts passing is reported as XPASS(strict), a
failure that tells someone to drop the directive.
"""

from __future__ import annotations

import pytest

from . import directives


def pytest_configure(config):
    config.addinivalue_line("markers", "aclnngen_case(op, test, family, dtype, package): a generated test case, for directives")
    config.addinivalue_line("markers", "needs_runtime: calls the C library through the runtime")
    config.addinivalue_line("markers", "needs_torch: uses PyTorch on the CPU as the oracle")


def pytest_collection_modifyitems(config, items):
    table = directives.load()
    for item in items:
        marker = item.get_closest_marker("aclnngen_case")
        if marker is None:
            continue
        k = marker.kwargs
        found = table.expected_failure(
            k.get("op"), k.get("test"), k.get("family"), k.get("dtype"), item.nodeid, package=k.get("package")
        )
        if found is not None:
            item.add_marker(pytest.mark.xfail(strict=True, reason=found.reason))
