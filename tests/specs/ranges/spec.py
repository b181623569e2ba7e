"""Named ranges on a non-last axis, for the diagrams: `Obs` [N, 8, 32, 32].

Rows 0..3 of axis 1 are `t1`, rows 3..8 are `t2`; each row holds 30 columns
of `x` and two of padding. `scale_rows` rewrites `x` of the `t2` rows only.
"""

from layoutgen import Axis, Field, Grid, InOut, Kernel, Layout, Pad, Spec, dims, f32

N, T, R, C = dims("N T R C")

Obs = Layout("Obs", [N, Axis([Field("t1", 3, doc="first term"), Field("t2", 5, doc="second term")]), 32], f32,
             [Field("x", 30), Pad(2)], doc="observations: 8 terms of 32 rows each")

scale_rows = Kernel("scale_rows", "scale_rows.cu.j2", [
    InOut("x", [N, T, R, C]),
], grid=Grid.rows("x"), doc="x = 2 x + 1 on every row of the view")

spec = Spec("ranges", kernels=[scale_rows.bind(x=Obs.t2.x)])
