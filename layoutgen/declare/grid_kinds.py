"""One record per kind of grid: everything the declaration, the checks, the code generator and the launcher
need to know of a kind, in one row of :data:`GRID_KINDS`.

A grid's ``per`` (``"tile"`` for ``Grid.tiles("x")``) names its row; everything else asks the row
(``grid.kind.returns_early``, ``grid.kind.whole_warps``), never the name, so a new kind is one new row here
and its prologue skeleton in ``templates/`` (docs/architecture.md, "Where to add": a grid kind), and no
test of a kind's name can disagree with another one elsewhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

#: How the launcher counts a grid's blocks (:class:`layoutgen.runtime.plan.BlockRule`): "rows" (one block per
#: the rows a block owns), "persistent" (as many as stay resident on the device, at most one per rows a block
#: owns), "general" (an expression of the kernel's symbols); None: one thread per unit of the grid's view.
BlockRuleKind = Literal["rows", "persistent", "general"]


@dataclass(frozen=True)
class GridKind:
    """What one kind of grid guarantees, the names its body sees, and how its prologue and launch are made."""

    per: str  # Grid.per: the key of the kind, and the index a grid of threads gives (`row`, `element`, `vector`)
    constructor: str  # as messages name it: "Grid.rows"
    names: tuple[str, ...]  # the names it defines in the body, beside the views, the symbols and the shared arrays
    thread_names: tuple[str, ...]  # of those, the ones that differ between threads of a block (a branch on them divides it)
    prologue: str  # the skeleton of templates/ that writes its part of the prologue
    helper: str | None  # the file-scope skeleton its prologue needs, if any
    #: Which threads it returns before the body runs, as messages say it (a barrier there is LG406); None: none.
    returns_early: str | None = None
    follows_param: bool = True  # counts the rows of a parameter's view (Grid.general counts `blocks` instead)
    per_element: bool = False  # one thread per element of the parameter's rows (counted at launch for [H, D] rows)
    per_vector: bool = False  # one thread per aligned group of bytes of the parameter's rows (static rows only)
    #: The argument giving the rows a tile or a warp owns (its `capacity`); None: a thread owns its unit alone.
    rows_argument: str | None = None
    block_tiles: bool = False  # a block owns tiles of `capacity` rows (a shared tile scoped to the block holds one)
    #: Its warps work on their own: whole warps alive to the end of the body, `lane` and `warp` given, and the
    #: rows a block owns are its warps' (`block // 32 * capacity`); a tile scoped to a warp holds a warp's rows.
    whole_warps: bool = False
    #: Its warps loop over tiles of their own, so a block barrier inside that loop is not reached alike (LG407).
    warps_loop_alone: bool = False
    block_rule: BlockRuleKind | None = None

    @property
    def owns_rows(self) -> bool:
        """Whether a tile or a warp owns `capacity` rows (its indices may pass `int`, codegen/grids.py)."""
        return self.rows_argument is not None

    @property
    def resident(self) -> bool:
        """Whether it starts as many blocks as the device keeps resident (``blocks_per_sm`` is its argument)."""
        return self.block_rule == "persistent"


_THREADS, _COUNTED = "grid_threads.cu.j2", "threads.cuh.j2"  # one thread index; lg::divmod, lg::aligned
_TILES = "tiles.cuh.j2"  # lg::Tile, lg::Tiles

#: Every kind of grid, by its ``per``.
GRID_KINDS: Mapping[str, GridKind] = {k.per: k for k in (
    GridKind("row", "Grid.rows", ("row",), ("row",), _THREADS, _COUNTED,
             returns_early="Grid.rows returns the threads past the last row"),
    GridKind("element", "Grid.elements", ("element",), ("element",), _THREADS, _COUNTED,
             returns_early="Grid.elements returns the threads past the last element", per_element=True),
    GridKind("vector", "Grid.vectors", ("vector",), ("vector",), _THREADS, _COUNTED,
             returns_early="Grid.vectors returns the threads past the last vector", per_vector=True),
    GridKind("tile", "Grid.tiles", ("tile", "tile_row", "tile_rows", "tile_capacity"), (), "grid_tiles.cu.j2",
             None, rows_argument="rows", block_tiles=True, block_rule="rows"),
    GridKind("warp", "Grid.warps", ("row", "warp_rows", "lane", "warp"), ("row", "lane", "warp"),
             "grid_warps.cu.j2", None, returns_early="Grid.warps returns each warp with no rows",
             rows_argument="rows_per_warp", whole_warps=True, block_rule="rows"),
    GridKind("persistent", "Grid.persistent", ("tiles", "tile_capacity"), (), "grid_persistent.cu.j2", _TILES,
             rows_argument="rows", block_tiles=True, block_rule="persistent"),
    GridKind("persistent_warp", "Grid.persistent_warps", ("tiles", "tile_capacity", "lane", "warp", "warps"),
             ("lane", "warp"), "grid_persistent_warps.cu.j2", _TILES, rows_argument="rows", whole_warps=True,
             warps_loop_alone=True, block_rule="persistent"),
    GridKind("general", "Grid.general", (), (), "grid_general.cu.j2", _COUNTED, follows_param=False,
             block_rule="general"),
)}
