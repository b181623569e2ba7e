"""The cubin cache's folders and files, opened so that no other user can slip a cubin in.

A cubin in the cache runs, as the user who loads it, on their GPU. So the
cache trusts only what its user (or root) made: folders are created 0700; a
folder that another user owns, or that its group or others can write, is
refused (LG512); entries and lock files are opened without following links
and must be regular files of their user's. What cannot be used for another
reason (a file where a folder belongs, a folder where a file belongs) is
LG513. :mod:`.cache` builds the cache on these.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

from ..schema.diagnostics import Diagnostic, LayoutgenError, display_path

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no lock (racing processes may write an entry twice)
    fcntl = None  # type: ignore[assignment]

__all__ = ["ELSEWHERE", "CacheError", "cache_error", "checked_entry_folder", "checked_root", "open_file",
           "read_file"]

#: The start of every hint that sends the user to another cache folder.
ELSEWHERE = "point LAYOUTGEN_CACHE_DIR (or `cache_dir`) at a folder"
# Nothing in the cache is opened through a link; descriptors do not leak into children.
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)


class CacheError(LayoutgenError, OSError):
    """The cubin cache cannot be used safely (LG512) or at all (LG513); nothing was loaded from it."""


def cache_error(code: str, message: str, hint: str) -> CacheError:
    """A CacheError with one diagnostic and no site (the cache is no declaration of the user's)."""
    return CacheError(Diagnostic(code, message, None, hint))


def _shown(path: Path) -> str:
    return display_path(str(path))  # as every path layoutgen prints: relative to the working folder under it


def _trusted(uid: int) -> bool:
    return uid in (os.geteuid(), 0)  # root can write everything anyway


def _check_private(folder: Path, st: os.stat_result) -> None:
    """LG512 unless ``folder`` (whose stat is ``st``) is ours (or root's) and only its owner can write it."""
    if not _trusted(st.st_uid):
        raise cache_error("LG512", f"the compile cache `{_shown(folder)}` belongs to another user (uid "
                          f"{st.st_uid}), who could plant a cubin in it", f"{ELSEWHERE} of your own")
    group, others = bool(st.st_mode & stat.S_IWGRP), bool(st.st_mode & stat.S_IWOTH)
    if group or others:
        who = " and ".join(w for w, can in (("its group", group), ("all users", others)) if can)
        raise cache_error("LG512", f"the compile cache `{_shown(folder)}` can be written by {who} (mode "
                          f"{stat.S_IMODE(st.st_mode):04o}), so another user could plant a cubin in it",
                          f"make it private (`chmod go-w {_shown(folder)}`), or {ELSEWHERE} only you can write")


def checked_root(folder: Path, *, create: bool) -> bool:
    """Check the cache folder, made 0700 with its missing parents when ``create``; False if it is absent.

    The folder itself may be a link (``~/.cache`` on another disk): what it
    leads to is checked.
    """
    if create:
        _make_folders(folder)
    try:
        st = os.stat(folder)
    except FileNotFoundError:
        return False
    except NotADirectoryError:  # a file above it
        raise _not_a_folder(folder) from None
    if not stat.S_ISDIR(st.st_mode):
        raise _not_a_folder(folder)
    _check_private(folder, st)
    return True


def checked_entry_folder(folder: Path, *, create: bool) -> bool:
    """Check the folder of some entries (made 0700 when ``create``; never a link); False if it is absent."""
    if create:
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, 0o700)
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        if create:  # made, and removed again at once by someone else
            raise
        return False
    if stat.S_ISLNK(st.st_mode):
        raise _a_link(folder)
    if not stat.S_ISDIR(st.st_mode):
        raise cache_error("LG513", f"`{_shown(folder)}` in the compile cache is a file, where layoutgen keeps a "
                          "folder", f"remove it (`rm {_shown(folder)}`)")
    _check_private(folder, st)
    return True


def _make_folders(folder: Path) -> None:
    """Create ``folder`` and its missing parents, each 0700 (private, as XDG asks of ``~/.cache``)."""
    missing: list[Path] = []
    here = folder
    while True:
        try:
            os.stat(here)
            break
        except (FileNotFoundError, NotADirectoryError):
            missing.append(here)
            here = here.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:  # made meanwhile by another process, or a file: checked after
            pass
        except NotADirectoryError:
            raise _not_a_folder(folder) from None


def _not_a_folder(folder: Path) -> CacheError:
    # The part of the path that is a file: the folder itself, or a part above it.
    blocking = next((p for p in reversed((folder, *folder.parents)) if p.exists() and not p.is_dir()), folder)
    return cache_error("LG513", f"the compile cache `{_shown(folder)}` cannot be used: `{_shown(blocking)}` is not "
                       "a folder", ELSEWHERE)


def _a_link(path: Path) -> CacheError:
    return cache_error("LG512", f"`{_shown(path)}` in the compile cache is a symbolic link; layoutgen makes none and "
                       "follows none", f"remove it (`rm {_shown(path)}`) and find out who made it")


def _a_folder(path: Path) -> CacheError:
    return cache_error("LG513", f"`{_shown(path)}` in the compile cache is a folder, where layoutgen keeps a file",
                       f"remove it (`rm -r {_shown(path)}`)")


def open_file(path: Path, flags: int) -> int:
    """A descriptor of the regular file ``path``, opened (or created 0600) never through a link.

    LG512 for a link or a file of another user, LG513 for a folder or
    anything else that is not a regular file; OSError as ``os.open`` raises it.
    """
    try:
        fd = os.open(path, flags | _NOFOLLOW, 0o600)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EMLINK):  # O_NOFOLLOW met a link (EMLINK on FreeBSD)
            raise _a_link(path) from None
        if exc.errno == errno.EISDIR:
            raise _a_folder(path) from None
        raise
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise _a_folder(path)
        if not stat.S_ISREG(st.st_mode):
            raise cache_error("LG513", f"`{_shown(path)}` in the compile cache is not a regular file",
                              f"remove it (`rm {_shown(path)}`)")
        if not _trusted(st.st_uid):
            raise cache_error("LG512", f"`{_shown(path)}` in the compile cache belongs to another user (uid "
                              f"{st.st_uid})", f"remove it (`rm {_shown(path)}`) and find out who made it")
    except BaseException:
        os.close(fd)
        raise
    return fd


def read_file(path: Path, limit: int = -1) -> bytes | None:
    """The bytes of an entry's file (at most ``limit``), read once from one descriptor; None if absent."""
    try:
        fd = open_file(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit)


def write_atomic(path: Path, data: bytes, *, shared: bool = False) -> None:
    """Write ``data`` to ``path`` through a temporary file beside it, then rename: a reader sees the old
    file or the new one, never half of one; a link at ``path`` is replaced, never written through.

    The file is private (0600, as the cache's are) unless ``shared``: then it gets the mode any new file
    gets (0666 less the umask), as a compiler's output does, for files other users load (a package's cubins).
    """
    if shared:
        fd, tmp = _new_file(path, 0o666)
    else:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _new_file(path: Path, mode: int) -> tuple[int, str]:
    """A new temporary file beside ``path``, named as ``tempfile.mkstemp`` names it, created with ``mode`` (less
    the umask, which ``mkstemp``'s fixed 0600 ignores) and never through a link."""
    while True:
        tmp = str(path.parent / f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode), tmp
        except FileExistsError:
            continue


@contextlib.contextmanager
def locked(lock: Path, stale: str) -> Iterator[None]:
    """Hold ``lock`` (a file beside an entry, made 0600, ``fcntl.flock``), then remove the files of its folder
    that match ``stale``: anyone writing the entry holds the lock, so its temporary files there now are left
    over from a writer that died."""
    fd = open_file(lock, os.O_RDWR | os.O_CREAT)
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        for left in lock.parent.glob(stale):
            left.unlink(missing_ok=True)
        yield
    finally:
        os.close(fd)  # and with it the lock
