"""A layout: leading dims, a dtype and a record of named fields on the last axis."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .diagnostics import Site, caller_site, layout_error
from .dims import Dim, Size, as_shape, shape_text
from .dtypes import DType, resolve_dtype
from .fields import Axis, Entry
from .names import name_problem
from .numpy_interop import structured_dtype
from .record import Region, resolve_axis, resolve_record
from .reserved import Reserver, reserve_attributes, reserved_names
from .table import layout_table
from .view import View

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True, eq=False, init=False)
class Layout:
    """A packed tensor layout, validated when it is declared.

    ``Layout("Window", [B, K], f32, [Field("snap", 40), Group("context", [...])])``
    declares ``[B, K, 56]`` float32 rows whose columns 0..40 are ``snap``.
    ``Window.snap`` and ``Window["context.trade.position_lots"]`` are views.
    Invalid declarations raise :class:`LayoutError` (LG1xx) at the user's line.
    """

    name: str
    dims: tuple[Dim, ...]  # the leading dims; the record is the last axis
    dtype: DType
    record: Region
    read_only: bool
    doc: str
    site: Site | None = field(repr=False)
    column_unit: Size = Size(1)  # what one column of the record counts: 1, or a symbol (`D`) of sub-array fields
    named_axis: int | None = None  # the leading axis whose ranges have names, if any
    axis_ranges: Region | None = None  # those named ranges, resolved like a record

    def __init__(
        self,
        name: str,
        dims: Sequence[Dim | int | str | Axis],
        dtype: DType | str,
        fields: Sequence[Entry] = (),
        *,
        width: int | Dim | None = None,
        read_only: bool = False,
        doc: str = "",
    ) -> None:
        site = caller_site()
        problem = name_problem(name)
        if problem:
            raise layout_error(problem[0], f"a layout name {problem[1]}", site)
        named = [i for i, d in enumerate(dims) if isinstance(d, Axis)] if isinstance(dims, Sequence) else []
        if len(named) > 1:
            raise layout_error("LG113", f"`{name}` names ranges on axes {named[0]} and {named[1]}; a layout may "
                               "name ranges on one leading axis", site)
        axis_decl = dims[named[0]] if named else None
        if isinstance(axis_decl, Axis):
            dims = [Dim.of(1) if isinstance(d, Axis) else d for d in dims]  # placeholder; sized below
        leading = as_shape(dims, f"the dims of `{name}`", site)
        resolved = resolve_dtype(dtype, f"the dtype of `{name}`", site)
        reserved = reserved_names()  # those of layouts and views (below), and of a program's buffers
        record, unit = resolve_record(fields, width, name, reserved, site)
        axis, ranges = None, None
        if isinstance(axis_decl, Axis):
            axis = named[0]
            ranges = resolve_axis(axis_decl.fields, axis_decl.size, name, reserved, axis_decl.site or site)
            leading = (*leading[:axis], Dim.of(ranges.width), *leading[axis + 1 :])
            symbolic = [str(d) for d in leading[axis + 1 :] if d.size is None]
            if symbolic:
                raise layout_error(
                    "LG113", f"the named axis {axis} of `{name}` is followed by symbolic dim `{symbolic[0]}`; the "
                    "leading dims after a named axis must be static", axis_decl.site or site,
                    hint="move the named axis after the symbolic dims, or make them static",
                )
            fields_names = {r.name: r for _, r in record.walk() if r.kind != "pad"}
            for _, r in ranges.walk():
                if r.kind != "pad" and r.name in fields_names:
                    raise layout_error(
                        "LG104", f"`{name}` declares `{r.name}` twice: as rows {r.cols} of axis {axis} and as "
                        f"columns {fields_names[r.name].cols} at {fields_names[r.name].site}", r.site,
                    )
        if not isinstance(read_only, bool):
            raise layout_error("LG110", f"`read_only` of `{name}` must be True or False, got {read_only!r}", site)
        for attr, value in (
            ("name", name), ("dims", leading), ("dtype", resolved), ("record", record),
            ("read_only", read_only), ("doc", doc), ("site", site), ("column_unit", unit), ("named_axis", axis),
            ("axis_ranges", ranges),
        ):
            object.__setattr__(self, attr, value)

    # -- shape -------------------------------------------------------------

    @property
    def width(self) -> int:
        """Elements in one row: the size of the last axis."""
        return self.record.width

    @property
    def shape(self) -> tuple[Dim, ...]:
        return (*self.dims, Dim.expr(Size(self.width, self.column_unit.symbols)))

    @property
    def row_elements(self) -> Size:
        """Elements in one row: the width times the unit (``48*D``)."""
        return Size(self.width, self.column_unit.symbols)

    @property
    def row_bytes(self) -> int:
        return self.width * self.dtype.size

    @property
    def rows(self) -> Size:
        """How many rows: the product of the leading dims."""
        return Size.product(self.dims)

    @property
    def symbols(self) -> tuple[str, ...]:
        """The symbolic dims, in order of first appearance."""
        seen: dict[str, None] = {}
        for d in self.dims:
            if d.name is not None and d.size is None:
                seen.setdefault(d.name, None)
        for symbol in self.column_unit.symbols:
            seen.setdefault(symbol, None)
        return tuple(seen)

    # -- views -------------------------------------------------------------

    @property
    def view(self) -> View:
        """The whole layout as a view."""
        return View(self, self.record)

    def __getitem__(self, path: str) -> View:
        return self.view[path]

    def __getattr__(self, name: str) -> View:
        # Only reached when normal lookup fails: field names never shadow
        # attributes (LG106 forbids it at declaration).
        if name.startswith("_"):
            raise AttributeError(name)
        return self.view._child(name, caller_site())

    def fields(self) -> list[View]:
        """Every named field and group, depth first."""
        return self.view.fields()

    # -- numpy -------------------------------------------------------------

    def numpy_dtype(self) -> np.dtype[Any] | None:
        """A numpy structured dtype of one row, or None where numpy lacks the element type."""
        return structured_dtype(self)

    def __str__(self) -> str:
        return layout_table(self)

    def __repr__(self) -> str:
        return f"<Layout {self.name} {shape_text(self.shape)} {self.dtype}>"


# A field named like an attribute of layouts and views would be shadowed by it (`Window.shape`).
reserve_attributes(Reserver("layouts and views", "Layout and View", ""), View, Layout)
