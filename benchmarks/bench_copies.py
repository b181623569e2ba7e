"""Field copies at full bandwidth: generated gather/scatter vs torch, CuPy and the copy ceiling.

Run on a GPU machine from the repository root:

    PYTHONPATH=. python3 benchmarks/bench_copies.py

`Window` is [4096, 512, 56] float32; `snap` is columns 0..40, `context`
40..56. Bandwidth counts the bytes of the field read plus the bytes written.
The ceiling is a plain device-to-device copy of the same number of bytes.
Each figure is the median over 30 CUDA-event intervals of 10 back-to-back
launches each (so host-side launch cost overlaps the previous copy, as in a
real pipeline), after warm-up.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable

B, K = 4096, 512
REPS, BATCH = 30, 10


def time_ms(fn: Callable[[], object]) -> float:
    import cupy

    for _ in range(3):
        fn()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(REPS):
        start.record()
        for _ in range(BATCH):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / BATCH)
    return statistics.median(times)


def main() -> None:
    import cupy
    import numpy as np
    import torch

    import generated.vsn as vsn

    window = cupy.random.standard_normal((B, K, 56), dtype=cupy.float32)
    snap = cupy.empty((B, K, 40), cupy.float32)
    context = cupy.empty((B, K, 16), cupy.float32)
    tw, ts, tc = (torch.as_tensor(a, device="cuda") for a in (window, snap, context))

    # correctness first: every copy equals the numpy slice
    vsn.gather_Window_snap(window, snap)
    vsn.gather_Window_context(window, context)
    host = window.get()
    assert np.array_equal(snap.get(), host[..., :40]) and np.array_equal(context.get(), host[..., 40:])
    snap2 = cupy.random.standard_normal((B, K, 40), dtype=cupy.float32)
    vsn.scatter_Window_snap(snap2, window)
    assert np.array_equal(window.get()[..., :40], snap2.get())
    assert np.array_equal(window.get()[..., 40:], host[..., 40:]), "scatter wrote outside snap"

    rows: list[tuple[str, int, float]] = []

    def ceiling(nbytes: int) -> float:
        src = cupy.empty(nbytes // 4, cupy.float32)
        dst = cupy.empty_like(src)
        return time_ms(lambda: cupy.cuda.runtime.memcpyAsync(
            dst.data.ptr, src.data.ptr, nbytes, cupy.cuda.runtime.memcpyDeviceToDevice, 0))

    for field, packed, t_packed, cols in (("snap", snap, ts, slice(0, 40)), ("context", context, tc, slice(40, 56))):
        nbytes = packed.nbytes
        ceil_ms = ceiling(nbytes)
        rows.append((f"device-to-device copy of {nbytes >> 20} MiB (ceiling)", 2 * nbytes, ceil_ms))
        gather = getattr(vsn, f"gather_Window_{field}")
        scatter = getattr(vsn, f"scatter_Window_{field}")
        rows.append((f"layoutgen gather Window.{field}", 2 * nbytes, time_ms(lambda: gather(window, packed))))
        rows.append((f"layoutgen scatter Window.{field}", 2 * nbytes, time_ms(lambda: scatter(packed, window))))
        rows.append((f"torch copy_ gather {field}", 2 * nbytes, time_ms(lambda: t_packed.copy_(tw[..., cols]))))
        rows.append((f"torch copy_ scatter {field}", 2 * nbytes, time_ms(lambda: tw[..., cols].copy_(t_packed))))
        rows.append((f"cupy.copyto gather {field}", 2 * nbytes,
                     time_ms(lambda: cupy.copyto(packed, window[..., cols]))))
        rows.append((f"cupy.copyto scatter {field}", 2 * nbytes,
                     time_ms(lambda: cupy.copyto(window[..., cols], packed))))

    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"Field copies, Window [{B}, {K}, 56] f32 on {name}; median of {REPS}×{BATCH} runs")
    print(f"{'operation':<48} {'ms':>8} {'GB/s':>8} {'% ceiling':>10}")
    ceil_bw = 0.0
    for label, nbytes, ms in rows:
        bw = nbytes / ms / 1e6
        ceil_bw = bw if "ceiling" in label else ceil_bw
        print(f"{label:<48} {ms:>8.3f} {bw:>8.0f} {100 * bw / ceil_bw:>9.1f}%")
    by = {label: nbytes / ms / 1e6 for label, nbytes, ms in rows}
    print("\nlayoutgen against torch copy_ of the same slice, same direction:")
    for field in ("snap", "context"):
        for op in ("gather", "scatter"):
            ours, theirs = by[f"layoutgen {op} Window.{field}"], by[f"torch copy_ {op} {field}"]
            print(f"  {op:<8} {field:<8} {ours / theirs:5.2f}×")


if __name__ == "__main__":
    main()
