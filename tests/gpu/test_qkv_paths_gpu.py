"""Both paths of the QKV kernels (issue 33) on the GPU, against float64 NumPy.

`rope` and `kv_split` move 16 bytes at once where a head allows it (D/2, resp. D, a multiple of 4, and the
arrays 16-byte aligned: lg::aligned) and element by element where not. test_qkv_gpu.py runs D = 128 and 64
(the 16-byte path); here D = 6, 10 and 3 (each thread's 4 pairs or elements one by one, across heads and rows),
D = 8 (the smallest 16-byte case), and caches that start 4 bytes past a 16-byte boundary (the element path at
D = 128). Outputs are poisoned with NaN first; inputs are fresh random data.
"""

from __future__ import annotations

import numpy as np
import pytest

from examples.qkv import reference as ref

pytestmark = pytest.mark.gpu
TOL = 1e-3  # as test_qkv_gpu.py


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


@pytest.fixture
def qkv():  # type: ignore[no-untyped-def]
    import generated.qkv as module

    return module


def _device(a: np.ndarray, dtype: str = "float32"):  # type: ignore[no-untyped-def]
    import cupy

    return cupy.asarray(np.ascontiguousarray(a, dtype=dtype))


@pytest.mark.parametrize("d", [6, 10, 8, 16])
def test_rope_on_heads_of_every_size(qkv, rng, d: int) -> None:  # type: ignore[no-untyped-def]
    b, s = 3, 37
    host = rng.normal(size=(b, s, (ref.H + 2 * ref.HKV) * d))
    pos = rng.integers(0, 2048, size=(b, s, 1))
    buf = _device(host)
    qkv.rope(buf, buf, _device(pos, "int32"))
    got = buf.get()
    assert ref.relative_error(got, ref.rope(host.astype(np.float32), pos[..., 0], d)) < TOL
    assert np.array_equal(ref.split(got, d)[2], ref.split(host.astype(np.float32), d)[2]), "rope wrote into v"


@pytest.mark.parametrize(("d", "shift"), [(3, 0), (6, 0), (8, 0), (128, 1)])
def test_kv_split_on_heads_of_every_size_and_caches_off_16_bytes(qkv, rng, d: int, shift: int) -> None:  # type: ignore[no-untyped-def]
    import cupy

    b, s = 2, 19
    host = rng.normal(size=(b, s, (ref.H + 2 * ref.HKV) * d))
    buf = _device(host)
    n = b * ref.HKV * s * d
    # each cache `shift` floats into a poisoned allocation: 4 bytes past a 16-byte boundary when shift is 1
    k_flat, v_flat = cupy.full(n + 1, cupy.nan, cupy.float32), cupy.full(n + 1, cupy.nan, cupy.float32)
    k_cache = k_flat[shift:shift + n].reshape(b, ref.HKV, s, d)
    v_cache = v_flat[shift:shift + n].reshape(b, ref.HKV, s, d)
    qkv.kv_split(buf, buf, k_cache, v_cache)
    want_k, want_v = ref.kv_split(host.astype(np.float32), d)
    assert np.array_equal(k_cache.get(), want_k) and np.array_equal(v_cache.get(), want_v)
