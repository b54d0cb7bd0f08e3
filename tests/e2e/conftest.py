"""Fixtures of the end-to-end tests."""

from __future__ import annotations

import os

import pytest


@pytest.fixture(scope="session")
def mypy_cache(tmp_path_factory):
    """One mypy cache folder for the run's type checks (the editable clone's, the wheel's): each
    checks the same script against the same NumPy and standard library, whose analysis a cold
    cache spends most of its ~2 CPU-s on; each install's aclnngen is at a path of its own, so its
    modules are analysed afresh. Under xdist the workers' folders share a parent of this run's; mypy
    replaces its cache files whole, so two checks at once each read a complete one."""
    base = tmp_path_factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "mypy-cache"
    folder.mkdir(exist_ok=True)
    return folder
