"""Shared tiles of aligned and unaligned fields (tests/test_tiles.py, tests/gpu/test_tiles_gpu.py).

`scale_tile` stages a tile of rows of `x` through shared memory and writes twice each element to `y`:
bound to `Window.snap` (160 bytes at offset 0 of 224-byte rows: 16-byte copies) and to `Odd.mid` (3
f32 at offset 1 of 7-element rows: 4-byte copies); the `_async` pair loads the tile with cp.async.
`shift_tile` reads the tile `amount` columns
further along: with amount 1 the debug build stops at the tile's last column (its tile has a row to spare,
so that the release build reads inside the buffer).
"""

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Scalar, Spec, Tile, dims, f32, i32

B, K, F = dims("B K F")
Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)])
Features = Layout("Features", [B, K], f32, width=40)
Odd = Layout("Odd", [B], f32, [Field("head", 1), Field("mid", 3), Field("tail", 3)])
Three = Layout("Three", [B], f32, width=3)


def _scale(name: str, *leading: object, template: str = "scale_tile.cu.j2") -> Kernel:
    return Kernel(name, template, [In("x", [*leading, F]), Out("y", [*leading, F])],
                  grid=Grid.tiles("x", rows=64, block=64), shared=[Tile("xs", "x")],
                  doc="y = 2 x, through a shared tile of x's rows")


shift_tile = Kernel("shift_tile", "shift_tile.cu.j2", [In("x", [B, F]), Scalar("amount", i32), Out("y", [B, F])],
                    grid=Grid.tiles("x", rows=32, block=32), shared=[Tile("xs", "x", rows=33)],
                    doc="y[r, c] = x[r, c + amount], read from a shared tile")

spec = Spec("tiles", kernels=[
    _scale("scale_snap", B, K).bind(x=Window.snap, y=Features),
    _scale("scale_odd", B).bind(x=Odd.mid, y=Three),
    _scale("scale_snap_async", B, K, template="scale_async.cu.j2").bind(x=Window.snap, y=Features),
    _scale("scale_odd_async", B, template="scale_async.cu.j2").bind(x=Odd.mid, y=Three),
    shift_tile.bind(x=Three, y=Three),
])
