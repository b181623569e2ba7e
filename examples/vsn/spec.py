"""The variable-selection pipeline of the motivating bug, declared with layoutgen.

`Window` is allocated [B, K, 56] float32: columns 0..40 of each row are
per-snapshot market features (`snap`), columns 40..56 the per-batch context
broadcast over K. The original hand-written VSN read `snap` at row stride 40;
here every kernel gets its strides from these declarations.
"""

from layoutgen import (
    Autograd, Buffer, Field, Grid, Group, In, InOut, Kernel, Launch, Layout, Out, Program, Scalar, Shared, Spec, Tile,
    Value, dims, f32, field_copies,
)

B, K, F, C = dims("B K F C")

# -- layouts -------------------------------------------------------------------

Window = Layout("Window", [B, K], f32, [
    Field("snap", 40, doc="per-snapshot market features, normalised"),
    Group("context", [
        Group("trade", [
            Field("time_in_trade", 1, doc="bars since entry"),
            Field("unrealized_R", 1, doc="open profit in units of initial risk"),
            Field("position_lots", 1, doc="signed position size"),
        ]),
        Field("regime", 4, doc="one-hot market regime"),
        Field("session", 4, doc="one-hot trading session"),
        Field("volatility_z", 1),
        Field("spread_z", 1),
        Field("funding", 1),
        Field("hour_sin", 1),
        Field("hour_cos", 1),
    ], doc="per-batch context, broadcast over K"),
], width=56, doc="one training window: K snapshots of B series")

Market = Layout("Market", [B, K], f32, width=40, doc="raw per-snapshot market input")
FeatureStats = Layout("FeatureStats", [40], f32, [Field("mean", 1), Field("inv_std", 1)],
                      doc="per-feature normalisation")
Context = Layout("Context", [B], f32, width=16, doc="per-batch context, one row per series")
Features = Layout("Features", [B, K], f32, width=40, doc="gates, outputs and their gradients")
Weights = Layout("Weights", [40], f32, width=40, doc="VSN gate weights W[i, j]")
Bias = Layout("Bias", [], f32, width=40, doc="VSN gate bias")

# -- kernels -------------------------------------------------------------------

snap_feature_assemble = Kernel("snap_feature_assemble", "snap_feature_assemble.cu.j2", [
    In("raw", [B, K, F]),
    In("mean", [F, 1]),
    In("inv_std", [F, 1]),
    Out("snap", [B, K, F]),
], grid=Grid.vectors("snap"), doc="normalise and clip raw features into Window.snap")

context_broadcast = Kernel("context_broadcast", "context_broadcast.cu.j2", [
    In("ctx", [B, C]),
    Out("dst", [B, K, C]),
], grid=Grid.vectors("dst"), doc="copy each series' context into every snapshot's row")

#: Warps a block of the VSN's tensor-core kernels: each works alone on tiles of 32 rows of its own.
WARPS = 4

variable_selection_fwd = Kernel("variable_selection_fwd", "variable_selection_fwd.cu.j2", [
    In("x", [B, K, F]),
    In("W", [F, F]),
    In("b", [F]),
    Out("gates", [B, K, F], vector=16),
    Out("y", [B, K, F], vector=16),
], grid=Grid.persistent_warps("x", rows=32, block=32 * WARPS),
   shared=[Tile("xs", "x", scope="warp", stages=3), Tile("gs", "gates", scope="warp")],
   doc="gates = softmax(W x + b); y = gates * x; on tensor cores (3xTF32), warps alone over tiles of 32 rows, "
       "the next two in flight")

variable_selection_bwd = Kernel("variable_selection_bwd", "variable_selection_bwd.cu.j2", [
    In("x", [B, K, F]),
    In("W", [F, F]),
    In("gates", [B, K, F]),
    In("grad_y", [B, K, F]),
    Out("grad_x", [B, K, F], vector=16),
    InOut("grad_W", [F, F]),
    InOut("grad_b", [F]),
], grid=Grid.persistent_warps("x", rows=32, block=32 * WARPS),
   shared=[Tile("xs", "x", scope="warp"), Tile("gs", "gates", scope="warp"), Tile("ys", "grad_y", scope="warp"),
           Shared("warp_dw", f32, [WARPS, F, F]), Shared("warp_db", f32, [WARPS, F])],
   doc="gradients of the VSN on tensor cores (3xTF32): warps alone over tiles of 32 rows sum grad_W and grad_b "
       "in registers; each block adds its sums once")

mse_grad = Kernel("mse_grad", "mse_grad.cu.j2", [
    In("y", [B, K, F]),
    In("target", [B, K, F]),
    Out("grad_y", [B, K, F]),
], grid=Grid.vectors("grad_y"), doc="gradient of the mean squared error over features")

zero_grads = Kernel("zero_grads", "zero_grads.cu.j2", [
    Out("grad_W", [F, F]),
    Out("grad_b", [F]),
], grid=Grid.vectors("grad_W"), doc="clear the accumulated weight gradients")

sgd_update = Kernel("sgd_update", "sgd_update.cu.j2", [
    InOut("W", [F, F]),
    InOut("b", [F]),
    In("grad_W", [F, F]),
    In("grad_b", [F]),
    Scalar("lr", f32, finite=True),  # the step size, already divided by the rows
], grid=Grid.vectors("W"), doc="W -= lr * grad_W; b -= lr * grad_b")

# -- the training step as a program ------------------------------------------------

raw = Buffer("raw", Market, input=True)
stats = Buffer("stats", FeatureStats, input=True)
ctx = Buffer("ctx", Context, input=True)
target = Buffer("target", Features, input=True)
W = Buffer("W", Weights, input=True, output=True)
b = Buffer("b", Bias, input=True, output=True)
lr = Value("lr", f32)  # given each run: vsn_step(..., lr=0.05)
window = Buffer("window", Window, output=True)  # the context columns feed the model after the VSN
gates = Buffer("gates", Features)
y = Buffer("y", Features, output=True)
grad_y = Buffer("grad_y", Features)
grad_x = Buffer("grad_x", Features, output=True)  # handed on to whatever produced the features
grad_W = Buffer("grad_W", Weights)
grad_b = Buffer("grad_b", Bias)

vsn_step = Program("vsn_step", [
    Launch(snap_feature_assemble, raw=raw, mean=stats.mean, inv_std=stats.inv_std, snap=window.snap),
    Launch(context_broadcast, ctx=ctx, dst=window.context),
    Launch(variable_selection_fwd, x=window.snap, W=W, b=b, gates=gates, y=y),
    Launch(mse_grad, y=y, target=target, grad_y=grad_y),
    Launch(zero_grads, grad_W=grad_W, grad_b=grad_b),
    Launch(variable_selection_bwd, x=window.snap, W=W, gates=gates, grad_y=grad_y, grad_x=grad_x,
           grad_W=grad_W, grad_b=grad_b),
    Launch(sgd_update, W=W, b=b, grad_W=grad_W, grad_b=grad_b, lr=lr),
], doc="one training step of the VSN: assemble the window, forward, loss gradient, backward, update")

SnapPacked = Layout("SnapPacked", [B, K], f32, width=40, doc="Window.snap copied out, packed")
ContextPacked = Layout("ContextPacked", [B, K], f32, width=16, doc="Window.context copied out, packed")

vsn_fwd = variable_selection_fwd.bind(x=Window.snap, W=Weights, b=Bias, gates=Features, y=Features)
vsn_bwd = variable_selection_bwd.bind(x=Window.snap, W=Weights, gates=Features, grad_y=Features,
                                      grad_x=Features, grad_W=Weights, grad_b=Bias)

# torch: the forward saves x, W and gates for the backward, which turns the gradient of y into those of
# x (the snap columns of the window: the context columns get zeros), W and b; gates gets none.
vsn_autograd = Autograd(vsn_fwd, vsn_bwd, saves=["x", "W", "gates"],
                        grads={"y": "grad_y", "x": "grad_x", "W": "grad_W", "b": "grad_b"})

spec = Spec("vsn", kernels=[
    snap_feature_assemble.bind(raw=Market, mean=FeatureStats.mean, inv_std=FeatureStats.inv_std,
                               snap=Window.snap),
    context_broadcast.bind(ctx=Context, dst=Window.context),
    vsn_fwd,
    vsn_bwd,
    *field_copies(Window.snap, SnapPacked),
    *field_copies(Window.context, ContextPacked),
], programs=[vsn_step], torch=True, autograd=[vsn_autograd])
