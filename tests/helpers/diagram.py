"""Rendered SVG diagrams read back: each text as it reads, and its estimated ink box.

Label boxes are estimated as the renderer estimates them (monospaced, 0.62 em a character, which errs wide), so
"no overlap" means no overlap with the widest plausible font.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from layoutgen.diagrams.svg import CHAR_EM, text_width

NS = "{http://www.w3.org/2000/svg}"


def texts(svg: str) -> list[str]:
    """Each text as it reads: its tspans, each placed at its own x, with the spaces between them that their
    positions leave (a run's leading and trailing spaces move the next x instead of being written)."""
    root = ET.fromstring(svg.encode("utf-8"))
    out = []
    for t in root.iter(f"{NS}text"):
        line, end = "", float(t.get("x", "0"))
        for s in t.iter(f"{NS}tspan"):
            size, text = float(s.get("font-size", "11")), s.text or ""
            x = float(s.get("x", end))
            line += " " * round((x - end) / (CHAR_EM * size)) + text
            end = x + text_width(text, size)
        out.append(line)
    return out


Box = tuple[float, float, float, float]  # x0, y0, x1, y1


def _translate(el: ET.Element, parents: dict[ET.Element, ET.Element]) -> tuple[float, float]:
    dx = dy = 0.0
    node: ET.Element | None = el
    while node is not None:
        m = re.match(r"translate\(([-\d.]+),([-\d.]+)\)", node.get("transform", ""))
        if m:
            dx, dy = dx + float(m.group(1)), dy + float(m.group(2))
        node = parents.get(node)
    return dx, dy


#: How far ``text-anchor`` moves a run left, as a share of the width it anchors.
ANCHOR_SHARE = {"start": 0.0, "middle": 0.5, "end": 1.0}


def span_boxes(svg: str, *, per_span: bool = False) -> list[tuple[int, str, Box]]:
    """Each tspan's estimated ink box (ascent 0.8 em above the baseline, descent 0.25 em below), with the
    index of its text and its own text.

    Two readings of ``text-anchor``: SVG's (``per_span=False``, what rsvg-convert and browsers do), where it
    moves each text chunk, the tspans from one absolute ``x`` to the next, as a whole; and cairosvg's
    (``per_span=True``), which anchors every tspan by its own width at the point the one before ended, so
    that `time_in_trade 40..41` anchored at its end draws `40..41` right of the anchor, over the next label.
    """
    root = ET.fromstring(svg.encode("utf-8"))
    parents = {child: parent for parent in root.iter() for child in parent}
    out = []
    for n, t in enumerate(root.iter(f"{NS}text")):
        dx, dy = _translate(t, parents)
        y = float(t.get("y", "0")) + dy
        share = ANCHOR_SHARE[t.get("text-anchor", "start")]
        chunks: list[tuple[float, list[tuple[str, float, float]]]] = []  # (x, [(text, width, size)])
        for s in t.iter(f"{NS}tspan"):
            size = float(s.get("font-size", "11"))
            run = (s.text or "", text_width(s.text or "", size), size)
            if s.get("x") is not None or not chunks:
                chunks.append((float(s.get("x", t.get("x", "0"))) + dx, []))
            chunks[-1][1].append(run)
        vertical = "rotate(90" in t.get("transform", "")
        for x, runs in chunks:
            cursor = x if per_span else x - share * sum(w for _, w, _ in runs)
            for text, width, size in runs:
                left = cursor - share * width if per_span else cursor
                cursor += width
                if vertical:  # turned about the text's (x, y): the run reads downwards from y
                    x0 = float(t.get("x", "0")) + dx
                    box = (x0 - 0.25 * size, y + left - x0, x0 + 0.8 * size, y + left - x0 + width)
                else:
                    box = (left, y - 0.8 * size, left + width, y + 0.25 * size)
                if text.strip():
                    out.append((n, text, box))
    return out


def text_boxes(svg: str, *, per_span: bool = False) -> list[tuple[str, Box]]:
    """Each text's estimated ink box: the union of its tspans' (see :func:`span_boxes`)."""
    boxes: dict[int, tuple[str, Box]] = {}
    for n, text, box in span_boxes(svg, per_span=per_span):
        if n in boxes:
            label, b = boxes[n]
            boxes[n] = (label + text, (min(b[0], box[0]), min(b[1], box[1]), max(b[2], box[2]), max(b[3], box[3])))
        else:
            boxes[n] = (text, box)
    return list(boxes.values())


def leader_segments(svg: str) -> list[Box]:
    """The vertical segments of polylines (leader lines and bracket ends)."""
    root = ET.fromstring(svg.encode("utf-8"))
    parents = {child: parent for parent in root.iter() for child in parent}
    out = []
    for p in root.iter(f"{NS}polyline"):
        dx, dy = _translate(p, parents)
        pts = [tuple(float(v) for v in pair.split(",")) for pair in p.get("points", "").split()]
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if x0 == x1:
                out.append((x0 + dx, min(y0, y1) + dy, x0 + dx, max(y0, y1) + dy))
    return out


def overlaps(a: Box, b: Box, slack: float = 0.5) -> bool:
    return a[0] < b[2] - slack and b[0] < a[2] - slack and a[1] < b[3] - slack and b[1] < a[3] - slack

