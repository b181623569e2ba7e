"""A kernel the host runtime cannot build (it includes CUB, a library of device code the host lacks):
`check --execute` reports it as not executed, never passes it in silence (crash.py: one that crashes)."""

from layoutgen import Grid, In, Kernel, Layout, Out, Spec, dims, f32

B, F = dims("B F")

Rows = Layout("Rows", [B], f32, width=8, doc="rows")

library = Kernel("library", "odd_library.cu.j2", [In("x", [B, F]), Out("y", [B, F])], grid=Grid.rows("x", block=32))

spec = Spec("sanitizer_odd", kernels=[library.bind(x=Rows, y=Rows)])
