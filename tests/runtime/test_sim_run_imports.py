"""The simulator's run hook: a launch its compiled kernel serves imports neither the generated
reference nor the evaluator (runtime/sim/compiled.py reads the compute dtype of an op without
scalars from the spec); they load when a launch falls back or a scalar needs them. The compute
dtype read that way is the one the reference's own kernel_inputs gives, for every op."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

import catalog
from aclnngen.core.meta import op_meta
from aclnngen.generated import OPS
from aclnngen.runtime.shapes import NUMPY_DTYPES
from aclnngen.runtime.sim import compiled, kernels

STORAGE = ("float16", "bfloat16", "float32", "float64")


def _cases():
    for snake in OPS:
        op = op_meta(catalog.meta(snake))
        for family in sorted({p.family for p in op.products}):
            yield pytest.param(snake, family, id=f"{snake}-{family}")


@pytest.mark.parametrize("snake, family", list(_cases()))
def test_the_compute_dtype_without_the_evaluator_is_the_references(snake, family):
    meta = catalog.meta(snake)
    op = op_meta(meta)
    reference = kernels.OpEntry(meta, kernels.BUILTIN_PACKAGE).reference()
    values = {p.name: 1.0 for p in op.params if p.is_scalar}
    for name in STORAGE:
        storage = NUMPY_DTYPES[name]
        want, _ = reference.kernel_inputs(values, storage, family)
        assert compiled.compute_dtype(op, storage, family) == want, (name, family)


LAUNCH = r"""
import importlib, json, sys
import numpy as np
snake = sys.argv[1]
meta = importlib.import_module(f"aclnngen.generated.meta.{snake}").META
binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{snake}"), snake)
values = {p["py"]: np.full(4, 0.5, np.float32) if p["role"] == "input" else 0.5
          for p in meta["params"] if p["role"] in ("input", "scalar", "optional_scalar")}
binding(**values)
from aclnngen.runtime.sim import compiled
loaded = sorted(m for m in sys.modules if m.startswith(("aclnngen.evaluate", "aclnngen.generated.reference")))
print(json.dumps([compiled.stats()["compiled"], loaded]))
"""


def _launch(snake: str) -> tuple[int, list]:
    """(launches the compiled kernels made, the evaluator's and references' modules loaded)."""
    out = subprocess.run([sys.executable, "-c", LAUNCH, snake], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    launches, loaded = json.loads(out.stdout.strip().splitlines()[-1])
    return launches, loaded


def test_a_launch_the_compiled_kernel_serves_loads_no_evaluator():
    launches, loaded = _launch(catalog.PLAIN)
    assert launches == 1 and loaded == []


def test_an_op_with_scalars_loads_the_evaluator_for_them():
    """The other side of the same check: the evaluator is what gives a scalar in the compute dtype."""
    roles = {s: {p["role"] for p in catalog.meta(s)["params"]} for s in OPS}
    snake = next(
        s for s in OPS if "scalar" in roles[s] and roles[s] <= {"input", "output", "scalar", "optional_scalar"}
    )
    launches, loaded = _launch(snake)
    assert launches == 1 and "aclnngen.evaluate.reference" in loaded
