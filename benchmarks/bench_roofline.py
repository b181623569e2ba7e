"""Every example kernel against its memory roofline, and the tiled VSN kernels against the same by hand.

Run on a GPU machine from the repository root:

    PYTHONPATH=. python3 benchmarks/bench_roofline.py

The copy ceiling is a device-to-device copy of 1 GiB, counting the bytes read and written, measured in
the same run. A kernel's bytes are those it must read and write (a field's bytes, not its rows'
padding). Each time is the median over 20 CUDA-event intervals of 5 back-to-back launches through
the generated launcher (so its host cost overlaps the kernel before), after warm-up, on outputs
first poisoned with NaN and inputs of fresh random data.

Each kernel is printed beside its placement ceiling: what a copy of the same bytes in the same geometry
reaches in the same run (PLACEMENTS: the generated scatter of the field it writes, a plain device-to-device
copy for packed rows, the QKV copies by hand of benchmarks/bench_copies.py, and for `context_broadcast`, which
reads its B context rows once and only writes its B * K, the write-only fill of its field by hand), that
ceiling as a share of the copy ceiling, and the kernel's rate over the placement's (each over its own bytes). A field whose 64-byte groups straddle 64-byte
blocks of memory in some rows (`Window.context`: 64 bytes at byte 160 of rows of 224) is said so: there the
placement's own ceiling, not the copy ceiling, is the limit.

The second table compares the generated `variable_selection_fwd` and `variable_selection_bwd` with
the same kernels written by hand as CuPy `RawKernel`s with literal strides
(benchmarks/roofline/vsn_*_hand.cu: persistent warps on tensor cores, each warp its own tiles, as the
generated ones; both include the VSN's project header examples/vsn/include/vsn_tf32.cuh for the mma
arithmetic): time ratio (interleaved runs), registers from the compile report of each, and whether the
outputs are bitwise equal (`grad_W` and `grad_b` are sums of atomic adds from every block, whose order
varies from run to run: they are compared with the float64 reference instead, in both).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
B, K = 4096, 512  # VSN rows: [B, K] windows of 56 f32
QB, QS, QD = 8, 2048, 128  # QKV tokens: [B, S] rows of 48 heads of D f32
REPS, BATCH = 20, 5


def time_ms(fn: Callable[[], object], reps: int = REPS, batch: int = BATCH) -> float:
    import cupy

    for _ in range(2):
        fn()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(reps):
        start.record()
        for _ in range(batch):
            fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / batch)
    return statistics.median(times)


def copy_ceiling() -> float:
    """Bytes a second (read + written) of a 1 GiB device-to-device copy."""
    import cupy

    nbytes = 1 << 30
    src, dst = cupy.empty(nbytes, cupy.uint8), cupy.empty(nbytes, cupy.uint8)
    ms = time_ms(lambda: cupy.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes,
                                                       cupy.cuda.runtime.memcpyDeviceToDevice, 0))
    return 2 * nbytes / (ms * 1e-3)


#: Each example kernel's placement: the copy of the same bytes in the same geometry (a row of the tables below).
PLACEMENTS = {
    "snap_feature_assemble": "scatter_Window_snap",  # packed rows in, Window.snap out
    "context_broadcast": "fill_Window_context",  # Window.context written; it reads B rows only (from L2)
    "mse_grad": "device-to-device copy",  # packed rows in and out
    "rope": "rope placement: q, k in place",
    "kv_split": "kv_split placement: k, v gathered",
}
#: The kernels measured against their placement (the placements themselves, the tensor-core kernels: the table of
#: generated / by hand below; the kernels of a few KB: the launch).
NO_PLACEMENT = {"variable_selection_fwd": "by hand: see below", "variable_selection_bwd": "by hand: see below"}


def straddles(view: Any, block: int = 64) -> str:
    """Where a field of at most ``block`` bytes a row lies across two ``block``-byte blocks of memory in some
    rows: "straddles 64-byte blocks in 1 of 2 rows" (each such row's write is two partial blocks); empty where
    it never does, or where the field is wider (only its ends are partial blocks)."""
    row, start, width = view.layout.row_bytes, view.byte_offset, view.width * view.dtype.size
    if width > block:
        return ""
    period = block // math.gcd(row, block)
    crossing = sum(1 for r in range(period) if (r * row + start) % block + width > block)
    return f"straddles {block}-byte blocks in {crossing} of {period} rows" if crossing else ""


def vsn_rows(ceiling: float) -> list[tuple[str, int, float]]:
    """(kernel, bytes moved, ms) of every VSN kernel on [B, K] rows."""
    import cupy

    import generated.vsn as vsn
    from benchmarks.bench_copies import field_fill

    rng = cupy.random.default_rng()
    n = B * K
    f32 = cupy.float32

    def poisoned(*shape: int) -> Any:
        return cupy.full(shape, cupy.nan, f32)

    raw = rng.standard_normal((B, K, 40), dtype=f32)
    stats = cupy.ascontiguousarray(cupy.stack([rng.standard_normal(40, dtype=f32), rng.random(40, dtype=f32) + 0.5], axis=1))
    ctx = rng.standard_normal((B, 16), dtype=f32)
    window = poisoned(B, K, 56)
    w = rng.standard_normal((40, 40), dtype=f32) * 0.3
    b = rng.standard_normal(40, dtype=f32)
    gates, y, grad_y, grad_x = (poisoned(B, K, 40) for _ in range(4))
    target = rng.standard_normal((B, K, 40), dtype=f32)
    grad_w, grad_b = cupy.zeros((40, 40), f32), cupy.zeros(40, f32)
    snap, context = poisoned(B, K, 40), poisoned(B, K, 16)
    vsn.snap_feature_assemble(raw, stats, stats, window)
    vsn.context_broadcast(ctx, window)
    vsn.variable_selection_fwd(window, w, b, gates, y)
    vsn.mse_grad(y, target, grad_y)
    small = 2 * 40 * 40 * 4 + 2 * 40 * 4
    cases: list[tuple[str, int, Callable[[], object]]] = [
        ("snap_feature_assemble", n * (160 + 160), lambda: vsn.snap_feature_assemble(raw, stats, stats,
                                                                                      window)),
        ("context_broadcast", B * 64 + n * 64, lambda: vsn.context_broadcast(ctx, window)),
        ("variable_selection_fwd", n * (160 + 320), lambda: vsn.variable_selection_fwd(window, w, b, gates, y)),
        ("mse_grad", n * (320 + 160), lambda: vsn.mse_grad(y, target, grad_y)),
        ("variable_selection_bwd", n * (480 + 160), lambda: vsn.variable_selection_bwd(
            window, w, gates, grad_y, grad_x, grad_w, grad_b)),
        ("zero_grads (6.6 KB)", small // 2, lambda: vsn.zero_grads(grad_w, grad_b)),
        ("sgd_update (13 KB)", small * 3 // 2, lambda: vsn.sgd_update(w, b, grad_w, grad_b, 0.0)),
        ("gather_Window_snap", n * 320, lambda: vsn.gather_Window_snap(window, snap)),
        ("scatter_Window_snap", n * 320, lambda: vsn.scatter_Window_snap(snap, window)),
        ("gather_Window_context", n * 128, lambda: vsn.gather_Window_context(window, context)),
        ("scatter_Window_context", n * 128, lambda: vsn.scatter_Window_context(context, window)),
        ("fill_Window_context", n * 64, field_fill(window, n, 56, 40, 16)),  # written only: a broadcast's placement
    ]
    return [(name, nbytes, time_ms(fn)) for name, nbytes, fn in cases]


def qkv_rows() -> list[tuple[str, int, float]]:
    """(kernel, bytes moved, ms) of the QKV kernels, then of their placements (benchmarks/bench_copies.py)."""
    import cupy

    import generated.qkv as qkv
    from benchmarks.bench_copies import qkv_placements

    rng = cupy.random.default_rng()
    tokens = QB * QS
    buf = rng.standard_normal((QB, QS, 48 * QD), dtype=cupy.float32)
    pos = cupy.asarray(rng.integers(0, QS, (QB, QS, 1)), dtype=cupy.int32)
    k_cache = cupy.full((QB, 8, QS, QD), cupy.nan, cupy.float32)
    v_cache = cupy.full_like(k_cache, cupy.nan)
    head = QD * 4
    rows = [
        ("rope", tokens * (2 * 40 * head + 4), time_ms(lambda: qkv.rope(buf, buf, pos))),
        ("kv_split", tokens * (2 * 16 * head), time_ms(lambda: qkv.kv_split(buf, buf, k_cache, v_cache))),
    ]
    return rows + [(label, nbytes, time_ms(launch)) for label, (nbytes, launch) in
                   qkv_placements(buf, k_cache, v_cache).items()]


def hand_comparison() -> list[tuple[str, float, int, int, str]]:
    """(kernel, time ratio generated / by hand, registers generated, registers by hand, equal outputs)."""
    import cupy
    import numpy as np

    import generated.vsn as vsn
    from examples.vsn import reference as ref
    from layoutgen.runtime.cache import CubinCache
    from layoutgen.runtime.nvrtc import CompileRequest

    arch = f"sm_{cupy.cuda.Device().compute_capability}"
    cache = CubinCache.default()
    folder = ROOT / "generated" / "vsn"

    include = (str(ROOT / "examples" / "vsn" / "include"),)  # [tool.layoutgen] include: vsn_tf32.cuh

    def compiled(source: str, name: str, headers: tuple[tuple[str, str], ...] = ()) -> tuple[Any, int]:
        request = CompileRequest(source=source, name=name, headers=headers, arch=arch, include_dirs=include)
        cache.get_or_compile(request)
        kernel = name.rsplit("/", 1)[-1].removesuffix(".cu")
        function = cupy.RawModule(path=str(cache.paths(request.key())[0])).get_function(kernel)
        return function, function.num_regs  # the driver's word for the loaded function

    header = (("vsn.cuh", (folder / "vsn.cuh").read_text()),)
    regs_gen = {k: compiled((folder / f"{k}.cu").read_text(), f"vsn/{k}.cu", header)[1]
                for k in ("variable_selection_fwd", "variable_selection_bwd")}
    hand_fwd, regs_fwd = compiled((ROOT / "benchmarks/roofline/vsn_fwd_hand.cu").read_text(), "vsn_fwd_hand.cu")
    hand_bwd, regs_bwd = compiled((ROOT / "benchmarks/roofline/vsn_bwd_hand.cu").read_text(), "vsn_bwd_hand.cu")

    rng = cupy.random.default_rng()
    f32 = cupy.float32
    window = rng.standard_normal((B, K, 56), dtype=f32)
    w = rng.standard_normal((40, 40), dtype=f32) * 0.3
    b = rng.standard_normal(40, dtype=f32)
    grad_y = rng.standard_normal((B, K, 40), dtype=f32)
    outs = {label: [cupy.full((B, K, 40), cupy.nan, f32) for _ in range(3)] + [cupy.zeros((40, 40), f32),
                                                                              cupy.zeros(40, f32)]
            for label in ("generated", "by hand")}
    # Blocks of 4 warps, each warp its own tiles of 32 rows of 44 floats: the forward 3 of x and 1 of gates,
    # the backward 1 each of x, gates and grad_y, then [4, 40, 40] + [4, 40] floats of the warps' sums.
    tile = 32 * 44 * 4
    fwd_smem, bwd_smem = 4 * 4 * tile, 4 * 3 * tile + (4 * 40 * 40 + 4 * 40) * 4
    hand_fwd.max_dynamic_shared_size_bytes = fwd_smem
    hand_bwd.max_dynamic_shared_size_bytes = bwd_smem
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    warp_tiles = (B * K + 31) // 32

    def resident(kernel: Any, smem: int) -> int:  # what stays resident, at most a block for 4 warp tiles
        per_sm = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, 128, smem)
        return min(per_sm * sms, (warp_tiles + 3) // 4)

    fwd_blocks, bwd_blocks = resident(hand_fwd, fwd_smem), resident(hand_bwd, bwd_smem)
    n = np.int64

    def fwd(label: str) -> None:
        gates, y = outs[label][0], outs[label][1]
        if label == "generated":
            vsn.variable_selection_fwd(window, w, b, gates, y)
        else:
            hand_fwd((fwd_blocks,), (128,), (window, w, b, gates, y, n(B), n(K)), shared_mem=fwd_smem)

    def bwd(label: str) -> None:
        gates, _, grad_x, grad_w, grad_b = outs[label]
        if label == "generated":
            vsn.variable_selection_bwd(window, w, gates, grad_y, grad_x, grad_w, grad_b)
        else:
            hand_bwd((bwd_blocks,), (128,), (window, w, gates, grad_y, grad_x, grad_w, grad_b, n(B), n(K)),
                     shared_mem=bwd_smem)

    rows = []
    for name, launch in (("variable_selection_fwd", fwd), ("variable_selection_bwd", bwd)):
        for label in outs:
            for out in outs[label][3:]:
                out.fill(0)
            launch(label)
        cupy.cuda.runtime.deviceSynchronize()
        if name == "variable_selection_fwd":
            same = all(bool(cupy.array_equal(outs["generated"][i], outs["by hand"][i])) for i in (0, 1))
            g64, _ = ref.vsn_forward(window.get()[:8, :, :40], w.get(), b.get())
            close = all(ref.relative_error(outs[lb][0].get()[:8], g64) < 1e-5 for lb in outs)
            equal = f"gates, y bitwise: {same}; vs float64: {close}"
        else:
            same = bool(cupy.array_equal(outs["generated"][2], outs["by hand"][2]))
            _, dw64, db64 = ref.vsn_backward(window.get()[..., :40], w.get(), outs["generated"][0].get(), grad_y.get())
            close = all(ref.relative_error(outs[lb][3].get(), dw64) < 1e-4 and
                        ref.relative_error(outs[lb][4].get(), db64) < 1e-4 for lb in outs)
            equal = f"grad_x bitwise: {same}; grad_W, grad_b vs float64: {close}"
        times: dict[str, list[float]] = {label: [] for label in outs}
        for _ in range(REPS):
            for label in outs:
                times[label].append(time_ms(lambda: launch(label), reps=1, batch=BATCH))
        ratio = statistics.median(times["generated"]) / statistics.median(times["by hand"])
        hand_regs = regs_fwd if name.endswith("fwd") else regs_bwd
        rows.append((name, ratio, regs_gen[name], hand_regs, equal))
    return rows


def main() -> None:
    import cupy

    from examples.vsn.spec import Window

    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    ceiling = copy_ceiling()
    print(f"{name}: copy ceiling {ceiling / 1e12:.2f} TB/s (1 GiB device-to-device, read + written)")
    notes = {"context_broadcast": straddles(Window.context), "scatter_Window_context": straddles(Window.context),
             "fill_Window_context": straddles(Window.context),
             "snap_feature_assemble": straddles(Window.snap), "scatter_Window_snap": straddles(Window.snap)}
    print(f"{'kernel':<34} {'MB':>8} {'µs':>9} {'GB/s':>7} {'of copy':>8} {'placement':>34} {'its ceiling':>12} "
          f"{'ratio':>6}  note")
    for label, rows in ((f"VSN, [{B}, {K}] rows", vsn_rows(ceiling)), (f"QKV, [{QB}, {QS}] tokens, D = {QD}",
                                                                         qkv_rows())):
        print(f"-- {label}")
        rates = {kernel: nbytes / (ms * 1e-3) for kernel, nbytes, ms in rows}
        rates["device-to-device copy"] = ceiling
        for kernel, nbytes, ms in rows:
            rate = rates[kernel]
            head = f"{kernel:<34} {nbytes / 1e6:>8.1f} {ms * 1e3:>9.1f}"
            if nbytes < 1e6:  # a few KB: the time is the launch's, and a share of the copy ceiling means nothing
                print(f"{kernel:<34} {nbytes / 1e6:>8.4f} {ms * 1e3:>9.1f} {'launch-bound':>16}")
                continue
            placement = PLACEMENTS.get(kernel)
            if placement is None:  # a placement itself, or a kernel compared with its version by hand below
                what = NO_PLACEMENT.get(kernel, "(a placement)")
                print(f"{head} {rate / 1e9:>7.0f} {rate / ceiling:>8.1%} {what:>34} {'':>12} {'':>6}  "
                      f"{notes.get(kernel, '')}")
                continue
            ceiling_of = rates[placement]
            print(f"{head} {rate / 1e9:>7.0f} {rate / ceiling:>8.1%} {placement:>34} {ceiling_of / ceiling:>12.1%} "
                  f"{rate / ceiling_of:>6.2f}  {notes.get(kernel, '')}")
    print()
    print(f"{'kernel':<24} {'time generated / by hand':>25} {'registers (gen, hand)':>22}  outputs")
    for kernel, ratio, regs_gen, regs_hand, equal in hand_comparison():
        print(f"{kernel:<24} {ratio:>25.4f} {f'{regs_gen}, {regs_hand}':>22}  {equal}")


if __name__ == "__main__":
    main()
