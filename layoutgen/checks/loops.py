"""Loops whose counter is a column of a view and whose bound is past the view's width (LG409's input).

``for (int c = lane; c < x.row_stride; c += 32) acc += x.at(r, c);`` reads the padding after the field (or
the next field) on every row: the loop runs to the row stride, not the width. The same holds for another
view's width (``c < y.width`` where `y` is wider), a literal, a symbol of another field and a tile's pitch.
No single index is wrong on its own line: the counter's range is. A loop is read where its header is on one
line (``for (T v = start; v < bound; ...)``, the counter only growing) and its counter is a whole column
index in its body: ``x.at(r, v)``, ``x.vec<16>(r, v)`` (in vectors), ``x.row(r)[v]``, ``x(..., v)`` of a field
without axes of its own, and ``in[v]`` of a row the body took (``auto in = x.row(r);``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..declare.kernels import Binding
from ..schema.diagnostics import Diagnostic, Site
from ..schema.dims import shape_text
from ..schema.words import plural
from .constants import Constants
from .cxx import tree
from .text_offsets import line_starts
from .tile_loops import statement_end

# `for (int c = lane; c < x.row_stride; c += 32)`: the counter, its bound's operator and the bound.
_FOR = re.compile(r"\bfor\s*\(\s*(?:[\w:<>]+\s+)*?([A-Za-z_]\w*)\s*=\s*[^;]*;\s*([A-Za-z_]\w*)\s*(<=?)\s*([^;]*?)\s*;"
                  r"\s*(?:\+\+\s*(\w+)|(\w+)\s*\+\+|(\w+)\s*\+=\s*[^)]*)\s*\)")
# An accessor's arguments before its column, with parentheses nested three deep: a row a hand-written entry
# computes (`x.at((blockIdx.x * blockDim.x + threadIdx.x) / 32 + r, c)`, its local `row` read as its definition).
_ARGUMENTS = r"(?:[^()]|\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\))*"
_ROW_OBJECT = re.compile(r"\b(?:const\s+)?auto\s+([A-Za-z_]\w*)\s*=\s*([A-Za-z_]\w*)\s*\.\s*row\s*\(")


@dataclass(frozen=True)
class LoopColumn:
    """A column index that is a loop's counter, and the bound the loop runs to."""

    view: str  # the parameter indexed
    counter: str
    bound: str  # as written
    end: int  # the counter's values are below this
    vector_bytes: int | None  # the index counts vectors of this many bytes (`x.vec<16>(r, v)`)
    use: str  # the index as written (`x.at(r, c)`)


def loop_columns(lines: Sequence[str], views: Iterable[str], constants: Sequence[Constants]) -> list[list[LoopColumn]]:
    """For each line of a body (code only), the column indices on it that are the counter of a loop with a
    constant bound (``constants``: what names mean on each line, :func:`.constants.line_constants`)."""
    names = frozenset(views)
    out: list[list[LoopColumn]] = [[] for _ in lines]
    rows: dict[str, str] = {}  # a row object the body took: `in` -> `x`
    for line in lines:
        for m in _ROW_OBJECT.finditer(line):
            if m.group(2) in names:
                rows[m.group(1)] = m.group(2)
    text = "\n".join(lines)
    starts = line_starts(lines)
    for n, line in enumerate(lines):
        for loop in _FOR.finditer(line):
            counter, compared, op, bound = loop.group(1), loop.group(2), loop.group(3), loop.group(4)
            stepped = loop.group(5) or loop.group(6) or loop.group(7)
            if counter != compared or stepped != counter:
                continue
            end = constants[n].evaluate(tree(bound))
            if end is None:
                continue
            end += op == "<="
            last = statement_end(text, starts[n] + loop.end())
            for k in range(n, len(lines)):
                if starts[k] > last:
                    break
                body = lines[k][loop.end():] if k == n else lines[k]
                for view, vector, use in _uses(body, counter, names, rows):
                    out[k].append(LoopColumn(view, counter, bound, end, vector, use))
    return out


def _uses(line: str, counter: str, views: frozenset[str], rows: dict[str, str]) -> list[tuple[str, int | None, str]]:
    """(view, vector bytes, the index as written) of each whole-column use of ``counter`` on ``line``."""
    v = re.escape(counter)
    a = _ARGUMENTS
    found: list[tuple[str, int | None, str]] = []
    for m in re.finditer(rf"\b([A-Za-z_]\w*)\s*\.\s*(?:template\s+)?(at|vec\s*<\s*(\d+)\s*>)\s*\({a},\s*{v}\s*\)", line):
        if m.group(1) in views:
            found.append((m.group(1), int(m.group(3)) if m.group(3) else None, m.group(0)))
    for m in re.finditer(rf"\b([A-Za-z_]\w*)\s*\.\s*row\s*\({a}\)\s*\[\s*{v}\s*\]", line):
        if m.group(1) in views:
            found.append((m.group(1), None, m.group(0)))
    for m in re.finditer(rf"(?<![\w.])([A-Za-z_]\w*)\s*\((?:{a},\s*)?{v}\s*\)", line):
        if m.group(1) in views:
            found.append((m.group(1), None, m.group(0)))
    for m in re.finditer(rf"(?<![\w.])([A-Za-z_]\w*)\s*\[\s*{v}\s*\]", line):
        if m.group(1) in rows:
            found.append((rows[m.group(1)], None, m.group(0)))
    return found


def loop_past_width(binding: Binding, template: Path, line: int, loop: LoopColumn) -> Diagnostic | None:
    """LG409 for a loop counter that indexes the columns of a view up to a bound past its width."""
    param, view = next((p, v) for p, v in binding.pairs if p.name == loop.view)
    if not view.column_unit.is_static or view.region.shape:
        return None  # columns of D elements, or axes of its own: the call's last index is no column
    width, unit = view.width, "column"
    if loop.vector_bytes is not None:
        if loop.vector_bytes % view.dtype.size or (view.width * view.dtype.size) % loop.vector_bytes:
            return None  # not a whole number of such vectors: the accessor's static_assert says so
        width, unit = view.width * view.dtype.size // loop.vector_bytes, f"{loop.vector_bytes}-byte vector"
    if loop.end <= width:
        return None
    layout = view.layout
    return Diagnostic(
        "LG409", f"`{loop.counter}` runs to `{loop.bound}` ({loop.end}) in kernel `{binding.name}` and indexes "
        f"`{param.name}` ({view.name}) in `{loop.use}`, which has {plural(width, unit)} (columns {view.cols} of "
        f"{layout.name} {shape_text(layout.shape)}): it reads {plural(loop.end - width, unit)} past the end of "
        "each of its rows", Site(str(template), line),
        hint=f"bound the loop by the width of `{param.name}`: `{loop.counter} < "
             f"{param.name}.width{'' if loop.vector_bytes is None else f' * {view.dtype.size} / {loop.vector_bytes}'}`",
    )
