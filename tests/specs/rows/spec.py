"""The seed bug in every spelling, against views whose rows are row objects (tests/test_row_object.py).

`Window.snap` is 40 columns of rows 56 apart, as in the VSN example. Each kernel reads it through a
template under `bodies/`, named after the kernel; `packed` reads a layout whose rows are 40 apart
through a parameter declared contiguous=True, the one place a raw pointer is handed out.
"""

from pathlib import Path

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Spec, dims, f32

B, K, F = dims("B K F")
Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)])
Features = Layout("Features", [B, K], f32, width=40)

BODIES = sorted(p.stem.removesuffix(".cu") for p in (Path(__file__).parent / "bodies").glob("*.cu.j2"))


def _kernel(name: str, contiguous: bool = False) -> Kernel:
    return Kernel(name, f"bodies/{name}.cu.j2", [In("x", [B, K, F], contiguous=contiguous), Out("y", [B, K, F])],
                  grid=Grid.rows("y"))


spec = Spec("rows", kernels=[
    *(_kernel(n).bind(x=Window.snap, y=Features) for n in BODIES if n != "packed"),
    _kernel("packed", contiguous=True).bind(x=Features, y=Features),
])
