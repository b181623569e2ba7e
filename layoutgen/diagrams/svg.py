"""A small SVG builder: shapes and text on a canvas, canvases stacked into a document.

Pure Python string building, so diagrams need no extra dependency. Output is
deterministic: coordinates are rounded to two decimals and written the same
way on every machine, elements come in the order they were drawn, and the
document has no timestamp or random id.

Text is set in a monospaced font so that its width can be estimated from its
length; :func:`text_width` errs wide so that layout decisions made from it
(does a label fit in its block? do two labels collide?) stay right when a
viewer substitutes another font.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

FONT = "DejaVu Sans Mono, Menlo, Consolas, Liberation Mono, monospace"

#: Advance of one character, in em. DejaVu Sans Mono's is 0.602 em and most
#: monospaced fonts are narrower: 0.62 keeps estimates on the wide side.
CHAR_EM = 0.62

#: DejaVu Sans Mono's advance in em, before hinting (see :func:`text_width`).
FONT_EM = 0.602

#: The id of the hatch pattern every document defines, for padding.
HATCH = "lg-hatch"


def text_width(text: str, size: float) -> float:
    """A conservative width in pixels of ``text`` set at ``size`` pixels.

    A hinting renderer rounds each advance to whole pixels (cairo's text API, which cairosvg draws
    with: 0.602 em at 11 px is 7 px, 0.636 em), so a character is never estimated narrower than that.
    """
    return len(text) * max(CHAR_EM * size, math.floor(FONT_EM * size + 0.5))


def num(value: float) -> str:
    """``value`` with at most two decimals and no trailing zeros: stable text for coordinates."""
    text = f"{value:.2f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


@dataclass(frozen=True)
class Span:
    """A run of text in one style, part of a line of :meth:`Canvas.text`."""

    text: str
    size: float = 11
    fill: str = "#1a1a1a"
    bold: bool = False

    @property
    def width(self) -> float:
        return text_width(self.text, self.size)


def _attrs(**values: str | float | None) -> str:
    out = []
    for key, value in values.items():
        if value is None:
            continue
        shown = num(value) if isinstance(value, (int, float)) else value
        out.append(f"{key.rstrip('_').replace('_', '-')}={quoteattr(shown)}")
    return " ".join(out)


class Canvas:
    """Shapes and text drawn in pixels, with the extent they cover.

    Every method records what it draws so that the canvas knows its size;
    text is measured with :func:`text_width`.
    """

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.right = 0.0
        self.bottom = 0.0

    def _cover(self, x: float, y: float) -> None:
        self.right = max(self.right, x)
        self.bottom = max(self.bottom, y)

    def rect(self, x: float, y: float, w: float, h: float, *, fill: str, stroke: str | None = None,
             stroke_width: float | None = None, title: str | None = None) -> None:
        """A rectangle; ``title`` becomes its tooltip in a browser."""
        attrs = _attrs(x=x, y=y, width=w, height=h, fill=fill, stroke=stroke, stroke_width=stroke_width)
        if title:
            self.parts.append(f"<rect {attrs}><title>{escape(title)}</title></rect>")
        else:
            self.parts.append(f"<rect {attrs}/>")
        self._cover(x + w, y + h)

    def line(self, x1: float, y1: float, x2: float, y2: float, *, stroke: str = "#555",
             stroke_width: float = 1) -> None:
        self.parts.append(f"<line {_attrs(x1=x1, y1=y1, x2=x2, y2=y2, stroke=stroke, stroke_width=stroke_width)}/>")
        self._cover(max(x1, x2), max(y1, y2))

    def polyline(self, points: Sequence[tuple[float, float]], *, stroke: str = "#555",
                 stroke_width: float = 1) -> None:
        shown = " ".join(f"{num(x)},{num(y)}" for x, y in points)
        self.parts.append(f"<polyline {_attrs(points=shown, fill='none', stroke=stroke, stroke_width=stroke_width)}/>")
        self._cover(max(x for x, _ in points), max(y for _, y in points))

    def text(self, x: float, y: float, spans: Sequence[Span] | str, *, anchor: str = "start",
             vertical: bool = False) -> float:
        """A line of text with its baseline at ``y``; returns its estimated width.

        ``anchor`` is SVG's ``text-anchor``: ``start``, ``middle`` or ``end``.
        ``vertical`` turns the line a quarter clockwise about (x, y): it then
        reads downwards from there, its glyphs right of x.
        """
        runs = [Span(spans)] if isinstance(spans, str) else list(spans)
        width = sum(s.width for s in runs)
        left = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
        # No `text-anchor`: converters disagree on it over several tspans (cairosvg anchors each tspan
        # by its own width where the one before ended: "40..41volatility_z"). Every run starts at an
        # x computed here, from the same widths that decided where the label goes; spaces that lead or
        # end a run move the next x instead of relying on `xml:space`.
        inner = []
        cursor = left
        for s in runs:
            body = s.text.strip(" ")
            lead = len(s.text) - len(s.text.lstrip(" "))
            if body:
                style = _attrs(x=cursor + text_width(" " * lead, s.size), font_size=s.size, fill=s.fill,
                               font_weight="bold" if s.bold else None)
                inner.append(f"<tspan {style}>{escape(body)}</tspan>")
            cursor += s.width
        turn = f"rotate(90 {num(x)} {num(y)})" if vertical else None
        self.parts.append(f"<text {_attrs(x=left, y=y, transform=turn)}>{''.join(inner)}</text>")
        size = max(s.size for s in runs)
        if vertical:
            self._cover(x + size, y + width)
        else:
            self._cover(left + width, y + 0.3 * size)
        return width


def document(canvases: Sequence[Canvas], *, title: str, margin: float = 16, gap: float = 24) -> str:
    """One SVG document with ``canvases`` stacked top to bottom on a white background.

    Each canvas is drawn from (0, 0); the document adds ``margin`` around
    them and ``gap`` between. The background is opaque so that the diagram
    reads on a dark page too.
    """
    width = max((c.right for c in canvases), default=0.0) + 2 * margin
    body: list[str] = []
    y = margin
    for n, canvas in enumerate(canvases):
        if n:
            body.append(f"<line {_attrs(x1=margin, y1=y - gap / 2, x2=width - margin, y2=y - gap / 2)} "
                        f"stroke=\"#dddddd\"/>")
        body.append(f"<g transform=\"translate({num(margin)},{num(y)})\">")
        body.extend(canvas.parts)
        body.append("</g>")
        y += canvas.bottom + gap
    height = y - gap + margin
    head = (
        f"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{num(width)}\" height=\"{num(height)}\" "
        f"viewBox=\"0 0 {num(width)} {num(height)}\" font-family={quoteattr(FONT)} xml:space=\"preserve\">"
    )
    defs = (
        f"<defs><pattern id=\"{HATCH}\" patternUnits=\"userSpaceOnUse\" width=\"6\" height=\"6\" "
        "patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"#f2f2f2\"/>"
        "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"#9a9a9a\" stroke-width=\"2\"/></pattern></defs>"
    )
    lines = [
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
        head,
        f"<title>{escape(title)}</title>",
        defs,
        f"<rect width=\"{num(width)}\" height=\"{num(height)}\" fill=\"#ffffff\"/>",
        *body,
        "</svg>",
    ]
    return "\n".join(lines) + "\n"
