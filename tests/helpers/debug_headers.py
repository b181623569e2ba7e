"""A spec whose template calls a `__device__` helper of a project header with a pointer taken from a view, for the
host test (tests/test_debug_headers.py) and the GPU test (tests/gpu/test_debug_headers_gpu.py) of the debug build's
header copies (layoutgen/codegen/debug_headers.py).

The kernel `rowsum` (a thread per row of `x`: 96 columns of rows 136 elements apart) writes into `y`'s column 0 the
sum of the first `n` elements of its row, through `row_sum(&x.at(row, 0), n)` of the project header `row_help.cuh`,
and zeros the rest of `y`'s row. With `n` = 96 it reads its row's field; with `n` past 96 the helper reads the
`ctx` columns after it, outside the footprint, on the header's line HELPER_LINE.
"""

from __future__ import annotations

from pathlib import Path

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Scalar, Spec, dims, f32, i32
from tests.helpers.rendering import write_template

B, K, F = dims("B K F")
Window = Layout("Window", [B, K], f32, [Field("snap", 96), Field("ctx", 40)])
Packed = Layout("Packed", [B, K], f32, width=96)

HEADER = """// A project header: a helper that takes the raw pointer type the user writes.
#pragma once

__device__ inline float row_sum(const float* p, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; ++i) s += p[i];
    return s;
}
"""
#: The header's line of the read `p[i]`, where the CPU run reports a read past the field.
HELPER_LINE = 6
#: The template's line of the call, where the pointer is taken from the view: the GPU's line of the same read (an
#: operator takes no caller's line there, docs/templates.md "Pointers in the debug build").
CALL_LINE = 4
TEMPLATE = """{%% block preamble %%}
#include "row_help.cuh"
{%% endblock %%}
    y.at(row, 0) = row_sum(&x.at(row, 0), %s);
    for (int c = 1; c < F; ++c) y.at(row, c) = 0.0f;
"""


def header_folder(tmp: Path) -> Path:
    """The project's header folder ``tmp/include``, holding ``row_help.cuh``."""
    folder = tmp / "include"
    folder.mkdir(exist_ok=True)
    (folder / "row_help.cuh").write_text(HEADER, encoding="utf-8")
    return folder


def rowsum_spec(tmp: Path, count: str = "n") -> Spec:
    """The spec of the kernel `rowsum`, its template written into ``tmp``; ``count`` is the helper's `n` (the
    scalar `n`, or a number: the CPU run chooses the scalars' values itself)."""
    template = write_template(tmp, TEMPLATE % count)
    kernel = Kernel("rowsum", template, [In("x", [B, K, F]), Out("y", [B, K, F]), Scalar("n", i32)],
                    grid=Grid.rows("x", block=32), template_root=tmp)
    return Spec("rowsum", kernels=[kernel.bind(x=Window.snap, y=Packed)])
