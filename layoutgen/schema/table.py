"""The text form of a layout: one line per field, nested fields indented."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .dims import Size, shape_text, strides_text
from .words import plural

if TYPE_CHECKING:
    from .view import LayoutLike


def _row(cells: list[str], widths: list[int]) -> str:
    left, *rest = cells
    return (left.ljust(widths[0]) + "".join(c.rjust(w + 2) for c, w in zip(rest, widths[1:]))).rstrip()


def layout_table(layout: LayoutLike) -> str:
    """``Window [B, K, 56] f32`` and a table of every field's columns, strides and alignment."""
    lines = [
        f"{layout.name} {shape_text(layout.shape)} {layout.dtype}"
        + (" read-only" if layout.read_only else "")
        + f"  (row stride {plural(layout.row_elements, 'element')}, "
        f"{plural(Size(layout.row_bytes, layout.column_unit.symbols), 'byte')})"
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
        label = "  " * depth + region.name + (f" {shape_text(region.shape)}" if region.shape else "")
        body.append(
            [label, sub.cols, str(sub.column_elements(sub.width)), str(sub.column_offset), strides_text(sub.strides),
             f"{sub.align} B"]
        )
    if not body:
        body.append(["(whole row)", view.cols, str(view.column_elements(view.width)), "0", strides_text(view.strides),
                     f"{view.align} B"])
    widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
    lines.append("  " + _row(header, widths))
    lines.extend("  " + _row(r, widths) for r in body)
    if layout.axis_ranges is not None:
        axis_rows = plural(layout.dims[layout.named_axis or 0], "row")
        lines.append(f"  named ranges of axis {layout.named_axis} ({axis_rows}):")
        rows = [["range", "rows", "count", "offset", "strides"]]
        for depth, region in layout.axis_ranges.walk():
            if region.kind == "pad":
                rows.append(["  " * depth + "(padding)", region.cols, str(region.width), "", ""])
                continue
            sub = view[region.path]
            rows.append(["  " * depth + region.name, region.cols, str(region.width), str(sub.base_offset),
                         strides_text(sub.strides)])
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        lines.extend("  " + _row(r, widths) for r in rows)
    return "\n".join(lines)
