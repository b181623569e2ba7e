"""Offsets into a body's lines joined into one text: where each line starts, the line an offset is on, the
bracket that closes an opening one, and a parameter list's top-level commas.

The checks that read across lines (a barrier inside a branch, a helper's body, a kernel's signature) join a
body's code lines with ``\\n`` and search the text; they report by line. One module, so they all count lines
and match brackets alike.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence


def line_starts(lines: Sequence[str]) -> list[int]:
    """The offset of each line of ``"\\n".join(lines)``, and one past its end."""
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    return starts


def line_at(starts: Sequence[int], at: int) -> int:
    """The index of the line that holds offset ``at`` (``starts`` from :func:`line_starts`)."""
    return min(bisect_right(starts, at), len(starts) - 1) - 1


def closing(text: str, at: int, pair: str = "()", missing: int | None = None) -> int:
    """The offset of the bracket that closes the one at ``at`` (``pair`` is the opening and the closing one);
    where none does, ``missing``, or the text's last offset where that is None (a reader that scans on to the
    end of an unclosed body, against one that skips an unclosed declarator)."""
    opening, closed = pair[0], pair[1]
    depth = 0
    for n in range(at, len(text)):
        if text[n] == opening:
            depth += 1
        elif text[n] == closed:
            depth -= 1
            if depth == 0:
                return n
    return len(text) - 1 if missing is None else missing


def split_params(text: str, shifts: bool) -> list[tuple[str, int]]:
    """A parameter list's text split at its commas outside ``()``, ``[]``, ``{}`` and ``<>``: each part and its
    offset in ``text``, the last one too (empty where ``text`` ends with a comma or is empty).

    With ``shifts``, ``<<`` and ``>>`` are shift operators (``int n = 1 << 4``) and change no depth; without,
    each ``>`` closes a template argument list (``Foo<Bar<int>>``)."""
    parts: list[tuple[str, int]] = []
    depth, begin = 0, 0
    n = 0
    while n < len(text):
        if shifts and text[n : n + 2] in ("<<", ">>"):
            n += 2
            continue
        ch = text[n]
        if ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append((text[begin:n], begin))
            begin = n + 1
        n += 1
    parts.append((text[begin:], begin))
    return parts
