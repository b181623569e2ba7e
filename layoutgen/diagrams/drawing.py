"""Layout diagrams: one row of a layout, or a kernel binding, drawn as SVG.

A layout's row is a band of columns. Each field is a coloured block with its
name and column range; a sub-array field adds its shape (``q [32, D]``) and
short ticks where its heads start; groups are brackets above their fields
(nested groups lower, nearer their fields); padding is hatched; the row
stride and byte alignment stand beside the band. A row counted in a symbol
numbers its columns in it (``D*32..D*40``), as ``layoutgen show`` prints them.
A field too narrow for its label gets a leader line down to a label below the
band; the labels are stacked so that neither they nor the leader lines cross
(see :func:`~layoutgen.diagram_parts.place_leaders`). A layout with a named
axis draws that axis as a second band under the row: its entries, the named
ranges as blocks, its stride beside it.

A binding is drawn as one band per parameter: the row of the layout the
parameter is bound to, with the columns the kernel reads, writes or both
highlighted, and under it a strip of the layout's named axis, if it has one,
with the view's range highlighted.

``layoutgen show SPEC[:NAME] --svg FILE`` writes these; :func:`spec_svg`,
:func:`layout_svg` and :func:`binding_svg` return the document text.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..declare.kernels import Binding, Param
from ..declare.program import Program
from ..declare.spec import Spec, launch_kernel
from ..schema import Layout, View
from ..schema.dims import Size, shape_text, strides_text
from ..schema.record import Region
from ..schema.words import plural
from .parts import (
    ACCESS_COLORS,
    ACCESS_WORDS,
    BAND_H,
    BRACKET_H,
    DARK,
    GREY,
    LANE_H,
    MAX_LANES,
    NAME_SIZE,
    PALETTE,
    RANGE_SIZE,
    RULER_SIZE,
    Scale,
    column_width,
    draw_heads,
    draw_ruler,
    place_leaders,
)
from .svg import HATCH, Canvas, Span, document, text_width

# -- one layout ------------------------------------------------------------------


def _levels(region: Region) -> dict[str, int]:
    """How high above the band each group's bracket sits: 1 + the highest group inside it."""
    out: dict[str, int] = {}

    def visit(r: Region) -> int:
        inner = max((visit(c) for c in r.children), default=0)
        if r.kind == "group":
            out[r.path] = inner + 1
            return inner + 1
        return inner

    visit(region)
    return out


def _field_title(view: View) -> str:
    """The tooltip of a block: where the view lies, its strides and alignment, its doc."""
    ranged = view.axis_range is not None and view.region.kind == "record"
    text = view.axis_range.doc if ranged and view.axis_range is not None else view.region.doc
    doc = f" - {text}" if text else ""
    rows = f"rows {view.axis_range.cols} of axis {view.layout.named_axis}, " if view.axis_range is not None else ""
    return (f"{view.name}: {rows}columns {view.cols}, offset {view.base_offset}, strides {strides_text(view.strides)}, "
            f"align {view.align} B, {view.vector_bytes}-byte vectors{doc}")


def _label(region: Region) -> str:
    """A leaf's name as drawn: ``snap``, ``q [32, D]`` for a sub-array field, ``(padding)``."""
    if region.kind == "pad":
        return "(padding)"
    if region.kind != "field":
        return "(whole row)"
    return f"{region.name} {shape_text(region.shape)}" if region.shape else region.name


def _row_words(layout: Layout) -> str:
    """``56 columns``; ``48 columns of D = D*48 elements`` in a row counted in ``D``."""
    if layout.column_unit.is_static:
        return plural(layout.width, "column")
    return f"{plural(layout.width, 'column')} of {layout.column_unit} = {plural(layout.row_elements, 'element')}"


def layout_drawing(layout: Layout, *, room: float = 840) -> Canvas:
    """One row of ``layout``: fields, groups, padding, ruler, stride and alignment; then its named axis."""
    canvas = Canvas()
    view = layout.view
    canvas.text(0, 14, [Span(f"{layout.name} {shape_text(layout.shape)} {layout.dtype}", 14, DARK, True),
                        Span(f"   one row: {_row_words(layout)}", 11, GREY)])
    top = 22.0
    if layout.doc:
        canvas.text(0, top + 12, [Span(layout.doc, 11, GREY)])
        top += 16
    unit = layout.column_unit
    scale = Scale(column_width(layout.width, room, 3, 64), unit)
    aside = [[Span("row stride ", 11, GREY),
              Span(f"{layout.row_elements} = {Size(layout.row_bytes, unit.symbols)} B", 11, DARK, True)],
             [Span("row align  ", 11, GREY), Span(f"{view.row_align} B", 11, DARK, True)]]
    colour = _band(canvas, view, layout.record, scale, top, 0, aside)
    if layout.axis_ranges is None or layout.named_axis is None:
        return canvas
    axis, ranges = layout.named_axis, layout.axis_ranges
    stride = view.strides[axis]
    top = canvas.bottom + 18
    canvas.text(0, top + 12, [Span(f"axis {axis}", 12, DARK, True),
                              Span(f"   {plural(ranges.width, 'entry')} of {shape_text(layout.shape[axis + 1 :])}, "
                                   "its ranges named", 11, GREY)])
    axis_scale = Scale(min(column_width(ranges.width, room, 3, 64), scale.col_w * layout.width / ranges.width))
    aside = [[Span("axis stride ", 11, GREY),
              Span(f"{stride} = {Size(stride.coef * layout.dtype.size, stride.symbols)} B", 11, DARK, True)]]
    _band(canvas, view, ranges, axis_scale, top + 16, colour, aside)
    return canvas


def _band(canvas: Canvas, view: View, record: Region, scale: Scale, top: float, colour: int,
          aside: Sequence[Sequence[Span]]) -> int:
    """Brackets, ruler, blocks and hanging labels of ``record`` from ``top`` down, ``aside`` lines right of it.

    Returns the next fill of :data:`PALETTE` to use.
    """
    levels = _levels(record)
    col_w = scale.col_w
    ruler_y = top + 12 + max(levels.values(), default=0) * BRACKET_H + 18
    band_top = ruler_y + 4
    band_bottom = band_top + BAND_H
    leaves = [r for _, r in record.walk() if r.kind in ("field", "pad")] or [record]
    hanging: list[tuple[float, list[Span]]] = []
    for region in leaves:
        x, w = region.start * col_w, region.width * col_w
        name = _label(region)
        if region.kind == "pad":
            canvas.rect(x, band_top, w, BAND_H, fill=f"url(#{HATCH})", stroke="#ffffff", stroke_width=1,
                        title=f"padding: columns {scale.span(region)}")
        else:
            sub = view[region.path] if region.path else view
            canvas.rect(x, band_top, w, BAND_H, fill=PALETTE[colour % len(PALETTE)], stroke="#ffffff",
                        stroke_width=1, title=_field_title(sub))
            colour += 1
            draw_heads(canvas, region, scale, x, band_top, BAND_H)
        cols = scale.span(region)
        if max(text_width(name, NAME_SIZE), text_width(cols, RANGE_SIZE)) + 6 <= w:
            canvas.text(x + w / 2, band_top + 17, [Span(name, NAME_SIZE, DARK, region.kind != "pad")], anchor="middle")
            canvas.text(x + w / 2, band_top + 31, [Span(cols, RANGE_SIZE, GREY)], anchor="middle")
        else:
            hanging.append((x + w / 2, [Span(name, NAME_SIZE, DARK, region.kind != "pad"),
                                        Span(" " + cols, RANGE_SIZE, GREY)]))
    canvas.rect(0, band_top, record.width * col_w, BAND_H, fill="none", stroke="#444444", stroke_width=1)
    draw_ruler(canvas, 0, ruler_y, scale, record.width)
    _brackets(canvas, record, levels, scale, ruler_y - 20)
    for n, line in enumerate(aside):
        canvas.text(record.width * col_w + 14, band_top + 15 + 16 * n, line)
    canvas.bottom = max(canvas.bottom, band_bottom + 6)
    leaders = place_leaders([(x, 5 + sum(s.width for s in spans)) for x, spans in hanging])
    if leaders and max(le.lane for le in leaders) >= MAX_LANES and col_w >= 1.3 * NAME_SIZE:
        # Too many lanes for a dense run of narrow fields: turn the labels
        # instead, each under its own field (one column is wider than a line).
        for x, spans in hanging:
            canvas.text(x - 0.35 * NAME_SIZE, band_bottom + 6, spans, vertical=True)
        return colour
    for (x, spans), leader in zip(hanging, leaders):
        y = band_bottom + 14 + leader.lane * LANE_H
        hook = -3 if leader.leftward else 3
        canvas.polyline([(x, band_bottom + 2), (x, y - 4), (x + hook, y - 4)], stroke=GREY)
        canvas.text(x + (-5 if leader.leftward else 5), y, spans, anchor="end" if leader.leftward else "start")
    return colour


def _brackets(canvas: Canvas, record: Region, levels: dict[str, int], scale: Scale, base: float) -> None:
    """A bracket over each group's columns, its label above; labels on one level pushed apart."""
    groups = sorted((r for _, r in record.walk() if r.kind == "group"), key=lambda r: (levels[r.path], r.start))
    ends: dict[int, float] = {}  # right end of the last label on each level
    for g in groups:
        level = levels[g.path]
        y = base - (level - 1) * BRACKET_H
        x0, x1 = g.start * scale.col_w + 1.5, g.stop * scale.col_w - 1.5
        canvas.polyline([(x0, y + 6), (x0, y), (x1, y), (x1, y + 6)], stroke="#333333", stroke_width=1.5)
        spans = [Span(g.name, NAME_SIZE, DARK, True), Span(" " + scale.span(g), RANGE_SIZE, GREY)]
        width = sum(s.width for s in spans)
        left = max((x0 + x1) / 2 - width / 2, ends.get(level, -1e9) + 8, 0.0)
        canvas.text(left, y - 4, spans)
        ends[level] = left + width


# -- one binding -----------------------------------------------------------------


def binding_drawing(binding: Binding, *, room: float = 600) -> Canvas:
    """Each parameter of ``binding`` as the row of its layout, its columns highlighted by access."""
    canvas = Canvas()
    canvas.text(0, 14, [Span(f"kernel {binding.name}", 14, DARK, True),
                        Span(f"   {binding.kernel.template}", 11, GREY)])
    legend_y = 34.0
    access_legend(canvas, legend_y)
    pairs = binding.pairs
    labels = [_param_label(p, v) for p, v in pairs]
    left = max(max(text_width(a, 11), text_width(b, 10)) for a, b in labels) + 16
    col_w = column_width(max(v.layout.width for _, v in pairs), room, 4, 32)
    y = legend_y + 16
    for (param, view), (head, sub) in zip(pairs, labels):
        y += param_band(canvas, param, view, head, sub, left, y, col_w) + 26
    return canvas


# -- one program -----------------------------------------------------------------


def program_drawing(spec: Spec, program: Program, *, room: float = 600) -> Canvas:
    """A program's buffers, then each launch with the columns of each buffer it reads and writes highlighted."""
    canvas = Canvas()
    canvas.text(0, 14, [Span(f"program {program.name}", 14, DARK, True),
                        Span(f"   {plural(len(program.launches), 'launch')}", 11, GREY)])
    y = 22.0
    if program.doc:
        canvas.text(0, y + 12, [Span(program.doc, 11, GREY)])
        y += 16
    for b in program.buffers:
        y += 15
        canvas.text(0, y, [Span(f"buffer {b.name}", 11, DARK, True), Span(
            f"  {b.layout.name} {shape_text(b.layout.shape)} {b.layout.dtype}, {b.role or 'scratch'}", 10, GREY)])
    access_legend(canvas, y + 22)
    y += 30
    labels = [(f"{a.param}  inout", f"\u2190 {a.name}") for launch in program.launches for a in launch.args]
    left = max((max(text_width(h, 11), text_width(s, 10)) for h, s in labels), default=0.0) + 16  # the widest
    col_w = column_width(max((a.view.layout.width for la in program.launches for a in la.args), default=1), room, 4, 32)
    for n, launch in enumerate(program.launches, start=1):
        canvas.text(0, y + 20, [Span(f"{n}. {launch_kernel(spec, launch)}", 12, DARK, True)])
        y += 26
        params = {p.name: p for p in launch.binding.kernel.params}
        for arg in launch.args:
            param = params[arg.param]
            y += param_band(canvas, param, arg.view, f"{arg.param}  {param.access}", f"\u2190 {arg.name}", left, y,
                            col_w) + 22
    return canvas


def _param_label(param: Param, view: View) -> tuple[str, str]:
    return f"{param.name}  {param.access} {shape_text(param.shape)}", f"\u2190 {view.name}"


def access_legend(canvas: Canvas, y: float) -> None:
    """What each highlight's colour means, on one line with its baseline at ``y``."""
    x = 0.0
    for access in ("in", "out", "inout"):
        fill, stroke = ACCESS_COLORS[access]
        canvas.rect(x, y - 9, 12, 10, fill=fill, stroke=stroke)
        x += 16 + canvas.text(x + 16, y, [Span(f"{ACCESS_WORDS[access]} ({access})", 10, GREY)]) + 18


def param_band(canvas: Canvas, param: Param, view: View, head: str, sub: str, x0: float, top: float,
                col_w: float) -> float:
    """The row of ``view``'s layout from ``top``, its columns highlighted; returns the height drawn.

    A layout with a named axis gets a strip of that axis' entries under the
    row, the view's range of it highlighted too.
    """
    layout = view.layout
    scale = Scale(col_w, layout.column_unit)
    canvas.text(0, top + 16, [Span(head, 11, DARK, True)])
    canvas.text(0, top + 31, [Span(sub, 10, GREY)])
    band_top, band_h = top + 4, BAND_H - 8
    for _, region in layout.record.walk():
        if region.kind in ("field", "pad"):
            fill = f"url(#{HATCH})" if region.kind == "pad" else "#ececec"
            canvas.rect(x0 + region.start * col_w, band_top, region.width * col_w, band_h, fill=fill,
                        stroke="#ffffff", title=region.path or "padding")
    if not any(r.kind in ("field", "pad") for _, r in layout.record.walk()):
        canvas.rect(x0, band_top, layout.width * col_w, band_h, fill="#ececec")
    fill, stroke = ACCESS_COLORS[param.access]
    hx, hw = x0 + view.offset * col_w, view.width * col_w
    what = f"{ACCESS_WORDS[param.access]} {view.path or 'all columns'}"
    canvas.rect(hx, band_top, hw, band_h, fill=fill, stroke=stroke, stroke_width=1.5,
                title=f"{param.name} {what}: {view}")
    draw_heads(canvas, view.region, scale, hx, band_top, band_h)
    inside = text_width(what, 10) + 6 <= hw
    if inside:
        canvas.text(hx + hw / 2, band_top + 20, [Span(what, 10, DARK)], anchor="middle")
    canvas.rect(x0, band_top, layout.width * col_w, band_h, fill="none", stroke="#444444")
    _edge_numbers(canvas, x0, band_top + BAND_H + 1, scale, layout.width, view)
    right = x0 + layout.width * col_w + 12
    first = f"{what}, columns {view.cols} of " if not inside else ""
    canvas.text(right, band_top + 12, [Span(first, 10, DARK, True),
                                       Span(f"{layout.name} {shape_text(layout.shape)} {layout.dtype}", 10, GREY)])
    canvas.text(right, band_top + 26, [Span(f"row stride {layout.row_elements}, offset {view.base_offset}, "
                                            f"align {view.align} B, {view.vector_bytes}-byte vectors", 10, GREY)])
    if layout.axis_ranges is None:
        return BAND_H
    return BAND_H + 14 + _axis_strip(canvas, param, view, x0, band_top + BAND_H + 8, layout.width * col_w)


def _axis_strip(canvas: Canvas, param: Param, view: View, x0: float, top: float, room: float) -> float:
    """The named axis of ``view``'s layout as a thin strip of its entries, the view's range highlighted.

    Returns the strip's height.
    """
    layout, ranges = view.layout, view.layout.axis_ranges
    assert ranges is not None  # the caller checks
    entry_w = max(8.0, min(48.0, room / ranges.width))
    height = 16.0
    for _, region in ranges.walk():
        if region.kind in ("field", "pad"):
            fill = f"url(#{HATCH})" if region.kind == "pad" else "#ececec"
            x, w = x0 + region.start * entry_w, region.width * entry_w
            canvas.rect(x, top, w, height, fill=fill, stroke="#ffffff", title=region.path or "padding")
    chosen = view.axis_range or ranges
    fill, stroke = ACCESS_COLORS[param.access]
    canvas.rect(x0 + chosen.start * entry_w, top, chosen.width * entry_w, height, fill=fill, stroke=stroke,
                stroke_width=1.5, title=f"{param.name}: rows {chosen.cols} of axis {layout.named_axis}")
    for _, region in ranges.walk():
        if region.kind == "field" and text_width(region.name, 9) + 4 <= region.width * entry_w:
            canvas.text(x0 + (region.start + region.width / 2) * entry_w, top + 11.5,
                        [Span(region.name, 9, DARK)], anchor="middle")
    canvas.rect(x0, top, ranges.width * entry_w, height, fill="none", stroke="#444444")
    where = (f"rows {chosen.cols} of axis {layout.named_axis} ({chosen.path})" if view.axis_range is not None
             else f"all {plural(ranges.width, 'row')} of axis {layout.named_axis}")
    canvas.text(x0 + ranges.width * entry_w + 12, top + 11.5, [Span(where, 10, GREY)])
    return height


def _edge_numbers(canvas: Canvas, x0: float, y: float, scale: Scale, width: int, view: View) -> None:
    """The highlighted columns' edges and the row's ends under the band, skipping any that would collide."""
    taken: list[tuple[float, float]] = []
    for c in dict.fromkeys((view.offset, view.offset + view.width, 0, width)):
        x = x0 + c * scale.col_w
        label = scale.number(c)
        w = text_width(label, RULER_SIZE)
        span = (x - w / 2 - 2, x + w / 2 + 2)
        if any(a < span[1] and span[0] < b for a, b in taken):
            continue
        taken.append(span)
        canvas.text(x, y, [Span(label, RULER_SIZE, GREY)], anchor="middle")


# -- documents -------------------------------------------------------------------


def layout_svg(layout: Layout) -> str:
    """The SVG document of one layout's row."""
    return document([layout_drawing(layout)], title=f"layout {layout.name}")


def binding_svg(binding: Binding) -> str:
    """The SVG document of one kernel binding."""
    return document([binding_drawing(binding)], title=f"kernel {binding.name}")


def program_svg(spec: Spec, program: Program) -> str:
    """The SVG document of one program of ``spec``."""
    return document([program_drawing(spec, program)], title=f"program {program.name}")


def spec_svg(spec: Spec) -> str:
    """Every layout of ``spec``, then every kernel binding, then every program, in one document."""
    drawings = [layout_drawing(lay) for lay in spec.layouts] + [binding_drawing(b) for b in spec.kernels]
    return document(drawings + [program_drawing(spec, p) for p in spec.programs], title=f"spec {spec.name}")
