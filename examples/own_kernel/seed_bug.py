"""The original mistake with a hand-written kernel: a raw pointer read as packed 40-wide rows.

`vsn_forward_raw.cu` indexes `x.raw_pointer()[row * 40 + f]`: a raw pointer is only handed out for a
parameter declared contiguous=True, and that declaration bound to `Window.snap` (rows 56 apart) is LG201
before anything is generated. (Through the views, `x.row(0) + row * 40` does not compile at all:
tests/test_own_kernels.py shows both.)

    layoutgen check examples/own_kernel/seed_bug.py
"""

from layoutgen import Grid, In, Out, SourceKernel, Spec, dims

from spec import Bias, Features, Weights, Window  # noqa: E402  (the example's own layouts)

B, K, F = dims("B K F")

vsn_forward = SourceKernel("vsn_forward_raw", "vsn_forward_raw.cu", [
    In("x", [B, K, F], contiguous=True),  # the kernel assumed packed 40-wide rows
    In("W", [F, F]),
    In("b", [F]),
    Out("gates", [B, K, F]),
    Out("y", [B, K, F]),
], entry="vsn_forward", grid=Grid.rows("x", block=128))

spec = Spec("own_kernel_seed_bug", kernels=[vsn_forward.bind(x=Window.snap, W=Weights, b=Bias, gates=Features,
                                                               y=Features)])
