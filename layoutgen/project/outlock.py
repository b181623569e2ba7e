"""The output folder's lock: one ``generate`` writes at a time, and nobody reads half of its work.

Two ``layoutgen generate`` at once used to delete each other's temporary
files. Now ``generate`` plans and writes holding an exclusive ``flock`` on
the output folder, and ``check`` (and ``generate --check``) read it holding
a shared one. The lock is taken on the folder itself, through a descriptor
of it, so no lock file is left in a folder that is committed. A process
that waits says so once, and gives up after :data:`LOCK_TIMEOUT_S` with
LG508. Where ``fcntl`` does not exist (Windows) there is no lock.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ..schema.diagnostics import Diagnostic, LayoutgenError
from .files import OutputError, io_error

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["LOCK_TIMEOUT_S", "output_lock"]

#: How long a command waits for another layoutgen process to let go of the output folder, in seconds.
LOCK_TIMEOUT_S = 300.0
_POLL_S = 0.05
_DIRECTORY = getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


@contextlib.contextmanager
def output_lock(root: Path, out: str, *, exclusive: bool,
                on_wait: Callable[[], None] | None = None) -> Iterator[None]:
    """Hold the lock of the output folder ``root / out`` (``exclusive`` to write, shared to read).

    To write, the folder is created if it is missing, and removed again if
    it is still empty at the end; to read a folder that does not exist there
    is nothing to lock. ``on_wait`` is called once if another process holds
    the lock. Raises LayoutgenError (LG508) after waiting
    :data:`LOCK_TIMEOUT_S`, and OutputError (LG511) when the folder cannot
    be created or opened.
    """
    folder = root / out
    if fcntl is None or (not exclusive and not folder.is_dir()):
        yield
        return
    created = [p for p in (folder, *folder.parents) if root in p.parents and not p.is_dir()]  # innermost first
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd = _acquire(folder, out, exclusive, on_wait)
    except OSError as exc:
        raise OutputError(io_error(root, exc, "create" if created else "open", folder)) from exc
    try:
        yield
        for made in created:  # if nothing was written, leave no empty folder behind
            try:
                made.rmdir()
            except OSError:  # not empty: written to
                break
    finally:
        os.close(fd)  # and with it the lock


def _acquire(folder: Path, out: str, exclusive: bool, on_wait: Callable[[], None] | None) -> int:
    """A descriptor of ``folder`` holding its lock."""
    operation = (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    waited = False
    while True:
        fd = os.open(folder, os.O_RDONLY | _DIRECTORY)
        try:
            while True:
                try:
                    fcntl.flock(fd, operation)
                    break
                except BlockingIOError:
                    if time.monotonic() >= deadline:
                        raise LayoutgenError(Diagnostic(
                            "LG508", f"the output folder `{out}` is locked by another layoutgen process; gave up "
                            f"after {LOCK_TIMEOUT_S:g} s", None,
                            "let the other `layoutgen generate` or `layoutgen check` finish, then run this again",
                        )) from None
                    if not waited and on_wait is not None:
                        on_wait()
                    waited = True
                    time.sleep(_POLL_S)
            # The holder may have removed the folder (it made it and wrote nothing): a writer locks the
            # folder that is there now, or two writers could each hold the lock of a different one.
            if not exclusive or os.path.samestat(os.fstat(fd), os.stat(folder)):
                return fd
        except FileNotFoundError:
            pass
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
        folder.mkdir(parents=True, exist_ok=True)
