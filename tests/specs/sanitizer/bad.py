"""Kernels that break their footprints in many spellings: `layoutgen check --execute` refuses each.

The field `Window.snap` is 96 columns of rows 136 elements apart; every kernel below reads it (or writes
its output) at the wrong stride, pitch, width or row count, spelled the ways issue 30 lists: a local
`const int`, an offset in its own variable, a helper taking a `float*` and the width, a macro, a cast to
float4 with `row * 24`, another view's row stride, a lane loop to the row stride, a loop to a tile's
capacity in a short last tile (of a tile per block, and of a persistent block whose last tile's unheld rows
held the tile before's rows: through the accessor and through a raw pointer), a static `__shared__` array summed over a block of twice the threads
(elements no thread of the block wrote), a tile filled from a narrower field, barriers in branches, and a
hand-written entry indexing the first element at the wrong pitch.
"""

from layoutgen import Field, Grid, In, InOut, Kernel, Layout, Out, SourceKernel, Spec, Tile, dims, f32

B, K, F, C = dims("B K F C")

Window = Layout("Window", [B, K], f32, [Field("snap", 96), Field("ctx", 40)], doc="96 features, 40 of context")
Packed = Layout("Packed", [B, K], f32, width=96, doc="the features, packed")
Narrow = Layout("Narrow", [B, K], f32, width=40, doc="a narrower field")


def rows_kernel(name: str, **more: object) -> Kernel:
    """A thread per row of `x`, writing `y`."""
    return Kernel(name, f"{name}.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                  grid=Grid.rows("x", block=128), **more)  # type: ignore[arg-type]


ROWS = ["const_stride", "offset_variable", "helper_pointer", "macro_stride", "float4_cast", "other_view_stride"]
tile_loop = Kernel("tile_capacity_loop", "tile_capacity_loop.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                   grid=Grid.tiles("x", rows=32, block=128), shared=[Tile("xs", "x")])
static_shared = Kernel("static_shared_block", "static_shared_block.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                       grid=Grid.tiles("x", rows=32, block=128))
persistent_loop = Kernel("persistent_capacity_loop", "persistent_capacity_loop.cu.j2",
                         [In("x", [B, K, F]), Out("y", [B, K, F])],
                         grid=Grid.persistent("x", rows=32, block=128), shared=[Tile("xs", "x")])
persistent_raw = Kernel("persistent_capacity_raw", "persistent_capacity_raw.cu.j2",
                        [In("x", [B, K, F]), Out("y", [B, K, F])],
                        grid=Grid.persistent("x", rows=32, block=128), shared=[Tile("xs", "x")])
narrow_fill = Kernel("narrow_fill", "narrow_fill.cu.j2", [In("x", [B, K, F]), In("n", [B, K, C]), Out("y", [B, K, F])],
                     grid=Grid.tiles("x", rows=32, block=128), shared=[Tile("xs", "x")])
lane_loop = Kernel("lane_loop", "lane_loop.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                   grid=Grid.warps("x", block=128))
barrier_branch = Kernel("barrier_branch", "barrier_branch.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                        grid=Grid.tiles("x", rows=32, block=128))
barrier_two = Kernel("barrier_two", "barrier_two.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                     grid=Grid.tiles("x", rows=32, block=128))
entry = SourceKernel("entry_pitch", "entry_pitch.cu", [In("x", [B, K, F]), Out("y", [B, K, F])],
                     entry="copy_features", grid=Grid.rows("x", block=128))

spec = Spec("sanitizer_bad", kernels=[
    *(rows_kernel(name).bind(x=Window.snap, y=Packed) for name in ROWS),
    tile_loop.bind(x=Window.snap, y=Packed),
    persistent_loop.bind(x=Window.snap, y=Packed),
    static_shared.bind(x=Window.snap, y=Packed),
    persistent_raw.bind(x=Window.snap, y=Packed),
    narrow_fill.bind(x=Window.snap, n=Narrow, y=Packed),
    lane_loop.bind(x=Window.snap, y=Packed),
    barrier_branch.bind(x=Window.snap, y=Packed),
    barrier_two.bind(x=Window.snap, y=Packed),
    entry.bind(x=Window.snap, y=Packed),
])
