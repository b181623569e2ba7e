"""A fused QKV projection with grouped-query attention, declared with layoutgen.

The projection writes one buffer `QKV` [B, S, (H + 2*Hkv)*D]: each token's row
holds the query heads `q` [H, D], then the key heads `k` [Hkv, D] and the value
heads `v` [Hkv, D]. This configuration has H = 32 query heads sharing Hkv = 8
key/value heads; the head size `D` is symbolic, bound at launch from the
array's last axis (48*D elements per row). Every stride and offset below
follows from these declarations: `k` starts at element 32*D of its row, its
heads are D apart, its rows 48*D apart.

Two kernels: `rope` rotates `q` and `k` in place (rotary position embedding,
half-split pairs (i, i + D/2)); `kv_split` copies `k` and `v` into a
contiguous cache laid out [B, Hkv, S, D], the layout attention reads.
"""

from layoutgen import Field, Grid, In, InOut, Kernel, Layout, Out, Spec, ceil_div, dims, f32, i32

B, S, D = dims("B S D")
H, HKV = 32, 8  # query heads and key/value heads of this configuration

# -- layouts -------------------------------------------------------------------

QKV = Layout("QKV", [B, S], f32, [
    Field("q", shape=[H, D], doc="query heads"),
    Field("k", shape=[HKV, D], doc="key heads, each shared by H / Hkv query heads"),
    Field("v", shape=[HKV, D], doc="value heads"),
], doc="the fused QKV projection of each token")

Positions = Layout("Positions", [B, S], i32, width=1, doc="each token's position in its sequence")

KCache = Layout("KCache", [B, HKV, S], f32, width=D, doc="keys, one packed [S, D] block per head")
VCache = Layout("VCache", [B, HKV, S], f32, width=D, doc="values, one packed [S, D] block per head")

# -- kernels -------------------------------------------------------------------

Hq, Hkv = dims("Hq Hkv")

rope = Kernel("rope", "rope.cu.j2", [
    InOut("q", [B, S, Hq, D]),
    InOut("k", [B, S, Hkv, D]),
    In("pos", [B, S, 1]),
], grid=Grid.general(blocks=ceil_div([B, S, Hq, D], 8 * 256), block=256),  # a thread per 4 pairs of a q head
   doc="rotary position embedding of q and k, in place")

kv_split = Kernel("kv_split", "kv_split.cu.j2", [
    In("k", [B, S, Hkv, D]),
    In("v", [B, S, Hkv, D]),
    Out("k_cache", [B, Hkv, S, D]),
    Out("v_cache", [B, Hkv, S, D]),
], grid=Grid.general(blocks=ceil_div([B, Hkv, S, D], 4 * 256), block=256),  # a thread per 4 elements of a cache
   doc="copy k and v into the per-head contiguous caches")

spec = Spec("qkv", kernels=[
    rope.bind(q=QKV.q, k=QKV.k, pos=Positions),
    kv_split.bind(k=QKV.k, v=QKV.v, k_cache=KCache, v_cache=VCache),
])

