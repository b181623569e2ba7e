"""Messages case (tests/test_messages.py): two specs in one module. `# <-` marks the second."""

from layoutgen import Grid, In, Kernel, Layout, Out, Spec, dims, f32

N, C = dims("N C")
Image = Layout("Image", [N], f32, width=128)
copy = Kernel("copy", "copy.cu.j2", [In("src", [N, C]), Out("dst", [N, C])], grid=Grid.elements("dst"))

forward = Spec("forward", kernels=[copy.bind(src=Image, dst=Image)])
spec = backward = Spec("backward", kernels=[copy.bind(src=Image, dst=Image)])  # <-
