"""Resolving a record's declarations into validated column ranges.

The record is the last axis of a layout. Entries given by width are packed in
order; entries given by ``cols`` sit where they say. Every column of a record
belongs to exactly one field or to declared padding: an overlap, a gap or a
field past its parent's end is an error naming both sides and the columns.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from .diagnostics import LayoutError, Site, layout_error
from .dims import Dim, Size, as_shape, shape_text
from .fields import Entry, Field, Group, Pad
from .names import name_problem
from .reserved import Reserver
from .words import plural

Kind = Literal["record", "group", "field", "pad"]


@dataclass(frozen=True)
class Region:
    """A resolved entry: its columns ``start..stop`` of the row and its children."""

    name: str
    path: str  # dotted from the layout: "context.trade"; "" for the whole record
    kind: Kind
    start: int
    stop: int
    children: tuple[Region, ...] = ()
    doc: str = ""
    site: Site | None = None
    shape: tuple[Dim, ...] = ()  # a sub-array field's own shape; () for a run of columns

    @property
    def width(self) -> int:
        return self.stop - self.start

    @property
    def cols(self) -> str:
        return f"{self.start}..{self.stop}"

    def walk(self) -> Iterable[tuple[int, Region]]:
        """Every region below this one, depth first, with its depth."""
        for child in self.children:
            yield 0, child
            for depth, sub in child.walk():
                yield depth + 1, sub

    def child(self, name: str) -> Region | None:
        for c in self.children:
            if c.kind != "pad" and c.name == name:
                return c
        return None


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class _Context:
    layout: str
    reserved: Mapping[str, Reserver]  # attribute names a field may not shadow, and whose they are
    unit: Size = Size(1)  # what one column counts: 1, or a symbol when fields have symbolic shapes
    shapes: bool = True  # whether fields may have their own shape (not on a named axis)
    unit_name: str = "column"  # what an index counts, for messages: "column", or "entry" of a named axis

    @property
    def units(self) -> str:
        return "entries" if self.unit_name == "entry" else f"{self.unit_name}s"


def field_count(entry: Field, site: Site | None) -> Size:
    """Elements of a field declared with ``shape=``, validated."""
    if isinstance(entry.shape, (str, bytes)) or not isinstance(entry.shape, Sequence) or not entry.shape:
        raise layout_error("LG110", f"the shape of `{entry.name}` must be a non-empty list of dims, got "
                           f"{entry.shape!r}", site)
    return Size.product(as_shape(entry.shape, f"the shape of `{entry.name}`", site))


def find_unit(entries: object, site: Site | None) -> Size:
    """What one column of a record counts: the symbols of its symbolic sub-array fields, or 1.

    A row of ``q: [32, D]`` and ``k: [8, D]`` is 40 columns of ``D`` elements.
    Fields of different symbols (``H*D`` and ``Hkv*D``) would need offsets that
    are sums of products, which layoutgen does not express: LG112.
    """
    unit: tuple[str, ...] | None = None
    first = ""
    stack = [entries]
    while stack:
        items = stack.pop()
        if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
            continue
        for entry in items:
            if isinstance(entry, Group):
                stack.append(entry.fields)
            if not isinstance(entry, Field) or entry.shape is None:
                continue
            try:
                count = field_count(entry, entry.site)
            except LayoutError:
                continue  # reported where the field is resolved
            if count.is_static:
                continue
            if unit is None:
                unit, first = count.symbols, entry.name
                if len(unit) > 1:
                    raise layout_error(
                        "LG112", f"`{entry.name}` has {len(unit)} symbolic dims ({', '.join(unit)}); a row may "
                        "count its columns in one symbol only, which the launch binds from the array's last axis",
                        entry.site, hint="make all but one of the field's dims static",
                    )
            elif count.symbols != unit:
                raise layout_error(
                    "LG112", f"`{entry.name}` has {count} elements but `{first}` counts the row in `{unit[0]}`: "
                    "every field of a row with symbolic fields must be a multiple of the same symbol",
                    entry.site, hint="use one symbolic dim for all sub-array fields, or make the others static",
                )
    return Size(1) if unit is None else Size(1, unit)


def _describe(entry: Entry) -> str:
    return "padding" if isinstance(entry, Pad) else f"`{entry.name}`"


def _extent(entry: Entry, cursor: int, ctx: _Context, owner: str) -> tuple[int, int | None]:
    """The start column of ``entry`` and its stop when its declaration fixes it."""
    site, what = entry.site, _describe(entry)
    if isinstance(entry, Field) and entry.shape is not None:
        if not ctx.shapes:
            raise layout_error("LG110", f"{what} of `{owner}` names a range of an axis and cannot have its own "
                               "shape", site, hint="declare sub-array fields in the record (the last axis)")
        count = field_count(entry, site)
        if count.symbols != ctx.unit.symbols:
            raise layout_error(
                "LG112", f"{what} of `{owner}` has {count} elements but the row counts its columns in "
                f"`{ctx.unit}`", site, hint="every field of a row with symbolic fields must be a multiple of "
                "the same symbol",
            )
        if not ctx.unit.is_static and (entry.cols is not None or entry.width is not None):
            raise layout_error("LG112", f"{what} of `{owner}` is symbolic and must be placed by order, not with "
                               "`cols=` or `width=`", site)
        if entry.width is not None and entry.width != count.coef:
            raise layout_error("LG108", f"{what} of `{owner}` is declared {entry.width} wide but its shape "
                               f"{shape_text(entry.shape)} has {plural(count.coef, 'element')}", site)
        if entry.cols is None:
            return cursor, cursor + count.coef
        entry = Field(entry.name, count.coef, entry.cols, site=site)  # checks cols as for a flat field
    elif not ctx.unit.is_static and not (isinstance(entry, Group) and entry.width is None and entry.cols is None):
        raise layout_error(
            "LG112", f"{what} of `{owner}` is a run of elements but the row counts its columns in `{ctx.unit}` "
            f"(its fields have symbolic shapes)", site,
            hint=f"give it a shape in `{ctx.unit}`, e.g. Field(..., shape=[n, {ctx.unit}]), or make the "
            "sub-array fields static",
        )
    if entry.width is not None and not _is_int(entry.width):
        raise layout_error("LG110", f"{what} of `{owner}` must have an integer width, got {entry.width!r}", site)
    if entry.cols is not None:
        cols = entry.cols
        if not (isinstance(cols, tuple) and len(cols) == 2 and all(_is_int(c) for c in cols)):
            raise layout_error(
                "LG110", f"{what} of `{owner}` must give `cols` as (start, stop) integers, got {cols!r}", site
            )
        start, stop = cols
        if start < 0:
            raise layout_error("LG102", f"{what} of `{owner}` must start at column 0 or later, got {start}", site)
        if stop <= start:
            raise layout_error(
                "LG103", f"{what} of `{owner}` must have a positive width, got columns {start}..{stop}", site
            )
        if entry.width is not None and entry.width != stop - start:
            raise layout_error(
                "LG108",
                f"{what} of `{owner}` is declared {entry.width} wide but its columns {start}..{stop} "
                f"are {stop - start}",
                site,
            )
        return start, stop
    if entry.width is not None:
        if entry.width <= 0:
            raise layout_error("LG103", f"{what} of `{owner}` must have a positive width, got {entry.width}", site)
        return cursor, cursor + entry.width
    if isinstance(entry, Group):
        return cursor, None  # the children decide
    raise layout_error("LG110", f"{what} of `{owner}` needs a width or `cols=(start, stop)`", site)


def _resolve_entry(
    entry: object, cursor: int, parent: str, ctx: _Context, owner: str, owner_site: Site | None
) -> Region:
    if not isinstance(entry, (Field, Group, Pad)):
        raise layout_error(
            "LG110",
            f"the fields of `{owner}` must be Field, Group or Pad, got {type(entry).__name__} {entry!r}",
            owner_site,  # a non-entry has no site of its own: point at the list's owner
        )
    if not isinstance(entry, Pad):
        problem = name_problem(entry.name)
        if problem:
            raise layout_error(problem[0], f"a field name of `{owner}` {problem[1]}", entry.site)
        reserver = ctx.reserved.get(entry.name)
        if reserver is not None:
            raise layout_error("LG106", reserver.message(entry.name, owner), entry.site, hint=reserver.hint)
    start, stop = _extent(entry, cursor, ctx, owner)
    if isinstance(entry, Pad):
        assert stop is not None  # _extent returns a stop for every non-group
        return Region("", parent, "pad", start, stop, site=entry.site)
    path = f"{parent}.{entry.name}" if parent else entry.name
    if isinstance(entry, Field):
        assert stop is not None
        shape = () if entry.shape is None else as_shape(entry.shape, f"the shape of `{entry.name}`", entry.site)
        return Region(entry.name, path, "field", start, stop, doc=entry.doc, site=entry.site, shape=shape)
    children = _resolve_entries(entry.fields, start, stop, path, ctx, f"{ctx.layout}.{path}", entry.site)
    extent = children[-1].stop if children else start
    if stop is None:
        stop = extent
        if stop == start:
            raise layout_error("LG103", f"group `{path}` of `{ctx.layout}` must contain at least one column", entry.site)
    elif extent < stop:
        raise layout_error(
            "LG108",
            f"group `{path}` of `{ctx.layout}` is declared as columns {start}..{stop} but its fields end at "
            f"column {extent}",
            entry.site,
            hint=f"declare the rest with Pad({stop - extent}) or narrow the group",
        )
    return Region(entry.name, path, "group", start, stop, children, entry.doc, entry.site)


def _resolve_entries(
    entries: object, lo: int, hi: int | None, parent: str, ctx: _Context, owner: str, owner_site: Site | None
) -> tuple[Region, ...]:
    if isinstance(entries, (str, bytes)) or not isinstance(entries, Sequence):
        raise layout_error("LG110", f"the fields of `{owner}` must be a list, got {entries!r}", owner_site)
    cursor, regions = lo, []
    for entry in entries:
        region = _resolve_entry(entry, cursor, parent, ctx, owner, owner_site)
        if region.start < lo:
            raise layout_error(
                "LG102",
                f"{_label(region, ctx)} must start at or after {ctx.unit_name} {lo} of `{owner}`, got {region.start}",
                region.site,
            )
        if hi is not None and region.stop > hi:
            raise layout_error(
                "LG102",
                f"{_label(region, ctx)} must end at or before {ctx.unit_name} {hi} of `{owner}`, got {region.stop}",
                region.site,
                hint=f"`{owner}` spans {ctx.units} {lo}..{hi}; shrink the field or widen `{owner}`",
            )
        regions.append(region)
        cursor = region.stop
    _check_names(regions, owner)
    ordered = sorted(regions, key=lambda r: (r.start, r.stop))
    _check_cover(ordered, lo, owner, ctx)
    return tuple(ordered)


_COLUMNS = _Context("", {})  # messages about columns of a row, where no context is at hand


def _label(region: Region, ctx: _Context = _COLUMNS) -> str:
    return f"padding at {ctx.units} {region.cols}" if region.kind == "pad" else f"`{region.path}`"


def _label_cols(region: Region, ctx: _Context = _COLUMNS) -> str:
    """A region and its columns, said once: ``padding at columns 0..4``; ``mix`` [4, 4] (columns 2..18)."""
    if region.kind == "pad":
        return _label(region, ctx)  # its label has the columns
    shape = f" {shape_text(region.shape)}" if region.shape else ""
    return f"{_label(region, ctx)}{shape} ({ctx.units} {region.cols})"


def _check_names(regions: list[Region], owner: str) -> None:
    seen: dict[str, Region] = {}
    for r in regions:
        if r.kind == "pad":
            continue
        if r.name in seen:
            first = seen[r.name]
            raise layout_error(
                "LG104",
                f"`{owner}` declares `{r.name}` twice: columns {first.cols} at {first.site} and columns {r.cols}",
                r.site,
            )
        seen[r.name] = r


def _check_cover(ordered: list[Region], lo: int, owner: str, ctx: _Context) -> None:
    """Sorted siblings must tile their parent from ``lo`` without overlap or gap."""
    cursor, previous = lo, None
    for r in ordered:
        if previous is not None and r.start < previous.stop:
            raise layout_error(
                "LG101",
                f"{_label_cols(r, ctx)} overlaps {_label_cols(previous, ctx)} in `{owner}`",
                r.site if (r.site and previous.site and (r.site.line >= previous.site.line)) else previous.site,
                hint="give each column to one field; use a Group to name a range that contains others",
            )
        if r.start > cursor:
            raise layout_error(
                "LG109",
                f"{ctx.units} {cursor}..{r.start} of `{owner}` belong to no field (before {_label(r, ctx)})",
                r.site,
                hint=f"declare them as padding with Pad({r.start - cursor}) or move {_label(r, ctx)}",
            )
        cursor, previous = max(cursor, r.stop), r


def resolve_record(
    entries: object, width: object, layout: str, reserved: Mapping[str, Reserver], site: Site | None
) -> tuple[Region, Size]:
    """The record of a layout, validated regions covering columns ``0..width``, and what a column counts."""
    unit = find_unit(entries, site)
    if isinstance(width, Dim) and not entries:
        dim = as_shape([width], f"the width of `{layout}`", site)[0]
        if dim.size is None:
            return Region(layout, "", "record", 0, 1, site=site), Size(1, (str(dim.name),))
        width = dim.size
    if width is not None and not unit.is_static:
        raise layout_error("LG112", f"`{layout}` has fields of symbolic shape: its width follows from them and "
                           f"must not be given, got width={width!r}", site)
    if width is not None and not _is_int(width):
        raise layout_error("LG110", f"the width of `{layout}` must be an integer, got {width!r}", site)
    if width is not None and width <= 0:  # type: ignore[operator]
        raise layout_error("LG103", f"the width of `{layout}` must be positive, got {width}", site)
    return _resolve_run(entries, width, layout, _Context(layout, reserved, unit), site), unit


def resolve_axis(
    entries: object, size: object, layout: str, reserved: Mapping[str, Reserver], site: Site | None
) -> Region:
    """The named ranges of one leading axis, validated like a record of static columns."""
    if size is not None and (not _is_int(size) or size <= 0):  # type: ignore[operator]
        raise layout_error("LG110", f"the size of the named axis of `{layout}` must be a positive integer, "
                           f"got {size!r}", site)
    return _resolve_run(entries, size, layout, _Context(layout, reserved, Size(1), shapes=False, unit_name="entry"),
                        site)


def _resolve_run(entries: object, width: object, layout: str, ctx: _Context, site: Site | None) -> Region:
    declared: int | None = width  # type: ignore[assignment]
    children = _resolve_entries(entries, 0, declared, "", ctx, layout, site)
    extent = children[-1].stop if children else 0
    if declared is None:
        if extent == 0:
            raise layout_error(
                "LG103", f"`{layout}` has no fields and no width", site, hint="give fields=[...] or width=N"
            )
        declared = extent
    elif children and extent != declared:
        axis = ctx.unit_name == "entry"
        raise layout_error(
            "LG108",
            f"the named axis of `{layout}` is declared with {plural(declared, 'entry')} but its ranges end at entry "
            f"{extent}" if axis else
            f"`{layout}` is declared {plural(declared, 'column')} wide but its fields end at column {extent}",
            site,
            hint=f"declare the rest with Pad({declared - extent}) or set {'size' if axis else 'width'}={extent}",
        )
    return Region(layout, "", "record", 0, declared, children, site=site)
