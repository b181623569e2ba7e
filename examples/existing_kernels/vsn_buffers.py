"""The buffers of the VSN pipeline, declared once: what the team's kernels were written against."""

from layoutgen import Field, Group, Layout, dims, f32

B, K, F, C = dims("B K F C")

Window = Layout("Window", [B, K], f32, [
    Field("snap", 40, doc="per-snapshot market features"),
    Group("context", [Field("trade", 3), Field("regime", 4), Field("session", 4), Field("rest", 5)]),
], doc="one row per snapshot: 40 features, then 16 columns of per-batch context")
Context = Layout("Context", [B], f32, width=16, doc="per-batch context")
Weights = Layout("Weights", [40], f32, width=40, doc="VSN gate weights W[i, j]")
Bias = Layout("Bias", [], f32, width=40, doc="VSN gate bias")
Features = Layout("Features", [B, K], f32, width=40, doc="gates, outputs and gradients")
