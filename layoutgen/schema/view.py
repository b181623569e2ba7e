"""A view: a layout narrowed to one field, with every number derived."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from .diagnostics import Diagnostic, Site, caller_site, layout_error
from .dims import Dim, Size, shape_text, strides_text
from .dtypes import DType
from .record import Region
from .unknown import is_stand_in, unknown_field

if TYPE_CHECKING:
    import numpy as np

#: The alignment layoutgen assumes of an allocation's base pointer; checked at launch.
BASE_ALIGN = 256

#: Vector access widths, widest first.
VECTOR_WIDTHS = (16, 8, 4, 2, 1)


def pow2_align(byte_count: int, cap: int = BASE_ALIGN) -> int:
    """The largest power of two dividing ``byte_count``, at most ``cap`` (0 gives ``cap``)."""
    if byte_count == 0:
        return cap
    return min(byte_count & -byte_count, cap)


class LayoutLike(Protocol):
    """What a view reads of its layout: :class:`~layoutgen.schema.layout.Layout` has all of it.

    Declared here so that this module needs nothing of the layout module, which
    builds views: the dependency runs one way, layout -> view.
    """

    @property
    def name(self) -> str: ...
    @property
    def dims(self) -> tuple[Dim, ...]: ...
    @property
    def dtype(self) -> DType: ...
    @property
    def record(self) -> Region: ...
    @property
    def read_only(self) -> bool: ...
    @property
    def doc(self) -> str: ...
    @property
    def site(self) -> Site | None: ...
    @property
    def column_unit(self) -> Size: ...
    @property
    def named_axis(self) -> int | None: ...
    @property
    def axis_ranges(self) -> Region | None: ...
    @property
    def width(self) -> int: ...
    @property
    def shape(self) -> tuple[Dim, ...]: ...
    @property
    def row_elements(self) -> Size: ...
    @property
    def row_bytes(self) -> int: ...
    @property
    def rows(self) -> Size: ...
    @property
    def symbols(self) -> tuple[str, ...]: ...
    @property
    def view(self) -> View: ...


@dataclass(frozen=True, eq=False)
class View:
    """One field of a layout: shape, element strides, offset and alignment.

    Nothing here is typed in: each number follows from the layout. Strides and
    offsets are in elements; alignments in bytes. A view is a field of the
    record (``region``, the last axis), optionally narrowed to a named range of
    the layout's named axis (``axis_range``): ``Obs.t1.snap``.
    """

    layout: LayoutLike
    region: Region
    read_only: bool = False
    axis_range: Region | None = None  # a named range of ``layout.named_axis``; None for the whole axis

    # -- identity ------------------------------------------------------------

    @property
    def name(self) -> str:
        """``Window.snap``; ``Window`` for the whole layout; ``Obs.t1.snap`` with a named range."""
        return ".".join([self.layout.name, *([self.path] if self.path else [])])

    @property
    def path(self) -> str:
        """``snap``, ``t1`` or ``t1.snap``: the range's path, then the field's."""
        return ".".join(p for p in ((self.axis_range.path if self.axis_range else ""), self.region.path) if p)

    @property
    def is_whole(self) -> bool:
        return self.region.kind == "record" and self.axis_range is None

    @property
    def dtype(self) -> DType:
        return self.layout.dtype

    @property
    def site(self) -> Site | None:
        """Where the view's field was declared: the named range's line for a whole-row view of one."""
        if self.region.kind == "record" and self.axis_range is not None and self.axis_range.site is not None:
            return self.axis_range.site
        return self.region.site or (self.axis_range.site if self.axis_range else None) or self.layout.site

    @property
    def effective_read_only(self) -> bool:
        return self.read_only or self.layout.read_only

    def as_read_only(self) -> View:
        """The same columns, refused as an output."""
        return replace(self, read_only=True)

    # -- geometry ------------------------------------------------------------

    @property
    def column_unit(self) -> Size:
        """What one column counts: ``1``, or the symbol of the layout's symbolic fields (``D``)."""
        return self.layout.column_unit

    def column_elements(self, count: int) -> Size:
        """Elements in `count` columns of this layout's rows: `count` times the unit."""
        return Size(count, self.column_unit.symbols) if count else Size(0)

    @property
    def offset(self) -> int:
        """Columns from the start of a row to the field's first column (in units of ``unit``)."""
        return self.region.start

    @property
    def column_offset(self) -> Size:
        """Elements from the start of a row to the field's first element."""
        return self.column_elements(self.region.start)

    @property
    def width(self) -> int:
        """Columns of the field in a row (in units of ``unit``)."""
        return self.region.width

    @property
    def cols(self) -> str:
        """``0..40``; ``D*32..D*40`` in a row counted in ``D``."""
        if self.column_unit.is_static:
            return self.region.cols
        return f"{self.column_elements(self.region.start)}..{self.column_elements(self.region.stop)}"

    @property
    def row_stride(self) -> int:
        """Columns from one row to the next: the layout's width, not the field's (in units of ``unit``)."""
        return self.layout.width

    @property
    def field_shape(self) -> tuple[Dim, ...]:
        """The field's own dims: ``(H, D)`` of a sub-array field, ``(width,)`` of a run of columns."""
        return self.region.shape or (Dim.expr(self.column_elements(self.width)),)

    @property
    def axis_rows(self) -> tuple[int, int, int] | None:
        """``(axis, start, stop)``: the entries of the layout's named axis the view covers; None for all."""
        axis = self.layout.named_axis
        if self.axis_range is None or axis is None:
            return None
        return axis, self.axis_range.start, self.axis_range.stop

    @property
    def leading_dims(self) -> tuple[Dim, ...]:
        """The layout's leading dims, the named axis narrowed to the view's range."""
        dims = self.layout.dims
        if self.axis_rows is None:
            return dims
        axis, start, stop = self.axis_rows
        return (*dims[:axis], Dim.of(stop - start), *dims[axis + 1 :])

    @property
    def shape(self) -> tuple[Dim, ...]:
        return (*self.leading_dims, *self.field_shape)

    @property
    def strides(self) -> tuple[Size, ...]:
        """Element strides of each axis; symbolic where later dims are."""
        dims, row = self.layout.dims, [Dim(s) for s in self.column_unit.symbols]
        leading = tuple(Size.product([*dims[i + 1 :], *row], self.row_stride) for i in range(len(dims)))
        inner = self.field_shape
        return (*leading, *(Size.product(inner[j + 1 :]) for j in range(len(inner))))

    @property
    def packed_strides(self) -> tuple[Size, ...]:
        """The strides the view's shape would have if its elements were packed."""
        shape = self.shape
        return tuple(Size.product(shape[i + 1 :]) for i in range(len(shape)))

    def padded_axis(self) -> int | None:
        """The innermost axis whose stride is wider than packed (rows with a gap after them), if any."""
        shape, strides, packed = self.shape, self.strides, self.packed_strides
        for axis in range(len(shape) - 1, -1, -1):
            if strides[axis] != packed[axis] and shape[axis] != Dim.of(1):
                return axis
        return None

    @property
    def base_offset(self) -> Size:
        """Elements from the array's first element to the view's first element."""
        if self.axis_rows is None or not self.axis_rows[1]:
            return self.column_offset
        axis, start, _ = self.axis_rows
        stride = self.strides[axis]
        return Size(stride.coef * start + self.region.start, stride.symbols)

    @property
    def rows(self) -> Size:
        """Rows of the view: the product of its leading dims."""
        return Size.product(self.leading_dims)

    @property
    def box(self) -> tuple[tuple[int, int] | None, ...]:
        """The part of the layout's array this view covers, one entry per axis of the layout.

        ``None`` covers the whole axis; ``(start, stop)`` the indices ``start..stop``
        of it. The last axis counts columns in units of ``unit`` (a sub-array
        field's entry is its column span). Dataflow checks compare boxes to find
        overlapping reads and writes.
        """
        leading: list[tuple[int, int] | None] = [None] * len(self.layout.dims)
        if self.axis_rows is not None:
            axis, start, stop = self.axis_rows
            leading[axis] = (start, stop)
        last = None if self.region.kind == "record" else (self.region.start, self.region.stop)
        return (*leading, last)

    @property
    def contiguous(self) -> bool:
        """Whether the view's elements follow each other with no gap on any axis of more than one entry."""
        return self.padded_axis() is None

    @property
    def byte_offset(self) -> int:
        return self.offset * self.dtype.size

    @property
    def offset_align(self) -> int:
        """Alignment in bytes of the field's first element in every row."""
        return pow2_align(self.byte_offset)

    @property
    def row_align(self) -> int:
        """Alignment in bytes of the row stride (the allocation's when there is one row)."""
        return pow2_align(self.layout.row_bytes) if self.layout.dims else BASE_ALIGN

    @property
    def align(self) -> int:
        """Alignment in bytes of the field's start in every row."""
        return min(self.offset_align, self.row_align)

    @property
    def vector_bytes(self) -> int:
        """The widest access (bytes) that stays aligned on every row of the field."""
        limit = min(self.align, pow2_align(self.width * self.dtype.size))
        return next((v for v in VECTOR_WIDTHS if self.dtype.size <= v <= limit), self.dtype.size)

    # -- navigation ----------------------------------------------------------

    def _child(self, name: str, site: Site | None) -> View:
        if is_stand_in(self):  # a field of an unknown field: the unknown name is already reported
            return self
        child = self.region.child(name)
        if child is not None:
            return View(self.layout, child, self.read_only, self.axis_range)
        node = self.axis_range or self.layout.axis_ranges
        ranged = node.child(name) if node is not None else None
        if ranged is not None:
            return View(self.layout, self.region, self.read_only, ranged)
        others = [*self.region.children, *(node.children if node is not None else ())]
        names = ", ".join(f"`{c.name}`" for c in others if c.kind != "pad") or "none"
        diagnostic = Diagnostic(
            "LG111", f"`{self.name}` has no field `{name}` (its fields: {names})", site,
            hint=f"`{self.layout.name}` is declared at {self.layout.site}",
        )
        # Raised, or (while layoutgen loads a spec) recorded so that every other use is reported too.
        return unknown_field(diagnostic, lambda: View(self.layout, self.region, self.read_only, self.axis_range))

    def __getattr__(self, name: str) -> View:
        if name.startswith("_"):
            raise AttributeError(name)
        return self._child(name, caller_site())

    def __getitem__(self, path: str) -> View:
        site = caller_site()
        if not isinstance(path, str) or not path:
            raise layout_error("LG111", f"a field path of `{self.name}` must be a dotted name, got {path!r}", site)
        view = self
        for part in path.split("."):
            view = view._child(part, site)
        return view

    def fields(self) -> list[View]:
        """Every named field and group below this view, depth first; then the named ranges below it."""
        out = [View(self.layout, r, self.read_only, self.axis_range) for _, r in self.region.walk() if r.kind != "pad"]
        node = self.axis_range or self.layout.axis_ranges
        if node is not None:
            out += [View(self.layout, self.region, self.read_only, r) for _, r in node.walk() if r.kind != "pad"]
        return out

    # -- numpy ---------------------------------------------------------------

    def of(self, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The numpy strided view of this field of ``array`` (no copy): ``array[..., start:stop]``,
        narrowed on the named axis and split into the field's shape, after checking that ``array``
        has the view's layout (LG110 otherwise). Slicing needs nothing of numpy itself."""
        layout, view = self.layout, self
        site = caller_site()
        shape = tuple(getattr(array, "shape", ()))
        unit = shape[-1] // layout.width if shape else 0
        if len(shape) != len(layout.shape) or shape[-1] != layout.width * unit or (
            layout.column_unit.is_static and unit != 1
        ) or unit < 1:
            raise layout_error(
                "LG110",
                f"an array of `{layout.name}` must have shape [{', '.join(map(str, layout.shape))}], got {list(shape)}",
                site,
            )
        bound: dict[str, tuple[int, int]] = {}  # symbol -> (its first axis, its size there)
        if not layout.column_unit.is_static:
            bound[layout.column_unit.symbols[0]] = (len(shape) - 1, unit)
        for axis, (dim, size) in enumerate(zip(layout.dims, shape)):
            if dim.size is not None and dim.size != size:
                raise layout_error(
                    "LG110", f"axis {axis} of an array of `{layout.name}` must be {dim.size}, got {size}", site
                )
            if dim.size is None and str(dim.name) in bound and bound[str(dim.name)][1] != size:
                first, first_size = bound[str(dim.name)]
                raise layout_error(
                    "LG110",
                    f"axis {axis} of an array of `{layout.name}` must be `{dim.name}` = {first_size} "
                    f"(axis {first}), got {size}",
                    site,
                )
            if dim.size is None:
                bound.setdefault(str(dim.name), (axis, size))
        # numpy has no bf16: its storage type (uint16) or ml_dtypes' "bfloat16" stand in.
        accepted = {layout.dtype.numpy_name or "bfloat16", layout.dtype.storage}
        dtype = getattr(array, "dtype", None)
        if str(dtype) not in accepted:
            raise layout_error(
                "LG110", f"an array of `{layout.name}` must have dtype {layout.dtype}, got {dtype}", site
            )
        index: list[slice] = [slice(None)] * len(layout.dims)
        if view.axis_rows is not None:
            axis, start, stop = view.axis_rows
            index[axis] = slice(start, stop)
        field = array[(*index, slice(view.offset * unit, (view.offset + view.width) * unit))]
        if not view.region.shape:
            return field
        sizes = {name: size for name, (_, size) in bound.items()}
        inner = tuple(d.size if d.size is not None else sizes[str(d.name)] for d in view.region.shape)
        return field.reshape((*field.shape[:-1], *inner))  # a view: the last axis is packed

    def __str__(self) -> str:
        where = f"rows {self.axis_range.cols} of axis {self.layout.named_axis}, " if self.axis_range is not None else ""
        return (
            f"{self.name} {shape_text(self.shape)} {self.dtype} {where}columns {self.cols} of "
            f"{self.layout.shape[-1]}, strides {strides_text(self.strides)}, "
            f"offset {self.base_offset}"
        )

    def __repr__(self) -> str:
        return f"<View {self.name}>"
