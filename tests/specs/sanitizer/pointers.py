"""Pointers taken from views that stay checked pointers in the debug build (`auto`, a template helper, a cast
to float4 kept in `auto`), each at the wrong stride, and a read of the column just before a field that
starts at an odd f32 column, which AddressSanitizer cannot see (it poisons 8-byte granules from their end):
`check --execute` refuses each through the checked pointer, and the GPU's debug build stops each alike
(tests/gpu/test_sanitizer_gpu.py)."""

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Spec, dims, f32

B, K, F = dims("B K F")

Window = Layout("Window", [B, K], f32, [Field("snap", 96), Field("ctx", 40)], doc="96 features, 40 of context")
Odd = Layout("Odd", [B, K], f32, [Field("lead", 1), Field("snap", 95)], doc="a field from column 1")
Packed = Layout("Packed", [B, K], f32, width=96, doc="the features, packed")
Packed95 = Layout("Packed95", [B, K], f32, width=95, doc="the odd features, packed")


def rows_kernel(name: str) -> Kernel:
    """A thread per row of `x`, writing `y`."""
    return Kernel(name, f"{name}.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])], grid=Grid.rows("x", block=128))


spec = Spec("sanitizer_pointers", kernels=[
    *(rows_kernel(name).bind(x=Window.snap, y=Packed) for name in ("auto_pointer", "template_helper", "auto_float4")),
    rows_kernel("column_before").bind(x=Odd.snap, y=Packed95),
])
