"""A packed-head kernel bound to padded heads: `layoutgen check` refuses it.

Some attention code pads every head of the fused projection from 128 to 136
elements (so that shared-memory loads of consecutive heads avoid bank
conflicts). `QKVPadded` declares that buffer: axis 2 names the heads
(`q` = heads 0..32, `k` = 32..40, `v` = 40..48), the last axis is one head,
`head` = its 128 elements and 8 of padding. A RoPE kernel written for packed
heads (`contiguous=True`: it indexes `q[(row * H + h) * 128 + d]`) bound to
`QKVPadded.q.head` would read the padding of each head and drift by 8 more
elements per head. The binding fails with LG201, naming stride 136 against
the packed 128, before anything is generated or run.
"""

from layoutgen import Axis, Field, Grid, In, InOut, Kernel, Layout, Pad, Spec, dims, f32

from spec import Positions  # noqa: E402  (the example's own layouts)

B, S, Hq, Hkv, D = dims("B S Hq Hkv D")

QKVPadded = Layout("QKVPadded", [B, S, Axis([Field("q", 32), Field("k", 8), Field("v", 8)])], f32, [
    Field("head", 128),
    Pad(8),
], doc="the fused projection with every head padded to 136 elements")

rope_packed = Kernel("rope", "rope.cu.j2", [
    InOut("q", [B, S, Hq, D], contiguous=True),  # the kernel assumed packed 128-element heads
    InOut("k", [B, S, Hkv, D], contiguous=True),
    In("pos", [B, S, 1]),
], grid=Grid.rows("pos"))

spec = Spec("qkv_bug", kernels=[
    rope_packed.bind(q=QKVPadded.q.head, k=QKVPadded.k.head, pos=Positions),
])
