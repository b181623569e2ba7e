"""Grids: how many blocks a launch starts, of how many threads, and what the body is told of its work.

Three grids start one thread per unit of a parameter's view and return the threads past its end at
once: ``Grid.rows``, ``Grid.elements`` and ``Grid.vectors``. Five are cooperative, for bodies that
share work in a block or a warp, and keep their threads: ``Grid.tiles`` (a block per tile of rows,
every thread alive to the end), ``Grid.warps`` (a warp per row or group of rows; a warp with no rows
returns whole), ``Grid.persistent`` (as many blocks as the device keeps resident, each looping over
tiles), ``Grid.persistent_warps`` (as many, each of whose warps loops over tiles of its own, alone)
and ``Grid.general`` (blocks counted by an expression of the kernel's symbols).
docs/templates.md, "The grids", says what each one guarantees and which names its body sees.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..schema.diagnostics import Site, caller_site
from ..schema.dims import Dim, as_shape
from .errors import kernel_error
from .grid_kinds import GRID_KINDS, GridKind

#: The names each grid defines in the body, by kind (read from its record, :mod:`.grid_kinds`).
GRID_NAMES: Mapping[str, tuple[str, ...]] = {per: kind.names for per, kind in GRID_KINDS.items()}
#: The threads of a warp: the block of a grid whose warps work alone is a multiple (LG216).
WARP_SIZE = 32
#: Rows of a tile or a warp are an `int` in the generated code (`tile_rows`, `warp_rows`).
ROWS_LIMIT = 2**31


def _positive_int(value: object, below: int = ROWS_LIMIT) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < below


@dataclass(frozen=True)
class BlockCount:
    """The blocks of a ``Grid.general``: the product of ``factors``, divided by ``divisor``, rounded up."""

    factors: tuple[Dim, ...]
    divisor: int = 1

    @property
    def symbols(self) -> tuple[str, ...]:
        """The symbols the count multiplies, in order, each once."""
        return tuple(dict.fromkeys(str(d.name) for d in self.factors if d.size is None))

    def __str__(self) -> str:
        product = "*".join(str(d) for d in self.factors)
        return product if self.divisor == 1 else f"ceil_div({product}, {self.divisor})"


Count = Dim | int | str | Sequence[Dim | int | str]


def _factors(count: object, what: str, site: Site | None) -> tuple[Dim, ...]:
    """A count as the dims it multiplies: a dim, an int, a symbol's name, or a list of them."""
    entries = count if isinstance(count, (list, tuple)) else [count]
    if not entries:
        raise kernel_error("LG218", f"{what} must be a dim, an int or a list of them, got {count!r}", site)
    return as_shape(entries, what, site)


def ceil_div(count: Count, divisor: int) -> BlockCount:
    """``ceil_div([B, K], 4)``: the blocks of a ``Grid.general``, the product of ``count`` over ``divisor``, rounded up."""
    site = caller_site()
    factors = _factors(count, "the count of `ceil_div`", site)
    if not _positive_int(divisor):
        raise kernel_error("LG218", f"the divisor of `ceil_div` must be a positive integer, got {divisor!r}", site)
    return BlockCount(factors, divisor)


@dataclass(frozen=True)
class Grid:
    """How a launch covers its work: the blocks, the threads per block, and what the body sees.

    ``param`` is the parameter whose view's rows the grid counts (None for ``Grid.general``);
    ``per`` the kind; ``block`` the threads per block (the kernel's ``__launch_bounds__``);
    ``capacity`` the rows of a tile (tiles, persistent), of a warp (warps) or of a warp's tile (persistent
    warps), fewer in the last; ``blocks`` the count of a general grid; ``blocks_per_sm`` a persistent
    grid's resident blocks per SM (None: the occupancy of the compiled kernel). Made with the constructors
    below, which document each guarantee.
    """

    param: str | None
    per: str = "row"  # the key of its kind in GRID_KINDS (an unknown one is LG208 in its kernel)
    block: int = 128
    capacity: int = 1
    blocks: BlockCount | None = None
    blocks_per_sm: int | None = None

    def __post_init__(self) -> None:
        problem = _argument_problem(self)
        if problem is not None:
            code, message, hint = problem
            raise kernel_error(code, message, caller_site(), hint)

    def __repr__(self) -> str:  # messages show it: the arguments that say what the grid is
        text = f"Grid(param={self.param!r}, per={self.per!r}, block={self.block!r}"
        for name, value, default in (("capacity", self.capacity, 1), ("blocks", self.blocks, None),
                                     ("blocks_per_sm", self.blocks_per_sm, None)):
            if value != default:
                text += f", {name}={str(value) if name == 'blocks' else repr(value)}"
        return text + ")"

    @property
    def kind(self) -> GridKind:
        """What this grid's kind guarantees and how it is made (:mod:`.grid_kinds`); every grid a kernel
        accepted has one (LG208 refuses another ``per``)."""
        return GRID_KINDS[self.per]

    @property
    def names(self) -> tuple[str, ...]:
        """The names this grid defines in the body."""
        kind = GRID_KINDS.get(self.per)
        return kind.names if kind is not None else ()

    @staticmethod
    def rows(param: str, block: int = 128) -> Grid:
        """One thread per row of ``param``'s view, ``row``; threads past the last row have returned."""
        return Grid(param, "row", block)

    @staticmethod
    def elements(param: str, block: int = 256) -> Grid:
        """One thread per element of ``param``'s field, ``element``; threads past the end have returned."""
        return Grid(param, "element", block)

    @staticmethod
    def vectors(param: str, block: int = 256) -> Grid:
        """One thread per aligned group of bytes of ``param``'s rows, ``vector``; threads past the end have returned."""
        return Grid(param, "vector", block)

    @staticmethod
    def tiles(param: str, rows: int = 128, block: int = 256) -> Grid:
        """One block per tile of ``rows`` rows of ``param``'s view; every thread runs the whole body.

        The body sees ``tile``, ``tile_row`` (its first row), ``tile_rows`` (``rows``, fewer in the last
        tile) and ``tile_capacity`` (``rows``); barriers (``__syncthreads()``) are safe.
        """
        return Grid(param, "tile", block, rows)

    @staticmethod
    def warps(param: str, rows_per_warp: int = 1, block: int = 256) -> Grid:
        """One warp per ``rows_per_warp`` rows of ``param``'s view; ``block`` must be a multiple of 32 (LG216).

        The body sees ``row`` (the warp's first row), ``warp_rows`` (fewer in the last), ``lane`` and
        ``warp``. A warp with no rows returns whole: ``__syncwarp()`` and full-mask shuffles are safe,
        ``__syncthreads()`` is not.
        """
        return Grid(param, "warp", block, rows_per_warp)

    @staticmethod
    def persistent(param: str, rows: int = 128, block: int = 256, blocks_per_sm: int | None = None) -> Grid:
        """As many blocks as the device keeps resident, at most one per tile of ``rows`` rows of ``param``.

        Each block loops over its tiles (``for (const lg::Tile t : tiles)``, ``t.row``, ``t.rows``);
        every thread runs the whole body, so barriers are safe. The blocks are the occupancy of the
        compiled kernel times the SMs (``blocks_per_sm`` times the SMs where given: the kernel's
        ``__launch_bounds__`` then asks the compiler to fit that many blocks an SM, registers included).
        """
        return Grid(param, "persistent", block, rows, blocks_per_sm=blocks_per_sm)

    @staticmethod
    def persistent_warps(param: str, rows: int = 32, block: int = 128, blocks_per_sm: int | None = None) -> Grid:
        """As many blocks as the device keeps resident, each of whose warps works alone on tiles of ``rows`` rows.

        Warp ``warp`` of block ``b`` (of ``warps`` a block) owns the tiles ``b * warps + warp``, then every
        ``gridDim.x * warps``-th; ``for (const lg::Tile t : tiles)`` visits them, ``tiles.nth(i)`` is the
        warp's ``i``-th (no rows past the last), for a pipeline that loads ahead. ``lane`` is the thread's
        lane. Every thread runs the whole body: ``__syncwarp()`` and full-mask shuffles are safe anywhere,
        ``__syncthreads()`` outside the loop over ``tiles`` only (warps run different numbers of tiles,
        LG407). ``block`` must be a multiple of 32 (LG216); blocks are counted as for ``Grid.persistent``.
        """
        return Grid(param, "persistent_warp", block, rows, blocks_per_sm=blocks_per_sm)

    @staticmethod
    def general(blocks: Count | BlockCount | None = None, block: int = 256, *,
                threads: Count | None = None) -> Grid:
        """``blocks`` blocks of ``block`` threads, an expression of the kernel's symbols; nothing returns early.

        ``blocks`` is a product (``[B, H]``, ``B``, ``4``) or ``ceil_div([B, K], 4)``; ``threads=[B, K]``
        instead asks for at least that many threads (``ceil_div([B, K], block)`` blocks). The body
        sees blockIdx and threadIdx only.
        """
        site = caller_site()
        if (blocks is None) == (threads is None):
            raise kernel_error("LG218", f"Grid.general takes `blocks` or `threads`, one of them, got blocks={blocks!r} "
                               f"and threads={threads!r}", site, hint="for example Grid.general(blocks=[B, H])")
        if threads is not None:  # a block outside 1..1024 is the kernel's LG208
            return Grid(None, "general", block, blocks=BlockCount(_factors(threads, "`threads`", site), block))
        count = blocks if isinstance(blocks, BlockCount) else BlockCount(_factors(blocks, "`blocks`", site))
        return Grid(None, "general", block, blocks=count)


def _argument_problem(grid: Grid) -> tuple[str, str, str | None] | None:
    """(code, message, hint) when ``grid``'s arguments do not fit its kind; None for an unknown kind (LG208)."""
    kind = GRID_KINDS.get(grid.per)
    if kind is None:
        return None
    made = kind.constructor
    if kind.follows_param and not isinstance(grid.param, str):  # compared with names, hashed, written in C++
        return (("LG218", f"the parameter of {made} must be the name of a parameter of its kernel, got "
                 f"{grid.param!r}", f"for example {made}(\"x\") for a parameter In(\"x\", ...)"))
    if kind.rows_argument is not None:
        if not _positive_int(grid.capacity):
            return ("LG218", f"`{kind.rows_argument}` of {made} must be a positive integer below 2^31, got "
                    f"{grid.capacity!r}", "a tile or a warp owns at least one row")
    elif grid.capacity != 1:
        return ("LG218", f"`capacity` of {made} must be 1, got {grid.capacity!r}",
                "tiles, warps and persistent grids own rows: Grid.tiles, Grid.warps, Grid.persistent, "
                "Grid.persistent_warps")
    if not kind.follows_param:
        if grid.param is not None or not isinstance(grid.blocks, BlockCount):
            return ("LG218", f"{made} counts `blocks` of the kernel's symbols and follows no parameter, got "
                    f"param={grid.param!r}, blocks={grid.blocks!r}", f"make it with {made}(blocks=...)")
    elif grid.blocks is not None:
        return "LG218", f"`blocks` is for Grid.general, got {grid.blocks} for {made}", None
    if grid.blocks_per_sm is not None and not kind.resident:
        return ("LG218", f"`blocks_per_sm` is for Grid.persistent and Grid.persistent_warps, got "
                f"{grid.blocks_per_sm!r} for {made}", None)
    if grid.blocks_per_sm is not None and not _positive_int(grid.blocks_per_sm, 1025):
        return ("LG218", f"`blocks_per_sm` of {made} must be None or a positive integer up to 1024, got "
                f"{grid.blocks_per_sm!r}", "None keeps as many blocks as the compiled kernel's occupancy allows")
    if kind.whole_warps and _positive_int(grid.block, 1025) and grid.block % WARP_SIZE:
        below, above = grid.block // WARP_SIZE * WARP_SIZE, (grid.block // WARP_SIZE + 1) * WARP_SIZE
        return ("LG216", f"the block of {made} must be a multiple of {WARP_SIZE} threads (whole warps), got "
                f"{grid.block}", f"use block={below} or {above}" if below else f"use block={above}")
    return None


def launch_dims(dims: Sequence[Dim], values: Mapping[str, Dim]) -> list[Dim]:
    """Kernel dims as a launch knows them: each static size, or what its symbol was unified with in
    ``values`` (a layout's symbol; a product such as ``D*48`` as its factors, ``D`` and ``48``)."""
    out: list[Dim] = []
    for d in dims:
        got = d if d.size is not None else values.get(str(d.name), d)
        if not got.is_derived:
            out.append(got)
            continue
        for factor in str(got.name).split("*"):  # the inverse of Size.__str__: symbols, then the coefficient
            out.append(Dim.of(int(factor)) if factor.isdigit() else Dim(factor))
    return out


def check_grid(kernel: str, grid: object, params: Sequence[str], symbols: Sequence[str], site: Site | None) -> Grid:
    """``grid`` checked against its kernel: LG208 for a grid that follows no parameter, of an unknown kind
    or a block outside 1..1024; LG218 for a general grid counted in a symbol no parameter has."""
    first = params[0]
    kind = GRID_KINDS.get(grid.per) if isinstance(grid, Grid) else None
    if not isinstance(grid, Grid) or ((kind is None or kind.follows_param) and grid.param not in params):
        raise kernel_error(
            "LG208", f"the grid of `{kernel}` must follow one of its parameters, got {grid!r}", site,
            hint=f"for example grid=Grid.rows(\"{first}\")",
        )
    if kind is None:
        raise kernel_error(
            "LG208", f"the grid of `{kernel}` must be one of " + ", ".join(k.constructor for k in GRID_KINDS.values())
            + f", got per={grid.per!r}", site,
            hint=f"for example Grid.rows(\"{grid.param}\") or Grid.tiles(\"{grid.param}\")",
        )
    if not _positive_int(grid.block, 1025):  # True and 128.0 are no block: they would reach the generated code
        raise kernel_error("LG208", f"the block size of `{kernel}` must be 1..1024, got {grid.block!r}", site)
    unknown = [s for s in (grid.blocks.symbols if grid.blocks is not None else ()) if s not in symbols]
    if unknown:
        raise kernel_error(
            "LG218", f"the grid of `{kernel}` counts its blocks as {grid.blocks}, but `{unknown[0]}` is no symbol of "
            f"its parameters' shapes ({', '.join(symbols) or 'none'}): its value would be known nowhere", site,
            hint="count the blocks in the parameters' symbols, or in numbers",
        )
    return grid


def check_grid_names(kernel: str, grid: Grid, params: Sequence[tuple[str, Site | None]],
                     symbols: Mapping[str, Site | None], taken: Sequence[str]) -> None:
    """LG208 when a parameter or symbol has a name ``grid`` defines in the body (beyond ``taken``, the names
    every kernel reserves, reported before this)."""
    own = [n for n in grid.names if n not in taken]
    for what, name, at in [*(("parameter", p, s) for p, s in params), *(("shape symbol", s, at) for s, at in
                                                                          symbols.items())]:
        if name in own:
            raise kernel_error(
                "LG208", f"{what} `{name}` of `{kernel}` clashes with `{name}`, which {grid.kind.constructor} defines "
                f"in the body ({', '.join(grid.names)})", at, hint=f"rename the {what.split()[-1]}",
            )
