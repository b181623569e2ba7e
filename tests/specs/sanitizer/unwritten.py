"""Reads of an output element nothing wrote yet: `layoutgen check --execute` refuses each at the read (LG656).

Through a view's accessor, through a pointer taken from the view, a `+=` into an output nobody zeroed, and an
atomicAdd into one (the column sums of a block reduction into an `Out`: the classic accumulation into an output
nobody zeroed). tests/specs/sanitizer/unwritten_good.py holds correct kernels of the same shapes.
"""

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Spec, dims, f32

B, K, F = dims("B K F")

Window = Layout("Window", [B, K], f32, [Field("snap", 96), Field("ctx", 40)], doc="96 features, 40 of context")
Packed = Layout("Packed", [B, K], f32, width=96, doc="the features, packed")
Sums = Layout("Sums", [], f32, width=96, doc="a sum per feature")

mirror = Kernel("unwritten_mirror", "unwritten_mirror.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                grid=Grid.rows("x", block=128))
pointer = Kernel("unwritten_pointer", "unwritten_pointer.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                 grid=Grid.rows("x", block=128))
accumulate = Kernel("unwritten_accumulate", "unwritten_accumulate.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])],
                    grid=Grid.rows("x", block=128))
atomic = Kernel("unwritten_atomic", "unwritten_atomic.cu.j2", [In("x", [B, K, F]), Out("total", [F])],
                grid=Grid.tiles("x", rows=32, block=128))

spec = Spec("sanitizer_unwritten", kernels=[
    mirror.bind(x=Window.snap, y=Packed),
    pointer.bind(x=Window.snap, y=Packed),
    accumulate.bind(x=Window.snap, y=Packed),
    atomic.bind(x=Window.snap, total=Sums),
])
