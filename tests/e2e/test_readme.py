"""The README is what a new user follows: every setting the code or a test reads is in it, and
.ci/run runs its two commands in a fresh venv, as a user does, so CI cannot pass where they fail."""

from __future__ import annotations

import re
import subprocess
from repo_paths import REPO

README = (REPO / "README.md").read_text(encoding="utf-8")
CI = (REPO / ".ci" / "run").read_text(encoding="utf-8")
SETTING = re.compile(r"\bACLNNGEN_[A-Z0-9_]*[A-Z0-9]\b")
# the hand-written Python a user or a test runs: the packages, the tests and their helpers
SOURCES = ("aclnngen", "buildsys", "codegen", "runtime", "evaluate", "verify", "audit", "tests", "benchmarks")


def _named_settings() -> dict[str, str]:
    found: dict[str, str] = {}
    for folder in SOURCES:
        for path in sorted((REPO / folder).rglob("*.py")):
            if "generated" in path.relative_to(REPO).parts[:2]:
                continue
            for name in SETTING.findall(path.read_text(encoding="utf-8")):
                found.setdefault(name, path.relative_to(REPO).as_posix())
    return found


def test_every_setting_the_code_or_a_test_reads_is_in_the_readme():
    named = _named_settings()
    assert "ACLNNGEN_BACKEND" in named  # the scan finds what it is looking for
    missing = {name: where for name, where in named.items() if f"`{name}" not in README}
    assert not missing, f"settings the README never mentions (name: first file naming it): {missing}"


def _readme_commands() -> list[str]:
    awk = r'/^```sh$/ {on = 1; next} on && /^```$/ {exit} on {sub(/[ \t]+#.*$/, ""); if (NF) print}'
    assert awk in CI, ".ci/run no longer reads the README's commands the way this test does"
    done = subprocess.run(["awk", awk, str(REPO / "README.md")], capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_ci_runs_the_readme_commands_in_a_fresh_venv():
    commands = _readme_commands()
    assert len(commands) == 2 and "pip install" in commands[0] and "pytest" in commands[1], commands
    venv = CI.index("python3 -m venv")
    activated = CI.index('. "$venv/bin/activate"')
    first_pip = CI.index("pip install")
    assert venv < activated < first_pip, "the venv is made and activated before anything is installed"
    for step in ('bash -euo pipefail -c "${readme_commands[0]}"', 'bash -euo pipefail -c "${readme_commands[1]}"'):
        assert step in CI


def test_ci_runs_the_linter_and_the_formatter_the_project_configures():
    config = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert "[tool.ruff]" in config and "[tool.ruff.lint]" in config
    assert "\nruff check ." in CI and "\nruff format --check ." in CI
