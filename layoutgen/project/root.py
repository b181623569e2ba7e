"""Where a project is: the folder whose ``pyproject.toml`` holds its ``[tool.layoutgen]`` table."""

from __future__ import annotations

import tomllib
from pathlib import Path


def find_root(start: Path) -> Path | None:
    """The project that holds ``start``, as ruff and mypy find their settings: the nearest folder at or above
    it whose ``pyproject.toml`` has a ``[tool.layoutgen]`` table, else the nearest with a ``pyproject.toml``
    (every setting then has its default). A package of its own inside a project is looked past."""
    start = start.resolve()
    if start.is_file():
        start = start.parent
    nearest: Path | None = None
    for folder in (start, *start.parents):
        pyproject = folder / "pyproject.toml"
        if pyproject.is_file():
            nearest = nearest or folder
            if _has_table(pyproject):
                return folder
    return nearest


def _has_table(pyproject: Path) -> bool:
    """Whether ``pyproject`` has a ``[tool.layoutgen]`` table; True for one that cannot be read, so that its
    error is the one reported (a broken file is not looked past)."""
    try:
        with pyproject.open("rb") as f:
            tool = tomllib.load(f).get("tool", {})
    except (OSError, tomllib.TOMLDecodeError):
        return True
    return isinstance(tool, dict) and "layoutgen" in tool
