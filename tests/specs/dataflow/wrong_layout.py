"""Dataflow case: see tests/test_dataflow.py. `# <-` marks the line the diagnostic must name."""

from layoutgen import Buffer, Field, Grid, In, Kernel, Launch, Layout, Out, Program, Spec, dims, f32

B, C = dims("B C")
Row = Layout("Row", [B], f32, [Field("head", 8), Field("tail", 8)])
Half = Layout("Half", [B], f32, width=8)
Full = Layout("Full", [B], f32, width=16)
copy = Kernel("copy", "copy.cu.j2", [In("src", [B, C]), Out("dst", [B, C])], grid=Grid.elements("dst"))

fill_head = copy.bind(name="fill_head", src=Half, dst=Row.head)
src = Buffer("src", Full, input=True)
half = Buffer("half", Half, input=True)
row = Buffer("row", Row, output=True)
program = Program("wrong_layout", [
    Launch(fill_head, src=src, dst=row),  # <- LG304: src is a Full buffer, the binding reads Half
    Launch(copy, name="fill_tail", src=half.whole, dst=row.tail),
])
spec = Spec("wrong_layout", kernels=[fill_head], programs=[program])
