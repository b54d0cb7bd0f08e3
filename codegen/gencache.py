"""A cache of each op's rendered outputs, so a run where few specs changed renders few.

Rendering one op costs ~10 ms (parsing, validating, five templates); a CANN release has hundreds
of ops. Each op's outputs and its index record (what the shared files need of it: its names, its
simulator entry, its support-matrix row, its change-log entries) are kept under a key that hashes
everything they are a function of: the spec file's text and its path relative to the specs folder,
the product table, the output layout, the release (`generate --cann`), and the generator itself
(every source file of the aclnngen package but its generated data, so any change to the code or a
template starts afresh). A hit is therefore exactly what rendering would give; the tests check
that a cached run's outputs equal an uncached one's.

Where: `$ACLNNGEN_CACHE_DIR/generate/` (else `$XDG_CACHE_HOME/aclnngen` or `~/.cache/aclnngen`),
two pickles per op and key (its render, and its index); beside them, per output folder, the status
and digest of each file the writer left, with the key of the run that left them
(`generate-written/`): an unchanged file is not read again, and an unchanged run renders nothing.
`ACLNNGEN_GENERATE_CACHE=0` turns all of it off. A cache file that cannot be read or written is
ignored (a miss), never an error: the cache only ever saves time.
"""

from __future__ import annotations

import functools
import hashlib
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent
_SKIPPED_DIRS = {"generated", "tests", "__pycache__", "benchmarks", "build", "docs", "specs"}
FORMAT = 1  # bump when the record's shape changes
MAX_ENTRIES = 8000  # ops kept (~50 KB each): the least recently used beyond that are removed


def enabled() -> bool:
    return os.environ.get("ACLNNGEN_GENERATE_CACHE", "1") not in ("0", "", "off", "no")


@functools.lru_cache(maxsize=1)
def generator_fingerprint() -> str:
    """A hash of the generator's own code: every .py and .j2 of the package but generated data."""
    digest = hashlib.sha256(f"format {FORMAT}".encode())
    for path in sorted(_sources(_PACKAGE_ROOT)):
        digest.update(path.relative_to(_PACKAGE_ROOT).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _sources(root: Path):
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames if d not in _SKIPPED_DIRS and not d.startswith(".") and not d.endswith(".egg-info")]
        for name in filenames:
            if name.endswith((".py", ".j2")):
                yield Path(dirpath) / name


class OpCache:
    """Get and put one op's (outputs, record) by the text of its spec and the run's context."""

    def __init__(self, context: str, directory: Path | None = None):
        self.context = hashlib.sha256((generator_fingerprint() + "\0" + context).encode()).hexdigest()
        if directory is None:
            from aclnngen.cachedir import cache_root

            directory = cache_root() / "generate"
        self.directory = Path(directory)
        self.hits = self.misses = 0
        self.max_entries = MAX_ENTRIES
        self._last: tuple[str, Any] | None = None  # the render read back last (an op's files are read in turn)

    def key(self, source: str, text: str) -> str:
        return hashlib.sha256(f"{self.context}\0{source}\0{text}".encode()).hexdigest()

    def _path(self, key: str, part: str = "") -> Path:
        return self.directory / key[:2] / f"{key}{part}.pickle"

    # --- ops: the outputs apart from an index of them, so an unchanged op costs a small read -----

    def put_op(self, key: str, render: Any, index: Any) -> None:
        """Keep an op's render (read back only for a file that must be written or shown) and its
        index (the record and each output's path and digest, read on every hit)."""
        self.put(key, render)
        _save(self._path(key, ".index"), {"key": key, "value": index})

    def get_op(self, key: str) -> Any | None:
        """The index of an op kept by put_op, or None (a miss) when it or its render is missing."""
        index, render = self._path(key, ".index"), self._path(key)
        found = _entry(index, key)
        try:
            os.utime(render)  # both recently used (kept by trim), and the render still there
            os.utime(index)
        except OSError:
            found = _MISSING
        return self._counted(found)

    def holds(self, key: str) -> bool:
        """Whether put_op's render of `key` is on disk (a put that could not write leaves none)."""
        return self._path(key).is_file() and self._path(key, ".index").is_file()

    def render_of(self, key: str) -> Any:
        """The render kept by put_op; a GenerateError when the cache lost it meanwhile."""
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        found = _entry(self._path(key), key)
        if found is not _MISSING:
            self._last = (key, found)
            return found
        from .errors import GenerateError

        raise GenerateError(f"the generation cache lost an entry while generating ({self._path(key)}); "
                            "run again (or with ACLNNGEN_GENERATE_CACHE=0)")

    def get(self, key: str) -> Any | None:
        found = _entry(self._path(key), key)
        if found is not _MISSING:
            try:
                os.utime(self._path(key))  # recently used: kept by trim()
            except OSError:
                pass
        return self._counted(found)

    def _counted(self, found: Any) -> Any | None:
        if found is _MISSING:
            self.misses += 1
            return None
        self.hits += 1
        return found

    def trim(self, keep: int | None = None) -> int:
        """Remove the least recently used files beyond those of `keep` ops (MAX_ENTRIES; an op
        keeps two files); how many went."""
        keep = 2 * (MAX_ENTRIES if keep is None else keep)
        entries = []
        try:
            for sub in os.scandir(self.directory):
                if sub.is_dir(follow_symlinks=False):
                    for entry in os.scandir(sub.path):
                        if entry.name.endswith(".pickle") and entry.is_file(follow_symlinks=False):
                            entries.append((entry.stat().st_mtime_ns, entry.path))
        except OSError:
            return 0
        removed = 0
        for _, path in sorted(entries)[: max(0, len(entries) - keep)]:
            try:
                os.unlink(path)
                removed += 1
            except OSError:
                pass
        return removed

    def put(self, key: str, value: Any) -> None:
        _save(self._path(key), {"key": key, "value": value})


_MISSING = object()


def _entry(path: Path, key: str) -> Any:
    """The value kept at `path` under `key`, or _MISSING (absent, truncated, another key or
    another version's)."""
    found = _load(path)
    return found["value"] if isinstance(found, dict) and found.get("key") == key else _MISSING


def _load(path: Path):
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except Exception:  # absent, truncated or from another version: nothing known
        return None


def _save(path: Path, data) -> None:
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".part")
        with os.fdopen(fd, "wb") as f:
            pickle.dump(data, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)  # whole or not at all, even with two generators at once
    except OSError:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _written_path(root: Path) -> Path:
    from aclnngen.cachedir import cache_root

    return cache_root() / "generate-written" / f"{hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()}.pickle"


def load_memo(root: Path) -> dict:
    """What the writer left under `root` last time (codegen/writer.py's `memo`); {} when unknown."""
    record = _load(_written_path(root))
    files = record.get("files") if isinstance(record, dict) else None
    return dict(files) if isinstance(files, dict) else {}


def save_memo(root: Path, memo: dict, run_key: str | None = None) -> None:
    """Keep the writer's memo for `root`, with the key of the run that left it when that run
    rendered every output (`unchanged_since`)."""
    _save(_written_path(root), {"key": run_key, "files": memo})


# --- whole runs: an unchanged run answered without rendering ----------------------------------


def run_key(specs_dir: Path, arguments: dict) -> str:
    """A key of everything a generate run reads: the generator, its arguments, and the status of
    every spec, table and profile it would load (type, size, times, inode: any write changes the
    change time, so an edited file never keeps its key; reading them all would cost more than
    the rendering it saves)."""
    from .tables import TABLES, table_path

    digest = hashlib.sha256(generator_fingerprint().encode() + b"\0")
    digest.update(repr(sorted(arguments.items())).encode() + b"\0")
    files = sorted((specs_dir / "ops").glob("*.yaml")) + [table_path(specs_dir, t) for t in TABLES]
    files += sorted((specs_dir / "profiles").glob("*/*/*.yaml"))
    for path in files:
        # a spec may be a link: the file it names is what is read
        digest.update(f"{path}\0{_status(str(path))}\0{_status(str(path), follow=True)}\0".encode())
    return digest.hexdigest()


def _status(path: str, follow: bool = False) -> tuple[int, ...] | None:
    from .writer import file_status

    try:
        return file_status(os.stat(path) if follow else os.lstat(path))
    except OSError:
        return None


def unchanged_since(root: Path, key: str) -> int | None:
    """The number of files the last run rendered, when it rendered all of them with this key and
    none changed since (each as the writer's memo records it); else None."""
    record = _load(_written_path(root))
    if not isinstance(record, dict) or record.get("key") != key or not isinstance(record.get("files"), dict):
        return None
    base = str(root)
    for rel, entry in record["files"].items():
        if _status(os.path.join(base, rel)) != tuple(entry[:-1]):
            return None
    return len(record["files"])
