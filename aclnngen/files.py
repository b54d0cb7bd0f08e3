"""Reading and writing one file the way every aclnngen command does (docs/security.md).

- `read_regular`: a regular file of bounded size, or a typed error naming it. A FIFO, a device, a
  directory or a socket is refused by what it is before a byte is read (opened non-blocking, so a
  FIFO with no writer never hangs the reader).
- `write_atomic`: a temporary file in the target's folder, fsynced, then renamed over the target;
  a symbolic link where the target should be is refused, never followed; content equal to what the
  file holds is not rewritten.
- `locked`: an exclusive lock on one target (a spec, a profile, a report folder) for a
  read-modify-write, so two runs on one target take turns instead of losing one's change.

Imports nothing beyond the standard library: the generator, the importer, the audit and the
simulator's build all stand on it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

# the largest file aclnngen reads as text (a spec, a page, a header, a baseline, a record)
DEFAULT_LIMIT = 64 * 1024 * 1024
LOCK_TIMEOUT_ENV = "ACLNNGEN_LOCK_TIMEOUT"
DEFAULT_LOCK_TIMEOUT = 600.0
_TMP_MARK = ".aclnngen-tmp-"


class FileError(OSError):
    """A file aclnngen cannot read or write as asked; the message names it and says why."""

    user_facing = True  # the command line prints it as one line, never as a traceback

    def __init__(self, message: str):
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def kind_of(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def read_regular(
    path: str | os.PathLike,
    *,
    what: str = "file",
    limit: int = DEFAULT_LIMIT,
    follow_links: bool = True,
    judge: Callable[[os.stat_result], str | None] | None = None,
) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; anything else is a FileError. With
    follow_links=False a symbolic link is refused too (a file aclnngen itself wrote and may replace).
    `judge` sees the opened file's status and refuses it by returning why (a cache entry not the
    user's own: aclnngen.cachedir.foreign), before a byte is read."""
    name = os.fspath(path)
    try:
        fd = os.open(
            name, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (0 if follow_links else os.O_NOFOLLOW)
        )
    except FileNotFoundError:
        raise FileError(f"{name}: no such {what}") from None
    except IsADirectoryError:
        raise FileError(f"{name}: is a directory, not a {what}") from None
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow_links:
            raise FileError(f"{name}: is a symbolic link; aclnngen follows no link to a {what} it writes") from None
        raise FileError(f"{name}: cannot read the {what}: {exc.strerror or exc}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileError(f"{name}: is {kind_of(st.st_mode)}, not a regular {what}")
        if st.st_size > limit:
            raise FileError(f"{name}: {st.st_size} bytes, over the {limit}-byte limit for a {what}")
        refused = judge(st) if judge is not None else None
        if refused:
            raise FileError(f"{name}: {refused}; aclnngen does not read this {what}")
        chunks, total = [], 0
        while True:  # read to the end, never past the limit (a file that grows while read)
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise FileError(f"{name}: over the {limit}-byte limit for a {what}")
        return b"".join(chunks)
    except OSError as exc:
        if isinstance(exc, FileError):
            raise
        raise FileError(f"{name}: cannot read the {what}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike, *, what: str = "file", limit: int = DEFAULT_LIMIT) -> str:
    data = read_regular(path, what=what, limit=limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileError(f"{os.fspath(path)}: not UTF-8 text (byte {exc.start})") from None


def _current(fd_dir: int, name: str) -> bytes | None:
    """What `name` in the folder holds now, when it is a regular file (None otherwise)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=fd_dir)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read()
    finally:
        os.close(fd)


def write_atomic(
    path: str | os.PathLike, data: bytes | str, *, what: str = "file", mode: int = 0o644, durable: bool = True
) -> bool:
    """Replace `path` with `data` atomically; False when it already held exactly that (nothing written).

    The folder must exist. A symbolic link, or anything not a regular file, at `path` is refused.
    durable=False skips the fsyncs (a cache entry: after a power cut it may be lost or cut short,
    and its reader then treats it as missing), never the rename."""
    content = data.encode("utf-8") if isinstance(data, str) else data
    target = Path(path)
    folder, name = target.parent, target.name
    try:
        dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise FileError(f"{target}: cannot write the {what}: its folder {folder}: {exc.strerror or exc}") from None
    try:
        try:
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
        except FileNotFoundError:
            st = None
        if st is not None and not stat.S_ISREG(st.st_mode):
            raise FileError(
                f"{target}: is {kind_of(st.st_mode)}; aclnngen writes the {what} only as a regular file and follows no link"
            )
        if st is not None and st.st_size == len(content) and _current(dfd, name) == content:
            return False
        tmp = f".{name}{_TMP_MARK}{os.getpid()}-{time.monotonic_ns()}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode, dir_fd=dfd)
        except OSError as exc:
            raise FileError(f"{target}: cannot write the {what}: {exc.strerror or exc}") from None
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(content)
                f.flush()
                if durable:
                    os.fsync(f.fileno())
            os.replace(tmp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            if durable:
                os.fsync(dfd)  # the rename itself survives a power cut
        except BaseException as exc:
            try:
                os.unlink(tmp, dir_fd=dfd)
            except OSError:
                pass
            if isinstance(exc, OSError) and not isinstance(exc, FileError):
                raise FileError(f"{target}: cannot write the {what}: {exc.strerror or exc}") from None
            raise
        return True
    finally:
        os.close(dfd)


def _lock_timeout() -> float:
    raw = os.environ.get(LOCK_TIMEOUT_ENV, "")
    try:
        return float(raw) if raw else DEFAULT_LOCK_TIMEOUT
    except ValueError:
        return DEFAULT_LOCK_TIMEOUT


@contextmanager
def locked(path: str | os.PathLike, *, what: str = "file", timeout: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock on `path` (a file or a folder) for a read-modify-write.

    The lock is the target's own (flock on it, no lock file left beside it). A writer replaces the
    file by rename, so the lock taken on the old file is checked against the name once held and
    taken again when the name has moved on. Another holder makes this wait, saying so once on
    stderr, up to $ACLNNGEN_LOCK_TIMEOUT seconds (default 600); then a FileError names the target."""
    target = Path(path)
    limit = _lock_timeout() if timeout is None else timeout
    deadline = time.monotonic() + limit
    said = False
    while True:
        flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | os.O_NONBLOCK
        try:
            fd = os.open(target, flags | (os.O_NOFOLLOW if not target.is_dir() else 0))
        except FileNotFoundError:
            # nothing to lock yet: lock the folder it will appear in instead
            with locked(target.parent, what=f"folder of the {what}", timeout=limit):
                yield
            return
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise FileError(f"{target}: is a symbolic link; aclnngen follows no link to a {what}") from None
            raise FileError(f"{target}: cannot lock the {what}: {exc.strerror or exc}") from None
        try:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    if not said:
                        print(f"aclnngen: waiting for {target}: another aclnngen run holds the {what}", file=sys.stderr)
                        said = True
                    if time.monotonic() >= deadline:
                        raise FileError(
                            f"{target}: another aclnngen run has held the {what} for over {limit:g} s "
                            f"(${LOCK_TIMEOUT_ENV}); try again when it has finished"
                        ) from None
                    time.sleep(0.05)
            try:
                same = os.path.samestat(os.fstat(fd), os.stat(target))
            except FileNotFoundError:
                same = False
            if same:
                yield
                return
        finally:
            os.close(fd)  # releases the lock
