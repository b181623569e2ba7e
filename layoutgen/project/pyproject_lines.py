"""Where in the project's ``pyproject.toml`` a setting lives: the site a diagnostic about it points at."""

from __future__ import annotations

import re
from pathlib import Path

from ..schema.diagnostics import Site

TABLE = "[tool.layoutgen]"


def table_site(root: Path, key: str | None = None) -> Site | None:
    """The line of ``key`` in the ``[tool.layoutgen]`` table of ``root``'s pyproject.toml, or of the table
    itself where the key is not in it (or no key is asked for).

    None without a pyproject.toml. Without the table: line 1 of the file when no key is asked for (what is
    missing is the whole table), None for a key (it was set by an override, or by a Config made in Python).
    """
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file():
        return None
    lines = pyproject.read_text(encoding="utf-8", errors="replace").splitlines()
    table = next((n for n, text in enumerate(lines, 1) if text.strip() == TABLE), None)
    if table is None:
        return Site(str(pyproject), 1) if key is None else None
    if key is not None:
        assignment = re.compile(rf"\s*{re.escape(key)}\s*=")
        for number, text in enumerate(lines[table:], table + 1):
            if text.lstrip().startswith("["):
                break
            if assignment.match(text):
                return Site(str(pyproject), number)
    return Site(str(pyproject), table)
