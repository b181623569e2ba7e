"""The documentation pages read as data: ``## LGnnn`` sections by code, fenced blocks, the files a section shows."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"

FENCE = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
FILE_CAPTION = re.compile(r"`([^`\s]+)`:\s*$")


def read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def sections(markdown: str) -> dict[str, str]:
    """``## LGnnn name`` sections of a page, by code (the text up to the next ``## ``)."""
    parts = re.split(r"^## ", markdown, flags=re.M)
    out: dict[str, str] = {}
    for part in parts[1:]:
        m = re.match(r"(LG\d{3})\b", part)
        if m:
            out[m.group(1)] = "## " + part
    return out


def blocks(text: str) -> list[tuple[str, str, str]]:
    """Every fenced block of ``text``: (info string, the last non-blank line before it, content)."""
    out = []
    for m in FENCE.finditer(text):
        before = [line for line in text[: m.start()].splitlines() if line.strip()]
        out.append((m.group(1), before[-1] if before else "", m.group(2)))
    return out


def files_of(text: str) -> dict[str, str]:
    """The files a section shows: blocks under a line ending in "`path`:"."""
    out = {}
    for _, caption, content in blocks(text):
        m = FILE_CAPTION.search(caption)
        if m:
            out[m.group(1)] = content
    return out


def console_blocks(text: str) -> list[list[tuple[str, str]]]:
    """Each ``console`` block as [(command after ``$ ``, the output shown under it)]."""
    out = []
    for info, _, content in blocks(text):
        if info != "console":
            continue
        runs: list[tuple[str, str]] = []
        for line in content.splitlines(keepends=True):
            if line.startswith("$ "):
                runs.append((line[2:].strip(), ""))
            elif runs:
                runs[-1] = (runs[-1][0], runs[-1][1] + line)
        out.append(runs)
    return out


#: docs/diagnostics.md's sections by code (none where the page is missing: its own test says so).
DIAGNOSTICS = sections(read(DOCS / "diagnostics.md")) if (DOCS / "diagnostics.md").exists() else {}
