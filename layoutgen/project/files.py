"""Writing generated output safely: stamped, planned, atomic, never foreign.

Every generated file carries the stamp of :mod:`layoutgen.codegen.stamp`;
the marker is how layoutgen tells its own files from the user's: it updates
and deletes only marked files, and refuses (LG503) to overwrite anything else.

Writing is two steps so that ``check`` can report drift without touching the
disk: :func:`plan_output` compares the wanted files with the disk and
:func:`apply` carries the plan out, each file written to a temporary file
beside it and renamed into place.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import re
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from ..codegen.stamp import MARKER, is_generated, verify
from ..schema.diagnostics import Diagnostic, LayoutgenError, Site

_NEEDS = {"add": "new text only", "update": "old and new text", "delete": "old text only"}


@dataclass(frozen=True)
class Change:
    """One file to add, update or delete; ``path`` is root-relative with ``/``."""

    path: str
    kind: Literal["add", "update", "delete"]
    old: str | None  # None for "add"
    new: str | None  # None for "delete"

    def __post_init__(self) -> None:
        if (self.old is None) != (self.kind == "add") or (self.new is None) != (self.kind == "delete"):
            raise ValueError(f"a {self.kind!r} change of {self.path!r} needs {_NEEDS.get(self.kind)}")


@dataclass(frozen=True)
class Plan:
    """What writing the output would do, computed without touching the disk.

    ``changes`` and ``unchanged`` are sorted by path; ``conflicts`` are LG503
    diagnostics for files in the way, and :func:`apply` refuses a plan that
    has any.
    """

    module_dir: str
    changes: tuple[Change, ...] = ()
    unchanged: tuple[str, ...] = ()
    conflicts: tuple[Diagnostic, ...] = ()

    def __post_init__(self) -> None:
        # Sorted here rather than trusted, so every Plan diffs and applies
        # in the same order whoever built it.
        object.__setattr__(self, "changes", tuple(sorted(self.changes, key=lambda c: c.path)))
        object.__setattr__(self, "unchanged", tuple(sorted(self.unchanged)))
        object.__setattr__(self, "conflicts", tuple(self.conflicts))

    @property
    def paths(self) -> tuple[str, ...]:
        """The paths that would change, in order."""
        return tuple(c.path for c in self.changes)

    @property
    def edited(self) -> tuple[str, ...]:
        """Paths to update or delete whose file on disk was edited by hand."""
        return tuple(c.path for c in self.changes if c.old is not None and not verify(c.old))


def _parts(path: str, what: str) -> tuple[str, ...]:
    """The parts of a canonical, relative, '/'-separated path; ValueError otherwise."""
    pure = PurePosixPath(path)
    if not path or pure.is_absolute() or str(pure) != path or ".." in pure.parts or "\\" in path:
        raise ValueError(f"{what} must be a relative path with '/' separators, got {path!r}")
    return pure.parts


def _read(path: Path) -> str | None:
    """A file's text as it is on disk (no newline translation); None if not UTF-8."""
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        return None


def _marked_files(root: Path, module_dir: str) -> dict[str, str]:
    """Every regular file under ``module_dir`` that carries the marker, by path."""
    found: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root / module_dir):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            full = Path(dirpath, name)
            if full.is_symlink():  # layoutgen never makes links
                continue
            text = _read(full)
            if text is not None and is_generated(text):
                found[full.relative_to(root).as_posix()] = text
    return found


def _foreign(root: Path, rel: str, why: str, *, is_file: bool) -> Diagnostic:
    return Diagnostic(
        "LG503",
        f"layoutgen did not generate `{rel}` ({why}) and will not overwrite it",
        Site(str(root / rel), 1) if is_file else None,
        f"move `{rel}` away or delete it, then run layoutgen again",
    )


def _obstacle(root: Path, rel: str, deleting: set[str]) -> Diagnostic | None:
    """Why layoutgen may not write ``rel`` (a diagnostic), or None if it may."""
    parts = rel.split("/")
    for i in range(1, len(parts)):
        ancestor = "/".join(parts[:i])
        full = root / ancestor
        if (full.exists() or full.is_symlink()) and not full.is_dir() and ancestor not in deleting:
            return _foreign(root, ancestor, f"it is a file where `{rel}` needs a folder", is_file=True)
    target = root / rel
    if target.is_symlink():
        return _foreign(root, rel, "it is a symbolic link", is_file=False)
    if target.is_dir():
        return _foreign(root, rel, "it is a folder", is_file=False)
    if target.exists():
        text = _read(target)
        if text is None or not is_generated(text):
            return _foreign(root, rel, f"it has no `{MARKER}` line", is_file=True)
    return None


def plan_output(root: Path, module_dir: str, files: Mapping[str, str]) -> Plan:
    """Compare the wanted ``files`` (root-relative path → text) with the disk.

    Every path must lie under ``module_dir``. New files are added, differing
    ones updated, marked files under ``module_dir`` that are no longer wanted
    deleted; a file without the marker where one is wanted is a conflict
    (LG503). Unmarked files nobody wants are left alone. Raises ValueError
    for a path that is not canonical or not under ``module_dir``.
    """
    base = _parts(module_dir, "module_dir")
    for rel in files:
        parts = _parts(rel, "an output path")
        if len(parts) <= len(base) or parts[: len(base)] != base:
            raise ValueError(f"output path {rel!r} is not under {module_dir!r}")
    marked = _marked_files(root, module_dir)
    deleting = set(marked) - set(files)
    changes = [Change(rel, "delete", marked[rel], None) for rel in deleting]
    unchanged: list[str] = []
    conflicts: list[Diagnostic] = []
    for rel in sorted(files):
        new = files[rel]
        obstacle = _obstacle(root, rel, deleting)
        if obstacle is not None:
            conflicts.append(obstacle)
            continue
        target = root / rel
        old = _read(target) if target.exists() else None
        if old is None:
            changes.append(Change(rel, "add", None, new))
        elif old == new:
            unchanged.append(rel)
        else:
            changes.append(Change(rel, "update", old, new))
    return Plan(module_dir, tuple(changes), tuple(unchanged), tuple(conflicts))


def apply(root: Path, plan: Plan) -> list[str]:
    """Carry out ``plan`` under ``root``; return the paths changed, in order.

    Raises :class:`LayoutgenError` with the first conflict, before writing
    anything, when the plan has conflicts or a file got in the way since it
    was planned. Each file is written atomically; unchanged files are not
    touched; folders left empty under ``module_dir`` are removed.
    """
    if plan.conflicts:
        raise LayoutgenError(plan.conflicts[0])
    deletes = [c for c in plan.changes if c.kind == "delete"]
    writes = [c for c in plan.changes if c.kind != "delete"]
    deleting = {c.path for c in deletes}
    # The disk may have changed since planning; check again, all first.
    for change in writes:
        obstacle = _obstacle(root, change.path, deleting)
        if obstacle is not None:
            raise LayoutgenError(obstacle)
    done: list[str] = []
    # Deletes first, so a generated file may give way to a folder of the same name.
    for change in deletes:
        target = root / change.path
        text = _read(target) if target.is_file() and not target.is_symlink() else None
        if text is not None and is_generated(text):
            target.unlink()
            done.append(change.path)
    for change in writes:
        _write_atomic(root / change.path, change.new or "")  # never None: see Change
        done.append(change.path)
    _prune(root, plan.module_dir, [c for c in deletes if c.path in done])
    return sorted(done)


def _write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else None
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, flags, 0o666)  # 0o666: let the umask decide, as for any new file
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            # No fsync: the rename keeps readers from ever seeing half a file,
            # and a generated file lost to a power cut is regenerated.
            f.write(text)
        if mode is not None:  # keep the mode of the file it replaces
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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


def unified_diff(plan: Plan) -> str:
    """A unified diff (``a/``, ``b/``, ``/dev/null``) of every change, in path order."""
    out: list[str] = []
    for change in plan.changes:
        before = f"a/{change.path}" if change.old is not None else "/dev/null"
        after = f"b/{change.path}" if change.new is not None else "/dev/null"
        lines = difflib.unified_diff(
            _lines(change.old or ""),
            _lines(change.new or ""),
            before,
            after,
        )
        for line in lines:
            # As git does: a last line without a newline is flagged, not glued on.
            out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def _lines(text: str) -> list[str]:
    # Split at "\n" only: str.splitlines also splits at form feeds and U+2028,
    # which would show as lines without a newline.
    return [line for line in re.split(r"(?<=\n)", text) if line]
