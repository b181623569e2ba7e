"""``layoutgen explain``: a diagnostic code's documentation, in the terminal.

The text is the code's section of docs/diagnostics.md, the page the docs
site shows. It ships inside the package as ``layoutgen/docs/diagnostics.md``
(a link to the page in the repository; a built wheel holds a copy, listed in
the package data of pyproject.toml), so an installed layoutgen explains
without the repository.
"""

from __future__ import annotations

import difflib
import re
from importlib import resources

from ..schema.diagnostics import CODES

_SECTION = re.compile(r"^## (LG\d{3}) [\w-]+[ \t]*$")
_HEADING = re.compile(r"^#{1,2} ")


class UnknownCodeError(ValueError):
    """``explain`` was given something that is neither a code nor a code's name."""


def _page() -> str:
    return resources.files("layoutgen").joinpath("docs", "diagnostics.md").read_text(encoding="utf-8")


def sections(page: str) -> dict[str, str]:
    """Each ``## LGnnn name`` section of ``page``, by code: up to the next heading of level 1 or 2."""
    out: dict[str, str] = {}
    code: str | None = None
    lines: list[str] = []
    fenced = False  # inside a code block, `# ...` is a comment, not a heading
    for line in [*page.splitlines(), "# end"]:
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and _HEADING.match(line):
            if code is not None:
                out[code] = "\n".join(lines).strip() + "\n"
            found = _SECTION.match(line)
            code, lines = (found.group(1), [line]) if found else (None, [])
        elif code is not None:
            lines.append(line)
    return out


def resolve_code(text: str) -> str:
    """The code ``text`` names: a code in any case (``lg201``) or a code's short name (``not-contiguous``)."""
    key = text.strip()
    if key.upper() in CODES:
        return key.upper()
    by_name = {c.name: c.code for c in CODES.values()}
    if key.lower() in by_name:
        return by_name[key.lower()]
    close = sorted((c for c in CODES if _edits(key.upper(), c) == 1), key=lambda c: (c[:3] != key.upper()[:3], c))[:3]
    close += [by_name[n] for n in difflib.get_close_matches(key.lower(), list(by_name), n=3, cutoff=0.6)]
    shown = ", ".join(f"{c} ({CODES[c].name})" for c in dict.fromkeys(close))
    advice = f"; the closest: {shown}" if shown else ""
    raise UnknownCodeError(f"`{text}` is not a diagnostic code{advice}; `layoutgen explain` lists every code")


def _edits(a: str, b: str) -> int:
    """Levenshtein distance: a typed code one key away from a real one (LG21, LG2O1 for LG201)."""
    row = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        prev, row[0] = row[0], i
        for j, cb in enumerate(b, start=1):
            prev, row[j] = row[j], min(row[j] + 1, row[j - 1] + 1, prev + (ca != cb))
    return row[-1]


def explain(text: str) -> str:
    """The documentation of the code ``text`` names (see :func:`resolve_code`); UnknownCodeError if none."""
    code = resolve_code(text)
    found = sections(_page()).get(code)
    if found is not None:
        return found
    c = CODES[code]  # registered, but its section is not in this copy of the page
    return f"## {c.code} {c.name}\n\n**Severity:** {c.severity.value}.\n\n{c.summary[:1].upper()}{c.summary[1:]}.\n"


def code_list() -> str:
    """Every code, one a line: the code, its short name, its severity and its one-line doc."""
    width = max(len(c.name) for c in CODES.values())
    return "".join(f"{c.code}  {c.name:<{width}}  {c.severity.value:<7}  {c.summary}\n" for c in CODES.values())
