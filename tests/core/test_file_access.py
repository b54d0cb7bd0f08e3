"""Every file aclnngen reads or writes goes through aclnngen/files.py: bounded regular files in,
atomic writes out (never through a link, never a rewrite that changes nothing), one writer at a
time per target. Here the module itself, then the importer's spec merge and drafts on it."""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from aclnngen import files
from aclnngen.codegen.importer.draft import build_draft
from aclnngen.codegen.importer.pages import read_page
from aclnngen.codegen.loader import load_products
from repo_paths import PAGES

CLI = [sys.executable, "-m", "aclnngen.codegen.cli"]
PRODUCTS = load_products()


def test_a_write_that_changes_nothing_does_not_rewrite(tmp_path):
    target = tmp_path / "f.txt"
    assert files.write_atomic(target, "one\n") is True
    before = os.stat(target)
    time.sleep(0.01)
    assert files.write_atomic(target, "one\n") is False
    after = os.stat(target)
    assert (before.st_ino, before.st_mtime_ns) == (after.st_ino, after.st_mtime_ns)
    assert files.write_atomic(target, "two\n") is True and target.read_text() == "two\n"


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    target = tmp_path / "spec.yaml"
    target.write_text("old\n")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt  # as a kill between the temporary's write and the rename

    monkeypatch.setattr(files.os, "replace", killed)
    with pytest.raises(KeyboardInterrupt):
        files.write_atomic(target, "new\n")
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["spec.yaml"]


def test_no_write_goes_through_a_link(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = tmp_path / "folder"
    folder.mkdir()
    (folder / "dangling.yaml").symlink_to(outside / "written-through.yaml")
    (folder / "live.yaml").symlink_to(outside / "victim.yaml")
    (outside / "victim.yaml").write_text("keep\n")
    for name in ("dangling.yaml", "live.yaml"):
        with pytest.raises(files.FileError, match="symbolic link"):
            files.write_atomic(folder / name, "payload\n")
    assert (
        sorted(p.name for p in outside.iterdir()) == ["victim.yaml"]
        and (outside / "victim.yaml").read_text() == "keep\n"
    )


@pytest.mark.parametrize(
    "make, kind",
    [
        (lambda p: os.mkfifo(p), "FIFO"),
        (lambda p: p.mkdir(), "directory"),
        (None, "character device"),
    ],
)
def test_special_files_are_refused_by_what_they_are_without_reading(tmp_path, make, kind):
    path = Path("/dev/zero") if make is None else tmp_path / "thing"
    if make is not None:
        make(path)
    started = time.monotonic()
    with pytest.raises(files.FileError, match=kind):
        files.read_regular(path, what="page")
    assert time.monotonic() - started < 1.0


def test_a_file_over_the_limit_is_refused(tmp_path):
    big = tmp_path / "big"
    big.write_bytes(b"x" * 101)
    with pytest.raises(files.FileError, match="over the 100-byte limit|101 bytes"):
        files.read_regular(big, limit=100)
    assert files.read_regular(big, limit=101) == b"x" * 101


def _add_one(path: str, times: int) -> None:
    for _ in range(times):
        with files.locked(path, what="counter"):
            value = int(files.read_regular(path))
            time.sleep(0.001)  # widen the window a lost update needs
            files.write_atomic(path, str(value + 1))


def test_the_lock_serialises_read_modify_write_across_processes(tmp_path):
    counter = tmp_path / "counter"
    counter.write_text("0")
    context = multiprocessing.get_context("spawn")
    workers = [context.Process(target=_add_one, args=(str(counter), 25)) for _ in range(3)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(120)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    assert counter.read_text() == "75"  # no update lost, though each replaces the file it locked


def test_a_held_lock_times_out_naming_the_target(tmp_path, monkeypatch):
    target = tmp_path / "spec.yaml"
    target.write_text("x")
    monkeypatch.setenv(files.LOCK_TIMEOUT_ENV, "0.3")
    with files.locked(target, what="spec"):
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                f"from aclnngen import files\nwith files.locked({str(target)!r}, what='spec'): pass",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ),
        )
    assert (
        done.returncode != 0 and "another aclnngen run has held the spec" in done.stderr and str(target) in done.stderr
    )
    assert "waiting for" in done.stderr


# -- the importer on it ----------------------------------------------------------------------------


def _spec_from(page: str, release: str) -> str:
    """A finished spec (valid) of a test page, as a person would write it."""
    draft = build_draft(read_page(PAGES / page, PRODUCTS, release), PRODUCTS)
    draft.pop("todo")
    draft["summary"] = "A demo op."
    for param in draft["parameters"]:
        param["summary"] = "A demo parameter."
    draft["formula"]["outputs"] = {"out": "grad_output * alpha"}
    draft["oracle"] = {"kind": "recipe", "recipe": "demo", "args": ["grad_output", "alpha"], "outputs": ["out"]}
    return "# written by a person\n" + yaml.safe_dump(json.loads(json.dumps(draft)), sort_keys=False)


def _merge(spec: Path, page: str = "table_variant.md", **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*CLI, "import", "--into", str(spec), "--release", "v8.5.0", str(PAGES / page)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_a_merge_that_changes_nothing_leaves_the_spec_untouched(tmp_path):
    spec = tmp_path / "demo_backward.yaml"
    spec.write_text(_spec_from("table_variant.md", "8.5.0"))
    _merge(spec)  # the first merge may lay the file out as the merge writes specs
    before = os.stat(spec)
    time.sleep(0.01)
    result = _merge(spec)
    assert "0 change(s)" in result.stdout, result.stdout + result.stderr
    after = os.stat(spec)
    assert (before.st_ino, before.st_mtime_ns, before.st_size) == (after.st_ino, after.st_mtime_ns, after.st_size)


def test_a_merge_waits_for_the_spec_s_lock(tmp_path):
    spec = tmp_path / "demo_backward.yaml"
    text = _spec_from("table_variant.md", "8.5.0")
    spec.write_text(text)
    with files.locked(spec, what="spec"):
        result = _merge(spec, **{files.LOCK_TIMEOUT_ENV: "0.5"})
    assert result.returncode == 1 and "another aclnngen run has held the spec" in result.stderr, (
        result.stdout + result.stderr
    )
    assert "Traceback" not in result.stderr and spec.read_text() == text


def test_an_alias_bomb_in_a_spec_to_merge_into_is_refused_unexpanded(tmp_path):
    spec = tmp_path / "demo_backward.yaml"
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"] + [
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 9)
    ]
    spec.write_text("\n".join(lines) + "\n")
    size = spec.stat().st_size
    started = time.monotonic()
    result = _merge(spec)
    assert time.monotonic() - started < 30
    assert result.returncode == 1 and "anchors and aliases" in result.stderr, result.stdout + result.stderr
    assert spec.stat().st_size == size


def test_a_draft_is_never_written_through_a_link_in_the_output_folder(aclnngen_cli, tmp_path):
    out, outside = tmp_path / "drafts", tmp_path / "outside"
    out.mkdir()
    outside.mkdir()
    first = aclnngen_cli("import", str(PAGES / "table_variant.md"), "-o", str(out), timeout=120)
    assert first.returncode == 0, first.stdout + first.stderr
    (written,) = out.iterdir()
    written.unlink()
    written.symlink_to(outside / "escaped.yaml")  # dangling: a write through it lands outside
    again = aclnngen_cli("import", str(PAGES / "table_variant.md"), "-o", str(out), timeout=120)
    assert again.returncode != 0 and "symbolic link" in again.stderr, again.stdout + again.stderr
    assert list(outside.iterdir()) == []
