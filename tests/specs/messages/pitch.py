"""Messages case (tests/test_messages.py): one buffer written at pitch 128 and read at pitch 512.

A bug from a public project: the reader's rows are 512 floats apart, the buffer's 128. `# <-` marks the
line the LG304 must name.
"""

from layoutgen import Buffer, Field, Grid, In, Kernel, Launch, Layout, Out, Pad, Program, Spec, dims, f32

N, C = dims("N C")
Image = Layout("Image", [N], f32, width=128)
Pitched = Layout("Pitched", [N], f32, [Field("pixels", 128), Pad(384)])
copy = Kernel("copy", "copy.cu.j2", [In("src", [N, C]), Out("dst", [N, C])], grid=Grid.elements("dst"))

write = copy.bind(name="write", src=Image, dst=Image)
read = copy.bind(name="read", src=Pitched.pixels, dst=Image)
source = Buffer("source", Image, input=True)
image = Buffer("image", Image)
result = Buffer("result", Image, output=True)
program = Program("blur", [
    Launch(write, src=source, dst=image),
    Launch(read, src=image, dst=result),  # <-
])
spec = Spec("pitch", kernels=[write, read], programs=[program])
