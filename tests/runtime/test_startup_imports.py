"""Importing a binding stays light: nothing heavy (scipy, torch, jinja2, pydantic, the
generator) is imported until an op needs it. A property of the import graph, checked in a fresh
interpreter through sys.modules, not a timing."""

from __future__ import annotations

import json
import subprocess
import sys

import catalog

HEAVY = (
    *("scipy", "torch", "jinja2", "pydantic", "yaml", "hypothesis", "pytest", "aclnngen.codegen", "aclnngen.verify"),
    # loaded at the first call, not at the import: cffi's C parser (the declarations are
    # pre-parsed), the backends, the validator, DLPack, importlib.resources (tempfile, shutil)
    *("cffi", "pycparser", "aclnngen.runtime.backend", "aclnngen.runtime.validation", "aclnngen.runtime.dlpack"),
    "importlib.resources",
    # loaded at a binding's first use (runtime/binding.py): the call path and what it reads, the
    # typed metadata and the rule machinery, ml_dtypes (through the shapes)
    *("aclnngen.runtime.call", "aclnngen.runtime.shapes", "aclnngen.core.meta", "aclnngen.core.rules"),
    *("aclnngen.core.kinds", "aclnngen.core.dtypes", "ml_dtypes"),
)

PROBE = r"""
import importlib, json, sys
from aclnngen.generated import OPS
for snake in OPS:
    importlib.import_module(f"aclnngen.generated.ops.{snake}")
heavy = sys.argv[1].split(",")
print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))))
"""


def test_importing_every_binding_imports_nothing_heavy():
    out = subprocess.run([sys.executable, "-c", PROBE, ",".join(HEAVY)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found == [], f"importing the bindings imported {found}"


FIRST_CALL = r"""
import importlib, json, sys
import numpy as np
binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{sys.argv[1]}"), sys.argv[1])
binding(np.full(4, 0.5, np.float32), np.full(4, 0.5, np.float32))
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("pycparser", "cffi"))))
"""


def test_the_first_call_parses_no_c():
    """The declarations are pre-parsed (generated/ffi/, cffi's out-of-line mode): the first call on
    the simulator imports neither cffi's parser nor pycparser (~60 ms of parsing before)."""
    out = subprocess.run([sys.executable, "-c", FIRST_CALL, catalog.PLAIN], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found == [], f"the first call imported {found}"


KINDS_LOADED = r"""
import importlib, json, sys
from aclnngen.core.meta import op_meta
loaded = lambda: sorted(m.rsplit(".", 1)[1] for m in sys.modules if m.startswith("aclnngen.core.kinds.") and m[20] != "_")
bare = loaded()
meta = importlib.import_module(f"aclnngen.generated.meta.{sys.argv[1]}").META
op_meta(meta)
print(json.dumps([bare, loaded(), sorted({r["kind"] for r in meta["rules"]})]))
"""


def test_the_rule_kinds_load_when_a_meta_uses_them():
    out = subprocess.run(
        [sys.executable, "-c", KINDS_LOADED, catalog.PLAIN], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    bare, after, used = json.loads(out.stdout.strip().splitlines()[-1])
    assert bare == ["base"], "importing core.meta loads no rule kind"
    assert set(after) - {"base"} == set(used)


WARM_FIRST_CALL = r"""
import importlib, json, sys
import numpy as np
binding = getattr(importlib.import_module(f"aclnngen.generated.ops.{sys.argv[1]}"), sys.argv[1])
binding(np.full(4, 0.5, np.float32), np.full(4, 0.5, np.float32))
heavy = sys.argv[2].split(",")
print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))))
"""

# A build's process tools, the thread pools of large calls, and the generator's libraries.
NOT_FOR_A_WARM_CALL = ("subprocess", "concurrent.futures", "pydantic", "jinja2", "yaml", "aclnngen.codegen")
# the call plans' helper source is kept in the cache (runtime/callplan.py), no temporary folder
NOT_FOR_A_WARM_CALL += ("tempfile",)


def test_a_first_call_with_the_builds_cached_loads_no_build_tools():
    """Once the simulator and the call plans' helper are built (the first process), a fresh
    process's first small call finds them by their digests (and the compiler's identity in the
    cache): no compiler runs, so the build's process tools are never imported, nor the thread
    pools a 4-element call does not use (runtime/cbuild.py, evaluate/chunking.py)."""
    command = [sys.executable, "-c", WARM_FIRST_CALL, catalog.PLAIN, ",".join(NOT_FOR_A_WARM_CALL)]
    for _ in range(2):  # the first process may build; the second must find everything built
        out = subprocess.run(command, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr[-3000:]
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found == [], f"a first call with a warm build cache imported {found}"
