"""Footprints: which elements each parameter of a kernel binding may touch, at sizes chosen for a CPU run.

A bound parameter's footprint is the rows of its layout that exist (all of them, or those of a named range
of one axis) and, in each, its field's columns; a shared tile's is its rows (every warp's copy and every
stage of its ring) of ``width`` columns, ``pitch`` apart; a plain shared array's is its extent; a scalar
has none. Everything here is counted in elements, at the sizes :func:`chosen_sizes` gives the symbols, so
that the host sanitizer (``layoutgen/include/lg/host/sanitizer.h``) only places these numbers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace

from ..codegen.grids import BlockRuleModel, SharedArrayModel
from ..codegen.pymodule import PyKernel, PyLayout
from ..declare.shared import Shared
from ..declare.tiles import TileLayout
from ..runtime.plan import SharedArray, shared_offsets
from ..schema.dtypes import DTYPES

#: What a column unit (the `D` of `q: [H, D]` fields) is set to: even and a multiple of 16 bytes of f16.
UNIT_SIZE = 8
#: The outer symbols of a layout's rows, and the inner ones: 3 x 61 rows leave a short last warp (183 = 5 x 32
#: + 23), tile and block of 128; a layout of one symbolic dim gets 133 rows (a block of 128 and 5 more).
OUTER_SIZE, INNER_SIZE, ONLY_SIZE = 3, 61, 133


_KIND = {"float": "f", "int": "i", "uint": "u", "bool": "u"}


@dataclass(frozen=True)
class Footprint:
    """What one parameter or shared array of a kernel may touch, in elements of its array."""

    name: str  # the parameter or shared array
    what: str  # its view (`Window.snap`), or `a tile of x`, `shared f32 [4, 40]`
    access: str  # "in", "out", "inout" or "shared"
    itemsize: int
    dtype: str  # layoutgen's name of its elements (`f32`): their C type and how inputs are filled
    layout_rows: int  # rows of the whole array
    row_stride: int  # elements from one row to the next
    offset: int  # the field's first column in each row
    width: int  # the field's columns
    axis: tuple[int, int, int, int] | None = None  # (size, start, len, inner) of a named range; None: every row
    shared_start: int = 0  # a shared array's first byte in the shared buffer

    @property
    def kind(self) -> str:
        """How the host program fills it: "f" float, "i" signed, "u" unsigned, "b" bf16, "h" f16."""
        if self.dtype in ("bf16", "f16"):
            return "b" if self.dtype == "bf16" else "h"
        return _KIND.get(DTYPES[self.dtype].kind, "u")

    @property
    def c_type(self) -> str:
        """The C type of its elements, as the kernel's pointer names it."""
        return DTYPES[self.dtype].c_type

    def row_in(self, row: int) -> bool:
        """Whether row ``row`` of the array is one of the field's."""
        if self.axis is None:
            return 0 <= row < self.layout_rows
        size, start, length, inner = self.axis
        return 0 <= row < self.layout_rows and start <= row // inner % size < start + length

    def holds(self, element: int) -> bool:
        """Whether element ``element`` of the array (counted from its first) is inside the footprint."""
        row, col = divmod(element, self.row_stride)
        return self.row_in(row) and self.offset <= col < self.offset + self.width

    @property
    def elements(self) -> int:
        return self.layout_rows * self.row_stride


def chosen_sizes(kernel: PyKernel, layouts: Mapping[str, PyLayout]) -> dict[str, int]:
    """The size of each symbol of ``kernel``'s layouts for its CPU run: at least 2 each, so that a second row
    exists, and rows that leave a short last tile, warp and block (see the constants above)."""
    units = {layouts[p.layout].unit for p in kernel.params} - {None}
    leading: list[str] = []
    for p in kernel.params:
        for d in layouts[p.layout].dims:
            if isinstance(d, str) and d not in leading and d not in units:
                leading.append(d)
    sizes = {str(u): UNIT_SIZE for u in units}
    grid_dims = [d for d in layouts[kernel.params[kernel.grid_param].layout].dims if isinstance(d, str)]
    for n, symbol in enumerate(leading):
        if len(grid_dims) == 1 and symbol == grid_dims[0]:
            sizes[symbol] = ONLY_SIZE
        else:
            sizes[symbol] = OUTER_SIZE if n == 0 and len(leading) > 1 else INNER_SIZE
    return sizes


def _value(d: str | int, sizes: Mapping[str, int]) -> int:
    return d if isinstance(d, int) else sizes[d]


def param_footprints(kernel: PyKernel, layouts: Mapping[str, PyLayout], sizes: Mapping[str, int]) -> list[Footprint]:
    """The footprint of each array parameter, in declaration order."""
    out = []
    for p in kernel.params:
        lay = layouts[p.layout]
        unit = 1 if lay.unit is None else sizes[lay.unit]
        dims = [_value(d, sizes) for d in lay.dims]
        axis = None
        if p.axis_rows is not None:
            which, start, stop = p.axis_rows
            axis = (dims[which], start, stop - start, math.prod(dims[which + 1:]))
        out.append(Footprint(p.name, p.view, p.access, lay.itemsize, lay.dtype, math.prod(dims),
                             lay.width * unit, p.offset * unit, p.field_width * unit, axis))
    return out


def shared_footprints(declared: tuple[Shared | TileLayout, ...], arrays: tuple[SharedArrayModel, ...],
                      sizes: Mapping[str, int]) -> tuple[list[Footprint], int]:
    """The footprint of each array of the shared buffer and the buffer's bytes."""
    runtime = tuple(SharedArray(a.name, a.itemsize, a.dims) for a in arrays)
    starts, total = shared_offsets(runtime, dict(sizes))
    out = []
    for item, array, start in zip(declared, runtime, starts):
        if isinstance(item, TileLayout):
            rows = item.copies * item.stages * item.capacity
            out.append(Footprint(item.name, f"a tile of {item.param}", "shared", item.dtype.size, item.dtype.name,
                                 rows, item.pitch, 0, item.width))
        else:
            elements = array.nbytes(dict(sizes)) // array.itemsize
            out.append(Footprint(item.name, f"shared {item.dtype.name}", "shared", array.itemsize,
                                 item.dtype.name, 1, elements, 0, elements))
        out[-1] = replace(out[-1], shared_start=start)
    return out, total


def grid_blocks(kernel: PyKernel, footprints: list[Footprint], sizes: Mapping[str, int]) -> int:
    """The blocks of the CPU run: as the launcher counts them, and one block of a persistent grid (so that its
    threads loop over several tiles, a ring's every stage)."""
    grid = footprints[kernel.grid_param]
    rows = (math.prod(_value(d, sizes) for d in kernel.grid_dims) if kernel.grid_dims is not None
            else grid.layout_rows if grid.axis is None else grid.layout_rows // grid.axis[0] * grid.axis[2])
    rule: BlockRuleModel | None = kernel.count
    if rule is None:
        threads = rows * kernel.per_row * math.prod(sizes[s] for s in kernel.per_row_symbols)
        return max(1, -(-threads // kernel.block))
    if rule.kind == "persistent":
        return 1
    count = rows if rule.kind == "rows" else math.prod(_value(d, sizes) for d in rule.dims)
    return max(1, -(-count // rule.per_block))
