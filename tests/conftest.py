"""Shared fixtures. `tests/` is on sys.path (pytest's rootdir-relative import), so helper modules
such as tests/fakecann.py import by name."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def fake_cann_homes(tmp_path_factory):
    """Fake CANN installs (tests/fakecann.py LAYOUTS): layout name -> ASCEND_HOME_PATH."""
    import fakecann

    return fakecann.make_installs(tmp_path_factory.mktemp("fake-cann"))
