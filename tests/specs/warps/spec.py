"""A warp per row: a layer norm over a packed field (docs/templates.md, `Grid.warps`; tests/test_warps_host.py).

`layer_norm` normalises each row of `Window.snap` (40 of the 56 columns of a row) over its columns:
lane `l` of the row's warp holds columns `l` and `l + 32`, the warp's sums come from shuffles, and
`y = (x - mean) / sqrt(var + eps) * gamma + beta` is written to packed `Features` rows.
`softmax_gate_warps` is the tutorial's softmax gate as a warp per row (docs/tutorial.md, step 7).
"""

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Scalar, Spec, dims, f32

B, K, F = dims("B K F")
Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)])
Features = Layout("Features", [B, K], f32, width=40)
Affine = Layout("Affine", [], f32, [Field("gamma", 40), Field("beta", 40)])

layer_norm = Kernel("layer_norm", "layer_norm.cu.j2", [
    In("x", [B, K, F]),
    In("gamma", [F]),
    In("beta", [F]),
    Scalar("eps", f32, finite=True),
    Out("y", [B, K, F]),
], grid=Grid.warps("x", rows_per_warp=2, block=128), doc="layer norm of each row, a warp per two rows")

softmax_gate_warps = Kernel("softmax_gate_warps", "softmax_gate_warps.cu.j2", [
    In("x", [B, K, F]),
    Out("gates", [B, K, F]),
    Out("y", [B, K, F]),
], grid=Grid.warps("x", block=128), doc="gates = softmax(x); y = gates * x, a warp per row (docs/tutorial.md)")

spec = Spec("warps", kernels=[
    layer_norm.bind(x=Window.snap, gamma=Affine.gamma, beta=Affine.beta, y=Features),
    softmax_gate_warps.bind(x=Window.snap, gates=Features, y=Features),
])
