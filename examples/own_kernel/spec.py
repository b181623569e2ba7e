"""The VSN forward as a hand-written CUDA file (no Jinja): `vsn_forward.cu`, bound to the VSN layouts.

`vsn_forward.cu` includes the generated views header and defines a `__device__` function that takes the
views; layoutgen generates the kernel that builds them from the launch's arrays and calls it, the checked
launcher (`generated/own_kernel/__init__.py`) and a C header of the layouts' facts for host code
(`generated/own_kernel/own_kernel_facts.h`). docs/own-kernels.md walks through it.

    layoutgen generate examples/own_kernel/spec.py
    layoutgen check --compile examples/own_kernel/spec.py
"""

from layoutgen import Field, Grid, Group, In, Layout, Out, SourceKernel, Spec, dims, f32

B, K, F = dims("B K F")

Window = Layout("Window", [B, K], f32, [
    Field("snap", 40, doc="per-snapshot market features"),
    Group("context", [Field("trade", 3), Field("regime", 4), Field("session", 4), Field("rest", 5)]),
], doc="one row per snapshot: 40 features, then 16 columns of per-batch context")
Weights = Layout("Weights", [40], f32, width=40, doc="VSN gate weights W[i, j]")
Bias = Layout("Bias", [], f32, width=40, doc="VSN gate bias")
Features = Layout("Features", [B, K], f32, width=40, doc="gates and outputs")

vsn_forward = SourceKernel("vsn_forward_cu", "vsn_forward.cu", [
    In("x", [B, K, F]),
    In("W", [F, F]),
    In("b", [F]),
    Out("gates", [B, K, F]),
    Out("y", [B, K, F]),
], entry="vsn_forward", grid=Grid.rows("x", block=128),
   doc="gates = softmax(W x + b); y = gates * x; a thread per row, hand-written")

spec = Spec("own_kernel", kernels=[vsn_forward.bind(x=Window.snap, W=Weights, b=Bias, gates=Features, y=Features)],
            facts=True)  # generated/own_kernel/own_kernel_facts.h: the layouts' numbers for host code
