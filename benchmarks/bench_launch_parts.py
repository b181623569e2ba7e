"""Where the generated launcher's per-call time goes: each step of its hot path timed alone.

Run on a GPU machine from the repository root:

    PYTHONPATH=. python3 benchmarks/bench_launch_parts.py

Same arrays and kernel as bench_launch.py (an empty kernel, five CuPy arrays
and two sizes). Each row repeats one step of ``KernelLauncher.__call__`` N
times, timed as bench_launch.py times a call. Prints a table; no assertion.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from bench_launch import N, ROOT, ROUNDS, generated_module, per_call_us


def main() -> None:
    import cupy

    from layoutgen.runtime import launch
    from layoutgen.runtime.driver import stream_handle
    from layoutgen.runtime.validate import Extents

    B, K = 64, 32
    arrays = (cupy.zeros((B, K, 56), cupy.float32), cupy.zeros((40, 40), cupy.float32), cupy.zeros(40, cupy.float32),
              cupy.zeros((B, K, 40), cupy.float32), cupy.zeros((B, K, 40), cupy.float32))
    sync = cupy.cuda.runtime.deviceSynchronize
    with tempfile.TemporaryDirectory(dir=ROOT) as tmp:
        module = generated_module(Path(tmp))
        launcher = module._lg_kernel_empty
        launcher(*arrays)  # compile, load, plan
        device = launch.current_device()
        arch = launch.device_arch(device)
        fn = launcher.function(device, arch)
        plan = next(iter(launcher._plans.values()))
        checked = plan.checked
        values = [a.data.ptr for a in arrays] + list(checked.symbols)
        pointers = [a.data.ptr for a in arrays]
        extents = Extents(checked.pairs)

        def read_arrays() -> list[object]:
            key: list[object] = [device]
            for a in arrays:
                data = a.data
                key += (a.shape, a.strides, a.dtype, data.device_id)
                data.ptr
            return key

        key = read_arrays()
        rows = [
            ("the whole launcher call", lambda: launcher(*arrays)),
            ("current_device()", launch.current_device),
            ("read 5 arrays into the key", read_arrays),
            ("tuple(key) and the plan lookup", lambda: launcher._plans.get(tuple(key))),
            ("device_arch() and function()", lambda: launcher.function(device, launch.device_arch(device))),
            ("stream_handle(None)", lambda: stream_handle(None)),
            ("the overlap check of the pairs", lambda: extents.first_overlap(pointers)),
            ("the packed launch alone", lambda: fn(checked.blocks, checked.block, values, None)),
            ("a.shape of one array", lambda: arrays[0].shape),
            ("a.strides of one array", lambda: arrays[0].strides),
            ("a.data.ptr of one array", lambda: arrays[0].data.ptr),
        ]
        print(f"{'step':<36} {'µs/call':>9}")
        for name, step in rows:
            print(f"{name:<36} {per_call_us(step, sync):>9.3f}")
    print(f"device: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}, N={N}, median of {ROUNDS} rounds")


if __name__ == "__main__":
    main()
