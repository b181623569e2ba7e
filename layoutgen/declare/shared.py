"""Dynamic shared memory: the arrays a kernel declares in it, sized by its symbols.

``Kernel(..., shared=[Shared("w", f32, [F, F]), Shared("xs", f32, [128, F])])`` gives the body two
arrays of one ``extern __shared__`` buffer, ``w`` and ``xs`` (plain ``float*``, indexed
``w[i * F + j]``), each at a 16-byte boundary. A shape is a list of the kernel's symbols (static
or bound at launch) and ints, multiplied: the Dim arithmetic has products only, so a padded row is
declared with its padded width as a number or a symbol (``[128, 41]``), not ``F + 1``. The
launcher computes the bytes from the bound symbols and raises the 48 KiB default where a kernel
needs more (:mod:`layoutgen.runtime.occupancy`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from ..schema import DType
from ..schema.diagnostics import Site, caller_site
from ..schema.dims import Dim, Size, as_shape, shape_text
from ..schema.dtypes import resolve_dtype
from ..schema.names import name_problem
from .errors import kernel_error
from .grids import WARP_SIZE, Grid

#: Where each array of the buffer starts: a multiple of this many bytes (the widest vector access).
SHARED_ALIGN = 16
#: Who copies a tile and owns its buffer: the whole block, or each warp its own.
TileScope = Literal["block", "warp"]
SCOPES: tuple[TileScope, ...] = ("block", "warp")
#: The most stages a tile's ring may have: cp.async.wait_group takes the count as an immediate, and more
#: stages than this buy nothing a kernel of rows can use.
MAX_STAGES = 8


@dataclass(frozen=True)
class Shared:
    """An array in a kernel's dynamic shared memory: its name in the body, its dtype, and its shape."""

    name: str
    dtype: DType
    shape: tuple[Dim, ...]
    site: Site | None = field(default=None, compare=False, repr=False)

    def __init__(self, name: str, dtype: DType | str, shape: Sequence[Dim | int | str]) -> None:
        site = caller_site()
        problem = name_problem(name)
        if problem:
            raise kernel_error("LG219", f"a shared array's name {problem[1]}", site)
        resolved = resolve_dtype(dtype, f"the dtype of shared array `{name}`", site)
        dims = as_shape(shape, f"the shape of shared array `{name}`", site)
        if not dims:
            raise kernel_error("LG219", f"shared array `{name}` must have at least one dim", site)
        for attr, value in (("name", name), ("dtype", resolved), ("shape", dims), ("site", site)):
            object.__setattr__(self, attr, value)

    def __repr__(self) -> str:
        return f"Shared({self.name!r}, {self.dtype}, {shape_text(self.shape)})"

    @property
    def nbytes(self) -> Size:
        """The array's bytes: the product of its dims and the dtype's size."""
        return Size.product(self.shape, self.dtype.size)

    @property
    def symbols(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(str(d.name) for d in self.shape if d.size is None))


@dataclass(frozen=True)
class Tile:
    """A tile of a parameter's rows in a kernel's dynamic shared memory, laid out by layoutgen.

    ``Tile("xs", "x")`` gives the body ``xs``, an ``lg::SharedTile`` of ``rows`` rows of ``x``'s field
    (the grid's tile rows where not given): the element type and width are the field's; the pitch
    and the width of the copies' accesses are layoutgen's choice (:mod:`layoutgen.declare.tiles`).
    ``xs.load(x, first, count)`` and ``xs.store(y, first, count)`` copy rows through the views.

    ``scope="warp"`` gives each warp of the block a tile of its own, copied by its 32 lanes (in a grid
    whose warps stay whole: LG227); ``stages=S`` makes it a ring of ``S`` such tiles, ``xs.stage(i)``
    the ``i % S``-th, for a pipeline that loads the next rows while it computes on these.
    """

    name: str
    param: str
    rows: int | None = None
    scope: TileScope = "block"
    stages: int = 1
    site: Site | None = field(default=None, compare=False, repr=False)

    def __init__(self, name: str, param: str, rows: int | None = None, *, scope: TileScope = "block",
                 stages: int = 1) -> None:
        site = caller_site()
        problem = name_problem(name)
        if problem:
            raise kernel_error("LG219", f"a shared tile's name {problem[1]}", site)
        if not isinstance(param, str):
            raise kernel_error("LG219", f"shared tile `{name}` must name a parameter of its kernel, got {param!r}", site)
        if rows is not None and (isinstance(rows, bool) or not isinstance(rows, int) or not 0 < rows < 2**31):
            raise kernel_error("LG219", f"`rows` of shared tile `{name}` must be a positive integer, got {rows!r}", site,
                               hint="leave it out to hold the rows of the grid's tile")
        if not isinstance(scope, str) or scope not in SCOPES:
            raise kernel_error("LG219", f"`scope` of shared tile `{name}` must be \"block\" or \"warp\", got "
                               f"{scope!r}", site, hint="\"block\": one tile the block copies together; \"warp\": "
                               "a tile for each warp, copied by its lanes")
        if isinstance(stages, bool) or not isinstance(stages, int) or not 0 < stages <= MAX_STAGES:
            raise kernel_error("LG219", f"`stages` of shared tile `{name}` must be an integer from 1 to {MAX_STAGES}, "
                               f"got {stages!r}", site, hint="a ring of 2 or 3 stages keeps the next rows in flight")
        for attr, value in (("name", name), ("param", param), ("rows", rows), ("scope", scope), ("stages", stages),
                            ("site", site)):
            object.__setattr__(self, attr, value)

    def __repr__(self) -> str:
        return (f"Tile({self.name!r}, {self.param!r}" + ("" if self.rows is None else f", rows={self.rows}")
                + ("" if self.scope == "block" else f", scope={self.scope!r}")
                + ("" if self.stages == 1 else f", stages={self.stages}") + ")")

    @property
    def symbols(self) -> tuple[str, ...]:
        return ()


def default_rows(tile: Tile, grid: Grid) -> int | None:
    """The rows ``tile`` holds where it gives none: its grid's tile (a block's tile for a block's tile, a warp's
    for a warp's); None where the grid has no such tile."""
    own = grid.kind.block_tiles if tile.scope == "block" else grid.kind.whole_warps
    return grid.capacity if own else None


def _warp_tile_problem(tile: Tile, kernel: str, grid: Grid) -> str | None:
    """Why the warps of ``grid`` cannot copy a tile each (LG227), or None."""
    made = f"shared tile `{tile.name}` of `{kernel}` is scoped to a warp, whose 32 lanes copy it together"
    if grid.kind.returns_early is not None and not grid.kind.whole_warps:
        return f"{made}, but {grid.kind.returns_early} before the body: a warp may have lost lanes"
    if grid.block % WARP_SIZE:
        return f"{made}, but the block of {grid.block} threads ends in a part warp"
    return None


def check_shared(kernel: str, shared: object, taken: Mapping[str, str], symbols: Sequence[str],
                 site: Site | None, params: Sequence[str], grid: Grid) -> tuple[Shared | Tile, ...]:
    """The shared arrays of ``kernel``, checked (LG219): a list of ``Shared`` and ``Tile``, names used once
    and by nothing else of the body (``taken``: name -> what it is there), dims among the kernel's
    ``symbols``, tiles of one of its array ``params`` with rows given or a grid of such tiles
    (:func:`default_rows`); a tile scoped to a warp in a grid whose warps can lose lanes is LG227."""
    if isinstance(shared, (str, bytes)) or not isinstance(shared, Sequence):
        raise kernel_error("LG219", f"the shared memory of `{kernel}` must be a list of Shared(...), got {shared!r}",
                           site)
    seen: dict[str, Shared | Tile] = {}
    for array in shared:
        if not isinstance(array, (Shared, Tile)):
            raise kernel_error("LG219", f"the shared memory of `{kernel}` must be a list of Shared(...) and "
                               f"Tile(...), got {array!r}", site)
        if array.name in seen:
            raise kernel_error("LG219", f"kernel `{kernel}` declares shared array `{array.name}` twice", array.site)
        if array.name in taken:
            raise kernel_error(
                "LG219", f"shared array `{array.name}` of `{kernel}` clashes with {taken[array.name]}", array.site,
                hint="rename the array: the body sees parameters, symbols, the grid's names and shared arrays by name",
            )
        if isinstance(array, Tile):
            if array.param not in params:
                raise kernel_error(
                    "LG219", f"shared tile `{array.name}` of `{kernel}` holds rows of `{array.param}`, which is no "
                    f"array parameter of it ({', '.join(params) or 'none'})", array.site)
            if array.rows is None and default_rows(array, grid) is None:
                block = array.scope == "block"
                whose, grids = ("", "(Grid.tiles, Grid.persistent)") if block else (
                    " for a warp", "(Grid.warps, Grid.persistent_warps)")
                raise kernel_error(
                    "LG219", f"shared tile `{array.name}` of `{kernel}` needs `rows`: its grid has no tile of rows"
                    f"{whose}", array.site, hint=f"Tile({array.name!r}, {array.param!r}, rows=128), or a grid of "
                    f"tiles {grids}")
            problem = _warp_tile_problem(array, kernel, grid) if array.scope == "warp" else None
            if problem is not None:
                raise kernel_error("LG227", problem, array.site, hint="scope warp tiles to Grid.warps, "
                                   "Grid.persistent_warps or another cooperative grid of whole warps (a block of "
                                   "a multiple of 32 threads)")
            seen[array.name] = array
            continue
        unknown = [s for s in array.symbols if s not in symbols]
        if unknown:
            raise kernel_error(
                "LG219", f"shared array `{array.name}` {shape_text(array.shape)} of `{kernel}` is sized by "
                f"`{unknown[0]}`, which is no symbol of its parameters' shapes ({', '.join(symbols) or 'none'}): its "
                "value would be known nowhere", array.site, hint="size it by the parameters' symbols, or by numbers",
            )
        seen[array.name] = array
    return tuple(seen.values())
