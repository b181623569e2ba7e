"""Carrying out a :class:`~layoutgen.project.files.Plan`: staged, in an order that is consistent at every step.

A failed or killed ``generate`` must leave a package that imports and
launches: never an ``__init__.py`` naming a kernel file that was not
written. So :func:`apply` writes every new text to a temporary file first
(all of them, before anything is replaced), then renames them into place
with each folder's ``__init__.py`` last, then deletes what is no longer
generated. A write that fails while staging removes what it staged and
leaves every file as it was (LG511). The caller holds the output folder's
lock (:mod:`layoutgen.project.outlock`), so the temporary files of an
earlier run that the plan found are stale, and are removed first.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path

from ..codegen.stamp import is_generated, verify
from ..schema.diagnostics import LayoutgenError
from .files import Change, OutputError, Plan, hand_edited, io_error, obstacle, outside_project, read_text

__all__ = ["apply"]


def apply(root: Path, plan: Plan, *, overwrite_edits: bool = False) -> list[str]:
    """Carry out ``plan`` under ``root``; return the paths changed (and temporaries removed), in order.

    Raises :class:`LayoutgenError`, before writing anything, with the first
    conflict of the plan, for a file that got in the way since it was
    planned (LG503), for an output folder that now resolves outside the
    project (LG510), and, unless ``overwrite_edits``, for a generated file
    that was edited by hand (LG509). Raises :class:`OutputError` (LG511, an
    OSError too) when a file cannot be written or removed. Unchanged files
    are not touched; folders left empty under ``module_dir`` are removed.
    Call it holding the output folder's lock.
    """
    if plan.conflicts:
        raise LayoutgenError(plan.conflicts[0])
    outside = outside_project(root, plan.module_dir)
    if outside is not None:
        raise LayoutgenError(outside)
    deletes = [c for c in plan.changes if c.kind == "delete"]
    writes = _commit_order([c for c in plan.changes if c.kind != "delete"])
    deleting = {c.path for c in deletes}
    # The disk may have changed since planning; check again, all first.
    for change in writes:
        problem = obstacle(root, change.path, deleting)
        if problem is not None:
            raise LayoutgenError(problem)
    if not overwrite_edits:
        for change in plan.changes:
            current = _current(root, change.path) if change.kind != "add" else None
            if current is not None and is_generated(current) and not verify(current):
                raise LayoutgenError(hand_edited(root, change.path))
    done: list[str] = []
    for rel in plan.temporaries:
        _remove(root, rel)
        done.append(rel)
    # A generated file where a write needs a folder must go first; every other deletion waits
    # until the new files are in place, so the old ones stay usable if writing fails.
    in_the_way = [d for d in deletes if any(w.path.startswith(d.path + "/") for w in writes)]
    for change in in_the_way:
        done.extend(_delete(root, change))
    staged = _stage(root, writes)
    renamed = 0
    try:
        for change, temporary in staged:
            os.replace(temporary, root / change.path)
            done.append(change.path)
            renamed += 1
    except BaseException as exc:  # a rename rarely fails; the module's __init__.py, renamed last, is still the old
        for _, temporary in staged[renamed:]:
            with contextlib.suppress(OSError):
                temporary.unlink()
        if isinstance(exc, OSError):
            raise OutputError(io_error(root, exc, "write", root / staged[renamed][0].path)) from exc
        raise
    for change in deletes:
        if change not in in_the_way:
            done.extend(_delete(root, change))
    _prune(root, plan.module_dir, [c for c in deletes if c.path in done])
    return sorted(done)


def _commit_order(writes: list[Change]) -> list[Change]:
    """Each folder's ``__init__.py`` after every other file, the innermost first, the module's last."""
    def key(change: Change) -> tuple[bool, int, str]:
        is_init = change.path.rsplit("/", 1)[-1] == "__init__.py"
        return is_init, -change.path.count("/") if is_init else 0, change.path

    return sorted(writes, key=key)


def _current(root: Path, rel: str) -> str | None:
    try:
        return read_text(root / rel)
    except OSError as exc:
        raise OutputError(io_error(root, exc, "read", root / rel)) from exc


def _stage(root: Path, writes: list[Change]) -> list[tuple[Change, Path]]:
    """Every new text in a temporary file beside its target; on any failure, none (and LG511)."""
    staged: list[tuple[Change, Path]] = []
    made: list[Path] = []  # folders created here, removed again if staging fails
    change: Change | None = None
    try:
        for change in writes:
            target = root / change.path
            made.extend(_make_parents(target.parent))
            staged.append((change, _write_temporary(target, change.new or "")))  # never None: see Change
    except BaseException as exc:
        for _, temporary in staged:
            with contextlib.suppress(OSError):
                temporary.unlink()
        for folder in reversed(made):
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(exc, OSError) and change is not None:
            raise OutputError(io_error(root, exc, "write", root / change.path)) from exc
        raise
    return staged


def _make_parents(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; the folders created, outermost first."""
    missing = []
    while not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            path.mkdir()
    return missing[::-1]


def _write_temporary(path: Path, text: str) -> Path:
    """``text`` in a new file beside ``path``, named as :data:`~layoutgen.project.files.TEMPORARY` says."""
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(temporary, flags, 0o666)  # 0o666: let the umask decide, as for any new file
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            # No fsync: the renames keep readers from ever seeing half a file,
            # and a generated file lost to a power cut is regenerated.
            f.write(text)
        if mode is not None:  # keep the mode of the file it replaces
            os.chmod(temporary, mode)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    return temporary


def _remove(root: Path, rel: str) -> None:
    try:
        (root / rel).unlink(missing_ok=True)
    except OSError as exc:
        raise OutputError(io_error(root, exc, "remove", root / rel)) from exc


def _delete(root: Path, change: Change) -> list[str]:
    """Delete a generated file that is no longer wanted, if it still is one: ``[path]``, or ``[]``."""
    target = root / change.path
    text = _current(root, change.path) if target.is_file() and not target.is_symlink() else None
    if text is None or not is_generated(text):
        return []
    _remove(root, change.path)
    return [change.path]


def _prune(root: Path, module_dir: str, deleted: list[Change]) -> None:
    """Remove folders that deleting files left empty, up to ``module_dir`` itself."""
    top = root / module_dir
    for change in sorted(deleted, key=lambda c: c.path, reverse=True):
        folder = (root / change.path).parent
        while folder == top or top in folder.parents:
            try:
                folder.rmdir()  # fails, and stops the climb, unless empty
            except OSError:
                break
            folder = folder.parent
