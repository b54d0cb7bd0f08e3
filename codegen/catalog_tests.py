"""The catalog's generated tests on the simulator (`aclnngen catalog --run-tests`): one package
generated from every spec the survey took as far as `generated`, its tests run by pytest on the
simulator in a child process (its workers), and each op's verdict read back from pytest's JUnit
report: an op passes when every case of its test module passes (skips aside); else the reason is its
first failing case and how it failed.

The child process keeps the survey's process free of the package's modules and of the simulator
builds; the JUnit report is the one stable, per-case record pytest writes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from .errors import GenerateError
from .loader import DEFAULT_SPECS_DIR

PACKAGE = "catalog_ops"
_TABLES = ("products.yaml", "abi.yaml")


@dataclass(frozen=True)
class OpVerdict:
    passed: int
    failed: int
    reason: str | None  # the first failing case and its message, when one fails


def run(specs: dict[str, str], workers: int = 2, specs_dir: Path = DEFAULT_SPECS_DIR) -> dict[str, OpVerdict]:
    """Snake op name -> its verdict, for `specs` (snake op name -> spec YAML text)."""
    with tempfile.TemporaryDirectory(prefix="aclnngen-catalog-tests-") as scratch:
        root = Path(scratch)
        tables = root / "specs"
        (tables / "ops").mkdir(parents=True)
        for table in _TABLES:
            shutil.copy(specs_dir / table, tables / table)
        if (specs_dir / "profiles").is_dir():
            shutil.copytree(specs_dir / "profiles", tables / "profiles")
        for snake, text in specs.items():
            (tables / "ops" / f"{snake}.yaml").write_text(text, encoding="utf-8")
        out = root / "pkg" / PACKAGE
        _child([sys.executable, "-m", "aclnngen.codegen.cli", "generate", "--specs", str(tables), "--out", str(out)])
        report = root / "junit.xml"
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(out.parent), os.environ.get("PYTHONPATH")])),
        }
        subprocess.run(
            [sys.executable, "-m", "pytest", str(out / "tests"), "-q", "--tb=no", "-p", "no:cacheprovider"]
            + ["-n", str(workers), f"--junitxml={report}", "-o", "junit_family=xunit1"],
            cwd=root,
            env=env,
            capture_output=True,
            check=False,  # failing cases are the answer, not an error
        )
        if not report.is_file():
            raise GenerateError("pytest wrote no report for the catalog package's tests")
        return verdicts(report.read_text(encoding="utf-8"), specs)


def verdicts(junit_xml: str, ops) -> dict[str, OpVerdict]:
    """Each op's verdict from a JUnit report whose test modules are `test_<op>.py` (an op without
    any case reported passes nothing and fails nothing)."""
    counts: dict[str, list] = {snake: [0, 0, None] for snake in ops}
    for case in ET.fromstring(junit_xml).iter("testcase"):
        snake = _op_of(case.get("file") or case.get("classname") or "")
        if snake not in counts:
            continue
        bad = case.find("failure")
        bad = bad if bad is not None else case.find("error")
        if case.find("skipped") is not None and bad is None:
            continue
        entry = counts[snake]
        if bad is None:
            entry[0] += 1
            continue
        entry[1] += 1
        if entry[2] is None:
            message = " ".join((bad.get("message") or bad.text or "").split())[:160]
            entry[2] = f"{case.get('name')}: {message}"
    return {snake: OpVerdict(*entry) for snake, entry in counts.items()}


def _op_of(where: str) -> str:
    """`tests/test_abs.py` or `tests.test_abs` -> `abs`."""
    stem = where.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".py").rsplit(".", 1)[-1]
    return stem.removeprefix("test_")


def _child(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise GenerateError(f"{' '.join(command[2:4])} failed: {(done.stdout + done.stderr).strip()[-400:]}")
