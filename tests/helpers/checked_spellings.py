"""One kernel holding each spelling of a pointer taken from a view and stored in a raw pointer type, for the host
test (tests/test_checked_pointers_host.py) and the GPU test (tests/gpu/test_checked_pointers_gpu.py) of the debug
build's checked pointer types (layoutgen/codegen/checked_types.py).

The kernel `probe` (a thread per row of `x`: 96 columns of rows 136 elements apart) runs the spelling the scalar
`which` names, reading element `row * S` from the field's first element into `y`'s column 0 and zeroing the rest
of `y`'s row; S is the packed stride (96: row 1 reads column 96, the first past the field) or the view's own
(136: `y[..., 0]` is `x[..., 0]`). Every run also goes through pointers no parameter's footprint covers and
pointer code that must compile unchanged around them (UNCOVERED).
"""

from __future__ import annotations

from pathlib import Path

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Scalar, Spec, dims, f32, i32
from tests.helpers.rendering import write_template

B, K, F = dims("B K F")
Window = Layout("Window", [B, K], f32, [Field("snap", 96), Field("ctx", 40)])
Packed = Layout("Packed", [B, K], f32, width=96)

# Each spelling on one line of the template: line FIRST_LINE + its number (where the pointer is taken).
SPELLINGS = {
    "local": "const float* base = &x.at(0, 0); y.at(row, 0) = base[row * S];",
    "helper": "read_first(&x.at(0, 0), &y.at(row, 0), row * S);",
    "float4_kept": ("const float4* g = reinterpret_cast<const float4*>(&x.at(0, 0)); "
                    "y.at(row, 0) = g[row * S / 4].x;"),
    "c_cast": "const float4 v = *(const float4*)(&x.at(0, 0) + row * S); y.at(row, 0) = v.x;",
    "static_cast": "const float* s = static_cast<const float*>(&x.at(0, 0)); y.at(row, 0) = s[row * S];",
    "const_cast": "float* w = const_cast<float*>(&x.at(0, 0)); y.at(row, 0) = w[row * S];",
    "for_init": "for (const float* p = &x.at(0, 0) + row * S; p < &x.at(0, 0) + row * S + 1; ++p) y.at(row, 0) = *p;",
}
PREAMBLE = """{% block preamble %}
// A helper that takes the raw pointer types the user writes.
__device__ void read_first(const float* from, float* to, long long at) {
    to[0] = from[at];
}
{% endblock %}
"""
# Pointers no parameter covers, used in every run, and pointer code that must compile unchanged around them: a local
# array through a `float*`, nullptr, an integer cast, a raw pointer subtracted and compared, a cast to float2, a
# lambda's local; none reports anything.
UNCOVERED = ("    float local[2] = {0.0f, 0.0f}; float* l = local; l[1] = 1.0f; l = nullptr; l = local + 1;\n"
             "    const float* none = nullptr; if (none != nullptr) y.at(row, 0) = *none; none = (const float*)0;\n"
             "    const float* q = local; if (!q || q - local != 0 || q > l || !(q < l)) return;\n"
             "    const float2* two = (const float2*)local; if ((*two).x != 0.0f || [&] { const float* m = local; "
             "return m[0]; }() != 0.0f) return;\n"
             "    for (int c = 1; c < F; ++c) y.at(row, c) = 0.0f;\n")
FIRST_LINE = PREAMBLE.count("\n") + 2 + UNCOVERED.count("\n")


def probe_spec(tmp: Path, stride: int) -> Spec:
    """The spec of the probe kernel, its template written into ``tmp``, reading at packed stride ``stride``."""
    cases = "".join(f"    if (which == {n}) {{ {text} }}\n" for n, text in enumerate(SPELLINGS.values()))
    template = write_template(tmp, PREAMBLE + f"    constexpr long long S = {stride};\n" + UNCOVERED + cases)
    kernel = Kernel("probe", template, [In("x", [B, K, F]), Out("y", [B, K, F]), Scalar("which", i32)],
                    grid=Grid.rows("x", block=32), template_root=tmp)
    return Spec("probe", kernels=[kernel.bind(x=Window.snap, y=Packed)])
