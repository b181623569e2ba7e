"""Two threads writing one output element with no atomic and nothing ordering them: refused at the second
write by `layoutgen check --execute` (LG657).

Every lane of a warp writing the row's sum after a shuffle reduction, thread 0 of every block writing one
row of sums, and two threads of a block writing the same column's sum with no barrier between.
tests/specs/sanitizer/race_good.py holds correct kernels of the same shapes.
"""

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Spec, dims, f32

B, K, F = dims("B K F")

Window = Layout("Window", [B, K], f32, [Field("snap", 96), Field("ctx", 40)], doc="96 features, 40 of context")
RowSum = Layout("RowSum", [B, K], f32, width=1, doc="a sum per row")
Sums = Layout("Sums", [], f32, width=96, doc="a sum per feature")

lanes = Kernel("race_lanes", "race_lanes.cu.j2", [In("x", [B, K, F]), Out("s", [B, K, 1])],
               grid=Grid.warps("x", block=128))
blocks = Kernel("race_blocks", "race_blocks.cu.j2", [In("x", [B, K, F]), Out("first", [F])],
                grid=Grid.rows("x", block=128))
column = Kernel("race_column", "race_column.cu.j2", [In("x", [B, K, F]), Out("total", [F])],
                grid=Grid.tiles("x", rows=256, block=128))

spec = Spec("sanitizer_race", kernels=[
    lanes.bind(x=Window.snap, s=RowSum),
    blocks.bind(x=Window.snap, first=Sums),
    column.bind(x=Window.snap, total=Sums),
])
