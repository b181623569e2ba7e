"""The team's VSN kernels, declared as they are: `vsn_kernels_fixed.cu`, unchanged, launched by layoutgen.

Each ExistingKernel lists the parameters of its `__global__` in order: the pointers (In/Out with a shape,
bound to a layout's view below), and what each integer carries (`Rows`, `RowStride`, `Offset`, a dim).
The generated launcher checks every array against its layout and fills the integers from the layouts:
`x_stride` is 56 because `Window` rows are 56 wide, whoever calls it. docs/existing-kernels.md walks
through it; seed_bug.py declares the original kernels (stride 40) the same way.

    layoutgen generate examples/existing_kernels/spec.py
    layoutgen check --compile examples/existing_kernels/spec.py
"""

from layoutgen import Buffer, ExistingKernel, Grid, In, Launch, Out, Program, RowStride, Offset, Rows, Spec

from vsn_buffers import B, C, F, K, Bias, Context, Features, Weights, Window  # noqa: E402  (the example's own layouts, beside this file)

context_broadcast = ExistingKernel("context_broadcast", "vsn_kernels_fixed.cu", [
    In("context", [B, C]),
    Out("window", [B, K, C]),
    Rows("window"),        # int n_rows
    K,                     # int n_snap
    RowStride("window"),   # int window_stride
    Offset("window"),      # int context_offset
], grid=Grid.rows("window", block=128), doc="each batch's context, repeated over its K snapshots")

vsn_forward = ExistingKernel("vsn_forward", "vsn_kernels_fixed.cu", [
    In("x", [B, K, F]), In("W", [F, F]), In("b", [F]), Out("gates", [B, K, F]), Out("y", [B, K, F]),
    Rows("x"),             # int n_rows
    RowStride("x"),        # int x_stride
], grid=Grid.rows("x", block=128), doc="gates = softmax(W x + b); y = gates * x")

vsn_backward = ExistingKernel("vsn_backward", "vsn_kernels_fixed.cu", [
    In("x", [B, K, F]), In("W", [F, F]), In("gates", [B, K, F]), In("grad_y", [B, K, F]),
    Out("grad_x", [B, K, F]), Out("grad_z", [B, K, F]),
    Rows("x"),             # int n_rows
    RowStride("x"),        # int x_stride
], grid=Grid.rows("x", block=128), doc="grad_z and grad_x of the VSN gates")

ctx = Buffer("ctx", Context, input=True)
window = Buffer("window", Window, input=True, output=True)  # the features come in; the context is broadcast
W = Buffer("W", Weights, input=True)
b = Buffer("b", Bias, input=True)
gates = Buffer("gates", Features, output=True)
y = Buffer("y", Features, output=True)

forward = Program("forward", [
    Launch(context_broadcast, context=ctx, window=window.context),
    Launch(vsn_forward, x=window.snap, W=W, b=b, gates=gates, y=y),
], doc="the context broadcast, then the VSN forward")

spec = Spec("existing_kernels", kernels=[
    context_broadcast.bind(context=Context, window=Window.context),
    vsn_forward.bind(x=Window.snap, W=Weights, b=Bias, gates=Features, y=Features),
    vsn_backward.bind(x=Window.snap, W=Weights, gates=Features, grad_y=Features, grad_x=Features, grad_z=Features),
], programs=[forward])
