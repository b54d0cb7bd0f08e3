"""runtime/callplan.py keeps its C helper's source in the user's cache (`callplan/`), written once:
a process's first call neither makes a temporary folder nor writes the file again, and the build
key (which names the file by its folder's place and its name) is the same wherever it is."""

from __future__ import annotations

import os

from aclnngen.runtime import callplan


def test_the_source_is_written_once_into_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ACLNNGEN_CACHE_DIR", str(tmp_path))
    os.chmod(tmp_path, 0o700)
    path = callplan._source("pdq")
    assert path == tmp_path / "callplan" / "call_pdq.c"
    assert path.read_text(encoding="utf-8") == callplan.trampoline_source("pdq")
    assert (path.parent.stat().st_mode & 0o777) == 0o700
    before = path.stat()
    assert callplan._source("pdq") == path
    after = path.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)  # found, not rewritten


def test_a_changed_source_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setenv("ACLNNGEN_CACHE_DIR", str(tmp_path))
    os.chmod(tmp_path, 0o700)
    path = callplan._source("pp")
    path.write_text("/* stale */\n", encoding="utf-8")
    assert callplan._source("pp").read_text(encoding="utf-8") == callplan.trampoline_source("pp")
