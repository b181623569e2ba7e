"""Messages case (tests/test_messages.py): `{{` of C++ brace initialisation in a template (brace.cu.j2)."""

from layoutgen import Grid, In, Kernel, Layout, Out, Spec, dims, f32

N, C = dims("N C")
Image = Layout("Image", [N], f32, width=128)
halve = Kernel("halve", "brace.cu.j2", [In("src", [N, C]), Out("dst", [N, C])], grid=Grid.elements("dst"))
spec = Spec("brace", kernels=[halve.bind(src=Image, dst=Image)])
