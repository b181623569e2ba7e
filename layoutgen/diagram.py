"""Layout diagrams: one row of a layout, or a kernel binding, drawn as SVG.

A layout's row is a band of columns. Each field is a coloured block with its
name and column range; groups are brackets above their fields (nested groups
lower, nearer their fields); padding is hatched; the row stride and byte
alignment stand beside the band. A field too narrow for its label gets a
leader line down to a label below the band; the labels are stacked so that
neither they nor the leader lines cross (see :func:`_place_leaders`).

A binding is drawn as one band per parameter: the row of the layout the
parameter is bound to, with the columns the kernel reads, writes or both
highlighted.

``layoutgen show SPEC[:NAME] --svg FILE`` writes these; :func:`spec_svg`,
:func:`layout_svg` and :func:`binding_svg` return the document text.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .kernels import Binding, Param
from .schema import Layout, View
from .schema.dims import shape_text, strides_text
from .schema.record import Region
from .spec import Spec
from .svg import HATCH, Canvas, Span, document, text_width

#: Fills of fields, in declaration order (light, so black text reads on each).
PALETTE = ("#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#fb9a99", "#8dd3c7", "#ffe680", "#bebada",
           "#80b1d3", "#fccde5", "#ccebc5", "#e5c494")

#: Highlight fill and outline of a bound parameter, by access.
ACCESS_COLORS = {"in": ("#9ecae9", "#2f6ea3"), "out": ("#ffbf79", "#c4610a"), "inout": ("#d7b5d8", "#8e4f90")}
ACCESS_WORDS = {"in": "reads", "out": "writes", "inout": "reads and writes"}

GREY, DARK = "#6b6b6b", "#1a1a1a"
NAME_SIZE, RANGE_SIZE, RULER_SIZE = 11.0, 9.0, 9.0
BAND_H, LANE_H, BRACKET_H = 40.0, 16.0, 24.0

#: Leader lanes below the band before labels are turned upright instead.
MAX_LANES = 8


def _column_width(width: int, room: float, lo: float, hi: float) -> float:
    """Pixels per column: the band fills about ``room`` pixels, within ``lo..hi`` per column."""
    return float(max(lo, min(hi, int(room / width))))


# -- labels below the band -------------------------------------------------------


@dataclass(frozen=True)
class Leader:
    """A label hung below the band from ``x`` (its field's centre) on lane ``lane``.

    The label extends to the right of its leader line, or to the left when
    ``leftward``.
    """

    x: float
    width: float
    lane: int
    leftward: bool = False


def _stack(items: Sequence[tuple[float, float]], gap: float) -> list[int]:
    """Lanes for labels of (x, width) that start at x and extend to the right.

    Working from the rightmost label leftwards, each label takes the highest
    lane below every label already placed whose leader line it would cover:
    such a leader stands right of this label's start and runs down to its own
    lane, so this label must sit lower. Leader lines then cross no label and
    no two labels overlap. Lanes are returned in the order given.
    """
    lanes: dict[int, int] = {}
    for i in sorted(range(len(items)), key=lambda i: -items[i][0]):
        x, w = items[i]
        blocking = [lanes[j] for j in lanes if items[j][0] <= x + w + gap]
        lanes[i] = 1 + max(blocking) if blocking else 0
    return [lanes[i] for i in range(len(items))]


def _place_leaders(items: Sequence[tuple[float, float]], gap: float = 6.0) -> list[Leader]:
    """Leaders for labels of (x, width), sorted by x: the first ones extend left, the rest right.

    Labels left of the split extend leftwards, those right of it rightwards,
    so the two sets never meet and each is stacked by :func:`_stack` (the
    left set mirrored). The split that needs the fewest lanes wins; a label
    may extend left only where it stays right of x = 0.
    """
    n = len(items)
    best: list[Leader] | None = None
    for split in range(n, -1, -1):  # all rightward first: on a tie, labels read left to right
        if any(items[i][0] - items[i][1] < 0 for i in range(split)):
            continue
        left = _stack([(-x, w) for x, w in items[:split]], gap)
        right = _stack(items[split:], gap)
        leaders = [Leader(x, w, lane, True) for (x, w), lane in zip(items[:split], left)]
        leaders += [Leader(x, w, lane) for (x, w), lane in zip(items[split:], right)]
        if best is None or max(le.lane for le in leaders) < max(le.lane for le in best):
            best = leaders
    return best if best is not None and n else []


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
    doc = f" - {view.region.doc}" if view.region.doc else ""
    return (f"{view.name}: columns {view.cols}, offset {view.offset}, strides {strides_text(view.strides)}, "
            f"align {view.align} B, {view.vector_bytes}-byte vectors{doc}")


def _ruler(canvas: Canvas, x0: float, y: float, col_w: float, width: int) -> None:
    """Column boundaries 0..width above the band, every ``step`` columns where numbers would crowd.

    The row's end is always numbered; the regular mark before it is dropped
    when the two would touch.
    """
    widest = text_width(str(width), RULER_SIZE) + 3
    step = next(s for s in (1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 200, 256, 500, 1000, 10**9)
                if s * col_w >= widest)
    marks = list(range(0, width, step))
    if len(marks) > 1 and (width - marks[-1]) * col_w < widest:
        marks.pop()
    for c in [*marks, width]:
        x = x0 + c * col_w
        canvas.text(x, y - 4, [Span(str(c), RULER_SIZE, GREY)], anchor="middle")
        canvas.line(x, y - 2, x, y + 1, stroke=GREY)


def layout_drawing(layout: Layout, *, room: float = 840) -> Canvas:
    """One row of ``layout``: fields, groups, padding, ruler, stride and alignment."""
    canvas = Canvas()
    view = layout.view
    canvas.text(0, 14, [Span(f"{layout.name} {shape_text(layout.shape)} {layout.dtype}", 14, DARK, True),
                        Span(f"   one row: {layout.width} columns", 11, GREY)])
    top = 22.0
    if layout.doc:
        canvas.text(0, top + 12, [Span(layout.doc, 11, GREY)])
        top += 16
    levels = _levels(layout.record)
    n_levels = max(levels.values(), default=0)
    col_w = _column_width(layout.width, room, 3, 64)
    ruler_y = top + 12 + n_levels * BRACKET_H + 18
    band_top = ruler_y + 4
    band_bottom = band_top + BAND_H
    leaves = [r for _, r in layout.record.walk() if r.kind in ("field", "pad")] or [layout.record]
    hanging: list[tuple[Region, float, list[Span]]] = []
    colour = 0
    for region in leaves:
        x, w = region.start * col_w, region.width * col_w
        name = "(padding)" if region.kind == "pad" else region.name if region.kind == "field" else "(whole row)"
        if region.kind == "pad":
            canvas.rect(x, band_top, w, BAND_H, fill=f"url(#{HATCH})", stroke="#ffffff", stroke_width=1,
                        title=f"padding: columns {region.cols}")
        else:
            sub = view[region.path] if region.path else view
            canvas.rect(x, band_top, w, BAND_H, fill=PALETTE[colour % len(PALETTE)], stroke="#ffffff",
                        stroke_width=1, title=_field_title(sub))
            colour += 1
        cols = region.cols
        if max(text_width(name, NAME_SIZE), text_width(cols, RANGE_SIZE)) + 6 <= w:
            canvas.text(x + w / 2, band_top + 17, [Span(name, NAME_SIZE, DARK, region.kind != "pad")], anchor="middle")
            canvas.text(x + w / 2, band_top + 31, [Span(cols, RANGE_SIZE, GREY)], anchor="middle")
        else:
            spans = [Span(name, NAME_SIZE, DARK, region.kind != "pad"), Span(" " + cols, RANGE_SIZE, GREY)]
            hanging.append((region, x + w / 2, spans))
    canvas.rect(0, band_top, layout.width * col_w, BAND_H, fill="none", stroke="#444444", stroke_width=1)
    _ruler(canvas, 0, ruler_y, col_w, layout.width)
    _brackets(canvas, layout.record, levels, col_w, ruler_y - 20)
    aside = band_top + 15
    canvas.text(layout.width * col_w + 14, aside,
                [Span("row stride ", 11, GREY), Span(f"{layout.width} = {layout.row_bytes} B", 11, DARK, True)])
    canvas.text(layout.width * col_w + 14, aside + 16,
                [Span("row align  ", 11, GREY), Span(f"{view.row_align} B", 11, DARK, True)])
    leaders = _place_leaders([(x, 5 + sum(s.width for s in spans)) for _, x, spans in hanging])
    if leaders and max(le.lane for le in leaders) >= MAX_LANES and col_w >= 1.3 * NAME_SIZE:
        # Too many lanes for a dense run of narrow fields: turn the labels
        # instead, each under its own field (one column is wider than a line).
        for _, x, spans in hanging:
            canvas.text(x - 0.35 * NAME_SIZE, band_bottom + 6, spans, vertical=True)
        canvas.bottom = max(canvas.bottom, band_bottom + 6)
        return canvas
    for (_, x, spans), leader in zip(hanging, leaders):
        y = band_bottom + 14 + leader.lane * LANE_H
        hook = -3 if leader.leftward else 3
        canvas.polyline([(x, band_bottom + 2), (x, y - 4), (x + hook, y - 4)], stroke=GREY)
        canvas.text(x + (-5 if leader.leftward else 5), y, spans, anchor="end" if leader.leftward else "start")
    canvas.bottom = max(canvas.bottom, band_bottom + 6)
    return canvas


def _brackets(canvas: Canvas, record: Region, levels: dict[str, int], col_w: float, base: float) -> None:
    """A bracket over each group's columns, its label above; labels on one level pushed apart."""
    groups = sorted((r for _, r in record.walk() if r.kind == "group"), key=lambda r: (levels[r.path], r.start))
    ends: dict[int, float] = {}  # right end of the last label on each level
    for g in groups:
        level = levels[g.path]
        y = base - (level - 1) * BRACKET_H
        x0, x1 = g.start * col_w + 1.5, g.stop * col_w - 1.5
        canvas.polyline([(x0, y + 6), (x0, y), (x1, y), (x1, y + 6)], stroke="#333333", stroke_width=1.5)
        spans = [Span(g.name, NAME_SIZE, DARK, True), Span(" " + g.cols, RANGE_SIZE, GREY)]
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
    x = 0.0
    for access in ("in", "out", "inout"):
        fill, stroke = ACCESS_COLORS[access]
        canvas.rect(x, legend_y - 9, 12, 10, fill=fill, stroke=stroke)
        x += 16 + canvas.text(x + 16, legend_y, [Span(f"{ACCESS_WORDS[access]} ({access})", 10, GREY)]) + 18
    pairs = binding.pairs
    labels = [_param_label(p, v) for p, v in pairs]
    left = max(max(text_width(a, 11), text_width(b, 10)) for a, b in labels) + 16
    col_w = _column_width(max(v.layout.width for _, v in pairs), room, 4, 32)
    y = legend_y + 16
    for (param, view), (head, sub) in zip(pairs, labels):
        _param_band(canvas, param, view, head, sub, left, y, col_w)
        y += BAND_H + 26
    return canvas


def _param_label(param: Param, view: View) -> tuple[str, str]:
    return f"{param.name}  {param.access} {shape_text(param.shape)}", f"\u2190 {view.name}"


def _param_band(canvas: Canvas, param: Param, view: View, head: str, sub: str, x0: float, top: float,
                col_w: float) -> None:
    layout = view.layout
    canvas.text(0, top + 16, [Span(head, 11, DARK, True)])
    canvas.text(0, top + 31, [Span(sub, 10, GREY)])
    band_top = top + 4
    for _, region in layout.record.walk():
        if region.kind in ("field", "pad"):
            fill = f"url(#{HATCH})" if region.kind == "pad" else "#ececec"
            canvas.rect(x0 + region.start * col_w, band_top, region.width * col_w, BAND_H - 8, fill=fill,
                        stroke="#ffffff", title=region.path or "padding")
    if not any(r.kind in ("field", "pad") for _, r in layout.record.walk()):
        canvas.rect(x0, band_top, layout.width * col_w, BAND_H - 8, fill="#ececec")
    fill, stroke = ACCESS_COLORS[param.access]
    hx, hw = x0 + view.offset * col_w, view.width * col_w
    what = f"{ACCESS_WORDS[param.access]} {view.path or 'all columns'}"
    canvas.rect(hx, band_top, hw, BAND_H - 8, fill=fill, stroke=stroke, stroke_width=1.5,
                title=f"{param.name} {what}: {view}")
    inside = text_width(what, 10) + 6 <= hw
    if inside:
        canvas.text(hx + hw / 2, band_top + 20, [Span(what, 10, DARK)], anchor="middle")
    canvas.rect(x0, band_top, layout.width * col_w, BAND_H - 8, fill="none", stroke="#444444")
    _edge_numbers(canvas, x0, band_top + BAND_H + 1, col_w, layout.width, view)
    right = x0 + layout.width * col_w + 12
    first = f"{what}, columns {view.cols} of " if not inside else ""
    canvas.text(right, band_top + 12, [Span(first, 10, DARK, True),
                                       Span(f"{layout.name} {shape_text(layout.shape)} {layout.dtype}", 10, GREY)])
    canvas.text(right, band_top + 26, [Span(f"row stride {view.row_stride}, offset {view.offset}, "
                                            f"align {view.align} B, {view.vector_bytes}-byte vectors", 10, GREY)])


def _edge_numbers(canvas: Canvas, x0: float, y: float, col_w: float, width: int, view: View) -> None:
    """The highlighted columns' edges and the row's ends under the band, skipping any that would collide."""
    taken: list[tuple[float, float]] = []
    for c in dict.fromkeys((view.offset, view.offset + view.width, 0, width)):
        x = x0 + c * col_w
        w = text_width(str(c), RULER_SIZE)
        span = (x - w / 2 - 2, x + w / 2 + 2)
        if any(a < span[1] and span[0] < b for a, b in taken):
            continue
        taken.append(span)
        canvas.text(x, y, [Span(str(c), RULER_SIZE, GREY)], anchor="middle")


# -- documents -------------------------------------------------------------------


def layout_svg(layout: Layout) -> str:
    """The SVG document of one layout's row."""
    return document([layout_drawing(layout)], title=f"layout {layout.name}")


def binding_svg(binding: Binding) -> str:
    """The SVG document of one kernel binding."""
    return document([binding_drawing(binding)], title=f"kernel {binding.name}")


def spec_svg(spec: Spec) -> str:
    """Every layout of ``spec``, then every kernel binding, in one document."""
    drawings = [layout_drawing(lay) for lay in spec.layouts] + [binding_drawing(b) for b in spec.kernels]
    return document(drawings, title=f"spec {spec.name}")
