"""Kernels that can be made to index past their field: the debug build must catch them.

`shift` copies `src` into `dst`, reading each column `amount` further along.
With amount 0 it is a copy; with amount 1 the last column of each row reads
one past the end of `Row.head`, into `Row.tail`, which a release build would
do silently.
"""

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Spec, dims, f32

B, C, H, E = dims("B C H E")
Row = Layout("Row", [B], f32, [Field("head", 8), Field("tail", 8)])
Heads = Layout("Heads", [B], f32, [Field("h", shape=[4, 8])], doc="four heads of 8 elements a row")
Half = Layout("Half", [B], f32, width=8)
Amount = Layout("Amount", [], f32, width=1)

shift = Kernel("shift", "shift.cu.j2", [
    In("src", [B, C]),
    In("amount", [1]),
    Out("dst", [B, C]),
], grid=Grid.elements("dst"), doc="dst[r, c] = src[r, c + amount]")

shift_row = Kernel("shift_row", "shift_row.cu.j2", [
    In("src", [B, C]),
    In("amount", [1]),
    Out("dst", [B, C]),
], grid=Grid.elements("dst"), doc="shift, indexing a row object: dst.row(r)[c] = src.row(r)[c + amount]")

shift_heads = Kernel("shift_heads", "shift_heads.cu.j2", [
    In("src", [B, H, E]),
    In("amount", [1]),
    Out("dst", [B, H, E]),
], grid=Grid.rows("dst"), doc="dst[b, h, e] = src[b, h, e + amount], one index per axis")

spec = Spec("debugged", kernels=[
    shift.bind(src=Row.head, amount=Amount, dst=Half),
    shift_row.bind(src=Row.head, amount=Amount, dst=Half),
    shift_heads.bind(src=Heads.h, amount=Amount, dst=Heads.h),
])
