"""The debug build's copies of the project's header folders, their pointer types made checked pointers.

A kernel's own text is rewritten by :func:`~layoutgen.codegen.checked_types.checked_pointer_types` in the debug
build; a ``__device__`` helper in a project header (``include`` of ``[tool.layoutgen]``) is read by NVRTC from disk
at the first launch, so a helper there taking ``const float*`` would receive a checked pointer converted to a raw
one: unchecked on the GPU. The debug build therefore carries a copy of every file under each header folder, each
rewritten the same way, under ``<spec>/lg_debug_include/<n>/`` (``n``: the folder's place in ``include``), and its
module searches those copies first (:func:`debug_include`). The copies are made at generate time, never at launch:
the runtime may not import the generator.

Each copy is an ordinary generated file (stamped, written atomically with the rest of the output, deleted when no
longer generated), whose third line is ``#line 1 "<the header's path>"``: errors and findings in it name the
user's header at its own line (the rewrite keeps every line's number). Left out, so that the original is found
after the copies on the include path: a file that is not UTF-8 (the output is text), a file layoutgen generated
(an output folder inside a header folder would otherwise be copied into itself), a name that is not a plain
relative path. Links are followed, each folder once, as NVRTC and the cubin cache's digest follow them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from .checked_types import checked_pointer_types
from .escape import c_string
from .stamp import is_generated, stamp

__all__ = ["COPIES", "debug_header_copies", "debug_include"]

#: The folder of a spec's debug output that holds the copies, one sub-folder per header folder, by its place.
COPIES = "lg_debug_include"


def debug_include(include: tuple[str, ...], copies: Iterable[str]) -> tuple[str, ...]:
    """The debug module's include folders (relative to its own folder): the folders of ``copies`` (paths from
    :func:`debug_header_copies`) first, in ``include``'s order, then ``include``, the project's folders, for the
    files that were not copied. A header folder with nothing copied has no folder of copies to name (a launcher
    refuses a folder that is not there, LG514)."""
    numbers = sorted({int(path.split("/")[1]) for path in copies})
    return (*(f"{COPIES}/{n}" for n in numbers), *include)


def debug_header_copies(folders: tuple[Path, ...], shown: tuple[str, ...], *, source: str,
                        version: str) -> dict[str, str]:
    """The copies of every file under ``folders`` (paths, in ``include``'s order), by their path under the spec's
    folder (``lg_debug_include/0/vsn_tf32.cuh``), sorted. ``shown[n]`` names folder ``n`` as ``#line`` names it
    (its path under the project root); ``source`` and ``version`` stamp each copy as the spec's other files."""
    copies: dict[str, str] = {}
    for number, (folder, name) in enumerate(zip(folders, shown, strict=True)):
        for path, rel in _files_under(folder):
            text = _text(path)
            if text is None or is_generated(text):
                continue
            line = f"#line 1 {c_string(f'{name}/{rel}')}\n"
            body = line + checked_pointer_types(text)
            copies[f"{COPIES}/{number}/{rel}"] = stamp(body, comment="//", source=source, version=version)
    return dict(sorted(copies.items()))


def _text(path: str) -> str | None:
    """A file's text, or None where it cannot be read or is not UTF-8 (then the original is found instead)."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _plain(name: str) -> bool:
    """Whether ``name`` can be one part of an output path (see project/files.py): no separator, not `.`/`..`,
    nothing unprintable."""
    return name not in (".", "..") and "\\" not in name and name.isprintable()


def _files_under(folder: Path) -> list[tuple[str, str]]:
    """(path, '/'-path under ``folder``) of every regular file below it, depth first, sorted by name; links
    followed, each folder once (by its real path)."""
    found: list[tuple[str, str]] = []
    seen: set[str] = set()

    def walk(path: str, prefix: str) -> None:
        real = os.path.realpath(path)
        if real in seen:
            return
        seen.add(real)
        try:
            with os.scandir(path) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:
            return
        for entry in entries:
            if not _plain(entry.name) or entry.name == "__pycache__":
                continue
            if entry.is_dir():
                walk(entry.path, f"{prefix}{entry.name}/")
            elif entry.is_file():
                found.append((entry.path, prefix + entry.name))

    walk(str(folder), "")
    return found
