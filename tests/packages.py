"""A package generated from made-up specs, importable for the length of a test module: the one
fixture body the tests of stand-alone packages share (`with generated_package(...) as out`)."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def generated_package(root: Path, specs: Path, name: str) -> Iterator[Path]:
    """`aclnngen generate --specs SPECS --out ROOT/pkg/NAME`, then NAME importable until the end."""
    out = root / "pkg" / name
    done = subprocess.run(
        [sys.executable, "-m", "aclnngen.codegen.cli", "generate", "--specs", str(specs), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(out.parent))
    try:
        yield out
    finally:
        sys.path.remove(str(out.parent))
        for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
            del sys.modules[module]
