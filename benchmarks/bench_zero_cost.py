"""Zero cost: the generated variable_selection_fwd against the same kernel by hand.

Run on a GPU machine from the repository root:

    PYTHONPATH=. python3 benchmarks/bench_zero_cost.py

Both kernels are compiled by the same NVRTC with the same options for the
device's arch; registers come from the compile report (ptxas -v). Times are
CUDA-event medians of interleaved runs on [4096, 512] rows, and the outputs
of the two are compared for equality first.
"""

from __future__ import annotations

import statistics
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
B, K, REPS = 4096, 512, 40


def main() -> None:
    import cupy
    import numpy as np

    from layoutgen.runtime.cache import CubinCache
    from layoutgen.runtime.nvrtc import CompileRequest

    arch = f"sm_{cupy.cuda.Device().compute_capability}"
    folder = ROOT / "generated" / "vsn"
    cache = CubinCache.default()
    generated = CompileRequest(
        source=(folder / "variable_selection_fwd.cu").read_text(), name="vsn/variable_selection_fwd.cu",
        headers=(("vsn.cuh", (folder / "vsn.cuh").read_text()),), arch=arch, report=True,
    )
    hand = CompileRequest(
        source=(ROOT / "benchmarks/zero_cost/vsn_fwd_hand.cu").read_text(), name="vsn_fwd_hand.cu",
        arch=arch, report=True,
    )
    kernels = {}
    registers = {}
    for label, request, name in (("generated", generated, "variable_selection_fwd"), ("by hand", hand, "vsn_fwd_hand")):
        result = cache.get_or_compile(request)
        registers[label] = {r.kernel: r for r in result.resources}[name]
        kernels[label] = cupy.RawModule(path=str(cache.paths(request.key())[0])).get_function(name)

    rng = cupy.random.default_rng()
    window = rng.standard_normal((B, K, 56), dtype=cupy.float32)
    w = rng.standard_normal((40, 40), dtype=cupy.float32) * 0.3
    b = rng.standard_normal(40, dtype=cupy.float32)
    outs = {label: (cupy.full((B, K, 40), cupy.nan, cupy.float32), cupy.full((B, K, 40), cupy.nan, cupy.float32))
            for label in kernels}
    grid, block = ((B * K + 127) // 128,), (128,)

    def launch(label: str) -> None:
        g, y = outs[label]
        kernels[label](grid, block, (window, w, b, g, y, np.int64(B), np.int64(K)))

    for label in kernels:
        launch(label)
    cupy.cuda.runtime.deviceSynchronize()
    same = all(bool(cupy.array_equal(outs["generated"][i], outs["by hand"][i])) for i in range(2))

    times: dict[str, list[float]] = {label: [] for label in kernels}
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    for _ in range(3):
        for label in kernels:
            launch(label)
    for _ in range(REPS):
        for label in kernels:
            start.record()
            launch(label)
            stop.record()
            stop.synchronize()
            times[label].append(cupy.cuda.get_elapsed_time(start, stop))

    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"variable_selection_fwd, [{B}, {K}] rows of Window [B, K, 56] f32 on {name} ({arch})")
    print(f"{'kernel':<12} {'ms (median)':>12} {'registers':>10} {'spills':>8} {'stack':>6}")
    for label in kernels:
        r = registers[label]
        print(f"{label:<12} {statistics.median(times[label]):>12.4f} {r.registers:>10} "
              f"{r.spill_stores + r.spill_loads:>8} {r.stack_frame:>6}")
    ratio = statistics.median(times["generated"]) / statistics.median(times["by hand"])
    print(f"time ratio generated / by hand: {ratio:.4f}; outputs bitwise equal: {same}")


if __name__ == "__main__":
    main()
