"""What a compiled launch from Python adds to the C floor, one piece at a time.

Run on a GPU machine from the repository root (a C compiler and Python's headers are needed, as for the
compiled launch path itself):

    PYTHONPATH=. python3 benchmarks/bench_launch_steps.py

Builds benchmarks/launch/step_parts.c, a small extension whose functions each launch the benchmark's
empty kernel once from a Python call, each adding one piece of what runtime/fastlaunch/ does around
cuLaunchKernel (the GIL released, the current device read, CuPy's current stream read as CuPy's own launches
read it and as the compiled path reads it, torch's current stream as the compiled path reads it for torch
tensors), and times them with a C loop in this process, a program's step and the validated launcher (on CuPy
arrays and on torch tensors), against the C floor beside each round as bench_launch.py times its rows (the
same floor program, the same interleaving, pinned to one CPU). So the table says what a launch from Python
costs before layoutgen reads or checks anything, and what the compiled path costs beyond that. Prints a
table; no assertion.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_launch import (N, ROOT, ROUNDS, FloorProgram, Interleaved, build_floor, generated_module,
                          launchers_cubin, one_round, pin_to_this_cpu)


def build_step_parts(out: Path) -> Any:
    """benchmarks/launch/step_parts.c built and imported; exits with the compiler's words where it fails."""
    compiler = sysconfig.get_config_var("CC") or "cc"
    compiler = compiler.split()[0] if shutil.which(compiler.split()[0]) else "gcc"
    library = out / f"step_parts{sysconfig.get_config_var('EXT_SUFFIX')}"
    built = subprocess.run([compiler, "-shared", "-fPIC", "-O2", f"-I{sysconfig.get_paths()['include']}",
                            str(ROOT / "benchmarks/launch/step_parts.c"), "-o", str(library), "-ldl"],
                           capture_output=True, text=True, check=False)
    if built.returncode:
        sys.exit(f"step_parts.c did not build:\n{built.stderr}")
    spec = importlib.util.spec_from_file_location("step_parts", library)
    assert spec is not None and spec.loader is not None  # a file just built
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def torch_or_none() -> Any:
    """torch where it is installed and sees the GPU, else None (its rows are left out)."""
    try:
        import torch
    except ImportError:
        return None
    return torch if torch.cuda.is_available() else None


def main() -> None:
    cpu = pin_to_this_cpu()
    import cupy

    from layoutgen.runtime.fastpath import program_steps

    B, K = 64, 32
    arrays = [cupy.random.standard_normal(shape, dtype=cupy.float32)
              for shape in ((B, K, 56), (40, 40), (40,), (B, K, 40), (B, K, 40))]
    sync = cupy.cuda.runtime.deviceSynchronize
    with tempfile.TemporaryDirectory(dir=ROOT) as tmp:
        module = generated_module(Path(tmp))
        empty = module._lg_kernel_empty
        launcher = module.empty
        launcher(*arrays)  # planned, and taught to the compiled path
        cubin = launchers_cubin(empty)
        kernel = cupy.RawModule(path=str(cubin)).get_function("empty")
        parts = build_step_parts(Path(tmp))
        pointers = tuple(a.data.ptr for a in arrays)
        torch = torch_or_none()
        exchange = getattr(torch.Tensor, "__dlpack_c_exchange_api__", None) if torch is not None else None
        parts.setup(int(kernel.kernel.ptr), (*pointers, B, K), exchange)

        def c_loop() -> float:
            start = time.perf_counter()
            parts.c_loop(N)
            sync()
            return (time.perf_counter() - start) / N * 1e6

        rows = [("a C loop of cuLaunchKernel, in this process", c_loop),
                ("a Python call of a C function doing nothing", lambda: one_round(parts.nothing, sync)),
                ("one launch a call, the GIL held", lambda: one_round(parts.bare, sync)),
                ("+ the GIL released around it", lambda: one_round(parts.gil_released, sync)),
                ("+ the current device read first", lambda: one_round(parts.device_read, sync)),
                ("+ on CuPy's current stream", lambda: one_round(parts.current_stream, sync)),
                ("+ on CuPy's stream of the device read", lambda: one_round(parts.device_stream, sync))]
        if exchange is not None:
            rows.append(("+ on torch's current stream (exchange API)", lambda: one_round(parts.torch_stream, sync)))
        plan = next(iter(empty._plans.values()))
        steps = program_steps("empty", 5, [(plan.launch, plan.checked.blocks, plan.checked.block, (0, 1, 2, 3, 4),
                                            plan.checked.symbols)])
        if steps is not None:
            rows.append(("layoutgen: a program's step (nothing checked)", lambda: one_round(steps.launch, sync,
                                                                                            pointers, None)))
        rows.append(("layoutgen: the launcher, 5 CuPy arrays validated", lambda: one_round(launcher, sync, *arrays)))
        if torch is not None:
            tensors = [torch.empty(a.shape, device="cuda") for a in arrays]  # as bench_launch.py's torch rows
            launcher(*tensors)
            rows.append(("layoutgen: the launcher, 5 torch tensors validated",
                         lambda: one_round(launcher, sync, *tensors)))
        program = build_floor(Path(tmp))
        if program is None:
            sys.exit("no C floor: nvcc is needed")
        with FloorProgram(program, cubin, "empty") as floor:
            floor.round_us()
            timed = Interleaved(rows, floor.round_us)
    print(f"{'launch':<52} {'µs/call':>8}  vs C floor, round by round")
    for name, _ in rows:
        print(f"{name:<52} {timed.median_us(name):>8.2f}  {timed.spread(name)}")
    print(f"{'C program: bare cuLaunchKernel loop (the floor)':<52} {timed.floor_us():>8.2f}")
    print(f"device: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}, N={N}, median of {ROUNDS} rounds, "
          f"interleaved with the floor's; " + (f"pinned to CPU {cpu}" if cpu is not None else "not pinned"))


if __name__ == "__main__":
    main()
