"""A kernel the host runtime cannot build (an f16 field: no cuda_fp16.h on the host): `check --execute`
reports it as not executed, never passes it in silence (crash.py: one that crashes)."""

from layoutgen import Grid, In, Kernel, Layout, Out, Spec, dims, f16

B, F = dims("B F")

Halves = Layout("Halves", [B], f16, width=8, doc="half-precision rows")

halves = Kernel("halves", "odd_halves.cu.j2", [In("x", [B, F]), Out("y", [B, F])], grid=Grid.rows("x", block=32))

spec = Spec("sanitizer_odd", kernels=[halves.bind(x=Halves, y=Halves)])
