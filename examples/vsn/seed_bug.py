"""The original mistake, written with layoutgen: `layoutgen check` refuses it.

The hand-written variable-selection kernel indexed its input as packed rows of
40 features (`x[row * 40 + f]`), but the features live in `Window.snap`, whose
rows are 56 apart. Declared here with `contiguous=True` (the kernel's real
assumption) and bound to `Window.snap`, the binding fails with LG201 naming
stride 56 against 40, before anything is generated or run.
"""

from layoutgen import Grid, In, Kernel, Out, Spec, Tile, dims

from spec import Bias, Features, Weights, Window  # noqa: E402  (the example's own layouts)

B, K, F = dims("B K F")

variable_selection_fwd = Kernel("variable_selection_fwd", "variable_selection_fwd.cu.j2", [
    In("x", [B, K, F], contiguous=True),  # the kernel assumed packed 40-wide rows
    In("W", [F, F]),
    In("b", [F]),
    Out("gates", [B, K, F], vector=16),
    Out("y", [B, K, F], vector=16),
], grid=Grid.persistent_warps("x", rows=32, block=128),
   shared=[Tile("xs", "x", scope="warp", stages=3), Tile("gs", "gates", scope="warp")])

spec = Spec("vsn_seed_bug", kernels=[
    variable_selection_fwd.bind(x=Window.snap, W=Weights, b=Bias, gates=Features, y=Features),
])
