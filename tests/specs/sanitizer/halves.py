"""16-bit float kernels run on the CPU (the host runtime's cuda_fp16.h and cuda_bf16.h): an f16 kernel and a bf16
warp reduction with shuffles pass; an f16 kernel reading its field at the wrong stride through a raw pointer is
refused like an f32 one."""

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Spec, bf16, dims, f16

B, F, G = dims("B F G")

Halves = Layout("Halves", [B], f16, width=8, doc="half-precision rows")
Mixed = Layout("Mixed", [B], f16, [Field("feat", 8), Field("extra", 4)], doc="8 features and 4 more a row")
Brain = Layout("Brain", [B], bf16, width=64, doc="bfloat16 rows")
BrainSum = Layout("BrainSum", [B], bf16, width=1, doc="a bfloat16 sum a row")

half_scale = Kernel("half_scale", "half_scale.cu.j2", [In("x", [B, F]), Out("y", [B, F])], grid=Grid.rows("x", block=32))
bf16_row_sum = Kernel("bf16_row_sum", "bf16_row_sum.cu.j2", [In("x", [B, F]), Out("s", [B, G])],
                      grid=Grid.warps("x", block=64))
half_stride = Kernel("half_stride", "half_stride.cu.j2", [In("x", [B, F]), Out("y", [B, F])],
                     grid=Grid.rows("x", block=32))

spec = Spec("sanitizer_halves", kernels=[
    half_scale.bind(x=Halves, y=Halves),
    bf16_row_sum.bind(x=Brain, s=BrainSum),
    half_stride.bind(x=Mixed.feat, y=Halves),
])
