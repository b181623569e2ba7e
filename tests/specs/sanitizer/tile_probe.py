"""The probe of tests/test_footprint_property.py: a tile of 8 rows, `count` of them copied in, row `read` read
through the accessor, its value stored in the output where `flows` (else thrown away)."""

from layoutgen import Grid, In, Kernel, Layout, Out, Scalar, Spec, Tile, dims, f32, i32

B, F = dims("B F")

Rows = Layout("Rows", [B], f32, width=4, doc="rows of 4")

probe = Kernel("tile_probe", "tile_probe.cu.j2",
               [In("x", [B, F]), Out("y", [B, F]), Scalar("count", i32), Scalar("read", i32), Scalar("flows", i32)],
               grid=Grid.tiles("x", rows=8, block=32), shared=[Tile("xs", "x")])

spec = Spec("sanitizer_tile_probe", kernels=[probe.bind(x=Rows, y=Rows)])
