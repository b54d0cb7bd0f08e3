"""The reference evaluator is a package of its own (evaluate/, docs/architecture.md): it stands on
the ground floor and the NumPy dtypes of the call path only, and the simulator's kernels and the
generated references compute with it, never with the verdict."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import numpy as np

from repo_paths import REPO

EVALUATOR = REPO / "evaluate"
#: what the evaluator may take from the call path: the NumPy side of core's dtype names
CALL_PATH_ALLOWED = {"aclnngen.runtime.shapes"}


def _absolute_imports(path: Path, package: str) -> set[str]:
    """Every module `path` imports (top level or in a function), relative imports resolved."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                found.add(".".join(base + ([node.module] if node.module else [])))
            else:
                found.add(node.module or "")
    return found


def _op_modules(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.py") if p.stem != "__init__")


def _project_imports(folder: Path, package: str) -> dict[str, set[str]]:
    return {
        path.name: {m for m in _absolute_imports(path, package) if m.startswith("aclnngen")}
        for path in sorted(folder.glob("*.py"))
    }


def test_the_evaluator_imports_core_and_the_numpy_dtypes_only():
    imports = _project_imports(EVALUATOR, "aclnngen.evaluate")
    assert {"reference.py", "numerics.py", "chunking.py", "fastmath.py"} <= set(imports)
    outside = {
        name: sorted(
            m for m in found if not m.startswith(("aclnngen.core", "aclnngen.evaluate")) and m not in CALL_PATH_ALLOWED
        )
        for name, found in imports.items()
    }
    assert {name: found for name, found in outside.items() if found} == {}


def test_the_check_sees_an_import_of_the_verdict(tmp_path):
    (tmp_path / "numerics.py").write_text(
        "from aclnngen.runtime.shapes import NUMPY_DTYPES\ndef f():\n    from aclnngen.verify import cases\n"
    )
    assert _project_imports(tmp_path, "aclnngen.evaluate") == {
        "numerics.py": {"aclnngen.runtime.shapes", "aclnngen.verify"}
    }


def test_the_verdict_package_no_longer_holds_the_numerics():
    assert not [
        name for name in ("reference", "numerics", "chunking", "fastmath") if (REPO / "verify" / f"{name}.py").exists()
    ]


def test_the_simulator_and_the_references_compute_with_the_evaluator_not_the_verdict():
    kernels = _absolute_imports(REPO / "runtime" / "sim" / "kernels.py", "aclnngen.runtime.sim")
    assert "aclnngen.evaluate.reference" in kernels
    assert not any(m.startswith("aclnngen.verify") for m in kernels)
    references = _op_modules(REPO / "generated" / "reference")
    assert references
    for path in references:
        found = _absolute_imports(path, "aclnngen.generated.reference")
        assert "aclnngen.evaluate.reference" in found, path.name
        assert not any(m.startswith("aclnngen.verify") for m in found), path.name


def test_importing_the_evaluator_loads_neither_the_verdict_nor_the_call_path():
    modules = sorted(f"aclnngen.evaluate.{p.stem}" for p in EVALUATOR.glob("*.py") if p.stem != "__init__")
    code = (
        "import importlib, sys\n"
        f"for name in {modules!r}:\n    importlib.import_module(name)\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith(('aclnngen.verify', 'aclnngen.runtime', 'cffi', 'torch')))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["aclnngen.runtime", "aclnngen.runtime.shapes"]


def test_a_simulated_kernel_runs_the_evaluator_over_the_generated_formula_bodies(monkeypatch):
    from aclnngen.core import planning
    from aclnngen.evaluate.reference import Reference
    from aclnngen.runtime.sim import kernels

    snake = _op_modules(REPO / "generated" / "reference")[0].stem  # any op
    meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
    generated = importlib.import_module(f"aclnngen.generated.reference.{snake}")
    # the kernel's evaluator runs the module's formula bodies: a changed body changes its result
    spec = generated.FORMULAS["spec"]
    doubled = {**generated.FORMULAS, "spec": lambda m, *a, **k: tuple(o * m.lit(2) for o in spec(m, *a, **k))}
    monkeypatch.setattr(generated, "FORMULAS", doubled)
    reference = kernels.OpEntry(meta, "aclnngen.generated").reference()
    assert isinstance(reference, Reference)
    shapes = planning.case_shapes(meta, "contiguous", meta["cann_version"])
    inputs = [p["name"] for p in meta["params"] if p["role"] == "input"]
    values = {name: np.full(shapes[name], 0.5, np.float32) for name in inputs}
    values.update(planning.scalar_values(meta))
    got = _as_tuple(reference(values, mode="opmath"))
    want = _as_tuple(generated._REFERENCE(values, mode="opmath"))
    assert got and len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w * 2)


def _as_tuple(result):
    return result if isinstance(result, tuple) else (result,)
