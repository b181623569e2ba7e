"""A kernel whose template has a C++ error on its line 3: NVRTC must point there."""

from layoutgen import Layout, dims, f32
from layoutgen.declare.kernels import InOut, Kernel
from layoutgen.declare.spec import Spec

B, F = dims("B F")

Rows = Layout("Rows", [B], f32, width=8)

broken = Kernel("broken", "broken.cu.j2", [InOut("x", [B, F])])

spec = Spec("compile_broken", kernels=[broken.bind(x=Rows)])
