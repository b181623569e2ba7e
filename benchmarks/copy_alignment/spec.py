"""One 16-column (64-byte) context field in rows of three geometries, for bench_copy_alignment.py.

- `Rows56`: the VSN window: 224-byte rows, context at byte 160, so every other
  row's context straddles a 64-byte boundary;
- `Rows64`: 256-byte rows with 8 columns of padding before the context, at
  byte 192: every row's context is one aligned 64-byte block;
- `Rows64Late`: 256-byte rows, context at byte 160: every row's straddles.
"""

from layoutgen import Field, Pad, Layout, Spec, dims, f32, field_copies

B, K = dims("B K")

Rows56 = Layout("Rows56", [B, K], f32, [Field("snap", 40), Field("context", 16)])
Rows64 = Layout("Rows64", [B, K], f32, [Field("snap", 40), Pad(8), Field("context", 16)])
Rows64Late = Layout("Rows64Late", [B, K], f32, [Field("snap", 40), Field("context", 16), Pad(8)])
Packed = Layout("Packed", [B, K], f32, width=16)

spec = Spec("copy_alignment", kernels=[
    *field_copies(Rows56.context, Packed), *field_copies(Rows64.context, Packed),
    *field_copies(Rows64Late.context, Packed),
])
