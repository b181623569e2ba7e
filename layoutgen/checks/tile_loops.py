"""Which lines of a body lie inside its loops over ``tiles`` (``for (const lg::Tile t : tiles) { ... }``).

In a ``Grid.persistent_warps`` kernel each warp loops over tiles of its own, so the warps of a block run
different numbers of iterations: a block-wide barrier inside that loop is reached a different number of
times by each warp (LG407), while one before or after it is reached once by every thread. The lint reads
the body's code lines (comments and literals blanked, :mod:`.cxx`) and marks the lines from a range-for
over ``tiles`` to the end of its statement: its braces' match, or the ``;`` that ends a loop without braces.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from .text_offsets import line_at, line_starts

# `for (const lg::Tile t : tiles)`, `for (auto t : tiles)`: a range-for over the grid's `tiles`.
_TILE_LOOP = re.compile(r"\bfor\s*\(\s*[^;()]*?[^:]:\s*tiles\s*\)")


def lines_in_tile_loops(codes: Sequence[str]) -> frozenset[int]:
    """The indices of ``codes`` (one string a line) that are part of a range-for over ``tiles``, header included."""
    text = "\n".join(codes)
    starts = line_starts(codes)
    inside: set[int] = set()
    for loop in _TILE_LOOP.finditer(text):
        end = statement_end(text, loop.end())
        inside.update(range(line_at(starts, loop.start()), line_at(starts, end) + 1))
    return frozenset(inside)


def statement_end(text: str, at: int) -> int:
    """Where the statement that starts at ``at`` (a loop's body) ends: the brace that closes its block, or its
    ``;`` outside parentheses and braces (a nested ``for (...; ...; ...)`` header is not its end)."""
    paren = brace = 0
    for n in range(at, len(text)):
        ch = text[n]
        if ch == "(":
            paren += 1
        elif ch == ")":
            paren -= 1
        elif ch == "{":
            brace += 1
        elif ch == "}":
            brace -= 1
            if brace == 0 and paren == 0:
                return n
        elif ch == ";" and paren == 0 and brace == 0:
            return n
    return len(text) - 1

