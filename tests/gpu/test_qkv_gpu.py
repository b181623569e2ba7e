"""The QKV launchers against their float64 NumPy references, on an H200.

Inputs are fresh random data; the caches are poisoned with NaN first, so an
element the kernel did not write shows. D is bound at launch from the QKV
array's last axis: the same generated module runs the spec's configuration
(H = 32, Hkv = 8, D = 128) and a smaller head size.
"""

from __future__ import annotations

import numpy as np
import pytest

from examples.qkv import reference as ref
from layoutgen.runtime.launch import LaunchError

pytestmark = pytest.mark.gpu
# float32 angles against float64: at positions up to 2048 an angle's half-ulp is 1.2e-4 rad, and
# CUDA's powf/sincosf add up to 2 ulp; measured on the host (glibc), the error is about 6e-5.
TOL = 1e-3


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


def _poisoned(*shape: int):  # type: ignore[no-untyped-def]
    import cupy

    return cupy.full(shape, cupy.nan, dtype=cupy.float32)


SIZES = [(3, 37, 128), (2, 19, 64)]  # odd B*S: the grid's last block is partly idle


@pytest.mark.parametrize(("b", "s", "d"), SIZES)
def test_rope_rotates_q_and_k_in_place(qkv, rng, b: int, s: int, d: int) -> None:  # type: ignore[no-untyped-def]
    host = rng.normal(size=(b, s, (ref.H + 2 * ref.HKV) * d))
    pos = rng.integers(0, 2048, size=(b, s, 1))
    buf = _device(host)
    qkv.rope(buf, buf, _device(pos, "int32"))  # q and k are fields of the same buffer
    got = buf.get()
    want = ref.rope(host.astype(np.float32), pos[..., 0], d)
    assert ref.relative_error(got, want) < TOL
    _, _, v = ref.split(got, d)
    assert np.array_equal(v, ref.split(host.astype(np.float32), d)[2]), "rope wrote into v"


@pytest.mark.parametrize(("b", "s", "d"), SIZES)
def test_kv_split_fills_both_caches(qkv, rng, b: int, s: int, d: int) -> None:  # type: ignore[no-untyped-def]
    host = rng.normal(size=(b, s, (ref.H + 2 * ref.HKV) * d))
    buf = _device(host)
    k_cache, v_cache = _poisoned(b, ref.HKV, s, d), _poisoned(b, ref.HKV, s, d)
    qkv.kv_split(buf, buf, k_cache, v_cache)
    want_k, want_v = ref.kv_split(host.astype(np.float32), d)
    assert np.array_equal(k_cache.get(), want_k) and np.array_equal(v_cache.get(), want_v)


def test_rope_then_split_is_the_rotated_cache(qkv, rng) -> None:  # type: ignore[no-untyped-def]
    b, s, d = 2, 33, 128
    host = rng.normal(size=(b, s, (ref.H + 2 * ref.HKV) * d))
    pos = np.broadcast_to(np.arange(s), (b, s))[..., None]
    buf = _device(host)
    k_cache, v_cache = _poisoned(b, ref.HKV, s, d), _poisoned(b, ref.HKV, s, d)
    qkv.rope(buf, buf, _device(pos, "int32"))
    qkv.kv_split(buf, buf, k_cache, v_cache)
    want_k, want_v = ref.kv_split(ref.rope(host.astype(np.float32), pos[..., 0], d), d)
    assert ref.relative_error(k_cache.get(), want_k) < TOL
    assert ref.relative_error(v_cache.get(), want_v) < TOL


def test_a_qkv_row_of_another_head_size_than_the_cache_is_refused(qkv, rng) -> None:  # type: ignore[no-untyped-def]
    buf = _device(rng.normal(size=(2, 5, 48 * 128)))
    k_cache, v_cache = _poisoned(2, ref.HKV, 5, 64), _poisoned(2, ref.HKV, 5, 64)
    with pytest.raises(LaunchError) as info:
        qkv.kv_split(buf, buf, k_cache, v_cache)
    assert info.value.code == "LG603" and "KCache [B, 8, S, D]" in str(info.value)
    assert bool(np.isnan(k_cache.get()).all()), "a kernel ran"


def test_a_broadcast_cache_is_refused_as_an_output(qkv, rng) -> None:  # type: ignore[no-untyped-def]
    import cupy

    buf = _device(rng.normal(size=(2, 5, 48 * 64)))
    one = cupy.full((2, ref.HKV, 1, 64), cupy.nan, dtype=cupy.float32)
    k_cache = cupy.broadcast_to(one, (2, ref.HKV, 5, 64))  # stride 0 on S: every token one location
    v_cache = _poisoned(2, ref.HKV, 5, 64)
    with pytest.raises(LaunchError) as info:
        qkv.kv_split(buf, buf, k_cache, v_cache)
    assert info.value.code == "LG610" and "axis 2 of the array has stride 0" in str(info.value)
    assert bool(cupy.isnan(v_cache).all()), "a kernel ran"


def test_empty_takes_the_head_size_by_name(qkv) -> None:  # type: ignore[no-untyped-def]
    buf = qkv.QKV.empty(2, 5, D=64)
    assert buf.data.shape == (2, 5, 48 * 64)
