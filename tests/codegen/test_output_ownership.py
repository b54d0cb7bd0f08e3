"""Ownership of output: `generate --out DIR` changes only files its manifest says it wrote, never writes
through a symbolic link, and never leaves a partial file (codegen/writer.py)."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import forkserver
import pytest

from aclnngen.codegen import writer
from aclnngen.codegen.errors import GenerateError
from aclnngen.codegen.generate import Output, package_layout, plan, write
from aclnngen.codegen.loader import REPO_ROOT
from repo_paths import CUSTOM_SPECS

SPECS = CUSTOM_SPECS
CLI = [sys.executable, "-m", "aclnngen.codegen.cli"]


def _hashes(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink()
    }


def _generate(out: Path, *extra: str, specs: Path = SPECS):
    """`aclnngen generate` in a process of its own, forked from the test worker's server
    (tests/forkserver.py): what the command leaves on disk is the subject, not its start-up."""
    return forkserver.run_cli("generate", "--specs", specs, "--out", out, *extra, timeout=300)


def _plan(out: Path, specs: Path = SPECS):
    layout = package_layout(out)
    return plan(specs, layout), layout


def _repo_copy(tmp_path: Path) -> Path:
    copy = tmp_path / "repo_copy"
    ignore = shutil.ignore_patterns(
        ".git", ".venv", ".cache*", "__pycache__", ".pytest_cache", ".hypothesis", "*.egg-info"
    )
    shutil.copytree(REPO_ROOT, copy, ignore=ignore, symlinks=True)
    return copy


def test_generate_into_a_copy_of_the_repository_changes_no_file_it_did_not_create(tmp_path):
    copy = _repo_copy(tmp_path)
    before = _hashes(copy)
    refused = _generate(copy)
    assert refused.returncode == 1 and "not empty" in refused.stderr and "--force" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
    assert _hashes(copy) == before, "a refused run wrote something"
    forced = _generate(copy, "--force")
    assert forced.returncode == 0, forced.stderr
    after = _hashes(copy)
    assert {path: after[path] for path in before} == before, "files the generator did not create changed"
    assert "aclnngen-manifest.json" in after and len(after) > len(before)


def test_a_users_file_survives_and_an_edited_generated_file_is_refused(tmp_path):
    out = tmp_path / "pkg"
    outputs, layout = _plan(out)
    write(outputs, out, layout)
    (out / "notes.txt").write_text("mine\n")
    # Regenerating with one op fewer removes that op's files (manifest-owned, unedited), not notes.txt.
    fewer = [o for o in outputs if "scaled_exp_backward" not in o.path]
    _, removed = write(fewer, out, layout)
    assert "ops/scaled_exp_backward.py" in removed and (out / "notes.txt").read_text() == "mine\n"
    write(outputs, out, layout)
    edited = out / "ops" / "sloped_step_backward.py"
    edited.write_text(edited.read_text() + "# my change\n")
    changed = [o if o.path != "ops/sloped_step_backward.py" else Output(o.path, o.content + "# v2\n") for o in outputs]
    before = _hashes(out)
    with pytest.raises(GenerateError, match=r"ops/sloped_step_backward.py \(edited since aclnngen wrote it\).*--force"):
        write(changed, out, layout)
    assert _hashes(out) == before
    write(changed, out, layout, force=True)
    assert edited.read_text().endswith("# v2\n") and (out / "notes.txt").exists()


def test_a_non_empty_folder_without_a_manifest_is_refused(tmp_path):
    out = tmp_path / "pkg"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    outputs, layout = _plan(out)
    with pytest.raises(GenerateError, match="not empty and has no aclnngen-manifest.json"):
        write(outputs, out, layout)
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


@pytest.mark.parametrize("where", ["file", "folder"])
def test_a_symbolic_link_inside_the_folder_is_never_written_through(tmp_path, where):
    out = tmp_path / "pkg"
    outputs, layout = _plan(out)
    write(outputs, out, layout)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "sloped_step_backward.py").write_text("precious\n")
    if where == "file":
        (out / "ops" / "sloped_step_backward.py").unlink()
        (out / "ops" / "sloped_step_backward.py").symlink_to(outside / "sloped_step_backward.py")
    else:
        shutil.rmtree(out / "ops")
        (out / "ops").symlink_to(outside, target_is_directory=True)
    for force in (False, True):
        with pytest.raises(GenerateError, match="symbolic link"):
            write(outputs, out, layout, force=force)
    assert sorted(p.name for p in outside.iterdir()) == ["sloped_step_backward.py"]
    assert (outside / "sloped_step_backward.py").read_text() == "precious\n"


def test_out_naming_a_file_is_one_line(tmp_path):
    target = tmp_path / "pkg"
    target.write_text("a file\n")
    result = _generate(target)
    assert result.returncode == 1 and result.stderr.count("\n") == 1 and "is a file, not a folder" in result.stderr
    assert target.read_text() == "a file\n"


def test_a_failing_rename_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    out = tmp_path / "pkg"
    outputs, layout = _plan(out)
    write(outputs, out, layout)
    old = _hashes(out)
    changed = [Output(o.path, o.content + "# v2\n") if o.path.endswith(".py") else o for o in outputs]

    def failing_replace(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(writer.os, "replace", failing_replace)
    with pytest.raises(OSError):
        write(changed, out, layout)
    assert _hashes(out) == old, "a failed write changed a file"
    assert not [p for p in out.rglob("*") if ".aclnngen-tmp-" in p.name]


def test_sigkill_mid_generate_leaves_old_or_new_files_never_partial(tmp_path):
    out = tmp_path / "pkg"
    assert _generate(out).returncode == 0
    old = {p: (out / p).read_bytes() for p in _hashes(out)}
    specs = tmp_path / "specs"
    shutil.copytree(SPECS, specs)
    for path in (specs / "ops").glob("*.yaml"):  # every generated file changes
        path.write_text(path.read_text().replace("summary: ", "summary: Changed. ", 1))
    # Kill the generator (SIGKILL, no clean-up possible) in the middle of its third file write.
    script = (
        "import os, signal, sys\n"
        "from aclnngen.codegen import writer, cli\n"
        "real, calls = os.fsync, []\n"
        "def fsync(fd):\n"
        "    calls.append(fd)\n"
        "    if len(calls) == 3: os.kill(os.getpid(), signal.SIGKILL)\n"
        "    real(fd)\n"
        "writer.os.fsync = fsync\n"
        f"sys.exit(cli.main(['generate', '--specs', {str(specs)!r}, '--out', {str(out)!r}]))\n"
    )
    killed = forkserver.run_script(script)
    assert killed.returncode == -9, killed.stderr
    new = {o.path: o.content.encode() for o in _plan(out, specs)[0]}
    manifest = "aclnngen-manifest.json"
    for rel, content in old.items():
        now = (out / rel).read_bytes()
        assert now, f"{rel} is empty"
        if rel == manifest and now not in (content, new.get(rel)):  # or the run's intent: old files, new pending
            intent = writer.Manifest.parse(now, rel)
            assert intent.files == writer.Manifest.parse(content, rel).files and intent.pending
            continue
        assert now in (content, new.get(rel)), f"{rel} is neither the old nor the new file"
    again = _generate(out, specs=specs)  # the next run finishes the job (the files are still the generator's)
    assert again.returncode == 0, again.stderr
    assert {rel: (out / rel).read_bytes() for rel in new} == new
    assert not [p for p in out.rglob("*") if ".aclnngen-tmp-" in p.name]


def test_a_killed_generate_then_a_reverted_input_is_recognised_as_aclnngen_s_own(tmp_path):
    out = tmp_path / "pkg"
    assert _generate(out).returncode == 0
    old = {p: (out / p).read_bytes() for p in _hashes(out)}
    specs = tmp_path / "specs"
    shutil.copytree(SPECS, specs)
    for path in (specs / "ops").glob("*.yaml"):
        path.write_text(path.read_text().replace("summary: ", "summary: Changed. ", 1))
    script = (
        "import os, signal, sys\n"
        "from aclnngen.codegen import writer, cli\n"
        "real, calls = os.fsync, []\n"
        "def fsync(fd):\n"
        "    calls.append(fd)\n"
        "    if len(calls) == 4: os.kill(os.getpid(), signal.SIGKILL)\n"
        "    real(fd)\n"
        "writer.os.fsync = fsync\n"
        f"sys.exit(cli.main(['generate', '--specs', {str(specs)!r}, '--out', {str(out)!r}]))\n"
    )
    killed = forkserver.run_script(script)
    assert killed.returncode == -9, killed.stderr
    assert any((out / rel).read_bytes() != content for rel, content in old.items()), (
        "the kill came before any file changed"
    )
    # the person reverts the input: the half-written new files are still the generator's
    reverted = _generate(out)
    assert reverted.returncode == 0, reverted.stderr
    assert {rel: (out / rel).read_bytes() for rel in old} == old


def test_two_generates_into_one_folder_take_turns(tmp_path):
    out = tmp_path / "pkg"
    runs = [
        subprocess.Popen(
            [*CLI, "generate", "--specs", str(SPECS), "--out", str(out)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    results = [(r.wait(300), r.stderr.read()) for r in runs]
    assert all(code == 0 for code, _ in results), results
    expected = {o.path: o.content.encode() for o in _plan(out)[0]}
    assert {rel: (out / rel).read_bytes() for rel in expected} == expected
    again = _generate(out)
    assert again.returncode == 0 and "refusing" not in again.stderr
