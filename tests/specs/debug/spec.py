"""A kernel that can be made to index past its field: the debug build must catch it.

`shift` copies `src` into `dst`, reading each column `amount` further along.
With amount 0 it is a copy; with amount 1 the last column of each row reads
one past the end of `Row.head`, into `Row.tail`, which a release build would
do silently.
"""

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Spec, dims, f32

B, C = dims("B C")
Row = Layout("Row", [B], f32, [Field("head", 8), Field("tail", 8)])
Half = Layout("Half", [B], f32, width=8)
Amount = Layout("Amount", [], f32, width=1)

shift = Kernel("shift", "shift.cu.j2", [
    In("src", [B, C]),
    In("amount", [1]),
    Out("dst", [B, C]),
], grid=Grid.elements("dst"), doc="dst[r, c] = src[r, c + amount]")

spec = Spec("debugged", kernels=[shift.bind(src=Row.head, amount=Amount, dst=Half)])
