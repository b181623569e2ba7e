"""A kernel with a scalar of every dtype a scalar may have, for golden files, offline compiles and launches.

`echo` writes each scalar it is given into an output array (the floats as f64,
the signed integers as i64, the unsigned ones as u64, the bool as a u8), so a
GPU test can compare what arrived with what was passed, exactly. Its scalars
are declared between its arrays: the launcher keeps the declaration's order,
the kernel takes the pointers first. `echo_step` runs it as a program, with
two values given each run and the rest constants.
"""

from layoutgen import (
    Buffer, Grid, Kernel, Launch, Layout, Out, Program, Scalar, Spec, Value, bool_, f32, f64, i8, i16, i32, i64, u8,
    u16, u32, u64,
)

Floats = Layout("Floats", [], f64, width=2, doc="f32, f64")
Signed = Layout("Signed", [], i64, width=4, doc="i8, i16, i32, i64")
Unsigned = Layout("Unsigned", [], u64, width=4, doc="u8, u16, u32, u64")
Flags = Layout("Flags", [], u8, width=1, doc="bool, as 0 or 1")

echo = Kernel("echo", "echo.cu.j2", [
    Scalar("x_f32", f32, finite=True),
    Out("floats", [2]),
    Scalar("x_f64", f64),
    Scalar("x_i8", i8),
    Scalar("x_i16", i16),
    Scalar("x_i32", i32),
    Scalar("x_i64", i64),
    Out("ints", [4]),
    Scalar("x_u8", u8),
    Scalar("x_u16", u16),
    Scalar("x_u32", u32),
    Scalar("x_u64", u64),
    Out("uints", [4]),
    Out("flags", [1]),
    Scalar("x_bool", bool_),
], grid=Grid.rows("floats", block=32), doc="write every scalar into the outputs")

floats = Buffer("floats", Floats, output=True)
ints = Buffer("ints", Signed, output=True)
uints = Buffer("uints", Unsigned, output=True)
flags = Buffer("flags", Flags, output=True)
rate = Value("rate", f32)
seed = Value("seed", u64)

echo_step = Program("echo_step", [
    Launch(echo, floats=floats, ints=ints, uints=uints, flags=flags, x_f32=rate, x_f64=-0.5,
           x_i8=-128, x_i16=32767, x_i32=-7, x_i64=2**40, x_u8=255, x_u16=0, x_u32=2**32 - 1, x_u64=seed,
           x_bool=True),
], doc="echo with `rate` and `seed` given each run")

spec = Spec("scalars", kernels=[echo.bind(floats=Floats, ints=Signed, uints=Unsigned, flags=Flags)],
            programs=[echo_step])
