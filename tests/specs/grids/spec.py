"""One kernel per cooperative grid, for golden files, offline compiles and the GPU tests.

`Rows` packs 40 values and 8 columns of padding in rows of 48, so every kernel reads a strided
field. `tile_reverse` stages a tile of rows in shared memory and writes each row reversed (a
thread reads what another wrote: the barrier matters); `warp_center` and `warp_center4` subtract
each row's mean, a warp a row or four rows, with shuffles; `persistent_colsum` sums each column
over every row with per-block accumulators and one atomic per column and block, and counts each
row it visits in `hits`; `series_reverse` is a block per series (Grid.general) that reverses a
series of K values through shared memory sized by K at launch. The program `stage` runs the two
kernels with shared memory.
"""

from layoutgen import Buffer, Field, Grid, In, InOut, Kernel, Launch, Layout, Out, Program, Shared, Spec, dims, f32

N, B, K, F = dims("N B K F")

Rows = Layout("Rows", [N], f32, [Field("x", 40), Field("pad", 8)])
Dense = Layout("Dense", [N], f32, width=40)
Hits = Layout("Hits", [N], f32, width=1, doc="how many times a kernel visited each row")
Sums = Layout("Sums", [], f32, width=40)
Series = Layout("Series", [B, K], f32, width=1)

tile_reverse = Kernel("tile_reverse", "tile_reverse.cu.j2", [
    In("x", [N, F]),
    Out("y", [N, F]),
], grid=Grid.tiles("x", rows=64, block=128), shared=[Shared("xs", f32, [64, F])],
    doc="y[r, c] = x[r, F - 1 - c], through a tile in shared memory")

warp_center = Kernel("warp_center", "warp_center.cu.j2", [
    In("x", [N, F]),
    Out("y", [N, F]),
], grid=Grid.warps("x", block=128), doc="y = x less its row's mean, a warp a row")

warp_center4 = Kernel("warp_center4", "warp_center.cu.j2", [
    In("x", [N, F]),
    Out("y", [N, F]),
], grid=Grid.warps("x", rows_per_warp=4, block=64), doc="y = x less its row's mean, a warp for four rows")

persistent_colsum = Kernel("persistent_colsum", "persistent_colsum.cu.j2", [
    In("x", [N, F]),
    InOut("hits", [N, 1]),
    InOut("sums", [F]),
], grid=Grid.persistent("x", rows=32, block=64), doc="sums += the sum of each column; hits += 1 a row visited")

series_reverse = Kernel("series_reverse", "series_reverse.cu.j2", [
    In("x", [B, K, 1]),
    Out("y", [B, K, 1]),
], grid=Grid.general(blocks=[B], block=256), shared=[Shared("stage", f32, [K])],
    doc="y[b, k] = x[b, K - 1 - k], a block a series, through shared memory")

rows, dense = Buffer("rows", Rows, input=True), Buffer("dense", Dense, output=True)
series, reversed_series = Buffer("series", Series, input=True), Buffer("reversed_series", Series, output=True)
stage = Program("stage", [
    Launch(tile_reverse, x=rows.x, y=dense),
    Launch(series_reverse, x=series, y=reversed_series),
], doc="both kernels with shared memory, one after the other: a program's runner and graph size them too")

spec = Spec("grids", programs=[stage], kernels=[
    tile_reverse.bind(x=Rows.x, y=Dense),
    warp_center.bind(x=Rows.x, y=Dense),
    warp_center4.bind(x=Rows.x, y=Dense),
    persistent_colsum.bind(x=Rows.x, hits=Hits, sums=Sums),
    series_reverse.bind(x=Series, y=Series),
])
