"""A kernel that crashes on the CPU (an integer division by zero): `check --execute` reports LG532."""

from layoutgen import Grid, In, Kernel, Layout, Out, Spec, dims, f32

B, F = dims("B F")

Rows = Layout("Rows", [B], f32, width=8, doc="rows")

divide = Kernel("divide", "crash_divide.cu.j2", [In("x", [B, F]), Out("y", [B, F])], grid=Grid.rows("x", block=32))

spec = Spec("sanitizer_crash", kernels=[divide.bind(x=Rows, y=Rows)])
