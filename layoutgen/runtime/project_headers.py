"""The project's header folders (``include`` of ``[tool.layoutgen]``) as part of the cubin cache's key.

NVRTC reads the headers a kernel includes while it compiles and cannot say
beforehand which ones (it has no dependency output), so the key covers every
file under the folders: a header changed, added, removed or renamed gives
another key, and a cubin compiled against older headers is never loaded.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence

from ..schema.diagnostics import Diagnostic, LayoutgenError, display_path

__all__ = ["HeaderFolderError", "project_header_digest"]


class HeaderFolderError(LayoutgenError):
    """A project header folder of a compile request is not there (LG514): no key, so no cubin."""


def project_header_digest(folders: Sequence[str]) -> str:
    """sha256 (hex) of every file under ``folders``: each one's folder (by position), path under it and bytes.

    Files are taken sorted by path, whatever order the file system lists them in. Links are followed, as
    NVRTC follows them, each folder once (a link back up ends there). A file that cannot be read counts as
    unreadable: NVRTC cannot read it either, and once it can, the key changes. Raises
    :class:`HeaderFolderError` (LG514) for a folder that does not exist or is a file.
    """
    digest = hashlib.sha256()
    for number, folder in enumerate(folders):
        if not os.path.isdir(folder):
            what = "a file" if os.path.exists(folder) else "nothing"
            raise HeaderFolderError(Diagnostic(
                "LG514", f"the project header folder `{display_path(folder)}` must be a folder, got {what} there",
                hint="generated modules look for the folders of `include` in [tool.layoutgen] relative to their "
                "own folder, where they were when `layoutgen generate` ran: keep the headers there",
            ))
        for path, name in _files_under(folder):
            try:
                data = b"\x01" + _read_bytes(path)
            except OSError:
                data = b"\x00"
            # The length first: no file's bytes can run into the next file's name.
            digest.update(f"{number}\0{name}\0{len(data)}\0".encode("utf-8", "surrogateescape") + data)
    return digest.hexdigest()


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _files_under(folder: str) -> list[tuple[str, str]]:
    """(path, '/'-path under ``folder``) of every regular file below it, depth first, sorted by name."""
    found: list[tuple[str, str]] = []
    seen: set[str] = set()  # folders by their real path

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
            if entry.is_dir():
                walk(entry.path, f"{prefix}{entry.name}/")
            elif entry.is_file():
                found.append((entry.path, prefix + entry.name))

    walk(folder, "")
    return found
