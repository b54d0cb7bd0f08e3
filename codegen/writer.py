"""Writing generated files into a folder the generator does not fully own.

The rules (docs/security.md):
- The output folder keeps a manifest (`Manifest`): each file the generator wrote, with the SHA-256 of
  its content. Deterministic (sorted, no timestamps), so it can be committed.
- A file is overwritten or deleted only when the manifest lists it and its content still has the
  manifest's hash (the user has not edited it), or when it already holds exactly the new content.
  Anything else is refused, unless `force`.
- A non-empty folder without a manifest is refused, unless `force`.
- No symbolic link is followed: every folder is opened relative to its parent with O_NOFOLLOW, and a
  link where a file or folder should be is refused, even with `force`.
- Every write is atomic: a temporary file in the same folder, fsynced, then os.replace, so a killed run
  leaves the old file or the new one, never a partial one.
- The manifest records a run's intent (`pending`) before its first write, so a run killed halfway
  leaves files that are still aclnngen's: the next run replaces them without --force.
- One run at a time per output folder (a lock on the folder itself): a second one waits.

All refusals are found before the first write, so a refused run changes nothing.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import stat
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from aclnngen.files import locked

from .errors import GenerateError

MANIFEST_VERSION = 1
_TMP_MARK = ".aclnngen-tmp-"


def digest(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


@dataclass(frozen=True)
class Manifest:
    """Path (POSIX, relative to the output root) -> SHA-256 of the content the generator wrote.

    `pending`: while a run writes, the content it is about to write (path -> SHA-256), recorded
    before its first write and dropped after its last: a run killed in between leaves files that
    are still recognised as aclnngen's, so the next run replaces them without --force."""

    files: dict[str, str]
    pending: dict[str, str] | None = None

    def text(self) -> str:
        data = {
            "about": "files written by `aclnngen generate`, with their SHA-256; it changes only files listed here",
            "version": MANIFEST_VERSION,
            "files": dict(sorted(self.files.items())),
        }
        if self.pending:
            data["pending"] = dict(sorted(self.pending.items()))
        return json.dumps(data, indent=1, ensure_ascii=True) + "\n"

    def owns(self, rel: str, content_digest: str) -> bool:
        """Whether a file holding content of this digest is one aclnngen wrote (or was writing)."""
        return content_digest in (self.files.get(rel), (self.pending or {}).get(rel))

    @classmethod
    def parse(cls, text: bytes, where: str) -> "Manifest":
        try:
            data = json.loads(text.decode("utf-8"))
            files, pending = data["files"], data.get("pending", {})
            if data.get("version") != MANIFEST_VERSION or not isinstance(files, dict) or not isinstance(pending, dict):
                raise ValueError("unknown manifest version")
            for entries in (files, pending):
                if not all(isinstance(k, str) and isinstance(v, str) and _safe_relative(k) for k, v in entries.items()):
                    raise ValueError("entries must be relative paths inside the folder with a hash each")
        except (ValueError, KeyError, TypeError, UnicodeDecodeError) as exc:
            raise GenerateError(
                f"{where}: not a manifest aclnngen can read ({exc}); remove it or use --force"
            ) from None
        return cls(dict(files), dict(pending) or None)


def _safe_relative(path: str) -> bool:
    parts = path.split("/")
    return bool(path) and not path.startswith("/") and all(p not in ("", ".", "..") for p in parts) and "\0" not in path


def is_temporary(name: str) -> bool:
    """Whether `name` is a temporary file of a (possibly killed) run of the writer."""
    return name.startswith(".") and _TMP_MARK in name and name.rsplit(_TMP_MARK, 1)[1].isdigit()


def _alive(pid: int) -> bool:
    """Whether the run that owns a temporary may still be writing it (then it is left alone)."""
    if pid == os.getpid():
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


# --- link-free file access relative to the root -------------------------------------------------


_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class Folder:
    """Access to paths under `root` that never follows a symbolic link (file or folder)."""

    def __init__(self, root: Path):
        self.root = root
        self._held: dict[tuple[str, ...], int] | None = None  # folder fds kept open by `holding()`
        self.unsynced = 0  # files written as new without an fsync of their own (see write)

    @contextmanager
    def holding(self):
        """Within the block, each folder is opened once (walked without following links, as
        always) and its descriptor reused: writing thousands of files opens each folder once."""
        self._held = {}
        try:
            yield self
        finally:
            held, self._held = self._held, None
            for fd in held.values():
                os.close(fd)

    @contextmanager
    def _dir(self, parts: list[str], create: bool):
        if self._held is not None:
            key = tuple(parts)
            fd = self._held.get(key)
            if fd is None:
                with self._open_dir(parts, create) as opened:
                    fd = self._held[key] = os.dup(opened)
            yield fd
            return
        with self._open_dir(parts, create) as fd:
            yield fd

    @contextmanager
    def _open_dir(self, parts: list[str], create: bool):
        fd = os.open(self.root, _DIR_FLAGS)
        try:
            for index, name in enumerate(parts):
                try:
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except FileNotFoundError:
                    if not create:
                        raise
                    os.mkdir(name, 0o777, dir_fd=fd)
                    child = os.open(name, _DIR_FLAGS, dir_fd=fd)
                except OSError as exc:
                    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                        raise GenerateError(self._not_plain("/".join(parts[: index + 1]), "folder")) from None
                    raise
                os.close(fd)
                fd = child
            yield fd
        finally:
            os.close(fd)

    def _not_plain(self, rel: str, what: str) -> str:
        return f"{self.root / rel}: expected a plain {what}, found a symbolic link or something else; aclnngen never writes through it"

    def lstat(self, rel: str) -> os.stat_result | None:
        *parents, name = rel.split("/")
        try:
            with self._dir(parents, create=False) as fd:
                return os.stat(name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return None

    def read(self, rel: str) -> bytes | None:
        """The content of a regular file, None when absent; a link or special file is an error."""
        with self._open_regular(rel) as f:
            return None if f is None else f.read()

    def digest(self, rel: str) -> str | None:
        """sha256 of a regular file's content, read in chunks (a big file is never whole in
        memory); None when absent; a link or special file is an error."""
        with self._open_regular(rel) as f:
            if f is None:
                return None
            hashing = hashlib.sha256()
            for chunk in iter(lambda: f.read(1 << 20), b""):
                hashing.update(chunk)
            return hashing.hexdigest()

    @contextmanager
    def _open_regular(self, rel: str):
        """A regular file opened for reading (never through a link), or None when absent."""
        st = self.lstat(rel)
        if st is None:
            yield None
            return
        if not stat.S_ISREG(st.st_mode):
            raise GenerateError(self._not_plain(rel, "file"))
        *parents, name = rel.split("/")
        with self._dir(parents, create=False) as dfd:
            fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), dir_fd=dfd)
            with os.fdopen(fd, "rb") as f:
                yield f

    def write(self, rel: str, content, *, replacing: bool = True) -> None:
        """Replace `rel` with `content` (bytes, or an iterable of bytes chunks written in turn)
        atomically: a temporary file in the same folder, then os.replace. A file
        that replaces another is fsynced first (a power cut never leaves an empty file where a good
        one was); a new file is not, and counts in `unsynced` (the writer syncs once for all of them
        before the manifest names them)."""
        *parents, name = rel.split("/")
        with self._dir(parents, create=True) as dfd:
            tmp = f".{name}{_TMP_MARK}{os.getpid()}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dfd)
            try:
                with os.fdopen(fd, "wb") as f:
                    for chunk in (content,) if isinstance(content, (bytes, bytearray)) else content:
                        f.write(chunk)
                    f.flush()
                    if replacing:
                        os.fsync(f.fileno())
                    else:
                        self.unsynced += 1
                os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            except BaseException:
                try:
                    os.unlink(tmp, dir_fd=dfd)
                except OSError:
                    pass
                raise

    def sweep_temporaries(self, folder: str) -> None:
        """Remove temporary files a killed run of the generator left in `folder` (named by _TMP_MARK)."""
        parts = [p for p in folder.split("/") if p]
        try:
            with self._dir(parts, create=False) as dfd:
                for name in os.listdir(dfd):
                    if is_temporary(name) and not _alive(int(name.rsplit(_TMP_MARK, 1)[1])):
                        os.unlink(name, dir_fd=dfd)
        except FileNotFoundError:
            pass

    def remove(self, rel: str) -> None:
        *parents, name = rel.split("/")
        with self._dir(parents, create=False) as dfd:
            os.unlink(name, dir_fd=dfd)


# --- the write plan -------------------------------------------------------------------------------


@dataclass(frozen=True)
class WriteResult:
    written: list[str]
    removed: list[str]


def prepare_root(root: Path) -> None:
    """The output root exists as a folder (created if absent); a file there is a one-line error."""
    if root.is_symlink() and not root.is_dir():
        raise GenerateError(f"{root}: a symbolic link to no folder; name a folder")
    if root.exists() and not root.is_dir():
        raise GenerateError(f"{root}: exists and is not a folder; name a folder for the generated files")
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise GenerateError(f"{root}: cannot create the folder ({exc.strerror})") from None


def file_status(st: os.stat_result) -> tuple[int, ...]:
    """What says a file is as it was: its type, size, times and inode (any write changes its
    change time)."""
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def write_owned(
    root: Path,
    outputs: dict[str, bytes],
    manifest_path: str,
    *,
    partial: bool = False,
    force: bool = False,
    memo: dict | None = None,
) -> WriteResult:
    """Write `outputs` (path -> bytes) under `root` by the ownership rules above.

    `partial`: the outputs are a subset (some ops only): nothing is removed and the manifest keeps the
    entries of the files not rendered this time.
    `memo`: rel -> file_status + (sha256,) of the files this writer left, the manifest among them
    (read and updated in place): a file whose status is unchanged since then, and whose recorded
    content is the new content, is not read again (as git's index does). Without it every file is
    read."""
    prepare_root(root)
    # one writer per output folder: a second run waits, then sees what the first one wrote
    with locked(root, what="output folder"), Folder(root).holding() as folder:
        return _write_owned(folder, root, outputs, manifest_path, partial=partial, force=force, memo=memo)


def _write_owned(
    folder: Folder,
    root: Path,
    outputs: dict[str, bytes],
    manifest_path: str,
    *,
    partial: bool,
    force: bool,
    memo: dict | None,
) -> WriteResult:
    old_text = folder.read(manifest_path)
    if old_text is None:
        old = Manifest({})
        if not force and any(True for _ in root.iterdir()):
            raise GenerateError(
                f"{root}: the folder is not empty and has no {manifest_path} (the list of files aclnngen wrote "
                f"there); aclnngen writes only into an empty folder or one it generated; --force writes anyway"
            )
    else:
        try:
            old = Manifest.parse(old_text, str(root / manifest_path))
        except GenerateError:
            if not force:
                raise
            old = Manifest({})  # --force: an unreadable manifest owns nothing

    refused: list[str] = []
    to_write: list[str] = []
    existing: set[str] = set()
    reread: set[str] = set()  # read and found right, though not as the memo recorded it
    known = getattr(outputs, "digest", None)  # a mapping that knows its digests spares the hashing
    digests = (
        {rel: known(rel) for rel in outputs} if known else {rel: digest(content) for rel, content in outputs.items()}
    )
    for rel in sorted(outputs):  # one file's bytes at a time (`outputs` may encode on access)
        if memo is not None and memo.get(rel, [None])[-1] == digests[rel] == old.files.get(rel):
            st = folder.lstat(rel)
            if st is not None and stat.S_ISREG(st.st_mode) and tuple(memo[rel][:-1]) == file_status(st):
                continue  # as this writer left it, and that is the new content
        current = folder.digest(rel)  # in chunks: a shared file may be big
        if current is not None and current == digests[rel]:
            reread.add(rel)
            continue
        if current is not None:
            existing.add(rel)
        if current is not None and not force and not old.owns(rel, current):
            why = (
                "edited since aclnngen wrote it"
                if rel in old.files
                else "not written by aclnngen (not in the manifest)"
            )
            refused.append(f"{rel} ({why})")
        to_write.append(rel)

    to_remove: list[str] = []
    if not partial:
        for rel in sorted(set(old.files) - set(outputs)):
            current = folder.digest(rel)
            if current is None:
                continue
            if not force and not old.owns(rel, current):
                refused.append(f"{rel} (no spec produces it any more, but it was edited since aclnngen wrote it)")
            to_remove.append(rel)

    if refused:
        listing = "; ".join(refused[:5]) + (f"; and {len(refused) - 5} more" if len(refused) > 5 else "")
        raise GenerateError(
            f"{root}: refusing to change {len(refused)} file(s): {listing}; nothing was written; --force overrides"
        )

    for parent in sorted({rel.rpartition("/")[0] for rel in outputs}):
        folder.sweep_temporaries(parent)
    files = dict(old.files) if partial else {}
    files.update(digests)
    writing = set(to_write)
    if writing or to_remove:
        # the intent first: a run killed from here on leaves files the next run recognises
        intent = Manifest(dict(old.files), {**(old.pending or {}), **{rel: digests[rel] for rel in writing}})
        on_disk = intent.text().encode("utf-8")
        folder.write(manifest_path, on_disk)
    else:
        on_disk = old_text
    chunks = getattr(outputs, "chunks", None)  # a mapping that streams big files
    for rel in outputs:  # in the mapping's order (a generator's outputs grouped as it reads them back)
        if rel in writing:
            folder.write(rel, chunks(rel) if chunks else outputs[rel], replacing=rel in existing)
    for rel in to_remove:
        folder.remove(rel)
    if folder.unsynced:
        os.sync()  # the new files reach the disk before the manifest that names them
    new_text = Manifest(files).text().encode("utf-8")
    if new_text != on_disk:
        folder.write(manifest_path, new_text)
    if new_text != old_text:
        to_write.append(manifest_path)
    if memo is not None:
        for rel in [r for r in memo if r in to_remove or (not partial and r not in outputs)]:
            del memo[rel]
        for rel in outputs:
            # a file restored or touched since (right content, new status) is remembered anew, so
            # the next run need not read it again
            if rel in to_write or rel in reread or memo.get(rel, [None])[-1] != digests[rel]:
                st = folder.lstat(rel)
                if st is not None:
                    memo[rel] = file_status(st) + (digests[rel],)
        st = folder.lstat(manifest_path)
        if st is not None:
            memo[manifest_path] = file_status(st) + (digest(new_text),)
    return WriteResult(to_write, to_remove)


def read_manifest(root: Path, manifest_path: str) -> Manifest | None:
    try:
        text = Folder(root).read(manifest_path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    return None if text is None else Manifest.parse(text, str(root / manifest_path))
