"""Dataflow checks of a program (LG301-LG304), column range by column range.

The launches are followed in order. Every buffer keeps the boxes that earlier
launches wrote (a box is an index range per axis, from ``View.box``); a read
must fall inside what was written or what the caller provides, two writes
may cover the same elements only where the later launch says it overwrites,
and a write nothing later reads is listed unless the buffer is an output.
Working on boxes rather than whole buffers is the point: the motivating bug
lived in one buffer whose columns 40..56 had a different writer than 0..40.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from ..declare.program import Buffer, Launch, Program
from ..declare.spec import same_view
from ..schema import Layout, View
from ..schema.diagnostics import Diagnostic
from ..schema.dims import shape_text

Interval = tuple[int, int]
Box = tuple[Interval, ...]

#: The stop of an axis whose size is only known at launch (a symbolic dim).
UNBOUNDED = 1 << 62


def view_box(view: View) -> Box:
    """The view's box with whole axes spelled out: ``(0, size)``, or to ``UNBOUNDED`` when symbolic.

    The last axis is the record, always ``width`` columns (counted in the row's
    unit, ``D`` for a row of ``[H, D]`` fields, like the fields' own ranges).
    """
    shape = view.layout.shape
    last = len(view.box) - 1
    return tuple(
        iv if iv is not None else
        (0, view.layout.width) if axis == last else
        (0, dim.size if dim.size is not None else UNBOUNDED)
        for axis, (iv, dim) in enumerate(zip(view.box, shape))
    )


def pad_boxes(layout: Layout) -> list[Box]:
    """The boxes of the layout's declared padding: columns of the row, and ranges of the named axis."""
    full = view_box(layout.view)
    boxes: list[Box] = [(*full[:-1], (r.start, r.stop)) for _, r in layout.record.walk() if r.kind == "pad"]
    if layout.axis_ranges is not None and layout.named_axis is not None:
        axis = layout.named_axis
        boxes += [(*full[:axis], (r.start, r.stop), *full[axis + 1 :])
                  for _, r in layout.axis_ranges.walk() if r.kind == "pad"]
    return boxes


def overlap(a: Box, b: Box) -> Box | None:
    """The elements in both boxes, or None."""
    out = tuple((max(x[0], y[0]), min(x[1], y[1])) for x, y in zip(a, b))
    return out if all(lo < hi for lo, hi in out) else None


def _contains(outer: Box, inner: Box) -> bool:
    return all(o[0] <= i[0] and i[1] <= o[1] for o, i in zip(outer, inner))


def uncovered(box: Box, covers: list[Box]) -> list[Box]:
    """The parts of ``box`` outside every box of ``covers``, merged into as few boxes as is easy."""
    clipped = [c for c in (overlap(box, c) for c in covers) if c is not None]
    if not clipped:
        return [box]
    # Cut every axis at each cover's edges: each cell of the grid is wholly in or out of each cover.
    cuts = [sorted({lo, hi, *(e for c in clipped for e in c[axis])}) for axis, (lo, hi) in enumerate(box)]
    cells = [tuple(cell) for cell in itertools.product(*(list(zip(c, c[1:])) for c in cuts))]
    left = [cell for cell in cells if not any(_contains(c, cell) for c in clipped)]
    return _merge(left)


def _merge(cells: list[Box]) -> list[Box]:
    """Join boxes that differ on one axis only, where they touch."""
    boxes = sorted(cells)
    merged = True
    while merged:
        merged = False
        for i, j in itertools.combinations(range(len(boxes)), 2):
            a, b = boxes[i], boxes[j]
            differ = [axis for axis in range(len(a)) if a[axis] != b[axis]]
            if len(differ) == 1:
                axis = differ[0]
                lo, hi = sorted((a[axis], b[axis]))
                if lo[1] == hi[0]:
                    boxes[i] = (*a[:axis], (lo[0], hi[1]), *a[axis + 1 :])
                    del boxes[j]
                    merged = True
                    break
    return boxes


def where(box: Box, layout: Layout) -> str:
    """``columns 40..56``, or ``elements [:, 0..3, :, :]`` where the box is not whole on the leading axes."""
    full = view_box(layout.view)
    if box[:-1] == full[:-1]:
        return f"columns {box[-1][0]}..{box[-1][1]}"
    parts = [":" if iv == whole else f"{iv[0]}..{iv[1]}" for iv, whole in zip(box, full)]
    return "elements [" + ", ".join(parts) + "]"


def describe_box(box: Box, buffer: Buffer) -> str:
    """``columns 40..56 of `window` (Window.context)``, naming the fields the box is exactly."""
    layout = buffer.layout
    names = [v.name for v in [layout.view, *layout.fields()] if view_box(v) == box]
    return f"{where(box, layout)} of `{buffer.name}`" + (f" ({names[0]})" if names else f" ({layout.name})")


def geometry(view: View) -> str:
    """``[B, 16] f32, row stride 16, columns 0..8``: the layout's shape and the numbers a kernel's index
    arithmetic is generated from (two layouts may agree on the columns and differ in the stride)."""
    layout = view.layout
    return f"{shape_text(layout.shape)} {view.dtype}, row stride {layout.row_elements}, columns {view.cols}"


@dataclass(frozen=True)
class _Write:
    order: int  # the launch's position in the program
    launch: Launch
    param: str
    buffer: Buffer
    box: Box


def _who(launch: Launch, param: str) -> str:
    return f"`{launch.binding.name}.{param}`"


def _layout_mismatches(program: Program) -> list[Diagnostic]:
    """LG304: a buffer of one layout given to a parameter bound to another (or to other columns)."""
    out = []
    for launch in program.launches:
        for arg in launch.args:
            bound = launch.binding.view(arg.param)
            if arg.buffer.layout is not bound.layout:
                # What the buffer's own layout makes of the columns it gives: a whole buffer given to a
                # binding carries the binding's view, which is no view of this buffer.
                given = arg.view if arg.view.layout is arg.buffer.layout else arg.buffer.layout.view
                out.append(Diagnostic(
                    "LG304", f"{_who(launch, arg.param)} is bound to {bound.name} ("
                    + ("" if bound.is_whole else f"layout {bound.layout.name} ") + f"{geometry(bound)}) but "
                    f"program `{program.name}` gives it "
                    + (f"buffer `{arg.buffer.name}`" if given.is_whole else f"`{arg.buffer.name}.{given.path}`")
                    + f" of layout {arg.buffer.layout.name} ({geometry(given)})", launch.site,
                    hint=f"give it a buffer of layout {bound.layout.name}, or launch the kernel itself so that it "
                    f"is bound to the buffer's view",
                ))
            elif not same_view(arg.view, bound):
                out.append(Diagnostic(
                    "LG304", f"{_who(launch, arg.param)} is bound to {bound.name} ({where(view_box(bound), bound.layout)}) "
                    f"but program `{program.name}` gives it `{arg.name}` ({where(view_box(arg.view), bound.layout)})",
                    launch.site,
                    hint=(f"give `{arg.buffer.name}.{bound.path}`, the columns `{launch.binding.name}` was bound to"
                          if bound.path else f"give the whole buffer `{arg.buffer.name}`, as `{launch.binding.name}` "
                          f"was bound to all of {bound.layout.name}") + f", or launch the kernel itself (`Launch("
                    f"{launch.binding.kernel.name}, ...)`) so that it is bound to `{arg.name}`",
                ))
    return out


def check_program(program: Program) -> list[Diagnostic]:
    """Every LG3xx problem of one program, in launch order."""
    out = _layout_mismatches(program)
    if out:  # the columns each launch touches are not what its kernel touches: dataflow would mislead
        return out
    written: dict[str, list[_Write]] = {b.name: [] for b in program.buffers}
    for order, launch in enumerate(program.launches):
        params = {p.name: p for p in launch.binding.kernel.params}
        for arg in launch.args:
            if not params[arg.param].reads:
                continue
            box = view_box(arg.view)
            # Padding holds nothing to read: a whole-row view reads around it.
            covers = [w.box for w in written[arg.buffer.name]] + pad_boxes(arg.buffer.layout)
            if arg.buffer.input:
                covers.append(view_box(arg.buffer.layout.view))
            for missing in uncovered(box, covers):
                out.append(Diagnostic(
                    "LG301", f"{_who(launch, arg.param)} reads {describe_box(missing, arg.buffer)}, which no earlier "
                    f"launch of `{program.name}` writes and the caller does not provide", launch.site,
                    hint=f"launch a kernel that writes it first, or declare Buffer(\"{arg.buffer.name}\", ..., "
                    f"input=True) if the caller fills it",
                ))
        mine: list[_Write] = []
        for arg in launch.args:
            param = params[arg.param]
            if not param.writes:
                continue
            write = _Write(order, launch, arg.param, arg.buffer, view_box(arg.view))
            # An InOut reads what it writes over: the order is the point. An Out replaces.
            replaces = param.access == "out" and arg.param not in launch.overwrites
            earlier = written[arg.buffer.name] if replaces else []
            for other in [*earlier, *(w for w in mine if w.buffer is arg.buffer)]:
                common = overlap(write.box, other.box)
                if common is None:
                    continue
                same = other.launch is launch
                out.append(Diagnostic(
                    "LG302", f"{_who(launch, arg.param)} writes {describe_box(common, arg.buffer)}, which "
                    + (f"{_who(other.launch, other.param)} of the same launch also writes" if same else
                       f"{_who(other.launch, other.param)} (launch {other.order + 1}, {other.launch.site}) already "
                       f"wrote"), launch.site,
                    hint="bind each launch to the fields it owns" + ("" if same else
                         f", or declare Launch(..., overwrites=[\"{arg.param}\"]) if this write is meant to replace "
                         f"the earlier one"),
                ))
            mine.append(write)
        out.extend(_read_while_written(launch, mine))
        for w in mine:
            written[w.buffer.name].append(w)
    out.extend(_never_written(program, written))
    out.extend(_unread(program, written))
    return out


def _never_written(program: Program, written: dict[str, list[_Write]]) -> list[Diagnostic]:
    """LG301 for output columns that no launch writes: the caller would read whatever was there."""
    out = []
    for buffer in program.buffers:
        if not buffer.output or buffer.input:
            continue
        whole = view_box(buffer.layout.view)
        for missing in uncovered(whole, [w.box for w in written[buffer.name]] + pad_boxes(buffer.layout)):
            out.append(Diagnostic(
                "LG301", f"program `{program.name}` returns {describe_box(missing, buffer)}, which no launch "
                f"writes", buffer.site,
                hint="launch a kernel that writes it, or declare the buffer with input=True if the caller fills it",
            ))
    return out


def _read_while_written(launch: Launch, writes: list[_Write]) -> list[Diagnostic]:
    """LG302 for an In parameter reading elements another parameter of the same launch writes: a race."""
    out = []
    for arg in launch.args:
        if launch.binding.kernel.param(arg.param).access != "in":
            continue
        for w in writes:
            common = overlap(view_box(arg.view), w.box) if w.buffer is arg.buffer else None
            if common is not None:
                out.append(Diagnostic(
                    "LG302", f"{_who(launch, arg.param)} reads {describe_box(common, arg.buffer)}, which "
                    f"{_who(launch, w.param)} of the same launch writes: the kernel's threads race on them",
                    launch.site, hint="to update in place, declare one InOut parameter; otherwise give the output "
                    "its own buffer or columns",
                ))
    return out


def _read_later(program: Program, write: _Write) -> bool:
    """Whether a later launch reads part of ``write`` before later writes have replaced all of it."""
    live = [write.box]
    for launch in program.launches[write.order + 1 :]:
        mine = [(a, launch.binding.kernel.param(a.param)) for a in launch.args if a.buffer is write.buffer]
        if any(p.reads and overlap(piece, view_box(a.view)) for a, p in mine for piece in live):
            return True
        replaced = [view_box(a.view) for a, p in mine if p.access == "out"]
        live = [rest for piece in live for rest in uncovered(piece, replaced)]
        if not live:
            return False
    return False


def _unread(program: Program, written: dict[str, list[_Write]]) -> list[Diagnostic]:
    """LG303 for each write that no later launch reads, in a buffer the caller does not read."""
    out = []
    writes = sorted((w for ws in written.values() for w in ws), key=lambda w: w.order)
    for w in writes:
        if not w.buffer.output and not _read_later(program, w):
            out.append(Diagnostic(
                "LG303", f"{_who(w.launch, w.param)} writes {describe_box(w.box, w.buffer)}, which no later "
                f"launch of `{program.name}` reads and which is not a program output", w.launch.site,
                hint=f"declare Buffer(\"{w.buffer.name}\", ..., output=True) if the caller reads it; otherwise the "
                f"write is wasted work (or a read is missing)",
            ))
    return out
