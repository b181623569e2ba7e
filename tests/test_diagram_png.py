"""Diagrams as the converters draw them: no two labels overlap in the PNG (issue 18, item 6).

``show --png`` goes through cairosvg or rsvg-convert (layoutgen.diagrams.png), which read SVG text
differently: cairosvg anchors each tspan by itself, so a label anchored at its end used to come out
as "40..41volatility_z". The geometric check of the SVG, under both readings, is in test_diagram.py;
here each converter that is installed renders every label of the example layouts alone, and the ink
it drew must lie in the label's box and touch no other label's ink. A converter that is missing is
skipped with its reason shown (``pip install cairosvg``; ``apt-get install librsvg2-bin``).
"""

from __future__ import annotations

import importlib.util
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib
from collections.abc import Callable
from pathlib import Path

import pytest

from layoutgen.diagrams.drawing import binding_svg, layout_svg, program_svg
from layoutgen.project.specload import load_spec

from tests.helpers.diagram import NS, Box, overlaps, text_boxes

REPO = Path(__file__).resolve().parent.parent
ET.register_namespace("", NS.strip("{}"))

VSN = load_spec(REPO / "examples" / "vsn" / "spec.py").spec
QKV = load_spec(REPO / "examples" / "qkv" / "spec.py").spec
assert VSN is not None and QKV is not None
DRAWN = {f"{spec.name}-{lay.name}": layout_svg(lay) for spec in (VSN, QKV) for lay in spec.layouts}
DRAWN["vsn-variable_selection_bwd"] = binding_svg(next(b for b in VSN.kernels if b.name == "variable_selection_bwd"))
DRAWN["vsn-vsn_step"] = program_svg(VSN, VSN.programs[0])

#: How far ink may stand outside its estimated box: antialiasing and glyphs that overhang their advance.
SLACK = 1.5


def _cairosvg(svg: str) -> bytes:
    import cairosvg

    out: bytes = cairosvg.svg2png(bytestring=svg.encode("utf-8"))
    return out


def _rsvg(svg: str) -> bytes:
    rsvg = shutil.which("rsvg-convert")
    assert rsvg is not None
    return subprocess.run([rsvg, "--format", "png"], input=svg.encode("utf-8"), capture_output=True,
                          check=True).stdout


CONVERTERS: dict[str, tuple[Callable[[str], bytes], bool, str]] = {
    "cairosvg": (_cairosvg, importlib.util.find_spec("cairosvg") is not None,
                 "the cairosvg package is not installed (pip install cairosvg)"),
    "rsvg-convert": (_rsvg, shutil.which("rsvg-convert") is not None,
                     "rsvg-convert is not installed (apt-get install librsvg2-bin)"),
}


def alpha(png: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, rows of alpha values) of an 8-bit RGBA PNG, as both converters write them."""
    assert png.startswith(b"\x89PNG\r\n\x1a\n")
    pos, data, width = 8, b"", 0
    height = depth = colour = 0
    while pos < len(png):
        length, kind = struct.unpack(">I4s", png[pos : pos + 8])
        body = png[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert (depth, colour, interlace) == (8, 6, 0), (depth, colour, interlace)
        elif kind == b"IDAT":
            data += body
        pos += 12 + length
    raw, stride, rows = zlib.decompress(data), width * 4, []
    previous = bytearray(stride)
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1 : (y + 1) * (stride + 1)])
        for i in range(stride):  # PNG's filters: None, Sub, Up, Average, Paeth
            a = line[i - 4] if i >= 4 else 0
            b, c = previous[i], previous[i - 4] if i >= 4 else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line[3::4]))
        previous = line
    return width, height, rows


def ink(png: bytes) -> Box | None:
    """The box of the pixels drawn (alpha over a quarter), in pixels; None where nothing was drawn."""
    _, _, rows = alpha(png)
    xs, ys = [], []
    for y, row in enumerate(rows):
        drawn = [x for x, a in enumerate(row) if a > 64]
        if drawn:
            xs += [drawn[0], drawn[-1] + 1]
            ys += [y, y + 1]
    return (min(xs), min(ys), max(xs), max(ys)) if xs else None


def only_text(svg: str, keep: int, window: Box) -> str:
    """``svg`` with nothing drawn but its text number ``keep`` (on a transparent background), cut to ``window``
    (small images decode fast; ink that reaches the window's edge is out of place anyway)."""
    root = ET.fromstring(svg.encode("utf-8"))
    texts = list(root.iter(f"{NS}text"))
    for parent in list(root.iter()):
        for child in list(parent):
            if child.tag in (f"{NS}g", f"{NS}tspan") or child is texts[keep]:
                continue
            parent.remove(child)
    x0, y0, x1, y1 = window
    root.set("width", str(x1 - x0))
    root.set("height", str(y1 - y0))
    root.set("viewBox", f"{x0} {y0} {x1 - x0} {y1 - y0}")
    return ET.tostring(root, encoding="unicode")


#: Pixels around a label's box that its picture covers.
MARGIN = 24
@pytest.mark.parametrize("name", sorted(DRAWN))
@pytest.mark.parametrize("converter", sorted(CONVERTERS))
def test_each_converter_draws_every_label_in_its_box_and_no_two_labels_overlap(converter: str, name: str) -> None:
    convert, installed, reason = CONVERTERS[converter]
    if not installed:
        pytest.skip(reason)
    svg = DRAWN[name]
    boxes = text_boxes(svg)
    drawn: list[tuple[str, Box]] = []
    for n, (label, box) in enumerate(boxes):
        window = (int(box[0]) - MARGIN, int(box[1]) - MARGIN, int(box[2]) + MARGIN + 1, int(box[3]) + MARGIN + 1)
        seen = ink(convert(only_text(svg, n, window)))
        assert seen is not None, f"{converter} drew nothing of {label!r}"
        found = (seen[0] + window[0], seen[1] + window[1], seen[2] + window[0], seen[3] + window[1])
        grown = (box[0] - SLACK, box[1] - SLACK, box[2] + SLACK, box[3] + SLACK)
        assert grown[0] <= found[0] and found[2] <= grown[2] and grown[1] <= found[1] and found[3] <= grown[3], (
            f"{converter} drew {label!r} at {found}, outside its box {box}")
        drawn.append((label, found))
    overlapping = [f"{a!r} and {b!r}" for i, (a, x) in enumerate(drawn) for b, y in drawn[i + 1 :]
                   if overlaps(x, y, slack=1.0)]
    assert overlapping == [], f"{converter} draws overlapping labels"
