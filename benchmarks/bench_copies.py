"""Field copies at full bandwidth: generated gather/scatter vs torch, CuPy and the copy ceiling.

Run on a GPU machine from the repository root:

    PYTHONPATH=. python3 benchmarks/bench_copies.py

`Window` is [4096, 512, 56] float32; `snap` is columns 0..40, `context`
40..56. Bandwidth counts the bytes of the field read plus the bytes written.
The ceiling is a plain device-to-device copy of the same number of bytes.
Each figure is the median over 30 CUDA-event intervals of 10 back-to-back
launches each (so host-side launch cost overlaps the previous copy, as in a
real pipeline), after warm-up.

The QKV placements (the bytes `rope` and `kv_split` of examples/qkv move, in
their geometry, as plain copies written by hand with 16-byte accesses and no
index division: the ceilings benchmarks/bench_roofline.py holds those kernels
to) follow: `QKV [8, 2048, 48*128]` f32; `q`+`k` (heads 0..40 of each token's
48) read and written back in place, and `k`, `v` gathered into two
`[8, 8, 2048, 128]` caches.
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


QB, QS, QD = 8, 2048, 128  # QKV tokens: [B, S] rows of 48 heads of D f32 (as bench_roofline's)

#: The placements of the QKV kernels, by hand: 16-byte accesses, the grid's axes handing each thread its token,
#: head and column (no division). `qk_in_place`: block y = token, its threads the float4s of heads 0..40 (q, then
#: k), each read and written back negated (a store of the value loaded could be dropped by the compiler).
#: `context_fill`: block x = a group of rows, thread (x, y) the x-th float4 of row y's field: the write-only placement
#: of a field (what a broadcast into it can reach: it reads almost nothing).
#: `kv_gather`: block y = (b, h), block x a group of tokens, thread (x, y) the x-th float4 of token y's head h.
PLACEMENTS = r"""
extern "C" __global__ void qk_in_place(float4* qkv, int row4, int qk4) {
    float4* row = qkv + static_cast<long long>(blockIdx.y) * row4;
    for (int i = threadIdx.x; i < qk4; i += blockDim.x) {
        const float4 a = row[i];
        row[i] = make_float4(-a.x, -a.y, -a.z, -a.w);
    }
}
extern "C" __global__ void context_fill(float4* window, long long rows, int row4, int at4, int width4, float value) {
    const long long r = static_cast<long long>(blockIdx.x) * blockDim.y + threadIdx.y;  // thread x: a float4 of row r
    if (r >= rows || static_cast<int>(threadIdx.x) >= width4) return;
    window[r * row4 + at4 + threadIdx.x] = make_float4(value, value, value, value);
}
extern "C" __global__ void kv_gather(const float4* __restrict__ qkv, float4* __restrict__ kc, float4* __restrict__ vc,
                                     int S, int hkv, int row4, int k4, int v4, int d4) {
    const int s = blockIdx.x * blockDim.y + threadIdx.y;
    if (s >= S) return;
    const int b = blockIdx.y / hkv, h = blockIdx.y % hkv;  // once a block, uniform
    const float4* token = qkv + (static_cast<long long>(b) * S + s) * row4 + h * d4 + threadIdx.x;
    const long long out = (static_cast<long long>(blockIdx.y) * S + s) * d4 + threadIdx.x;
    kc[out] = token[k4];
    vc[out] = token[v4];
}
"""


def qkv_placements(buf: object, k_cache: object, v_cache: object) -> dict[str, tuple[int, Callable[[], object]]]:
    """(bytes moved, launch) of the placements of `rope` and `kv_split` on ``buf`` [QB, QS, 48*QD] f32 and the
    caches [QB, 8, QS, QD]: the bytes each kernel must move, in its geometry, as a copy by hand."""
    import cupy

    module = cupy.RawModule(code=PLACEMENTS, options=("-std=c++17",))
    in_place, gather = module.get_function("qk_in_place"), module.get_function("kv_gather")
    tokens, d4, i32 = QB * QS, QD // 4, cupy.int32
    row4, qk4 = 48 * d4, 40 * d4
    per_block = max(1, 256 // d4)  # tokens a block of the gather
    head = QD * 4
    return {
        "rope placement: q, k in place": (tokens * 2 * 40 * head, lambda: in_place(
            (1, tokens), (256,), (buf, i32(row4), i32(qk4)))),
        "kv_split placement: k, v gathered": (tokens * 2 * 16 * head, lambda: gather(
            (-(-QS // per_block), QB * 8), (d4, per_block),
            (buf, k_cache, v_cache, i32(QS), i32(8), i32(row4), i32(32 * d4), i32(40 * d4), i32(d4)))),
    }


def field_fill(window: object, rows: int, row_floats: int, at: int, width: int) -> Callable[[], object]:
    """The write-only placement of a field of ``window`` (rows of ``row_floats`` f32, the field ``width`` floats
    at ``at``, both multiples of 4): each row's field written with 16-byte stores, no division."""
    import cupy

    fill = cupy.RawModule(code=PLACEMENTS, options=("-std=c++17",)).get_function("context_fill")
    per_block = 64
    return lambda: fill((-(-rows // per_block),), (width // 4, per_block),
                        (window, cupy.int64(rows), cupy.int32(row_floats // 4), cupy.int32(at // 4),
                         cupy.int32(width // 4), cupy.float32(1.0)))


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

    buf = cupy.random.standard_normal((QB, QS, 48 * QD), dtype=cupy.float32)
    k_cache, v_cache = (cupy.full((QB, 8, QS, QD), cupy.nan, cupy.float32) for _ in range(2))
    placements = qkv_placements(buf, k_cache, v_cache)
    placements["kv_split placement: k, v gathered"][1]()
    host = buf.get().reshape(QB, QS, 48, QD)
    assert np.array_equal(k_cache.get(), host[:, :, 32:40].transpose(0, 2, 1, 3)), "the gather placement is wrong"
    assert np.array_equal(v_cache.get(), host[:, :, 40:48].transpose(0, 2, 1, 3)), "the gather placement is wrong"
    qkv_bytes = QB * QS * 2 * 40 * QD * 4
    rows.append((f"device-to-device copy of {qkv_bytes >> 21} MiB (ceiling)", qkv_bytes, ceiling(qkv_bytes // 2)))
    for label, (nbytes, launch) in placements.items():
        rows.append((label, nbytes, time_ms(launch)))

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
