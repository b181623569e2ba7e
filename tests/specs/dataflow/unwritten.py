"""Dataflow case: see tests/test_dataflow.py. `# <-` marks the line the diagnostic must name."""

from layoutgen import Buffer, Field, Grid, In, Kernel, Launch, Layout, Out, Program, Spec, dims, f32

B, C = dims("B C")
Row = Layout("Row", [B], f32, [Field("head", 8), Field("tail", 8)])
Half = Layout("Half", [B], f32, width=8)
Full = Layout("Full", [B], f32, width=16)
copy = Kernel("copy", "copy.cu.j2", [In("src", [B, C]), Out("dst", [B, C])], grid=Grid.elements("dst"))

src = Buffer("src", Half, input=True)
row = Buffer("row", Row)
out = Buffer("out", Half, output=True)
program = Program("unwritten", [
    Launch(copy, name="fill_head", src=src, dst=row.head),
    Launch(copy, name="read_tail", src=row.tail, dst=out),  # <- LG301: nothing wrote row.tail
])
spec = Spec("unwritten", programs=[program])
