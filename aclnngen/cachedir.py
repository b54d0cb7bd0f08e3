"""Where aclnngen keeps what it can rebuild (the simulator's builds, the generator's renders), and
whether that folder is the user's own: one place, importable by the generator and the runtime alike
without loading either.

The cache holds things that run or become code: jinja2 bytecode, the simulator library, rendered
outputs written into the user's package. They are used only from a folder nobody else can write
(`distrust`, docs/security.md): owned by the current user and writable by no group or other, under
parents that only the user or root can change (a world-writable parent must have the sticky bit,
like /tmp). A folder that fails is ignored with one warning naming it and why; the generator then
runs without a cache and the simulator is built into a private folder of the process
(`private_temporary`).
"""

from __future__ import annotations

import os
import stat
import warnings
from pathlib import Path


class UntrustedCacheWarning(UserWarning):
    """The cache folder is not the user's own; it is ignored (the message names it and says why)."""


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


def _private_group(gid: int) -> bool:
    """Whether `gid` is the user's private group (same name as the user, no other member): a
    folder writable by it is writable by the user alone (umask 002 systems)."""
    try:
        import grp
        import pwd

        user, group = pwd.getpwuid(os.geteuid()), grp.getgrgid(gid)
    except (ImportError, KeyError):
        return False
    return user.pw_gid == gid and group.gr_name == user.pw_name and all(m == user.pw_name for m in group.gr_mem)


def _writers(st: os.stat_result) -> str | None:
    if st.st_mode & stat.S_IWOTH:
        return "writable by others"
    if st.st_mode & stat.S_IWGRP and not _private_group(st.st_gid):
        return f"writable by its group (gid {st.st_gid})"
    return None


def foreign(st: os.stat_result) -> str | None:
    """Why a file or folder with this status is not the current user's own (None when it is):
    another owner, or write permission for group or others."""
    uid = os.geteuid()
    if st.st_uid != uid:
        return f"owned by uid {st.st_uid}, not {uid}"
    return _writers(st)


def distrust(folder: str | os.PathLike) -> str | None:
    """Why `folder` is not the user's own cache folder, or None when it is.

    The folder itself (when it exists) must be a folder owned by the current user and writable by
    no group (but the user's private group) or other; each folder above it (links resolved) must be owned by the user or root and
    writable by no group or other unless its sticky bit is set (as /tmp). A folder that does not
    exist yet is judged by the folders above it (aclnngen makes it with mode 0700)."""
    uid = os.geteuid()
    real = Path(os.path.realpath(os.path.abspath(os.fspath(folder))))
    own = True  # the deepest existing component is the folder itself
    for path in (real, *real.parents):
        try:
            st = os.stat(path)
        except FileNotFoundError:
            own = False
            continue
        except OSError as exc:
            return f"{path} cannot be examined ({exc.strerror or exc})"
        where = "" if own and path == real else f" (its parent {path})"
        if not stat.S_ISDIR(st.st_mode):
            return f"not a folder{where}"
        if own and path == real:
            reason = foreign(st)
            if reason:
                return reason
        else:
            if st.st_uid not in (uid, 0):
                return f"owned by uid {st.st_uid}, neither {uid} nor root{where}"
            reason = _writers(st)
            if reason and not st.st_mode & stat.S_ISVTX:
                return f"{reason}{where}"
        own = False
    return None


_warned: set[tuple[str, str]] = set()


def trusted(folder: str | os.PathLike, *, what: str = "cache") -> bool:
    """Whether `folder` is the user's own (`distrust`); when not, one warning per folder and reason
    in this process names it and says why."""
    reason = distrust(folder)
    if reason is None:
        return True
    key = (os.fspath(folder), reason)
    if key not in _warned:
        _warned.add(key)
        warnings.warn(
            UntrustedCacheWarning(
                f"aclnngen: ignoring the {what} folder {os.fspath(folder)}: {reason}; nothing in it is loaded "
                "(make it your own with mode 0700, or set $ACLNNGEN_CACHE_DIR to a folder of yours)"
            ),
            stacklevel=2,
        )
    return False


def make_private(folder: str | os.PathLike) -> Path:
    """Make `folder` and any missing parents with mode 0700 (an existing one is left as it is);
    an OSError when it cannot be made or is not a folder (a link to one counts as not one)."""
    path = Path(folder)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        make_private(path.parent)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(f"{path} is not a folder")
    return path


_private: Path | None = None


def private_temporary() -> Path:
    """A folder of this process alone (mode 0700, made by mkdtemp), removed when it exits: where the
    simulator is built when the cache folder is not the user's own."""
    global _private
    if _private is None or not _private.is_dir():
        import atexit  # here: a trusted cache (the usual case) needs none of these
        import shutil
        import tempfile

        _private = Path(tempfile.mkdtemp(prefix="aclnngen-private-"))
        atexit.register(shutil.rmtree, str(_private), True)
    return _private
