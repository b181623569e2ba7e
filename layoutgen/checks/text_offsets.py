"""Offsets into a body's lines joined into one text: where each line starts, the line an offset is on, and the
bracket that closes an opening one.

The checks that read across lines (a barrier inside a branch, a helper's body) join a body's code lines with
``\\n`` and search the text; they report by line. One module, so they all count lines and match brackets alike.
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


def closing(text: str, at: int, pair: str = "()") -> int:
    """The offset of the bracket that closes the one at ``at`` (``pair`` is the opening and the closing one),
    or the text's last offset where none does."""
    opening, closed = pair[0], pair[1]
    depth = 0
    for n in range(at, len(text)):
        if text[n] == opening:
            depth += 1
        elif text[n] == closed:
            depth -= 1
            if depth == 0:
                return n
    return len(text) - 1
