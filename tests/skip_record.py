"""A pytest plugin for nested runs: `--skip-record=FILE` writes each skipped test's node id and
reason as JSON, so a second run can take exactly those tests (tests/e2e/test_fresh_checkout.py
runs the external material's tests without it, then only the ones that skipped, as CI would)."""

from __future__ import annotations

import json
from pathlib import Path

_SKIPPED: dict[str, str] = {}


def pytest_addoption(parser):
    parser.addoption("--skip-record", required=True, help="the JSON file the skipped tests are written to")


def pytest_runtest_logreport(report):
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _SKIPPED[report.nodeid] = str(reason)


def pytest_sessionfinish(session):
    Path(session.config.getoption("--skip-record")).write_text(json.dumps(_SKIPPED, indent=1), encoding="utf-8")
