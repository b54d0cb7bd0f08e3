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
three JSON records per op and key (its render; its index; its pieces of the shared files, such as
its C block of sim_kernels.c, read back one op at a time while that file is written); beside them, per output folder, the
status and digest of each file the writer left, with the key of the run that left them
(`generate-written/`): an unchanged file is not read again, and an unchanged run renders nothing.
`ACLNNGEN_GENERATE_CACHE=0` turns all of it off. A cache file that cannot be read or written is
ignored (a miss), never an error: the cache only ever saves time.

The cache is data, never code (docs/security.md): records are JSON (`encode`/`decode`, which know
tuples and the two classes a render is made of, and construct nothing else), so a record cannot
run anything when read; files of the pickle format this cache once used are never opened, and
`trim` removes them. A record is read only as a regular file of the user's own (no link followed,
not writable by group or others), and the cache folder only when it is the user's own
(aclnngen.cachedir.distrust): else the whole cache is off for the run, with one warning, since a
planted render would become the user's generated code.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from aclnngen.cachedir import cache_root, foreign, make_private, trusted
from aclnngen.files import FileError, read_regular, write_atomic

_PACKAGE_ROOT = Path(__file__).resolve().parent.parent
_SKIPPED_DIRS = {"generated", "tests", "__pycache__", "benchmarks", "build", "docs", "specs"}
FORMAT = 2  # bump when the record's shape changes (2: JSON records)
SUFFIX = ".json"
OLD_SUFFIXES = (".pickle",)  # an earlier format's files: never read, removed by trim
MAX_RECORD = 64 * 1024 * 1024  # bytes of one record read back at most
MAX_ENTRIES = 8000  # ops kept (~60 KB each): the least recently used beyond that are removed
_PARTS = ("", ".index", ".pieces")  # the files of one op's entry (put_op)


def enabled() -> bool:
    """The cache is on ($ACLNNGEN_GENERATE_CACHE) and its folder is the user's own (else one
    warning says why it is ignored)."""
    if os.environ.get("ACLNNGEN_GENERATE_CACHE", "1") in ("0", "", "off", "no"):
        return False
    return trusted(cache_root())


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
        dirnames[:] = [
            d for d in dirnames if d not in _SKIPPED_DIRS and not d.startswith(".") and not d.endswith(".egg-info")
        ]
        for name in filenames:
            if name.endswith((".py", ".j2")):
                yield Path(dirpath) / name


class OpCache:
    """Get and put one op's (outputs, record) by the text of its spec and the run's context."""

    def __init__(self, context: str, directory: Path | None = None):
        self.context = hashlib.sha256((generator_fingerprint() + "\0" + context).encode()).hexdigest()
        if directory is None:
            directory = cache_root() / "generate"
        self.directory = Path(directory)
        self.trusted = trusted(self.directory)  # else every get misses and every put is skipped
        self.hits = self.misses = 0
        self.max_entries = MAX_ENTRIES
        self._last: tuple[str, Any] | None = None  # the render read back last (an op's files are read in turn)

    def key(self, source: str, text: str) -> str:
        return hashlib.sha256(f"{self.context}\0{source}\0{text}".encode()).hexdigest()

    def _path(self, key: str, part: str = "") -> Path:
        return self.directory / key[:2] / f"{key}{part}{SUFFIX}"

    # --- ops: the outputs apart from an index of them, so an unchanged op costs a small read -----

    def put_op(self, key: str, render: Any, index: Any, pieces: dict[str, str] | None = None) -> None:
        """Keep an op's render (read back only for a file that must be written or shown), its
        index (the record and each output's path and digest, read on every hit) and its pieces of
        the shared files (read back by `pieces_of`, one op at a time, while a shared file is
        streamed: the generator never holds every op's piece at once)."""
        self.put(key, render)
        if self.trusted:
            _save(self._path(key, ".pieces"), {"key": key, "value": pieces or {}})
            _save(self._path(key, ".index"), {"key": key, "value": index})

    def get_op(self, key: str) -> Any | None:
        """The index of an op kept by put_op, or None (a miss) when any of its files is missing."""
        found = _entry(self._path(key, ".index"), key) if self.trusted else _MISSING
        try:
            for part in _PARTS:  # all recently used (kept by trim), and all still there
                os.utime(self._path(key, part), follow_symlinks=False)
        except OSError:
            found = _MISSING
        return self._counted(found)

    def holds(self, key: str) -> bool:
        """Whether put_op's files of `key` are on disk (a put that could not write leaves none)."""
        return self.trusted and all(self._path(key, part).is_file() for part in _PARTS)

    def pieces_of(self, key: str) -> dict[str, str]:
        """The pieces of the shared files kept by put_op; a GenerateError when the cache lost them."""
        found = _entry(self._path(key, ".pieces"), key) if self.trusted else _MISSING
        if isinstance(found, dict):
            return found
        return self._lost(key, ".pieces")

    def render_of(self, key: str) -> Any:
        """The render kept by put_op; a GenerateError when the cache lost it meanwhile."""
        if self._last is not None and self._last[0] == key:
            return self._last[1]
        found = _entry(self._path(key), key) if self.trusted else _MISSING
        if found is not _MISSING:
            self._last = (key, found)
            return found
        return self._lost(key)

    def _lost(self, key: str, part: str = ""):
        from .errors import GenerateError

        raise GenerateError(
            f"the generation cache lost an entry while generating ({self._path(key, part)}); "
            "run again (or with ACLNNGEN_GENERATE_CACHE=0)"
        )

    def get(self, key: str) -> Any | None:
        found = _entry(self._path(key), key) if self.trusted else _MISSING
        if found is not _MISSING:
            try:
                os.utime(self._path(key), follow_symlinks=False)  # recently used: kept by trim()
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
        keeps three files); how many went. Files of an earlier format (pickles) go first, unread.
        Every generate calls this, so a cache within its bound costs one listing (no file's
        times read); one beyond it is trimmed to a tenth below, so the next runs do not each
        read every file's time to remove one."""
        keep = len(_PARTS) * (MAX_ENTRIES if keep is None else keep)
        if not self.trusted:
            return 0
        entries, old = [], []
        try:
            for sub in os.scandir(self.directory):
                if sub.is_dir(follow_symlinks=False):
                    for entry in os.scandir(sub.path):
                        if not entry.is_file(follow_symlinks=False):
                            continue
                        if entry.name.endswith(SUFFIX):
                            entries.append(entry)
                        elif entry.name.endswith(OLD_SUFFIXES):
                            old.append(entry.path)
            over = len(entries) - (keep - keep // 10) if len(entries) > keep else 0
            oldest = sorted((e.stat(follow_symlinks=False).st_mtime_ns, e.path) for e in entries)[:over] if over else []
        except OSError:
            return 0
        removed = 0
        for path in old + [path for _, path in oldest]:
            try:
                os.unlink(path)
                removed += 1
            except OSError:
                pass
        return removed

    def put(self, key: str, value: Any) -> None:
        if self.trusted:
            _save(self._path(key), {"key": key, "value": value})


_MISSING = object()


def _entry(path: Path, key: str) -> Any:
    """The value kept at `path` under `key`, or _MISSING (absent, truncated, another key or
    another version's)."""
    found = _load(path)
    return found["value"] if isinstance(found, dict) and found.get("key") == key else _MISSING


def _load(path: Path):
    """The record at `path`, or None when it is absent, unreadable, not JSON of this cache, a link,
    not a regular file or not the user's own. Nothing in it can run: JSON builds data only."""
    try:
        data = read_regular(path, what="cache record", limit=MAX_RECORD, follow_links=False, judge=foreign)
        return decode(data)
    except (FileError, ValueError, TypeError, RecursionError):
        return None


_made: set[Path] = set()  # cache folders this process made or found (each checked once)


def _save(path: Path, data) -> None:
    """Keep `data` at `path` (JSON, written whole or not at all, even with two generators at once);
    a value JSON cannot hold exactly, or a folder that cannot be written, leaves nothing."""
    try:
        text = encode(data)
        if path.parent not in _made:
            make_private(path.parent)
            _made.add(path.parent)
        write_atomic(path, text, what="cache record", mode=0o600, durable=False)
    except (OSError, TypeError, ValueError, RecursionError):
        _made.discard(path.parent)  # perhaps removed meanwhile: made again by the next save


# --- the records' format: JSON, with tuples and registered dataclasses tagged -----------------
# A tagged value is an object with one key starting with NUL: "\0t" a tuple, "\0d" a dict whose
# own keys would look like a tag (as key/value pairs), "\0<tag>" a dataclass registered with
# `record_class` (its fields' values in order; the generator's Output and OpRender).
_TAG = "\0"
_CLASSES: dict[str, type] = {}
_TAGS: dict[type, str] = {}


def record_class(tag: str):
    """Register a dataclass whose instances a record may hold (a class decorator); reading builds
    it from its fields' values and nothing else."""

    def register(cls):
        import dataclasses

        name = _TAG + tag
        if tag in ("t", "d") or _CLASSES.get(name, cls) is not cls:
            raise ValueError(f"record tag {tag!r} is taken")
        _CLASSES[name] = cls
        _TAGS[cls] = name
        cls._record_fields = tuple(f.name for f in dataclasses.fields(cls))
        return cls

    return register


def _tagged(value):
    cls = type(value)
    if cls is str or cls is int or cls is float or cls is bool or value is None:
        return value
    if cls is list:
        return [_tagged(v) for v in value]
    if cls is tuple:
        return {"\0t": [_tagged(v) for v in value]}
    if cls is dict:
        if all(type(k) is str and not k.startswith(_TAG) for k in value):
            return {k: _tagged(v) for k, v in value.items()}
        if all(type(k) is str for k in value):
            return {"\0d": [[k, _tagged(v)] for k, v in value.items()]}
        raise TypeError(f"a cache record's keys are strings, not {sorted({type(k).__name__ for k in value})}")
    tag = _TAGS.get(cls)
    if tag is None:
        raise TypeError(f"a cache record cannot hold a {cls.__name__}")
    return {tag: [_tagged(getattr(value, name)) for name in cls._record_fields]}


def _untagged(obj: dict):
    if len(obj) == 1:
        ((key, value),) = obj.items()
        if key.startswith(_TAG):
            if key == "\0t":
                return tuple(value)
            if key == "\0d":
                return {k: v for k, v in value}
            cls = _CLASSES.get(key)
            if cls is None:
                raise ValueError(f"unknown tag {key!r} in a cache record")
            if not isinstance(value, list) or len(value) != len(cls._record_fields):
                raise ValueError(f"a cached {cls.__name__} has {len(cls._record_fields)} fields")
            return cls(*value)
    return obj


def encode(value) -> bytes:
    """A record as JSON (UTF-8): plain data, tuples, Outputs and OpRenders, nothing else."""
    return json.dumps(_tagged(value), separators=(",", ":")).encode("ascii")  # ASCII: the faster encoder


def decode(data: bytes):
    """The value `encode` gave; a ValueError for anything else. Builds data only: no name in the
    text is looked up, no code runs."""
    return json.loads(data.decode("utf-8"), object_hook=_untagged)


def _written_path(root: Path) -> Path:
    return (
        cache_root() / "generate-written" / f"{hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()}{SUFFIX}"
    )


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
    from .tables import TABLES, spec_paths, table_path

    digest = hashlib.sha256(generator_fingerprint().encode() + b"\0")
    digest.update(repr(sorted(arguments.items())).encode() + b"\0")
    files = spec_paths(specs_dir) + [table_path(specs_dir, t) for t in TABLES]
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
