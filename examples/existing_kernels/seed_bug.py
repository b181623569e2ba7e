"""The team's original kernels (`vsn_kernels.cu`), declared as they are: the seed bug, unchanged.

The forward and backward step through `x` 40 floats a row (`x + row * VSN_FEATURE_DIM`) where the window's
rows are 56 apart. Their signatures take no stride, so the launcher has none to fill: the declaration
matches the file, and the wrong stride is in the kernels' arithmetic, which `layoutgen check`'s reading of
the kernel and `check --execute`'s CPU run are for (issue 31, item 3). Not in [tool.layoutgen].specs.
"""

from layoutgen import ExistingKernel, Grid, In, Out, Rows, Spec

from vsn_buffers import B, C, F, K, Bias, Context, Features, Weights, Window  # noqa: E402  (the example's own layouts, beside this file)

context_broadcast = ExistingKernel("context_broadcast", "vsn_kernels.cu", [
    In("context", [B, C]), Out("window", [B, K, C]), Rows("window"), K,
], grid=Grid.rows("window", block=128))

vsn_forward = ExistingKernel("vsn_forward", "vsn_kernels.cu", [
    In("x", [B, K, F]), In("W", [F, F]), In("b", [F]), Out("gates", [B, K, F]), Out("y", [B, K, F]), Rows("x"),
], grid=Grid.rows("x", block=128))

vsn_backward = ExistingKernel("vsn_backward", "vsn_kernels.cu", [
    In("x", [B, K, F]), In("W", [F, F]), In("gates", [B, K, F]), In("grad_y", [B, K, F]),
    Out("grad_x", [B, K, F]), Out("grad_z", [B, K, F]), Rows("x"),
], grid=Grid.rows("x", block=128))

spec = Spec("existing_kernels_seed_bug", kernels=[
    context_broadcast.bind(context=Context, window=Window.context),
    vsn_forward.bind(x=Window.snap, W=Weights, b=Bias, gates=Features, y=Features),
    vsn_backward.bind(x=Window.snap, W=Weights, gates=Features, grad_y=Features, grad_x=Features, grad_z=Features),
])
