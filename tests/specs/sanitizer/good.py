"""Correct kernels of the shapes of bad.py: `layoutgen check --execute` passes each.

Warp shuffles, a block reduction with atomics (shared and global), tiles with short last tiles of 1 and
of R-1 rows (183 rows: 7 tiles of 26 and 1, 3 of 46 and 45), a cp.async ring of a persistent grid's warps,
a hand-written entry, raw and checked (`auto`) pointers used at the right stride, and block reductions through a
static `__shared__` array (one per block on the host too) in a template and in a hand-written entry.
"""

from layoutgen import (
    Field, Grid, In, InOut, Kernel, Layout, Out, Shared, SourceKernel, Spec, Tile, dims, f32,
)

B, K, F = dims("B K F")

Window = Layout("Window", [B, K], f32, [Field("snap", 96), Field("ctx", 40)], doc="96 features, 40 of context")
Packed = Layout("Packed", [B, K], f32, width=96, doc="the features, packed")
Sums = Layout("Sums", [], f32, width=96, doc="a sum per feature")

pointer_rows = Kernel("pointer_rows", "good_pointer_rows.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                      grid=Grid.rows("x", block=128))
warp_shuffle = Kernel("warp_shuffle", "good_warp_shuffle.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                      grid=Grid.warps("x", block=128))
block_sum = Kernel("block_sum", "good_block_sum.cu.j2", [In("x", [B, K, F]), InOut("total", [F])],
                   grid=Grid.tiles("x", rows=32, block=128), shared=[Shared("part", f32, [F])])
tail_one = Kernel("tail_one", "good_tile_copy.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                  grid=Grid.tiles("x", rows=26, block=128), shared=[Tile("xs", "x")])
tail_r_minus_1 = Kernel("tail_r_minus_1", "good_tile_copy.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                        grid=Grid.tiles("x", rows=46, block=128), shared=[Tile("xs", "x")])
ring = Kernel("ring", "good_ring.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F], vector=16)],
              grid=Grid.persistent_warps("x", rows=32, block=128), shared=[Tile("xs", "x", scope="warp", stages=3)])
auto_pointer_rows = Kernel("auto_pointer_rows", "good_auto_pointer.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                           grid=Grid.rows("x", block=128))
static_shared = Kernel("static_shared_sum", "good_static_shared.cu.j2", [In("x", [B, K, F]), InOut("total", [F])],
                       grid=Grid.tiles("x", rows=32, block=128))
static_entry = SourceKernel("static_shared_entry", "good_static_entry.cu", [In("x", [B, K, F]), InOut("total", [F])],
                            entry="column_sums", grid=Grid.tiles("x", rows=128, block=128))
entry = SourceKernel("entry_rows", "good_entry.cu", [In("x", [B, K, F]), Out("y", [B, K, F])],
                     entry="copy_features", grid=Grid.rows("x", block=128))

spec = Spec("sanitizer_good", kernels=[
    pointer_rows.bind(x=Window.snap, y=Packed),
    auto_pointer_rows.bind(x=Window.snap, y=Packed),
    warp_shuffle.bind(x=Window.snap, y=Packed),
    block_sum.bind(x=Window.snap, total=Sums),
    tail_one.bind(x=Window.snap, y=Packed),
    tail_r_minus_1.bind(x=Window.snap, y=Packed),
    ring.bind(x=Window.snap, y=Packed),
    entry.bind(x=Window.snap, y=Packed),
    static_shared.bind(x=Window.snap, total=Sums),
    static_entry.bind(x=Window.snap, total=Sums),
])
