"""A new user's clone: a copy of the tracked files with nothing beside it, installed the README's
way into a fresh venv. The tests that need material outside the repository skip there, naming
the variable that points to it, and fail under ACLNNGEN_REQUIRE_EXTERNAL=1 (which .ci/run sets).
Adding an op there is one spec: validate, generate, and the hand-written tests a new op can change
stay green (those parametrized by it and the whole-checkout commands' tests, slow ones aside), with
the new op's generated tests.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from isolated import copy_repository, fresh_venv, pip_install, run, type_check, venv_env
from nested_selection import WHOLE_CHECKOUT
from repo_paths import CUSTOM_SPECS, REPO, hand_written_tests

pytestmark = pytest.mark.slow(reason="a copy of the checkout in a fresh venv, and a nested pytest run in it")

# Left out of the suite run inside the copy: this module (it would recurse), the wheel test (it
# builds its own environment), and the custom-package tests, which generate and run stand-alone
# packages several times over and do not depend on the set of ops in the repository.
NOT_RUN_IN_THE_COPY = (
    "tests/e2e/test_fresh_checkout.py",
    "tests/e2e/test_wheel.py",
    "tests/e2e/test_custom_packages.py",
)
CUSTOM_OPS = CUSTOM_SPECS / "ops"
# The external material's nested runs check how a test behaves without it, the same for every op:
# of the tests parametrized by op they run the first op's (tests/one_op_selection.py), and of the
# modules that use the material, only the tests that reach it (tests/external_selection.py).
ONE_OP = ("-p", "one_op_selection")
REACHING = ("-p", "external_selection")
# The nested runs' verdicts are pass, skip or fail; pytest's assertion rewriting of every module
# they import is more than half of their collection (8.4 -> 3.8 CPU-s for every hand-written module),
# and the suite's asserts carry their own messages.
PLAIN = "--assert=plain"


def _clone(dest: Path) -> tuple[Path, Path]:
    repo = copy_repository(dest)
    python = fresh_venv(dest / "venv")
    pip_install(python, "-e", repo)
    return repo, python


def _external_tests(repo: Path) -> list[str]:
    """The test modules that use the external-material helper (tests/external.py)."""
    uses = re.compile(r"^from external import", re.M)
    found = [p for p in hand_written_tests(repo / "tests") if uses.search(p.read_text(encoding="utf-8"))]
    assert found, "no test uses tests/external.py"
    return [p.relative_to(repo).as_posix() for p in found]


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    return _clone(tmp_path_factory.mktemp("clone"))


def test_the_clone_resolves_aclnngen_to_itself(clone):
    repo, python = clone
    where = run(
        [python, "-c", "import aclnngen.codegen.loader as l; print(l.REPO_ROOT)"], cwd="/", env=venv_env(python)
    )
    assert where.returncode == 0 and Path(where.stdout.strip()) == repo, where.stdout + where.stderr


def test_type_checkers_resolve_the_bindings_of_the_editable_install(clone, tmp_path, mypy_cache):
    # an import hook (setuptools' editable default) is invisible to mypy and editors: the install
    # must name a plain folder (buildsys/aclnngen_build.py); the overloads type each call's result
    _, python = clone
    checked = type_check(python, tmp_path, mypy_cache)
    assert checked.returncode == 0, checked.stdout[-3000:] + checked.stderr[-2000:]


ABSENT = "external material absent"  # tests/external.py's reason


@pytest.fixture(scope="module")
def without_material(clone, tmp_path_factory):
    """The external material's tests run in the clone with nothing beside it: the run, and the
    tests it skipped with why (tests/skip_record.py)."""
    repo, python = clone
    record = tmp_path_factory.mktemp("skips") / "skipped.json"
    result = run(
        [
            python,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            PLAIN,
            *ONE_OP,
            *REACHING,
            *_external_tests(repo),
        ]
        + ["-p", "skip_record", f"--skip-record={record}"],
        cwd=repo,
        env=venv_env(python, PYTHONPATH=str(repo / "tests")),
    )
    return result, json.loads(record.read_text(encoding="utf-8")) if record.is_file() else {}


def test_external_material_absent_skips_naming_its_variable(without_material):
    result, skipped = without_material
    assert result.returncode == 0, result.stdout[-3000:]
    assert re.search(r"\d+ skipped", result.stdout) and "failed" not in result.stdout
    assert "set ACLNNGEN_REFERENCE to where it is" in result.stdout, result.stdout[-3000:]
    assert any(ABSENT in why for why in skipped.values()), skipped


def test_external_material_absent_fails_when_required(clone, without_material):
    # the tests the material's absence skipped, again with ACLNNGEN_REQUIRE_EXTERNAL=1: each fails
    # (the others ran in the first run and do not depend on the variable)
    repo, python = clone
    absent = sorted(nodeid for nodeid, why in without_material[1].items() if ABSENT in why)
    assert absent, "the first run skipped no test for absent material"
    env = venv_env(python, ACLNNGEN_REQUIRE_EXTERNAL="1", PYTHONPATH=str(repo / "tests"))
    result = run([python, "-m", "pytest", "-q", "-rfEs", "-p", "no:cacheprovider", PLAIN, *absent], cwd=repo, env=env)
    assert result.returncode == 1 and not re.search(rf"SKIPPED.*{ABSENT}", result.stdout), result.stdout[-3000:]
    assert "ACLNNGEN_REQUIRE_EXTERNAL=1 requires it" in result.stdout
    summary = result.stdout.strip().splitlines()[-1]
    failed = sum(int(n) for n, _ in re.findall(r"(\d+) (failed|errors?)\b", summary))  # (in a fixture: an error)
    assert failed == len(absent), f"{len(absent)} tests skipped for absent material; now: {summary}"


def test_ci_requires_the_external_material():
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert re.search(r"^export ACLNNGEN_REQUIRE_EXTERNAL=1$", ci, re.M)


def _modules_parametrized_by_op(items, ops: set[str]) -> set[str]:
    """The test modules of this run with an item parametrized by one of `ops` (an id naming it):
    the modules a new op can reach, besides the whole-checkout ones. Collecting only these in the
    nested run spares it the collection of every other module, which no new spec changes."""
    found = set()
    for item in items:
        path, _, params = item.nodeid.partition("[")
        if params and any(op in params for op in ops):
            found.add(path.split("::", 1)[0])
    return found


def test_adding_an_op_is_one_spec_and_the_whole_suite_stays_green(clone, tmp_path, request):
    # the module's clone: the other tests here hold with one more op, whichever runs first
    repo, python = clone
    # the run's own cache, as a user's is when they add an op: the builds are keyed by their
    # sources, so the other ops' kernels are the run's and the new op's and the core (whose entry
    # points list the ops) are built afresh; a cold cache rebuilt every op's kernels each run
    env = venv_env(python)
    # any spec that is not one of the repository's
    spec = next((s for s in sorted(CUSTOM_OPS.glob("*.yaml")) if not (repo / "specs" / "ops" / s.name).exists()), None)
    assert spec is not None, f"every spec of {CUSTOM_OPS} is also one of the repository's: add another"
    (repo / "specs" / "ops" / spec.name).write_text(spec.read_text(encoding="utf-8"), encoding="utf-8")
    # the README's steps ("Adding an operator"): validate the spec, generate the op (its own files
    # and the shared ones that list the ops), then every generated file is fresh
    for command in (["validate", f"specs/ops/{spec.name}"], ["generate", spec.stem], ["check"]):
        done = run([python.parent / "aclnngen", *command], cwd=repo, env=env)
        assert done.returncode == 0, f"aclnngen {command[0]}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
    assert (repo / "tests" / "generated" / f"test_{spec.stem}.py").is_file()
    # the other ops' generated tests are the repository's own, unchanged by a new spec
    hand_written = [p.relative_to(repo).as_posix() for p in hand_written_tests(repo / "tests")]
    chosen = [t for t in hand_written if t not in NOT_RUN_IN_THE_COPY]
    outer = request.session.items
    if set(chosen) <= {item.nodeid.split("::", 1)[0] for item in outer}:
        # this run collected every module: the nested one collects those a new op reaches
        ops = {p.stem for p in (REPO / "specs" / "ops").glob("*.yaml")}
        reached = _modules_parametrized_by_op(outer, ops) | set(WHOLE_CHECKOUT)
        chosen = [t for t in chosen if t in reached]
    chosen.append(f"tests/generated/test_{spec.stem}.py")
    record = tmp_path / "selection.json"
    # the slow-marked tests (a venv, a simulator rebuilt per input, 100,000 calls) the main suite runs
    nested = [
        python,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        PLAIN,
        "-p",
        "nested_selection",
        "-m",
        "not slow",
        *chosen,
    ]
    nested += [f"--new-op={spec.stem}", f"--selection-record={record}"]
    result = run(
        nested,
        cwd=repo,
        env=venv_env(python, PYTHONPATH=str(repo / "tests")),
    )
    tail = result.stdout[-4000:]
    assert result.returncode == 0, tail
    assert re.search(r"\d+ passed", tail) and " failed" not in tail and " error" not in tail, tail
    seen = json.loads(record.read_text(encoding="utf-8"))
    assert any(spec.stem in i for i in seen["selected"] if not i.startswith("tests/generated/")), (
        "no hand-written test took the new op"
    )
    assert 0 < len(seen["selected"]) < seen["collected"]
