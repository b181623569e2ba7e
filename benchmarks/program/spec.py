"""A program of 24 small launches: two buffers updated in turn, `a += x * b` then `b += x * a`.

Host overhead per kernel is what the benchmark compares, so each kernel is
small; the launches are InOut updates, which the dataflow checks allow to
follow each other.
"""

from layoutgen import Buffer, Grid, In, InOut, Kernel, Launch, Layout, Program, Spec, dims, f32

R, C = dims("R C")
Rows = Layout("Rows", [R], f32, width=64)

mix = Kernel("mix", "mix.cu.j2", [In("src", [R, C]), InOut("dst", [R, C])], grid=Grid.elements("dst"),
             doc="dst += 0.5 * src")

a = Buffer("a", Rows, input=True, output=True)
b = Buffer("b", Rows, input=True, output=True)
LAUNCHES = 24
chain = Program("chain", [Launch(mix, src=b, dst=a) if i % 2 == 0 else Launch(mix, src=a, dst=b)
                          for i in range(LAUNCHES)], doc=f"{LAUNCHES} launches of `mix`, alternating buffers")

spec = Spec("program_bench", programs=[chain])
