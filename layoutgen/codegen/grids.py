"""What a kernel's prologue places for its grid and its dynamic shared memory, computed here.

``kernel.cu.j2`` includes, at file scope, the helpers a kernel needs (its grid kind's ``helper``: the
persistent grid's ``lg::Tile``; :data:`SHARED_HELPER`, the shared buffer's boundaries) and, in the kernel,
one skeleton per part of its prologue: its shared arrays, then its grid kind's ``prologue``
(:mod:`layoutgen.declare.grid_kinds`). Each
skeleton is plain C++ placing numbers and expressions from the records below, so the kernel
template itself chooses nothing.

Sizes the launch binds are resolved as the launcher binds them: a kernel symbol is its static
value or the layout symbol it was unified with (``lg_dim_<symbol>`` in C++, the symbol's name
for :mod:`layoutgen.runtime.plan`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ..declare.grids import WARP_SIZE, Grid, launch_dims
from ..declare.kernels import Binding
from ..declare.shared import SHARED_ALIGN, Shared
from ..declare.tiles import TileLayout
from ..declare.tiles import shared_arrays as laid_out
from ..schema.dims import Dim, Size, shape_text
from ..schema.names import CPP_DIM
from ..schema.view import View

#: The prologue's part that carves the shared buffer into the kernel's arrays.
SHARED_SKELETON = "shared_arrays.cu.j2"
#: The file-scope helpers of a kernel with shared arrays.
SHARED_HELPER = "shared.cuh.j2"
#: A cooperative grid's indices stay below its rows plus 32 times its capacity (the first row of a
#: block's last warp): where that reaches 2^31 they are `long long`, whatever the views' index type.
INT_LIMIT = 2**31


def _row_bytes(view: View) -> int | None:
    """Bytes of one row of ``view``'s field; None where a symbol bound at launch counts its columns."""
    return view.width * view.dtype.size if view.column_unit.is_static else None


def vector_params(binding: Binding) -> tuple[str, ...]:
    """The parameters a ``Grid.vectors`` body moves group for group with the grid's own: those bound to views
    whose rows hold as many bytes as the grid parameter's. A view of another row width (a table read a column
    at a time, a per-series row broadcast over many) is indexed by element or row, not by the grid's groups:
    its alignment does not narrow the groups, and its launcher keeps checking the alignment its own accesses need.
    """
    grid = binding.kernel.grid
    if not grid.kind.per_vector or grid.param is None:
        return ()
    bytes_ = _row_bytes(binding.view(grid.param))
    return tuple(p.name for p, v in binding.pairs if bytes_ is not None and _row_bytes(v) == bytes_)


def vector_width(binding: Binding) -> int:
    """The bytes of each group of a ``Grid.vectors``: the widest access aligned on every row of every view moved in
    step with the grid's parameter (:func:`vector_params`), so that a body's ``x.vec(r, i)`` of any of them is one
    aligned access of that width, chosen without the template asking."""
    moved = set(vector_params(binding))
    return min(v.vector_bytes for p, v in binding.pairs if p.name in moved)


def runtime_dims(dims: Sequence[Dim], values: Mapping[str, Dim]) -> tuple[str | int, ...]:
    """Kernel dims as the runtime multiplies them: sizes, or the names of layout symbols bound at launch."""
    return tuple(d.size if d.size is not None else str(d.name) for d in launch_dims(dims, values))


@dataclass(frozen=True)
class SharedModel:
    """One array of the shared buffer as the prologue declares it: ``float* const w = ... + offset``."""

    name: str
    c_type: str
    dtype: str
    shape: str  # [F, F], the kernel's spelling
    offset: str  # C++ for its first byte: a number, or lg::shared_start(...) of the array before it
    tile: str = ""  # for a Tile: its lg::SharedTile type; empty for a plain array
    tile_of: str = ""  # for a Tile: the parameter whose rows it holds
    warp_bytes: int = 0  # for a Tile scoped to a warp: the bytes of each warp's own, one after another

    @property
    def start(self) -> str:
        """C++ for the first byte this thread's array starts at: its warp's own, for a tile scoped to a warp."""
        return self.offset if not self.warp_bytes else f"{self.offset} + lg::warp_in_block() * {self.warp_bytes}"


def _tile_type(tile: TileLayout) -> str:
    """``lg::SharedTile<float, 128, 40, 44, 16, 128>``: rows, width, pitch, copy width, threads; then, where
    not a block's tile of one stage, the scope and the stages (``lg::TileScope::warp, 3``)."""
    more = "" if tile.scope == "block" and tile.stages == 1 else f", lg::TileScope::{tile.scope}, {tile.stages}"
    return (f"lg::SharedTile<{tile.dtype.c_type}, {tile.capacity}, {tile.width}, {tile.pitch}, {tile.vector_bytes}, "
            f"{tile.threads}{more}>")


def shared_models(shared: Sequence[Shared | TileLayout], values: Mapping[str, Dim]) -> tuple[SharedModel, ...]:
    """The arrays at 16-byte boundaries, in declaration order; the runtime sizes the buffer by the same rule
    (:func:`layoutgen.runtime.plan.shared_bytes`)."""
    out = []
    end_static: int | None = 0  # the previous array's end, while it is a number
    end_expr = "0"
    for array in shared:
        if end_static is not None:
            start = -(-end_static // SHARED_ALIGN) * SHARED_ALIGN
            offset = str(start)
        else:
            offset = f"lg::shared_start({end_expr})"
        model = SharedModel(array.name, array.dtype.c_type, str(array.dtype), shape_text(array.shape), offset)
        if isinstance(array, TileLayout):
            model = replace(model, tile=_tile_type(array), tile_of=array.param,
                            warp_bytes=array.own_bytes if array.scope == "warp" else 0)
        out.append(model)
        size = Size.product(launch_dims(array.shape, values), array.dtype.size)
        if end_static is not None and size.is_static:
            end_static = start + size.coef
        else:
            end_static = None
            end_expr = f"{offset} + {size.c_expr({s: CPP_DIM + s for s in size.symbols})}"
    return tuple(out)


@dataclass(frozen=True)
class GridModel:
    """What a kernel's grid and shared memory add to the model the skeletons read."""

    capacity: int  # rows of a tile or a warp (1 for the grids of threads)
    prologue: tuple[str, ...]  # the skeletons of the prologue's parts, in order
    helpers: tuple[str, ...]  # the file-scope skeletons
    shared: tuple[SharedModel, ...]
    wide: bool  # whether the grid's own indices need `long long`


def grid_model(binding: Binding, values: Mapping[str, Dim]) -> GridModel:
    """The grid and shared-memory parts of one binding's kernel; ``values`` are its unified symbols."""
    kernel = binding.kernel
    grid: Grid = kernel.grid
    shared = shared_models(laid_out(binding), values)
    helpers = [grid.kind.helper] if grid.kind.helper is not None else []
    prologue = [grid.kind.prologue]
    if shared:
        helpers.append(SHARED_HELPER)
        prologue.insert(0, SHARED_SKELETON)
    wide = False  # rows counted in a symbol have `long long` views, which the kernel's index follows
    if grid.kind.owns_rows and grid.param is not None:
        rows = binding.view(grid.param).rows
        wide = rows.is_static and rows.coef + 32 * grid.capacity >= INT_LIMIT
    return GridModel(grid.capacity, tuple(prologue), tuple(helpers), shared, wide)


@dataclass(frozen=True)
class BlockRuleModel:
    """How the launcher counts a cooperative grid's blocks (:class:`layoutgen.runtime.plan.BlockRule`)."""

    kind: str  # "rows" (tiles, warps), "persistent" or "general"
    per_block: int  # rows a block owns (a tile's, or its warps'); a general grid's divisor
    dims: tuple[str | int, ...] = ()  # a general grid's product
    blocks_per_sm: int = 0  # a persistent grid's, where declared; 0: the compiled kernel's occupancy


@dataclass(frozen=True)
class SharedArrayModel:
    """A shared array as the launcher sizes it (:class:`layoutgen.runtime.plan.SharedArray`)."""

    name: str
    itemsize: int
    dims: tuple[str | int, ...]


def block_rule(binding: Binding, values: Mapping[str, Dim]) -> BlockRuleModel | None:
    """The launch's count of blocks for a cooperative grid; None for a grid of threads (one a row, element
    or vector, counted by the launcher's threads per row)."""
    grid = binding.kernel.grid
    rule = grid.kind.block_rule
    if rule is None:
        return None
    if grid.blocks is not None:  # counted by an expression of the kernel's symbols
        return BlockRuleModel(rule, grid.blocks.divisor, runtime_dims(grid.blocks.factors, values))
    # a block owns a tile, or its warps' rows; a resident grid starts at most one block per as many rows
    per_block = grid.capacity * (grid.block // WARP_SIZE if grid.kind.whole_warps else 1)
    return BlockRuleModel(rule, per_block, blocks_per_sm=(grid.blocks_per_sm or 0) if grid.kind.resident else 0)


def shared_arrays(binding: Binding, values: Mapping[str, Dim]) -> tuple[SharedArrayModel, ...]:
    """The binding's shared arrays as the launcher sizes its buffer."""
    return tuple(SharedArrayModel(a.name, a.dtype.size, runtime_dims(a.shape, values)) for a in laid_out(binding))
