"""Warps that work alone (Grid.persistent_warps) through tiles of their own (tests/test_warp_tiles.py,
tests/gpu/test_warp_tiles_gpu.py).

`warp_scale` writes y = 2 x through a ring of two x tiles a warp (loading the warp's next tile while it
writes this one) and a y tile a warp, and counts the rows each warp saw in `seen`; after the loop the
block adds its warps' counts in shared memory, behind a barrier, and adds the sum to `total` once.
Bound to `Window.snap` (160 bytes at offset 0 of 224-byte rows: 16-byte copies) and to `Odd.mid` (3 f32
at offset 1 of 7-element rows: 4-byte copies). `warp_shift` reads its tile `amount` columns further along
and takes stage `t.index - back` of a ring of one: with amount 1 the debug build stops at the tile's last
column, with back 1 at stage -1 (its tile has a row to spare, so that the release build reads inside it).
`block_ring` is the ring of a block's tile (Grid.persistent, stages=2), `warp_rows` a warp's tile in Grid.warps.
"""

from layoutgen import Field, Grid, In, InOut, Kernel, Layout, Out, Scalar, Shared, Spec, Tile, dims, f32, i32

B, K, F = dims("B K F")
Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)])
Features = Layout("Features", [B, K], f32, width=40)
Odd = Layout("Odd", [B], f32, [Field("head", 1), Field("mid", 3), Field("tail", 3)])
Three = Layout("Three", [B], f32, width=3)
Total = Layout("Total", [], f32, width=1, doc="rows the kernel saw")
WARPS = 2


def _scale(name: str, *leading: object) -> Kernel:
    return Kernel(name, "warp_scale.cu.j2", [In("x", [*leading, F]), Out("y", [*leading, F]), InOut("total", [1])],
                  grid=Grid.persistent_warps("x", rows=8, block=32 * WARPS),
                  shared=[Tile("xs", "x", scope="warp", stages=2), Tile("ys", "y", scope="warp"),
                          Shared("seen", i32, [WARPS])],
                  doc="y = 2 x, warps alone through rings of tiles; total += the rows seen")


warp_shift = Kernel("warp_shift", "warp_shift.cu.j2", [
    In("x", [B, F]), Scalar("amount", i32), Scalar("back", i32), Out("y", [B, F]),
], grid=Grid.persistent_warps("x", rows=8, block=32 * WARPS), shared=[Tile("xs", "x", rows=9, scope="warp")],
    doc="y[r, c] = x[r, c + amount], read from a warp's tile, its stage t.index - back")

block_ring = Kernel("block_ring", "block_ring.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                    grid=Grid.persistent("x", rows=16, block=64), shared=[Tile("xs", "x", stages=2)],
                    doc="y = 2 x through a ring of two tiles of the block's")

warp_rows = Kernel("warp_rows", "warp_rows.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                   grid=Grid.warps("x", rows_per_warp=4, block=64), shared=[Tile("xs", "x", scope="warp")],
                   doc="y = 2 x, a warp for four rows through a tile of the warp's own")

spec = Spec("warp_tiles", kernels=[
    _scale("warp_scale_snap", B, K).bind(x=Window.snap, y=Features, total=Total),
    _scale("warp_scale_odd", B).bind(x=Odd.mid, y=Three, total=Total),
    warp_shift.bind(x=Three, y=Three),
    block_ring.bind(x=Window.snap, y=Features),
    warp_rows.bind(x=Window.snap, y=Features),
])
