"""Forked runs (tests/forkserver.py) behave as in a fresh interpreter: a nested pytest run as
`python -m pytest`, a command as `aclnngen`, a script as `python -c`; each run's outcomes and
output are its own, nothing one run changes reaches the next, and each takes its folder,
environment and PYTHONPATH from its request."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from forkserver import PER_RUN, run_cli, run_pytest, run_script, server_environment
from repo_paths import REPO

TESTS = """
import os

import numpy
import pytest


def test_passes():
    pass


def test_fails():
    assert 1 == 2


def test_skips():
    pytest.skip("not here")


@pytest.mark.xfail(reason="known", strict=True)
def test_xfails():
    assert False


@pytest.mark.xfail(reason="known", strict=True)
def test_xpasses():
    pass


def test_nothing_of_another_run_is_seen():
    # numpy is imported by the server before it forks: a run's change to it stays in that run
    assert not hasattr(numpy, "_nested_pytest_mark")
    numpy._nested_pytest_mark = True


def test_the_run_has_its_own_folder_environment_and_path():
    import helper_on_the_path

    assert os.getcwd() == os.path.dirname(os.path.dirname(__file__)) and helper_on_the_path.VALUE == 7
    assert os.environ["ACLNNGEN_MUTATION"] == "probe" and "ACLNNGEN_DIRECTIVES" not in os.environ
"""


@pytest.fixture
def suite(tmp_path) -> Path:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_probe.py").write_text(TESTS, encoding="utf-8")
    (tmp_path / "path").mkdir()
    (tmp_path / "path" / "helper_on_the_path.py").write_text("VALUE = 7\n", encoding="utf-8")
    return tmp_path


def _env(suite: Path, monkeypatch) -> dict:
    """This process's environment but for variables a run sets for itself (the server's is the same)."""
    monkeypatch.setenv("ACLNNGEN_DIRECTIVES", "set out here, not in the run")
    env = dict(os.environ, PYTHONPATH=str(suite / "path"), ACLNNGEN_MUTATION="probe")
    del env["ACLNNGEN_DIRECTIVES"]
    return env


def test_a_run_records_each_outcome_apart_from_its_output(suite, monkeypatch):
    env = _env(suite, monkeypatch)
    for _ in range(2):  # the second run would fail test_nothing_of_another_run_is_seen if state leaked
        run = run_pytest("tests", "-q", "-p", "no:cacheprovider", "-rfX", cwd=suite, env=env)
        assert run.returncode == 1, run.stdout + run.stderr
        assert run.outcomes == {
            "tests/test_probe.py::test_passes": "passed",
            "tests/test_probe.py::test_fails": "failed",
            "tests/test_probe.py::test_skips": "skipped",
            "tests/test_probe.py::test_xfails": "xfailed",
            "tests/test_probe.py::test_xpasses": "failed",  # strict: XPASS(strict) fails
            "tests/test_probe.py::test_nothing_of_another_run_is_seen": "passed",
            "tests/test_probe.py::test_the_run_has_its_own_folder_environment_and_path": "passed",
        }, run.stdout
        assert "FAILED tests/test_probe.py::test_fails" in run.stdout and "XPASS(strict)" in run.stdout
        assert "warning" not in run.stdout  # pytest rewrote what it would have: nothing already imported
    selected = run_pytest("tests", "-q", "-p", "no:cacheprovider", "-k", "skips", cwd=suite, env=env)
    assert selected.returncode == 0 and selected.collected == ("tests/test_probe.py::test_skips",)


def test_a_usage_error_is_pytests_exit_code_with_its_message_on_stderr(suite):
    run = run_pytest("tests", "-q", "--no-such-option", cwd=suite)
    assert run.returncode == 4 and "--no-such-option" in run.stderr and run.outcomes == {}


def test_a_run_over_its_time_is_killed(suite):
    (suite / "tests" / "test_probe.py").write_text("import time\n\ndef test_sleeps():\n    time.sleep(30)\n")
    run = run_pytest("tests", "-q", "-p", "no:cacheprovider", cwd=suite, timeout=1)
    assert run.returncode == -signal.SIGALRM and run.outcomes == {}


def test_another_aclnngen_on_the_path_is_refused(tmp_path):
    (tmp_path / "aclnngen").mkdir()
    with pytest.raises(ValueError, match="holds an aclnngen"):
        run_pytest("tests", cwd=REPO, env={"PYTHONPATH": str(tmp_path)})


def test_a_server_is_shared_by_runs_that_differ_only_in_what_a_run_sets():
    base = {"PATH": "/bin", "ACLNNGEN_CACHE_DIR": "/c"}
    per_run = {name: "x" for name in PER_RUN}
    assert server_environment({**base, **per_run}) == server_environment(base) == base
    assert server_environment({**base, "ACLNNGEN_BACKEND": "sim"}) != server_environment(base)


SCRIPT = """
import os, sys
import numpy
import helper_in_the_folder
assert not hasattr(numpy, "_forked_script_mark"), "a change of another run"
numpy._forked_script_mark = True
print(sys.argv[1:], helper_in_the_folder.VALUE, os.environ.get("ACLNNGEN_CACHE_DIR"))
if sys.argv[1] == "raise":
    raise ValueError("from the script")
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize("argv", [["0"], ["3"], ["raise"]])
def test_a_script_ends_as_with_python_c(argv, tmp_path):
    (tmp_path / "helper_in_the_folder.py").write_text("VALUE = 7\n", encoding="utf-8")  # the folder is on the path
    real = subprocess.run([sys.executable, "-c", SCRIPT, *argv], capture_output=True, text=True, cwd=tmp_path)
    for _ in range(2):  # the second run would fail the script's first assert if state leaked
        forked = run_script(SCRIPT, *argv, cwd=tmp_path)
        assert (forked.returncode, forked.stdout) == (real.returncode, real.stdout), forked.stderr
        assert forked.stderr.splitlines()[-1:] == real.stderr.splitlines()[-1:]


def test_a_command_ends_as_from_a_shell_with_the_variables_given(tmp_path):
    bad = tmp_path / "no_such_spec.yaml"
    env = {"ACLNNGEN_CACHE_DIR": str(tmp_path / "cache")}
    real = subprocess.run(
        [sys.executable, "-m", "aclnngen.codegen.cli", "validate", str(bad)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **env},
    )
    forked = run_cli("validate", bad, cwd=tmp_path, env=env)
    assert real.returncode != 0 and (forked.returncode, forked.stdout, forked.stderr) == (
        real.returncode,
        real.stdout,
        real.stderr,
    )
    shown = run_script("import os; print(os.environ['ACLNNGEN_CACHE_DIR'])", cwd=tmp_path)
    assert shown.stdout.strip() == os.environ.get("ACLNNGEN_CACHE_DIR", ""), "a command's variables outlived it"
