"""A view: a layout narrowed to one field, with every number derived."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from .diagnostics import Diagnostic, Site, UnknownFieldError, caller_site, layout_error
from .dims import Dim, Size, shape_text, strides_text
from .dtypes import DType
from .record import Region

if TYPE_CHECKING:
    import numpy as np

    from .layout import Layout

#: The alignment layoutgen assumes of an allocation's base pointer; checked at launch.
BASE_ALIGN = 256

#: Vector access widths, widest first.
VECTOR_WIDTHS = (16, 8, 4, 2, 1)


def pow2_align(byte_count: int, cap: int = BASE_ALIGN) -> int:
    """The largest power of two dividing ``byte_count``, at most ``cap`` (0 gives ``cap``)."""
    if byte_count == 0:
        return cap
    return min(byte_count & -byte_count, cap)


@dataclass(frozen=True, eq=False)
class View:
    """One field of a layout: shape, element strides, offset and alignment.

    Nothing here is typed in: each number follows from the layout. Strides and
    offsets are in elements; alignments in bytes.
    """

    layout: Layout
    region: Region
    read_only: bool = False

    # -- identity ------------------------------------------------------------

    @property
    def name(self) -> str:
        """``Window.snap``; ``Window`` for the whole layout."""
        return f"{self.layout.name}.{self.region.path}" if self.region.path else self.layout.name

    @property
    def path(self) -> str:
        return self.region.path

    @property
    def is_whole(self) -> bool:
        return self.region.kind == "record"

    @property
    def dtype(self) -> DType:
        return self.layout.dtype

    @property
    def site(self) -> Site | None:
        return self.region.site or self.layout.site

    @property
    def effective_read_only(self) -> bool:
        return self.read_only or self.layout.read_only

    def as_read_only(self) -> View:
        """The same columns, refused as an output."""
        return replace(self, read_only=True)

    # -- geometry ------------------------------------------------------------

    @property
    def offset(self) -> int:
        """Elements from the start of a row to the field's first column."""
        return self.region.start

    @property
    def width(self) -> int:
        return self.region.width

    @property
    def cols(self) -> str:
        return self.region.cols

    @property
    def row_stride(self) -> int:
        """Elements from one row to the next: the layout's width, not the field's."""
        return self.layout.width

    @property
    def shape(self) -> tuple[Dim, ...]:
        return (*self.layout.dims, Dim.of(self.width))

    @property
    def strides(self) -> tuple[Size, ...]:
        """Element strides of each axis; symbolic where later dims are."""
        dims = self.layout.dims
        leading = tuple(Size.product(dims[i + 1 :], self.row_stride) for i in range(len(dims)))
        return (*leading, Size(1))

    @property
    def rows(self) -> Size:
        return self.layout.rows

    @property
    def box(self) -> tuple[tuple[int, int] | None, ...]:
        """The part of the layout's array this view covers, one entry per axis of the layout.

        ``None`` covers the whole axis; ``(start, stop)`` the indices ``start..stop``
        of it. Dataflow checks compare boxes to find overlapping reads and writes.
        """
        return (*(None for _ in self.layout.dims), (self.offset, self.offset + self.width))

    @property
    def contiguous(self) -> bool:
        """Whether rows follow each other with no gap (width equals row stride)."""
        return self.width == self.row_stride

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
        child = self.region.child(name)
        if child is None:
            names = ", ".join(f"`{c.name}`" for c in self.region.children if c.kind != "pad") or "none"
            raise UnknownFieldError(
                Diagnostic(
                    "LG111", f"`{self.name}` has no field `{name}` (its fields: {names})", site,
                    hint=f"`{self.layout.name}` is declared at {self.layout.site}",
                )
            )
        return View(self.layout, child, self.read_only)

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
        """Every named field and group below this view, depth first."""
        return [View(self.layout, r, self.read_only) for _, r in self.region.walk() if r.kind != "pad"]

    # -- numpy ---------------------------------------------------------------

    def of(self, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        """The numpy strided view of this field of ``array`` (no copy)."""
        from .numpy_interop import field_of

        return field_of(self, array)

    def __str__(self) -> str:
        return (
            f"{self.name} {shape_text(self.shape)} {self.dtype} columns {self.cols} of {self.row_stride}, "
            f"strides {strides_text(self.strides)}, offset {self.offset}"
        )

    def __repr__(self) -> str:
        return f"<View {self.name}>"
