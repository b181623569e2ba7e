"""A template with `{% for %}` and `{% if %}`: `#line` must follow the template."""

from layoutgen import Field, Layout, dims, f32
from layoutgen.declare.kernels import InOut, Kernel
from layoutgen.declare.spec import Spec

B, K, F = dims("B K F")

Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)], width=56)

unrolled = Kernel("unrolled", "loop.cu.j2", [InOut("x", [B, K, F])])

spec = Spec("lines", kernels=[unrolled.bind(x=Window.snap)])
