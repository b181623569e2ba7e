"""A small spec for golden files, the CLI and determinism tests.

`Window` packs 40 features and 16 columns of context in rows of 56, like the
VSN example; `scale_snap` reads and writes the features through a plain
[B, K, F] parameter (so it must use row stride 56), `copy_context` broadcasts
per-series context into every row's context columns.
"""

from layoutgen import Field, Layout, dims, f32
from layoutgen.declare.kernels import Grid, In, InOut, Kernel, Out
from layoutgen.declare.spec import Spec

B, K, F, C = dims("B K F C")

Window = Layout("Window", [B, K], f32, [
    Field("snap", 40),
    Field("context", 16),
], width=56)
Context = Layout("Context", [B], f32, width=16)

scale_snap = Kernel("scale_snap", "scale_snap.cu.j2", [
    InOut("x", [B, K, F]),
], grid=Grid.rows("x"), doc="double every feature of each row")

copy_context = Kernel("copy_context", "copy_context.cu.j2", [
    In("ctx", [B, C]),
    Out("dst", [B, K, C]),
], grid=Grid.elements("dst"), doc="broadcast each series' context over K")

spec = Spec("mini", kernels=[
    scale_snap.bind(x=Window.snap),
    copy_context.bind(ctx=Context, dst=Window.context),
])
