"""Simulator caches for tests, so that only a test about building pays for a compile (the core is
~0.65 CPU-s of `cc -O1` a build):

- `tiny_core`: a core of two files for tests of the build's mechanism (keys, locks, digests,
  errors, where the cache is): what they prove holds for any core, and this one compiles in a
  few hundredths of a second;
- `seeded_cache`: a cache folder of the test's own holding a copy of the simulator's built core,
  for a test that needs a cache apart from the others' (its records, its own library file), not
  a cold build. The copy is another file: loaded, it is another library instance.
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

from aclnngen.cachedir import make_private

__all__ = ["tiny_core", "seeded_cache"]


def tiny_core(folder: Path, value: int = 1) -> Path:
    """A core of two files (a source and the header it includes) in `folder`: `aclsim_probe()`
    returns `value`. An extra source may include "probe.h" (the core folder is on the include
    path)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "probe.h").write_text(f"#define PROBE_VALUE {value}\n")
    (folder / "probe.c").write_text('#include "probe.h"\nint aclsim_probe(void) { return PROBE_VALUE; }\n')
    return folder


@functools.cache
def _built_core() -> Path:
    """The folder of the core SimBackend loads, built (once) in this process's own cache."""
    from aclnngen.runtime.sim.backend import build_core

    return build_core().parent


def seeded_cache(folder: Path) -> Path:
    """`folder` (made, private) as a simulator cache holding a copy of the built core: a
    SimBackend(cache_dir=folder), or a process whose $ACLNNGEN_CACHE_DIR is `folder`, finds it
    built; everything else (op libraries, kernels, records) it builds there afresh."""
    built = _built_core()
    make_private(folder / "sim")
    shutil.copytree(built, folder / "sim" / built.name, symlinks=True, ignore=shutil.ignore_patterns(".tmp-*"))
    return folder
