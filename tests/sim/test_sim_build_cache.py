"""Attacks that held when issue 21 was filed, kept held: a cache setting that names no usable folder,
and several processes building the simulator into one cold cache at once."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from aclnngen.codegen.loader import DEFAULT_SPECS_DIR
from aclnngen.generated import OPS
from forkserver import run_cli

CLI = [sys.executable, "-m", "aclnngen.codegen.cli"]
# What these tests attack is the cache, which the simulator's build fills for every op: one op's
# run shows the build worked, without the run growing with the catalog.
ONE_OP = ("--ops", OPS[0])


def _run(cache: str, *args: str, cwd=None) -> subprocess.CompletedProcess:
    env = {**os.environ, "ACLNNGEN_CACHE_DIR": cache, "ACLNNGEN_BACKEND": "sim"}
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=600, env=env, cwd=cwd)


@pytest.mark.parametrize("where", ["a file", "/dev/null"])
def test_a_cache_setting_naming_no_folder_still_runs(tmp_path, where):
    # forked from a warm server (the variable is read when a command uses the cache, not at import)
    cache = str(tmp_path / "afile") if where == "a file" else where
    if where == "a file":
        (tmp_path / "afile").write_text("mine\n")
    env = {"ACLNNGEN_CACHE_DIR": cache, "ACLNNGEN_BACKEND": "sim"}
    done = run_cli("run", "--one-dtype", *ONE_OP, env=env)
    assert done.returncode == 0 and "0 failed" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    # the generator's cache too: a package of that one op generated, then checked
    specs, out = tmp_path / "specs", tmp_path / "out" / "one_op"
    (specs / "ops").mkdir(parents=True)
    shutil.copy2(DEFAULT_SPECS_DIR / "ops" / f"{OPS[0]}.yaml", specs / "ops")
    for command in ("generate", "check"):
        done = run_cli(command, "--specs", specs, "--out", out, env=env)
        assert done.returncode == 0 and "Traceback" not in done.stderr, (command, done.stdout + done.stderr)
    if where == "a file":
        assert (tmp_path / "afile").read_text() == "mine\n"


def test_a_cache_setting_naming_proc_self_is_one_line():
    done = _run("/proc/self", "run", "--one-dtype", *ONE_OP)
    assert "Traceback" not in done.stderr
    if done.returncode != 0:  # refused: one line naming the folder
        assert len(done.stderr.strip().splitlines()) == 1 and "/proc/self" in done.stderr, done.stderr


def test_four_cold_cache_builds_at_once_all_succeed(tmp_path):
    env = {**os.environ, "ACLNNGEN_CACHE_DIR": str(tmp_path / "cache"), "ACLNNGEN_BACKEND": "sim"}
    runs = [
        subprocess.Popen(
            [*CLI, "run", "--one-dtype", *ONE_OP], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
        )
        for _ in range(4)
    ]
    results = [(r.wait(600), r.stdout.read(), r.stderr.read()) for r in runs]
    for code, out, err in results:
        assert code == 0 and "0 failed" in out, out[-1500:] + err[-1500:]
    builds = [p for p in (tmp_path / "cache" / "sim").iterdir() if p.is_dir()]
    assert builds and not [p for b in builds for p in b.iterdir() if p.name.startswith(".tmp")]
