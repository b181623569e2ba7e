"""Messages case (tests/test_messages.py): a program declared here but not listed in the spec.

`# <-` marks the line the LG306 must name.
"""

from layoutgen import Buffer, Grid, In, Kernel, Launch, Layout, Out, Program, Spec, dims, f32

N, C = dims("N C")
Image = Layout("Image", [N], f32, width=128)
copy = Kernel("copy", "copy.cu.j2", [In("src", [N, C]), Out("dst", [N, C])], grid=Grid.elements("dst"))

source = Buffer("source", Image, input=True)
result = Buffer("result", Image, output=True)
forward = Program("forward", [Launch(copy, src=source, dst=result)])
backward = Program("backward", [Launch(copy, src=source, dst=result)])  # <-
spec = Spec("unlisted", programs=[forward])
