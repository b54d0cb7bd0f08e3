"""Where aclnngen keeps what it can rebuild (the simulator's builds, the generator's renders):
one place, importable by the generator and the runtime alike without loading either."""

from __future__ import annotations

import os
from pathlib import Path


def cache_root(cache_dir: str | os.PathLike | None = None) -> Path:
    """The cache directory: the argument, else $ACLNNGEN_CACHE_DIR, $XDG_CACHE_HOME/aclnngen or
    ~/.cache/aclnngen."""
    if cache_dir is not None:
        return Path(cache_dir)
    env = os.environ.get("ACLNNGEN_CACHE_DIR")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg) / "aclnngen"
    return Path.home() / ".cache" / "aclnngen"
