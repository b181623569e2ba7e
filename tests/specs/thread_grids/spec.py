"""One kernel per grid of threads, written as the examples are, for golden files and offline compiles.

`Rows` packs 40 values and 8 columns of padding in rows of 48 (a strided field, 32-byte aligned);
`Series` holds B series of K rows. `row_center` is Grid.rows (a thread a row, a loop over its columns);
`element_scale` Grid.elements (a thread an element); `vector_assemble` Grid.vectors over rows moved in
16-byte groups beside a per-column table read by element (which narrows nothing: 10 groups a row, not 40);
`series_broadcast` Grid.vectors over symbolic rows, the series of each row found with lg::divmod;
`head_negate` Grid.elements over rows of heads of D elements, D bound at launch (the threads are counted then).
"""

from layoutgen import Field, Grid, In, InOut, Kernel, Layout, Out, Spec, dims, f32

N, B, K, F, C, H, D = dims("N B K F C H D")

Rows = Layout("Rows", [N], f32, [Field("x", 40), Field("pad", 8)])
Dense = Layout("Dense", [N], f32, width=40)
Stats = Layout("Stats", [40], f32, [Field("scale", 1), Field("shift", 1)])
Series = Layout("Series", [B], f32, width=16)
Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)])
Heads = Layout("Heads", [N], f32, [Field("q", shape=[4, D]), Field("k", shape=[2, D])])

row_center = Kernel("row_center", "row_center.cu.j2", [In("x", [N, F]), Out("y", [N, F])],
                    grid=Grid.rows("x"), doc="y = x less its row's mean, a thread a row")
element_scale = Kernel("element_scale", "element_scale.cu.j2", [In("x", [N, F]), In("scale", [F, 1]),
                                                              Out("y", [N, F])],
                       grid=Grid.elements("y"), doc="y[r, c] = x[r, c] * scale[c], a thread an element")
vector_assemble = Kernel("vector_assemble", "vector_assemble.cu.j2", [
    In("x", [N, F]), In("scale", [F, 1]), In("shift", [F, 1]), Out("y", [N, F]),
], grid=Grid.vectors("y"), doc="y = x * scale + shift, a thread a 16-byte group of a row")
series_broadcast = Kernel("series_broadcast", "series_broadcast.cu.j2", [In("ctx", [B, C]), Out("dst", [B, K, C])],
                          grid=Grid.vectors("dst"), doc="each series' row into its K rows, a thread a 16-byte group")
head_negate = Kernel("head_negate", "head_negate.cu.j2", [InOut("q", [N, H, D])], grid=Grid.elements("q"),
                     doc="q = -q, a thread an element of rows of H heads of D")

spec = Spec("thread_grids", kernels=[
    row_center.bind(x=Rows.x, y=Dense),
    element_scale.bind(x=Rows.x, scale=Stats.scale, y=Dense),
    vector_assemble.bind(x=Rows.x, scale=Stats.scale, shift=Stats.shift, y=Dense),
    series_broadcast.bind(ctx=Series, dst=Window.context),
    head_negate.bind(q=Heads.q),
])
