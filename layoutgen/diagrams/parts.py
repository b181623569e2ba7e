"""Parts of the diagrams of :mod:`layoutgen.diagrams.drawing`: colours and sizes, the scale of a band, its
ruler, the head ticks of sub-array fields, and the placement of labels hung below a band.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..schema.dims import Size
from ..schema.record import Region
from .svg import Canvas, Span, text_width

#: Fills of fields, in declaration order (light, so black text reads on each).
PALETTE = ("#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6", "#fb9a99", "#8dd3c7", "#ffe680", "#bebada",
           "#80b1d3", "#fccde5", "#ccebc5", "#e5c494")

#: Highlight fill and outline of a bound parameter, by access.
ACCESS_COLORS = {"in": ("#9ecae9", "#2f6ea3"), "out": ("#ffbf79", "#c4610a"), "inout": ("#d7b5d8", "#8e4f90")}
ACCESS_WORDS = {"in": "reads", "out": "writes", "inout": "reads and writes"}

GREY, DARK, HEAD_TICK = "#6b6b6b", "#1a1a1a", "#4d4d4d"
NAME_SIZE, RANGE_SIZE, RULER_SIZE = 11.0, 9.0, 9.0
BAND_H, LANE_H, BRACKET_H = 40.0, 16.0, 24.0

#: Leader lanes below the band before labels are turned upright instead.
MAX_LANES = 8


def column_width(width: int, room: float, lo: float, hi: float) -> float:
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


def stack_lanes(items: Sequence[tuple[float, float]], gap: float) -> list[int]:
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


def place_leaders(items: Sequence[tuple[float, float]], gap: float = 6.0) -> list[Leader]:
    """Leaders for labels of (x, width), sorted by x: the first ones extend left, the rest right.

    Labels left of the split extend leftwards, those right of it rightwards,
    so the two sets never meet and each is stacked by :func:`stack_lanes` (the
    left set mirrored). The split that needs the fewest lanes wins; a label
    may extend left only where it stays right of x = 0.
    """
    n = len(items)
    best: list[Leader] | None = None
    for split in range(n, -1, -1):  # all rightward first: on a tie, labels read left to right
        if any(items[i][0] - items[i][1] < 0 for i in range(split)):
            continue
        left = stack_lanes([(-x, w) for x, w in items[:split]], gap)
        right = stack_lanes(items[split:], gap)
        leaders = [Leader(x, w, lane, True) for (x, w), lane in zip(items[:split], left)]
        leaders += [Leader(x, w, lane) for (x, w), lane in zip(items[split:], right)]
        if best is None or max(le.lane for le in leaders) < max(le.lane for le in best):
            best = leaders
    return best if best is not None and n else []


# -- a band's scale, ruler and head ticks ------------------------------------------


@dataclass(frozen=True)
class Scale:
    """How a band counts: pixels per column, and what one column is (``1``, or ``D`` of sub-array fields)."""

    col_w: float
    unit: Size = Size(1)

    def number(self, column: int) -> str:
        """Column ``column`` as ``show`` prints it: ``32``, or ``D*32`` in a row counted in ``D``."""
        return str(Size(column, self.unit.symbols)) if column else "0"

    def span(self, region: Region) -> str:
        return f"{self.number(region.start)}..{self.number(region.stop)}"


def head_step(region: Region, unit: Size) -> int | None:
    """Columns between the entries of a sub-array field's first dim (its heads), or None.

    ``q [32, D]`` in a row counted in ``D`` has a head every column; ``mix [4, 4]``
    in a plain row one every 4 columns. A field of one dim has no heads.
    """
    if len(region.shape) < 2:
        return None
    inner = Size.product(region.shape[1:])
    if inner.symbols != unit.symbols or inner.coef % unit.coef:
        return None
    step = inner.coef // unit.coef
    return step if 0 < step < region.width else None


def draw_heads(canvas: Canvas, region: Region, scale: Scale, x: float, top: float, height: float) -> None:
    """Short light ticks at the top and bottom edge of a sub-array field where its heads start."""
    step = head_step(region, scale.unit)
    if step is None or step * scale.col_w < 4:
        return
    tick = min(6.0, height / 4)
    for c in range(step, region.width, step):
        hx = x + c * scale.col_w
        canvas.line(hx, top, hx, top + tick, stroke=HEAD_TICK, stroke_width=0.8)
        canvas.line(hx, top + height - tick, hx, top + height, stroke=HEAD_TICK, stroke_width=0.8)


def draw_ruler(canvas: Canvas, x0: float, y: float, scale: Scale, width: int) -> None:
    """Column boundaries 0..width above the band, every ``step`` columns where numbers would crowd.

    The row's end is always numbered; the regular mark before it is dropped
    when the two would touch.
    """
    col_w = scale.col_w
    widest = text_width(scale.number(width), RULER_SIZE) + (3 if scale.unit.is_static else 12)
    step = next(s for s in (1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 128, 200, 256, 500, 1000, 10**9)
                if s * col_w >= widest)
    marks = list(range(0, width, step))
    if len(marks) > 1 and (width - marks[-1]) * col_w < widest:
        marks.pop()
    for c in [*marks, width]:
        x = x0 + c * col_w
        canvas.text(x, y - 4, [Span(scale.number(c), RULER_SIZE, GREY)], anchor="middle")
        canvas.line(x, y - 2, x, y + 1, stroke=GREY)
