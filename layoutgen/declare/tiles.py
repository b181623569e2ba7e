"""Shared tiles as one binding lays them out: the rows, the pitch and the width of the copies.

A ``Tile("xs", "x")`` holds rows of whatever field ``x`` is bound to, so its element type, its width
and the accesses its copies can make are known only once the kernel is bound. Here they are chosen:

- the copies move the widest group the field's rows are aligned for, at most 16 bytes, that divides
  a row (``Window.snap``: 160 bytes at offset 0 of 224-byte rows, so 16); the parameter's launcher
  checks its arrays for that alignment (:func:`tile_vector_bytes`);
- the pitch puts each row at a multiple of that group, an odd number of groups apart, so that a thread
  per row reading its row's groups, and the copies writing them, meet no bank conflict (40 f32 with
  16-byte groups: 44 elements, 11 groups).

A tile scoped to a warp is one such tile for each warp of the block, each warp's after the one before
(the block's buffer holds ``warps`` of them); a tile of ``stages`` stages is a ring of that many tiles,
one after another. Every consumer of a kernel's shared memory (the prologue, the check, the launcher)
reads it through :func:`shared_arrays`, so a tile is laid out one way everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import DType
from ..schema.diagnostics import Site
from ..schema.dims import Dim, Size
from ..schema.view import View
from .grids import WARP_SIZE
from .kernels import Binding
from .shared import Shared, Tile, TileScope, default_rows

#: The widest access a tile copy makes: one 16-byte load or store a thread.
MAX_TILE_VECTOR = 16


@dataclass(frozen=True)
class TileLayout:
    """A shared tile of one binding: ``capacity`` rows of ``width`` elements, ``pitch`` elements apart,
    copied in groups of ``vector_bytes`` bytes by ``threads`` threads (the block's, or a warp's lanes);
    ``stages`` such tiles a ring, and ``copies`` rings in the buffer (one for each warp of a warp's tile)."""

    name: str
    param: str
    dtype: DType
    capacity: int
    width: int
    pitch: int
    vector_bytes: int
    site: Site | None = None
    scope: TileScope = "block"
    stages: int = 1
    copies: int = 1
    threads: int = 0

    @property
    def shape(self) -> tuple[Dim, ...]:
        """[warps, stages, rows, pitch], without a leading 1: the buffer the tile takes, as messages show it."""
        lead = ([self.copies] if self.scope == "warp" else []) + ([self.stages] if self.stages > 1 else [])
        return tuple(Dim.of(n) for n in (*lead, self.capacity, self.pitch))

    @property
    def nbytes(self) -> Size:
        return Size(self.copies * self.own_bytes)

    @property
    def own_bytes(self) -> int:
        """The bytes of one ring: a warp's own (a multiple of the rows' pitch, so every copy keeps the rows'
        alignment), or the block's."""
        return self.stages * self.capacity * self.pitch * self.dtype.size

    @property
    def symbols(self) -> tuple[str, ...]:
        return ()


def tile_vector_bytes(view: View) -> int:
    """The group a tile copy of ``view``'s rows moves: the widest power of two up to 16 bytes that the
    field's rows are aligned for and that divides a row; one element at least."""
    row_bytes = view.width * view.dtype.size
    size = view.dtype.size
    while size * 2 <= min(MAX_TILE_VECTOR, view.vector_bytes) and row_bytes % (size * 2) == 0:
        size *= 2
    return size


def tile_pitch(width: int, itemsize: int, vector_bytes: int) -> int:
    """Elements from one row of a tile to the next: the least odd number of ``vector_bytes`` groups that
    holds ``width`` elements."""
    groups = -(-width * itemsize // vector_bytes)
    if groups % 2 == 0:
        groups += 1
    return groups * vector_bytes // itemsize


def tiled_params(binding: Binding) -> frozenset[str]:
    """The parameters some shared tile of the kernel holds rows of."""
    return frozenset(a.param for a in binding.kernel.shared if isinstance(a, Tile))


def shared_arrays(binding: Binding) -> tuple[Shared | TileLayout, ...]:
    """The kernel's shared memory as ``binding`` lays it out: each ``Shared`` as declared, each ``Tile``
    as its :class:`TileLayout`, in declaration order. A tile of a field whose columns are counted in a
    symbol has no static width: that is LG219 (:func:`layoutgen.checks.grids.check_tiles`), and it is
    laid out here by its count of columns."""
    grid = binding.kernel.grid
    out: list[Shared | TileLayout] = []
    for array in binding.kernel.shared:
        if isinstance(array, Shared):
            out.append(array)
            continue
        view = binding.view(array.param)
        vector = tile_vector_bytes(view)
        warp = array.scope == "warp"
        out.append(TileLayout(
            array.name, array.param, view.dtype, array.rows or default_rows(array, grid) or 1, view.width,
            tile_pitch(view.width, view.dtype.size, vector), vector, array.site, array.scope, array.stages,
            grid.block // WARP_SIZE if warp else 1, WARP_SIZE if warp else grid.block,
        ))
    return tuple(out)
