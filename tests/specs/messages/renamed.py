"""Messages case (tests/test_messages.py): `snap` was renamed `features`, and three uses still say `snap`.

`# <-` marks each line an LG111 must name.
"""

from layoutgen import Buffer, Field, In, Kernel, Launch, Layout, Out, Program, Spec, dims, f32

B, K, F = dims("B K F")
Window = Layout("Window", [B, K], f32, [Field("features", 40), Field("context", 16)])
Features = Layout("Features", [B, K], f32, width=40)
scale = Kernel("scale", "scale.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])])

twice = scale.bind(name="twice", x=Window.snap, y=Features)  # <-
snap = Window["snap"]  # <-
halved = scale.bind(name="halved", x=snap, y=Features)
window = Buffer("window", Window, input=True)
out = Buffer("out", Features, output=True)
step = Program("step", [Launch(scale, name="thrice", x=window.snap, y=out)])  # <-
spec = Spec("renamed", kernels=[twice, halved], programs=[step])
