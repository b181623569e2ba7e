"""Planning generated output: stamped, compared with the disk, never foreign, never outside.

Every generated file carries the stamp of :mod:`layoutgen.codegen.stamp`;
the marker is how layoutgen tells its own files from the user's: it updates
and deletes only marked files, and refuses (LG503) to overwrite anything else.
A marked file whose hash no longer matches was edited by hand (LG509). An
output folder that resolves outside the project is refused (LG510), and so
is one reached through a loop of links or a link inside a generated package
(LG517), and one in a version control system's folder such as ``.git``
(LG518): layoutgen writes only among the project's own files.

Writing is two steps so that ``check`` can report drift without touching the
disk: :func:`plan_output` compares the wanted files with the disk and
:func:`layoutgen.project.writing.apply` carries the plan out. Temporary files
are named ``.<name>.<8 hex digits>.tmp`` beside the file ``<name>`` they will
replace; one found by a plan was left by a run that was killed, and the plan
lists it to be removed (it is never taken for an output).
"""

from __future__ import annotations

import difflib
import errno
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Literal

from ..codegen.stamp import MARKER, is_generated, verify
from ..schema.diagnostics import Diagnostic, LayoutgenError, Site

_NEEDS = {"add": "new text only", "update": "old and new text", "delete": "old text only"}
#: A temporary file of layoutgen's beside ``target``, the file it will replace (see the writer).
TEMPORARY = re.compile(r"\.(?P<target>.+)\.[0-9a-f]{8}\.tmp")


class OutputError(LayoutgenError, OSError):
    """The output folder could not be read or written (LG511); a write keeps the files as they were."""


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
    has any. ``temporaries`` are layoutgen's temporary files left by a run
    that was killed, to be removed.
    """

    module_dir: str
    changes: tuple[Change, ...] = ()
    unchanged: tuple[str, ...] = ()
    conflicts: tuple[Diagnostic, ...] = ()
    temporaries: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        # Sorted here rather than trusted, so every Plan diffs and applies
        # in the same order whoever built it.
        object.__setattr__(self, "changes", tuple(sorted(self.changes, key=lambda c: c.path)))
        object.__setattr__(self, "unchanged", tuple(sorted(self.unchanged)))
        object.__setattr__(self, "conflicts", tuple(self.conflicts))
        object.__setattr__(self, "temporaries", tuple(sorted(self.temporaries)))

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


def read_text(path: Path) -> str | None:
    """A file's text as it is on disk (no newline translation); None if not UTF-8 or not there.

    Raises OSError for a file that cannot be read (permissions).
    """
    try:
        return path.read_bytes().decode("utf-8")
    except (UnicodeDecodeError, FileNotFoundError, NotADirectoryError):  # NotADirectory: a file above it
        return None


def _scan(root: Path, module_dir: str, wanted: Mapping[str, str]) -> tuple[dict[str, str], list[str]]:
    """Under ``module_dir``: every regular file that carries the marker (by path, with its text),
    and layoutgen's temporary files (those named for a file that is wanted or marked beside them)."""
    found: dict[str, str] = {}
    candidates: list[tuple[str, str]] = []  # (temporary, the file it would have replaced)
    for dirpath, dirnames, filenames in os.walk(root / module_dir):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        folder = Path(dirpath).relative_to(root).as_posix()
        for name in sorted(filenames):
            full = Path(dirpath, name)
            if full.is_symlink():  # layoutgen never makes links
                continue
            temporary = TEMPORARY.fullmatch(name)
            if temporary:  # never an output, whatever it holds
                candidates.append((f"{folder}/{name}", f"{folder}/{temporary['target']}"))
                continue
            text = read_text(full)
            if text is not None and is_generated(text):
                found[f"{folder}/{name}"] = text
    return found, [temp for temp, target in candidates if target in found or target in wanted]


def _foreign(root: Path, rel: str, why: str, *, is_file: bool) -> Diagnostic:
    return Diagnostic(
        "LG503",
        f"layoutgen did not generate `{rel}` ({why}) and will not overwrite it",
        Site(str(root / rel), 1) if is_file else None,
        f"move `{rel}` away or delete it, then run layoutgen again",
    )


def obstacle(root: Path, rel: str, deleting: set[str]) -> Diagnostic | None:
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
        text = read_text(target)
        if text is None or not is_generated(text):
            return _foreign(root, rel, f"it has no `{MARKER}` line", is_file=True)
    return None


def plan_output(root: Path, module_dir: str, files: Mapping[str, str]) -> Plan:
    """Compare the wanted ``files`` (root-relative path → text) with the disk.

    Every path must lie under ``module_dir``. New files are added, differing
    ones updated, marked files under ``module_dir`` that are no longer wanted
    deleted; a file without the marker where one is wanted is a conflict
    (LG503), and so is a ``module_dir`` that resolves outside ``root``
    (LG510) or cannot be read (LG511). Unmarked files nobody wants are left
    alone. Raises ValueError for a path that is not canonical or not under
    ``module_dir``.
    """
    base = _parts(module_dir, "module_dir")
    for rel in files:
        parts = _parts(rel, "an output path")
        if len(parts) <= len(base) or parts[: len(base)] != base:
            raise ValueError(f"output path {rel!r} is not under {module_dir!r}")
    outside = outside_project(root, module_dir)
    if outside is not None:
        return Plan(module_dir, conflicts=(outside,))
    try:
        return _plan(root, module_dir, files)
    except OSError as exc:
        return Plan(module_dir, conflicts=(io_error(root, exc, "read", exc.filename),))


def _plan(root: Path, module_dir: str, files: Mapping[str, str]) -> Plan:
    marked, temporaries = _scan(root, module_dir, files)
    deleting = set(marked) - set(files)
    changes = [Change(rel, "delete", marked[rel], None) for rel in deleting]
    unchanged: list[str] = []
    conflicts: list[Diagnostic] = []
    for rel in sorted(files):
        new = files[rel]
        problem = obstacle(root, rel, deleting)
        if problem is not None:
            conflicts.append(problem)
            continue
        old = read_text(root / rel)
        if old is None:
            changes.append(Change(rel, "add", None, new))
        elif old == new:
            unchanged.append(rel)
        else:
            changes.append(Change(rel, "update", old, new))
    return Plan(module_dir, tuple(changes), tuple(unchanged), tuple(conflicts), tuple(temporaries))


#: The folders of version control systems' own records: layoutgen writes nothing into them (LG518).
VCS_FOLDERS = (".git", ".hg", ".svn", ".bzr", "_darcs", ".jj", ".pijul", ".sl", "CVS")
_VCS = {name.casefold(): name for name in VCS_FOLDERS}  # .GIT is .git where names ignore case


def outside_project(root: Path, rel: str) -> Diagnostic | None:
    """Why layoutgen may not write into the folder ``rel`` of the project (``out``, a spec's folder in it), or None:
    it is, or lies in, a version control system's folder (LG518), a link on the way leads to itself (LG517), or it
    leads (through a link) outside ``root``, or to it (LG510)."""
    base = root.resolve()
    vcs = _in_vcs(PurePosixPath(rel).parts)
    if vcs is not None:
        return _vcs_folder(rel, "/".join(PurePosixPath(rel).parts[: vcs + 1]))
    try:
        target = (root / rel).resolve()
    except (RuntimeError, OSError):  # a loop of links (RuntimeError before Python 3.13, OSError ELOOP since)
        return _loop(root, rel)
    if base in target.parents:
        inside = target.relative_to(base).parts
        vcs = _in_vcs(inside)
        return None if vcs is None else _vcs_folder(rel, "/".join(inside[: vcs + 1]))
    relative = os.path.relpath(target, base)
    shown = relative if len(relative) < len(str(target)) else str(target)  # "../elsewhere" over a long path
    return Diagnostic(
        "LG510", f"`{rel}` leads through a symbolic link to `{shown}`, which is not inside the project; layoutgen "
        "writes only inside it", None,
        f"make `{rel}` a folder inside the project, or choose another output folder (`--out`)",
    )


def _in_vcs(parts: tuple[str, ...]) -> int | None:
    """The index of the first of ``parts`` that is a version control system's folder, or None."""
    return next((i for i, part in enumerate(parts) if part.casefold() in _VCS), None)


def _vcs_folder(rel: str, vcs: str) -> Diagnostic:
    shown = f"`{rel}` is" if rel == vcs else f"`{rel}` leads into `{vcs}`, which is"
    return Diagnostic(
        "LG518", f"{shown} a version control system's own folder; layoutgen writes no generated code there", None,
        "choose an output folder among the project's files, like `generated` (`--out`, or `out` of "
        "[tool.layoutgen])")


def _loop(root: Path, rel: str) -> Diagnostic:
    """LG517 for ``rel``, through a link that leads back to itself: the first such link on the way is named."""
    parts = PurePosixPath(rel).parts
    link = rel
    for i in range(1, len(parts) + 1):
        prefix = "/".join(parts[:i])
        if (root / prefix).is_symlink():
            try:
                (root / prefix).resolve()
            except (RuntimeError, OSError):
                link = prefix
                break
    return Diagnostic(
        "LG517", f"`{link}` is a symbolic link that leads back to itself (a loop), so `{rel}` is no folder layoutgen "
        "can write into", None, f"remove the link (`rm {link}`) and let layoutgen make the folder, or choose another "
        "output folder (`--out`)")


def linked_folder(root: Path, module_dir: str, rel: str) -> Diagnostic | None:
    """LG517 where the folder ``rel`` inside the generated package ``module_dir`` (``cubins``), or one between
    them, is a symbolic link: layoutgen makes none in a package, and writing through one would write (and
    remove stale files) wherever it leads. None where there is no link, or no folder yet."""
    parts = PurePosixPath(rel).parts
    for i in range(1, len(parts) + 1):
        folder = f"{module_dir}/{'/'.join(parts[:i])}"
        if (root / folder).is_symlink():
            return Diagnostic(
                "LG517", f"`{folder}` is a symbolic link; layoutgen makes none inside a generated package and writes "
                "through none", None, f"remove the link (`rm {folder}`) and let layoutgen make the folder")
    return None


def hand_edited(root: Path, rel: str) -> Diagnostic:
    """LG509 for the generated file ``rel``, whose stamp no longer matches its text."""
    return Diagnostic(
        "LG509", f"`{rel}` was edited by hand after layoutgen generated it (its `{MARKER}` line no longer matches); "
        "layoutgen keeps the edit", Site(str(root / rel), 1),
        "move the change into the spec or its template, or run `layoutgen generate --force` to overwrite it",
    )


_FULL = (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC))
_IN_THE_WAY = (errno.ENOTDIR, errno.EEXIST)


def io_error(root: Path, exc: OSError, verb: str, path: object) -> Diagnostic:
    """LG511: ``verb`` ("write", "read", ...) of ``path`` failed with ``exc``, named relative to ``root``."""
    full = Path(os.fsdecode(path)) if isinstance(path, (str, bytes, os.PathLike)) else root
    try:
        rel = full.relative_to(root).as_posix()
    except ValueError:
        rel = str(full)
    if exc.errno in _FULL:
        hint = "make room on the disk, or choose another output folder (`--out`)"
    elif exc.errno in _IN_THE_WAY:
        hint = f"a file is where `{rel}` needs a folder: move it away, or choose another output folder (`--out`)"
    else:
        folder = rel.rsplit("/", 1)[0] if verb != "create" else rel
        hint = f"make `{folder}` writable, or choose another output folder (`--out`)"
    return Diagnostic("LG511", f"cannot {verb} `{rel}`: {exc.strerror or exc}", None, hint)


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
