"""Which spec modules a ``SPEC`` of the command line names: a module, or a folder of them.

A folder stands for the spec modules under it, as a folder given to ruff
stands for the Python files under it: the modules of ``[tool.layoutgen].specs``
that lie in it, then every other file named ``spec.py`` below it (hidden
folders, ``__pycache__`` and the output folder are not searched; modules
with other names are not imported on a guess, since importing runs them). A
folder that holds none is left as it is, for :func:`load_spec` to refuse
with a message that says so.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

from .config import Config

#: The name a spec module found in a folder has.
SPEC_FILE = "spec.py"


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def spec_files_under(folder: Path, config: Config | None = None) -> list[Path]:
    """The spec modules ``folder`` stands for (resolved paths), in a stable order."""
    folder = folder.resolve()
    configured = config.spec_paths if config else ()
    listed = [p.resolve() for p in configured if p.is_file() and _inside(p.resolve(), folder)]
    skip = {(config.root / config.out).resolve()} if config else set()
    found = sorted(_named_spec(folder, skip))
    return list(dict.fromkeys([*listed, *found]))


def _named_spec(folder: Path, skip: set[Path]) -> Iterator[Path]:
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith(".") or entry.name == "__pycache__" or entry.resolve() in skip:
            continue
        if entry.is_dir() and not entry.is_symlink():  # a link could lead round in a circle
            yield from _named_spec(entry, skip)
        elif entry.name == SPEC_FILE and entry.is_file():
            yield entry.resolve()


def spec_modules(specs: Sequence[str], config: Config) -> list[Path]:
    """The spec modules the command line's ``specs`` name, each folder replaced by those under it.

    ``config`` is the project's as its file says (its ``specs`` are the listed modules a folder holds)."""
    out: list[Path] = []
    for given in specs:
        path = Path(given).resolve()
        if path.is_dir():
            out.extend(spec_files_under(path, config) or [path])
        else:
            out.append(path)
    return list(dict.fromkeys(out))
