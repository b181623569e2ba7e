"""The empty kernel of benchmarks/launch with torch operators: the operators' overhead alone."""

from layoutgen import Grid, In, Kernel, Layout, Out, Spec, dims, f32

B, K, F = dims("B K F")
Window = Layout("Window", [B, K], f32, width=56)
Features = Layout("Features", [B, K], f32, width=40)
Weights = Layout("Weights", [40], f32, width=40)
Bias = Layout("Bias", [], f32, width=40)

empty = Kernel("empty", "empty.cu.j2", [
    In("x", [B, K, 56]), In("W", [F, F]), In("b", [F]), Out("gates", [B, K, F]), Out("y", [B, K, F]),
], grid=Grid.rows("x"), template_root="../launch")

spec = Spec("torch_bench", kernels=[empty.bind(x=Window, W=Weights, b=Bias, gates=Features, y=Features)],
            torch=True)
