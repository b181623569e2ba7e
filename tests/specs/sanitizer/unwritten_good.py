"""Correct kernels of the shapes of unwritten.py and race.py: `layoutgen check --execute` passes each.

An output written, then read back by other threads after a __syncthreads(); zeroed, then accumulated into
(through the view and through a pointer taken from it); written through `vec<16>` (an access the shadow does
not see) and read back; a block reduction with atomics into an InOut; one lane writing a row's sum after a
shuffle reduction; two threads writing a column's sum in turn, a barrier between; an integer output written -1,
its poison's bytes (all ones), through the view: written, not left unwritten.
"""

from layoutgen import Field, Grid, In, InOut, Kernel, Layout, Out, Shared, Spec, dims, f32, i32

B, K, F = dims("B K F")

Window = Layout("Window", [B, K], f32, [Field("snap", 96), Field("ctx", 40)], doc="96 features, 40 of context")
Packed = Layout("Packed", [B, K], f32, width=96, doc="the features, packed")
RowSum = Layout("RowSum", [B, K], f32, width=1, doc="a sum per row")
Sums = Layout("Sums", [], f32, width=96, doc="a sum per feature")
Marks = Layout("Marks", [B, K], i32, width=4, doc="-1 where a row has no match")

read_back = Kernel("read_back", "unwritten_good_read_back.cu.j2",
                   [In("x", [B, K, F]), Out("y", [B, K, F]), Out("z", [B, K, F])],
                   grid=Grid.tiles("x", rows=32, block=128))
zero_first = Kernel("zero_first", "unwritten_good_zero_first.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                    grid=Grid.rows("x", block=128))
vec_back = Kernel("vec_back", "unwritten_good_vec_back.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F], vector=16)],
                  grid=Grid.rows("x", block=128))
block_sum = Kernel("block_sum", "good_block_sum.cu.j2", [In("x", [B, K, F]), InOut("total", [F])],
                   grid=Grid.tiles("x", rows=32, block=128), shared=[Shared("part", f32, [F])])
one_lane = Kernel("one_lane", "unwritten_good_one_lane.cu.j2", [In("x", [B, K, F]), Out("s", [B, K, 1])],
                  grid=Grid.warps("x", block=128))
column_turns = Kernel("column_turns", "unwritten_good_column_turns.cu.j2", [In("x", [B, K, F]), Out("total", [F])],
                      grid=Grid.tiles("x", rows=256, block=128))
minus_one = Kernel("minus_one", "unwritten_good_minus_one.cu.j2", [In("x", [B, K, F]), Out("m", [B, K, 4])],
                   grid=Grid.rows("x", block=128))

spec = Spec("sanitizer_unwritten_good", kernels=[
    read_back.bind(x=Window.snap, y=Packed, z=Packed),
    zero_first.bind(x=Window.snap, y=Packed),
    vec_back.bind(x=Window.snap, y=Packed),
    block_sum.bind(x=Window.snap, total=Sums),
    one_lane.bind(x=Window.snap, s=RowSum),
    column_turns.bind(x=Window.snap, total=Sums),
    minus_one.bind(x=Window.snap, m=Marks),
])
