"""Run the QKV kernels on a GPU: errors against float64 NumPy, and the time each takes.

From the repository root, on a machine with a GPU:

    PYTHONPATH=. python3 examples/qkv/demo.py

One fused [B, S, (H + 2 Hkv) D] buffer with H = 32, Hkv = 8, D = 128:
`rope` rotates q and k in place (one generated module; D is bound at launch),
then `kv_split` copies k and v into [B, Hkv, S, D] caches poisoned with NaN.
Prints a table; no assertion (tests/gpu/test_qkv_gpu.py asserts).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]


def main() -> None:
    import cupy

    sys.path.insert(0, str(ROOT))
    import generated.qkv as qkv
    from examples.qkv import reference as ref

    b, s, d = 4, 2048, 128
    rng = np.random.default_rng()
    host = rng.normal(size=(b, s, (ref.H + 2 * ref.HKV) * d)).astype(np.float32)
    pos = rng.integers(0, 4096, size=(b, s, 1)).astype(np.int32)
    buf, positions = cupy.asarray(host), cupy.asarray(pos)
    k_cache = cupy.full((b, ref.HKV, s, d), cupy.nan, cupy.float32)
    v_cache = cupy.full((b, ref.HKV, s, d), cupy.nan, cupy.float32)
    qkv.rope(buf, buf, positions)
    qkv.kv_split(buf, buf, k_cache, v_cache)
    rotated = ref.rope(host, pos[..., 0], d)
    want_k, want_v = ref.kv_split(rotated, d)
    print(f"[B, S] = [{b}, {s}], H = {ref.H}, Hkv = {ref.HKV}, D = {d} on "
          f"{cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}; relative error against float64 NumPy:")
    print(f"  rope (q and k in place)   {ref.relative_error(buf.get(), rotated):.2e}")
    print(f"  kv_split k_cache          {ref.relative_error(k_cache.get(), want_k):.2e}")
    print(f"  kv_split v_cache          {ref.relative_error(v_cache.get(), want_v):.2e}")

    def ms(fn) -> float:  # type: ignore[no-untyped-def]
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        fn()
        times = []
        for _ in range(20):
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, stop))
        return float(np.median(times))

    rope_bytes = 2 * b * s * (ref.H + ref.HKV) * d * 4  # q and k read and written
    split_bytes = 2 * 2 * b * s * ref.HKV * d * 4  # k and v read, both caches written
    for name, fn, nbytes in (("rope", lambda: qkv.rope(buf, buf, positions), rope_bytes),
                             ("kv_split", lambda: qkv.kv_split(buf, buf, k_cache, v_cache), split_bytes)):
        t = ms(fn)
        print(f"  {name:<9} {t:.3f} ms, {nbytes / t / 1e6:.0f} GB/s of fields read + written")


if __name__ == "__main__":
    main()
