"""LG4xx: lint of kernel templates.

The motivating bug was ``x + row * 40`` in a kernel reading rows 56 apart. A
literal that takes part in addressing a view's memory (a subscript of the view,
of a row of it or of a pointer taken from it, pointer arithmetic on those, an
accessor's argument: :mod:`.indexing`) and equals that view's width, row stride
or offset is reported with how far apart its rows really are and the accessor to
use instead (LG401); so is a body that reaches around the views through the
kernel's raw ``lg_`` names (LG403); a constant index of a field's own axis that
is negative or at or past its width (:mod:`.columns`) is LG405. All are looked
for twice: in the template's own text (:func:`lint_template`) and in the body as
rendered into the generated kernel (:func:`lint_rendered`), which also sees what
``{{ }}`` expressions produced; either way at the template's line, each cause
once per line. Both read the body as :mod:`.flow` rewrites it: names defined once, macros, ``Type::width``
and helpers' arguments made visible in the indices that use them. A loop whose counter indexes a field's
columns past its width (:mod:`.loops`) is LG409; a row step of one view spelled as another view's row
stride or width is LG410. A block-wide barrier in a grid that returns threads before the body is LG406
(LG408, an error, in Grid.warps); one inside the loop over the tiles of a grid whose warps work alone
(:mod:`.tile_loops`) is LG407; one that only some threads of the block reach (:mod:`.barriers`) is LG411.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from ..declare.kernels import Binding, Param
from ..declare.source_kernels import SourceKernel
from ..declare.unify import unify
from ..schema.diagnostics import Diagnostic, Site
from ..schema.dims import shape_text
from ..schema.names import CPP_ARGUMENT, CPP_DIM
from ..schema.view import View
from ..schema.words import plural, with_article
from .columns import AT, CALL, ROW, VEC, ConstantIndex, constant_indices
from .constants import line_constants, view_members
from .cxx import scan
from .flow import Reading, read_body
from .tile_loops import lines_in_tile_loops
from .barriers import BARRIER, divergent_barrier, divergent_barriers, early_barrier
from .loops import LoopColumn, loop_columns, loop_past_width
from .indexing import (ALONE, COLUMN_ARGUMENT, FACTOR, POINTER, ROW_ARGUMENT, SUBSCRIPT, TERM, IndexLiteral,
                       index_literals)

# Preprocessor lines whose numbers are not index math: `#pragma unroll 4`.
DIRECTIVE = re.compile(r"\s*#\s*(pragma|include|line|error|warning)\b")
# A name reserved for generated code: the raw pointers and launch values behind the views.
_RESERVED = re.compile(r"(?<![\w])lg_\w+")
# `#line 3 "examples/vsn/k.cu.j2"` in a generated kernel.
_LINE = re.compile(r'\s*#\s*line\s+(\d+)\s+"([^"]*)"')


def _meanings(view: View, value: int, role: str, place: str, within_row: bool, named: bool = False,
              counts_down: bool = False) -> list[str]:
    """What ``value`` would wrongly stand for in an index into ``view``: "row stride", "width", "offset".

    A ``named`` constant (``F``, ``x.width``) is the body saying what it means: it is a stride only where it
    multiplies an index (``x.row(0)[row * F + f]``, ``x.at(0, row * F + c)``), or steps off a row or pointer
    by the row stride; ``x.at(r, F - 1)`` and ``x.at(b * K + k, f)`` are what names are for. In a column of
    one row, what ``counts_down`` (a subtracted term; a term with one subtracted beside it: ``F - 1 - d``)
    is a bound, not a step past the field."""
    column = place == COLUMN_ARGUMENT or within_row
    if value <= 1 or (role == TERM and place == ROW_ARGUMENT) or (role == ALONE and within_row):
        return []  # 0 and 1 mean nothing; a row plus a number, or a column of a row, is no stride
    if column and counts_down:
        return []
    if named and (role == ALONE or place == ROW_ARGUMENT or (place == COLUMN_ARGUMENT and role != FACTOR)):
        return []
    if named and role == TERM:
        return ["row stride"] if value == view.row_stride else []
    facts = [("row stride", view.row_stride), ("width", view.width)]
    if role != FACTOR:  # a multiple of an offset is no offset
        facts.append(("offset", view.offset))
    return [name for name, fact in facts if fact == value]


def _column(literal: IndexLiteral, view: View) -> str:
    """The index's other terms, as written, less those that are layout facts themselves."""
    text = ""
    kept = [(sign, part) for sign, part, value in literal.others
            if value is None or not _meanings(view, value, TERM, literal.place, False)]
    for n, (sign, part) in enumerate(kept):
        text += (part if sign == "+" else f"-{part}") if n == 0 else f" {sign} {part}"
    return text


def _accessor(param: Param, literal: IndexLiteral, view: View) -> str:
    """The accessor to write instead: with the body's own row and column where they can be read off."""
    if not view.column_unit.is_static:  # columns count D elements: one index per axis says what is meant
        return f"{param.name}({', '.join(str(d).lower() for d in param.shape)})"
    if literal.call is not None and literal.role == TERM:  # an accessor's column: the same call, less the term
        return f"{literal.call}{_column(literal, view) or '0'})"
    if literal.call is not None and literal.row:  # `x.at(0, row * 56 + c)`: the row as the row
        return f"{param.name}.at({literal.row}, {_column(literal, view) or '0'})"
    if literal.role == FACTOR and literal.row and literal.base.origin and literal.place in (SUBSCRIPT, POINTER):
        column = _column(literal, view)
        if literal.place == POINTER and not column:
            return f"{param.name}.row({literal.row})"
        return f"{param.name}.at({literal.row}, {column or '0'})"
    return f"{param.name}.at(r, c)"


def _literal_stride(binding: Binding, template: Path, line: int, literal: IndexLiteral,
                    helper_line: int = 0) -> Diagnostic | None:
    """LG401 for one literal of an index, or None when it stands for nothing of the view it indexes."""
    if literal.base.view is None:  # a pointer the lint cannot trace: any view, but only as a row multiplier
        candidates = binding.pairs if literal.role == FACTOR else []
    else:
        candidates = [(p, v) for p, v in binding.pairs if p.name == literal.base.view]
    if literal.base.raw and literal.role == FACTOR and literal.fact == (literal.base.view, "row_stride"):
        # a raw pointer stepped by its own view's row stride, however the value reached the index (a local, a
        # macro, a helper's parameter): the layout's own distance
        return None
    within_row = literal.base.row or literal.place != SUBSCRIPT
    counts_down = literal.negative or (literal.role == TERM and any(sign == "-" for sign, _, _ in literal.others))
    via = f", in helper `{literal.via[0]}` (line {helper_line}) as this line calls it" if literal.via else ""
    foreign = _foreign_step(binding, template, line, literal, within_row and counts_down, via)
    if foreign is not None:  # another view's fact: say whose it is
        return foreign
    said: list[str] = []
    hints: list[str] = []
    for param, view in candidates:
        if literal.named and param.contiguous:
            continue  # rows declared packed: `r * x.width` is the stride, and follows the layout
        value, unit = literal.value, "" if view.column_unit.is_static else f" in columns of `{view.column_unit}` elements"
        if literal.unit_bytes is not None and literal.unit_bytes != view.dtype.size:  # steps of a vector
            if (value * literal.unit_bytes) % view.dtype.size:
                continue
            value, unit = value * literal.unit_bytes // view.dtype.size, f" in {literal.unit_bytes}-byte steps"
        names = _meanings(view, value, literal.role, literal.place, within_row, literal.named, counts_down)
        if not names:
            continue
        said.append(f"the {' and the '.join(names)} of `{param.name}` ({view.name}){unit}")
        accessor = _accessor(param, literal, view)
        if names == ["offset"]:
            hints.append(f"the accessors of `{param.name}` add its offset ({view.column_offset}) themselves: "
                         f"index with `{accessor}`")
        else:
            hints.append(f"rows of `{param.name}` are {view.column_elements(view.row_stride)} elements apart: "
                         f"index with `{accessor}`")
    if not said:
        return None
    what = f"`{literal.spelled}` ({literal.value})" if literal.spelled else f"literal {literal.value}"
    return Diagnostic(
        "LG401",
        f"{what} in index arithmetic of kernel `{binding.name}` equals " + "; and ".join(said) + via,
        Site(str(template), line), hint="; ".join(hints),
    )


def _foreign_step(binding: Binding, template: Path, line: int, literal: IndexLiteral,
                  counts_down: bool, via: str) -> Diagnostic | None:
    """LG410 for a row step of one view spelled as another view's row stride or width (`x.raw_pointer()[row *
    y.row_stride + c]`, or a name holding it): the rows of `x` are its own row stride apart, whatever `y`'s are.
    ``counts_down``: subtracted in a column (`y.at(row, i - row * x.row_stride)`), which steps no row of `y`;
    ``via``: the helper it was read in, as the message says it."""
    if literal.fact is None or literal.fact[1] == "offset" or literal.role != FACTOR \
            or literal.place == ROW_ARGUMENT or literal.base.view is None or counts_down:
        return None
    other, mine = literal.fact[0], literal.base.view
    views = dict(binding.views)
    if other == mine or other not in views or mine not in views:
        return None
    view = views[mine]
    if not view.column_unit.is_static or literal.value == view.row_stride:
        return None
    fact = "row stride" if literal.fact[1] == "row_stride" else "width"
    return Diagnostic(
        "LG410", f"`{literal.spelled}` ({literal.value}) in index arithmetic of kernel `{binding.name}` steps the rows "
        f"of `{mine}` ({view.name}), which are {view.row_stride} elements apart: it is the {fact} of `{other}` "
        f"({views[other].name}){via}", Site(str(template), line),
        hint=f"index `{mine}` through its own accessors (`{mine}.at(r, c)`, `{mine}.row(r)[c]`)",
    )


def _reserved(binding: Binding, name: str) -> str:
    """What the reserved ``name`` stands for in this kernel (``lg_arg_x``: the pointer argument behind view
    ``x``; ``lg_dim_B``: the launch value of ``B``), and what to write instead."""
    if name.startswith(CPP_ARGUMENT):
        bare = name[len(CPP_ARGUMENT):]
        for param, view in binding.pairs:
            if param.name == bare:
                return (f"the raw pointer behind view `{param.name}` ({view.name}); index through `{param.name}` "
                        f"(`{param.name}.at(r, c)`, `{param.name}.row(r)[c]`)")
        if any(s.name == bare for s in binding.kernel.scalars):
            return f"the argument behind scalar `{bare}`; use `{bare}`"
    if name.startswith(CPP_DIM):
        bare = name[len(CPP_DIM):]
        if any(bare in view.layout.symbols for _, view in binding.pairs):
            return f"the launch value of `{bare}`; use `{bare}`"
    return "a name reserved for generated code"


def _landing(binding: Binding, param: Param, view: View, column: int) -> str:
    """Where column ``column`` of the field's row (relative to its first column) really is."""
    layout, at = view.layout, view.offset + column
    fields = [r for _, r in layout.record.walk() if r.kind == "field" and not r.children and r.start <= at < r.stop]
    if not fields or fields[0] is view.region:
        return (f"the only column of `{param.name}` is 0" if view.width == 1 else
                f"the columns of `{param.name}` are 0 to {view.width - 1}")
    name = f"{layout.name}.{fields[0].path}"
    owner = next((p.name for p, v in binding.pairs if v.layout is layout and v.region is fields[0]), None)
    where = f"column {column} of `{param.name}` is column {at} of {with_article(layout.name)} row, in `{name}`"
    if owner is None:
        return f"{where}: bind a parameter to `{name}` and index it through its own view"
    return f"{where}: index that field through its own view, `{owner}`"


def _column_range(binding: Binding, template: Path, line: int, index: ConstantIndex) -> Diagnostic | None:
    """LG405 for a constant index of a field's own axis that is negative or at or past its extent."""
    param, view = next((p, v) for p, v in binding.pairs if p.name == index.view)
    layout = view.layout
    columns = f"columns {view.cols} of {layout.name} {shape_text(layout.shape)}"
    said = f"`{index.text}` in kernel `{binding.name}` reads"
    if index.form == CALL:
        first = index.arguments - len(view.field_shape)
        if index.arguments != len(view.shape) or index.argument < first:
            return None  # a leading index (a row), or a call that does not compile
        extent = view.field_shape[index.argument - first].size
        if view.region.shape and extent is not None:  # an axis of a sub-array field
            axis = str(param.shape[index.argument]) if len(param.shape) == len(view.shape) else str(index.argument)
            if 0 <= index.value < extent:
                return None
            return Diagnostic(
                "LG405", f"{said} entry {index.value} of axis `{axis}` of `{param.name}` ({view.name} "
                f"{shape_text(view.shape)}), which has {plural(extent, 'entry')}: "
                f"a constant index must {'not be negative' if index.value < 0 else 'be less than the extent'}",
                Site(str(template), line), hint=f"the only entry of axis `{axis}` is 0" if extent == 1 else
                f"the entries of axis `{axis}` are 0 to {extent - 1}",
            )
    if not view.column_unit.is_static:
        return None  # columns of D elements: how many is known at launch
    if index.form == VEC:
        bytes_, size = view.width * view.dtype.size, index.vector_bytes or 0
        if size <= 0 or bytes_ % size or size % view.dtype.size or 0 <= index.value < bytes_ // size:
            return None  # not a whole number of such vectors: the accessor's static_assert says so
        count = bytes_ // size
        return Diagnostic(
            "LG405", f"{said} {size}-byte vector {index.value} of `{param.name}` ({view.name}), which has "
            f"{plural(count, 'such vector')} ({columns}): a constant index must "
            f"{'not be negative' if index.value < 0 else 'be less than the width in vectors'}",
            Site(str(template), line), hint=_landing(binding, param, view, index.value * size // view.dtype.size),
        )
    if index.form not in (AT, ROW, CALL) or 0 <= index.value < view.width:
        return None
    return Diagnostic(
        "LG405", f"{said} column {index.value} of `{param.name}` ({view.name}), which has "
        f"{plural(view.width, 'column')} ({columns}): a constant index must "
        f"{'not be negative' if index.value < 0 else 'be less than the width of the field'}",
        Site(str(template), line), hint=_landing(binding, param, view, index.value),
    )


def _check_lines(binding: Binding, template: Path, lines: Sequence[tuple[int, str]]) -> list[Diagnostic]:
    """LG401, LG403 and LG405 for (template line, code with non-code blanked) pairs, in the body's order."""
    out: dict[tuple[int, str], Diagnostic] = {}  # one diagnostic per cause and line
    codes = ["" if DIRECTIVE.match(code) else code for _, code in lines]
    names = [name for name, _ in binding.views]
    kernel = binding.kernel
    reading = read_body(tuple(codes), tuple(names), _symbols(binding),
                        (kernel.entry, tuple(p.name for p in kernel.signature)) if isinstance(kernel, SourceKernel)
                        else None)
    # Only the values of the names the body uses can change what it reads: the key of the reading's analysis.
    used = reading.names
    static = tuple(sorted((k, v) for k, v in unify(binding).static.items() if k in used))
    members = tuple(sorted((k, v) for k, v in view_members(
        (p.name, v.width, v.row_stride, v.offset) for p, v in binding.pairs).items() if k[0] in used and k[1] in used))
    literals, constants, loops = _analysis(reading, tuple(names), tuple(a.name for a in kernel.shared), static,
                                           members)
    kind = kernel.grid.kind
    early = kind.returns_early  # LG406/LG408 say it of every barrier there
    # the names by which a thread knows itself (beside `threadIdx`): a condition on them divides a block
    thread_names = frozenset({"threadIdx", *kind.thread_names})
    divergent = {} if early else {d.line: d for d in divergent_barriers(tuple(codes), thread_names)}
    alone = kind.warps_loop_alone  # warps that loop over tiles of their own
    in_loop = lines_in_tile_loops(codes) if alone else frozenset()
    for n, ((number, code), found, indices, counters) in enumerate(zip(lines, literals, constants, loops)):
        for counter in counters:
            diag = loop_past_width(binding, template, number, counter)
            if diag is not None:
                out.setdefault((number, diag.message), diag)
        for index in indices:
            diag = _column_range(binding, template, number, index)
            if diag is not None:
                out.setdefault((number, diag.message), diag)
        for literal in found:
            helper = lines[literal.via[1]][0] if literal.via and literal.via[1] < len(lines) else 0
            diag = _literal_stride(binding, template, number, literal, helper)
            if diag is not None and literal.via:  # what the helper's own text shows is reported there, once
                own = _literal_stride(binding, template, helper, replace(literal, via=None))
                if own is not None and any(d.message == own.message for (at, _), d in out.items() if at == helper):
                    continue
            if diag is not None:
                out.setdefault((number, diag.message), diag)
        if BARRIER.search(code) and early:
            out.setdefault((number, "barrier"), early_barrier(binding, template, number, early))
        if n in divergent:
            out.setdefault((number, "barrier"), divergent_barrier(binding, template, number, divergent[n]))
        if n in in_loop and BARRIER.search(code):
            diag = Diagnostic(
                "LG407", f"`__syncthreads()` in the loop over the tiles of kernel `{binding.name}`, whose warps work "
                "alone (Grid.persistent_warps): each warp runs its own number of tiles, so the warps of a block "
                "do not reach the barrier together", Site(str(template), number),
                hint="order a warp's work with __syncwarp(); a barrier for the whole block goes before or after "
                "the loop, which every thread reaches once",
            )
            out.setdefault((number, diag.message), diag)
        for m in _RESERVED.finditer(code):
            diag = Diagnostic(
                "LG403", f"`{m.group(0)}` in the body of kernel `{binding.name}` is {_reserved(binding, m.group(0))}",
                Site(str(template), number),
                hint="names starting with `lg_` belong to the generated prologue; a body that uses them is unchecked",
            )
            out.setdefault((number, diag.message), diag)
    return list(out.values())


@functools.lru_cache(maxsize=1024)  # bindings of a template whose values of its names agree read it alike
def _analysis(reading: Reading, names: tuple[str, ...], own: tuple[str, ...], static: tuple[tuple[str, int], ...],
              members: tuple[tuple[tuple[str, str], int], ...]) -> tuple[list[list[IndexLiteral]],
                                                                         list[list[ConstantIndex]],
                                                                         list[list[LoopColumn]]]:
    """The index constants (LG401), constant columns (LG405) and loop counters as columns (LG409) of each line
    of ``reading``: the callers must not change the lists."""
    known = line_constants(reading.lines, dict(static), dict(members), reading.definitions)
    return (index_literals(reading.lines, names, known, own=own, reading=reading),
            constant_indices(reading.lines, names, known), loop_columns(reading.lines, names, known))


def _symbols(binding: Binding) -> tuple[str, ...]:
    """The names a body may use as constants: the kernel's shape symbols and its views' layouts' symbols."""
    names = {str(d) for p in binding.kernel.params for d in p.shape}
    names.update(str(s) for _, v in binding.views for s in v.layout.symbols)
    return tuple(sorted(n for n in names if n.isidentifier()))


def lint_template(binding: Binding, template: Path) -> list[Diagnostic]:
    """LG401 for each literal in an index into a bound view that equals its width, row stride or offset;
    LG403 for each ``lg_`` name; LG405 for each constant index past a field's width; in the template's own text."""
    try:
        lines = scan(template.read_text(encoding="utf-8")).code
    except (OSError, UnicodeDecodeError):
        return []  # a missing or non-UTF-8 template is reported by the renderer (LG402, at the byte)
    return _check_lines(binding, template, list(enumerate(lines, start=1)))


def lint_rendered(binding: Binding, template: Path, name: str, kernel: str) -> list[Diagnostic]:
    """The checks of :func:`lint_template` on the body as rendered into ``kernel`` (a generated file).

    The body's lines are those after a ``#line N "name"`` directive (``name``: the template as the
    generated file names it), each reported at its template line, at ``template``. What the
    template's own text shows is found by both: keep one of each with :func:`each_once`.
    """
    lines: list[tuple[int, str]] = []
    # The runs of lines after each `#line N "name"`, each scanned alone: a run starts at file scope or at a
    # statement of the kernel, never inside a comment or a literal, and the same run recurs in every binding
    # of the template (scan() is cached on its text), where the file around it does not.
    runs: list[tuple[int, list[str]]] = []
    current: list[str] | None = None
    for raw in kernel.split("\n"):
        directive = _LINE.match(raw) if "#" in raw else None  # a string in `#line` is the file's name
        if directive:
            current = None
            if directive.group(2) == name:
                current = []
                runs.append((int(directive.group(1)), current))
        elif current is not None:
            current.append(raw)
    for first, run in runs:
        lines.extend(enumerate(scan("\n".join(run), jinja=False).code, start=first))
    return _check_lines(binding, template, lines)


def each_once(diags: Iterable[Diagnostic]) -> list[Diagnostic]:
    """``diags`` with each cause once: the first of those with one code, site and message."""
    out: dict[tuple[str, Site | None, str], Diagnostic] = {}
    for diag in diags:
        out.setdefault((diag.code, diag.site, diag.message), diag)
    return list(out.values())
