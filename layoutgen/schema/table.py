"""The text form of a layout: one line per field, nested fields indented."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .dims import shape_text, strides_text

if TYPE_CHECKING:
    from .layout import Layout


def _row(cells: list[str], widths: list[int]) -> str:
    left, *rest = cells
    return (left.ljust(widths[0]) + "".join(c.rjust(w + 2) for c, w in zip(rest, widths[1:]))).rstrip()


def layout_table(layout: Layout) -> str:
    """``Window [B, K, 56] f32`` and a table of every field's columns, strides and alignment."""
    lines = [
        f"{layout.name} {shape_text(layout.shape)} {layout.dtype}"
        + (" read-only" if layout.read_only else "")
        + f"  (row stride {layout.width} elements, {layout.row_bytes} bytes)"
    ]
    if layout.doc:
        lines.append(f"  {layout.doc}")
    header = ["field", "columns", "width", "offset", "strides", "align"]
    body: list[list[str]] = []
    view = layout.view
    for depth, region in view.region.walk():
        if region.kind == "pad":
            label = "  " * depth + "(padding)"
            body.append([label, region.cols, str(region.width), str(region.start), "", ""])
            continue
        sub = view[region.path]
        body.append(
            ["  " * depth + region.name, region.cols, str(region.width), str(region.start), strides_text(sub.strides),
             f"{sub.align} B"]
        )
    if not body:
        body.append(["(whole row)", view.cols, str(view.width), "0", strides_text(view.strides), f"{view.align} B"])
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines.append("  " + _row(header, widths))
    lines.extend("  " + _row(r, widths) for r in body)
    return "\n".join(lines)
