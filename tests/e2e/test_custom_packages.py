"""Adding an op only requires a spec: ops outside the five, generated into a stand-alone package.

SlopedStepBackward has a scalar and a bool attribute; ScaledExpBackward has three scalars and an
attribute before its tensor and a formula that branches on the attribute; LogNormaliseBackward has
a dimension attribute, a forward output reduced along it and a keepdim sum. Only the specs are
written by hand (copied into a temporary directory); everything else is generated, then the
generated reference, validator and binding tests (the custom ops' simulator entry points are built
into the simulator automatically) run, and run again with one piece deliberately broken to
show that each kind of generated test can fail.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest
from packages import aclnngen, generate, run_generated_tests
from repo_paths import CUSTOM_SPECS

SPECS = CUSTOM_SPECS


def _run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, timeout=900, **kwargs)


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    root = tmp_path_factory.mktemp("custom")
    specs = root / "specs"
    shutil.copytree(SPECS, specs)
    return generate(specs, root / "pkg" / "custom_ops")


def test_only_generated_files_besides_the_specs(package):
    files = sorted(
        p.relative_to(package).as_posix() for p in package.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    )
    for op in ("sloped_step_backward", "scaled_exp_backward", "log_normalise_backward"):
        for expected in (f"meta/{op}.py", f"ops/{op}.py", f"reference/{op}.py", f"tests/test_{op}.py", f"docs/{op}.md"):
            assert expected in files
    for path in files:
        if path.endswith((".py", ".c", ".md")):
            assert "Do not edit by hand" in (package / path).read_text(encoding="utf-8"), path


def test_check_sees_the_package_fresh_then_stale(package):
    specs = package.parent.parent / "specs"
    ok = _run([sys.executable, "-m", "aclnngen.codegen.cli", "check", "--specs", str(specs), "--out", str(package)])
    assert ok.returncode == 0, ok.stdout + ok.stderr
    victim = package / "reference" / "scaled_exp_backward.py"
    original = victim.read_text(encoding="utf-8")
    victim.write_text(original + "\n# edited\n", encoding="utf-8")
    try:
        stale = _run(
            [sys.executable, "-m", "aclnngen.codegen.cli", "check", "--specs", str(specs), "--out", str(package)]
        )
    finally:
        victim.write_text(original, encoding="utf-8")
    assert (
        stale.returncode == 1
        and "stale: reference/scaled_exp_backward.py" in stale.stdout
        and "aclnngen generate --specs" in stale.stdout
    )


def test_generated_reference_and_validator_tests_pass(package):
    result = run_generated_tests(package, "-p", "mutations", ACLNNGEN_MUTATION="")
    # > 100 items: the three ops' tests ran (a group of validator or binding cases is one item:
    # codegen/testplan.py `groups`)
    assert result.returncode == 0 and len(result.with_outcome("passed")) > 100, result.stdout[-3000:]
    for kind in (
        "test_reference_matches_oracle",
        "test_validator_dtype",
        "test_validator_shape",
        "test_null_pointer",
        "test_return_code",
        "test_binding_on_simulator",
        "test_sweep",
    ):
        assert any(kind in node for node in result.collected), kind


@pytest.mark.parametrize(
    "mutation,must_fail",
    [
        ("validator", ("test_validator_dtype", "test_validator_shape", "test_null_pointer", "test_return_code")),
        ("reference", ("test_reference_matches_oracle",)),
        ("oracle_compare", ("test_reference_matches_oracle",)),
        ("descriptor", ("test_binding_on_simulator",)),
        ("attribute_branch", ("test_sweep",)),
    ],
)
def test_generated_tests_fail_when_a_piece_is_broken(package, mutation, must_fail):
    # only the kinds of test the mutation must break run, of one op (its `where` reads a tensor):
    # the others would prove nothing more here; a sweep needs the op whose formula branches on
    # an attribute
    op = "scaled_exp" if mutation == "attribute_branch" else "sloped_step"
    result = run_generated_tests(
        package, "-p", "mutations", "-rf", "-k", f"({' or '.join(must_fail)}) and {op}", ACLNNGEN_MUTATION=mutation
    )
    assert result.returncode == 1, result.stdout[-2000:]
    failed = result.with_outcome("failed")
    for kind in must_fail:
        assert any(f"::{kind}[" in node for node in failed), (
            f"{mutation} broke nothing in {kind}:\n{result.stdout[-2000:]}"
        )


def test_a_wrong_formula_in_the_spec_fails_the_oracle_tests(tmp_path):
    specs = tmp_path / "specs"
    shutil.copytree(SPECS, specs)
    spec = specs / "ops" / "sloped_step_backward.yaml"
    spec.write_text(
        spec.read_text(encoding="utf-8").replace("grad_output * negative_slope)", "grad_output * negative_slope * 2)"),
        encoding="utf-8",
    )
    out = generate(specs, tmp_path / "pkg" / "broken_ops")
    result = run_generated_tests(out, "-rf", "-k", "sloped and reference")
    assert result.returncode == 1 and "FAILED" in result.stdout, result.stdout[-2000:]


def test_directives_mark_expected_failures_and_report_those_that_start_passing(package, tmp_path):
    directives = tmp_path / "directives.yaml"
    directives.write_text(
        "expected_failures:\n"
        "  - {op: SlopedStepBackward, test: validator_dtype, family: a2, dtype: float16,\n"
        "     reason: 'pretend float16 is broken on A2'}\n"
        "tolerances: []\n",
        encoding="utf-8",
    )
    result = run_generated_tests(
        package, "-rfX", "-k", "sloped and validator_dtype and A2", ACLNNGEN_DIRECTIVES=str(directives)
    )
    # The case passes, so the strict expected failure is reported as a failure that names the reason.
    assert (
        result.returncode == 1 and "XPASS(strict)" in result.stdout and "pretend float16 is broken" in result.stdout
    ), result.stdout[-2000:]


def test_a_tolerance_override_replaces_the_policy(package, tmp_path):
    directives = tmp_path / "directives.yaml"
    directives.write_text(
        "expected_failures: []\n"
        "tolerances:\n"
        "  - {op: ScaledExpBackward, test: reference, dtype: float32, rtol: 0.0, atol: 0.0,\n"
        "     reason: 'demand bit-exact float32 to show the override applies'}\n",
        encoding="utf-8",
    )
    result = run_generated_tests(
        package, "-rf", "-k", "scaled_exp and reference and float32-adversarial", ACLNNGEN_DIRECTIVES=str(directives)
    )
    # The transcendental exp branch differs from torch by an ULP somewhere: a zero tolerance must fail it,
    # while the default policy passes it (test_generated_reference_and_validator_tests_pass).
    assert result.returncode == 1 and "outside rtol=0, atol=0" in result.stdout, result.stdout[-2000:]


def test_a_custom_package_reads_the_directives_in_its_own_folder(package):
    own = package / "tests" / "directives.yaml"  # beside its generated tests, as documented
    own.write_text(
        "expected_failures:\n"
        "  - {op: SlopedStepBackward, test: validator_dtype, family: a2, dtype: float16, case: A2-float16,\n"
        "     reason: 'pretend float16 is broken on A2, in the package own directives'}\n",
        encoding="utf-8",
    )
    specs = package.parent.parent / "specs"
    try:
        for command in ("generate", "check"):  # the generator neither removes nor flags it
            done = aclnngen(command, "--specs", specs, "--out", package)
            assert done.returncode == 0 and own.is_file(), done.stdout + done.stderr
        result = run_generated_tests(
            package, "-rfX", "-k", "sloped and validator_dtype and A2", ACLNNGEN_DIRECTIVES=None
        )
    finally:
        own.unlink()
    assert result.returncode == 1 and "XPASS(strict)" in result.stdout and "package own directives" in result.stdout, (
        result.stdout[-2000:]
    )
