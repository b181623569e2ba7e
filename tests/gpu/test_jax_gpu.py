"""JAX arrays and DLPack-only producers through a generated launcher on the GPU, against float64 NumPy.

JAX's row reads a ``jax.Array`` with its keyed fast read (``unsafe_buffer_pointer()``, shape, dtype,
sharding): a repeated launch is validated once, and on the compiled path launched from C. A written JAX
array is refused (LG607: JAX arrays are immutable). An object that offers only ``__dlpack__`` and
``__dlpack_device__`` (a wrapper of a CuPy or JAX array) is read through its DLPack capsule. Inputs are
fresh random data; outputs are poisoned with NaN first.

Run: ``python -m pytest -q -m gpu tests/gpu/test_jax_gpu.py`` (with jax's CUDA build installed).
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest

from examples.vsn import reference as ref
from tests.helpers.launch import launcher_of

pytestmark = pytest.mark.gpu
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # leave the GPU's memory to CuPy as well
TOL = 1e-5
B, K = 7, 33  # odd sizes: the grid's last block is partly idle


@pytest.fixture
def jax() -> Any:
    jax = pytest.importorskip("jax")
    if not any(d.platform == "gpu" for d in jax.devices()):
        pytest.skip("JAX sees no GPU")
    return jax


@pytest.fixture
def vsn() -> Any:
    import generated.vsn as module

    return module


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


def _inputs(rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return rng.normal(size=(B, K, 56)) * 2, rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)


def _poisoned(*shape: int) -> Any:
    import cupy

    return cupy.full(shape, cupy.nan, dtype=cupy.float32)


def _on_jax(jax: Any, a: np.ndarray) -> Any:
    out = jax.device_put(jax.numpy.asarray(a, dtype=jax.numpy.float32), jax.devices("gpu")[0])
    out.block_until_ready()  # the launch runs on CuPy's stream, not JAX's
    return out


class DLPackOnly:
    """Offers only the DLPack protocol of the array it wraps."""

    def __init__(self, a: Any) -> None:
        self._a = a

    def __dlpack__(self, **kw: Any) -> Any:
        return self._a.__dlpack__(**kw)

    def __dlpack_device__(self) -> Any:
        return self._a.__dlpack_device__()


def _check(window: np.ndarray, w: np.ndarray, b: np.ndarray, gates: Any, y: Any) -> None:
    want_gates, want_y = ref.vsn_forward(window[..., ref.SNAP], w, b)
    assert ref.relative_error(gates.get(), want_gates) < TOL
    assert ref.relative_error(y.get(), want_y) < TOL


def test_jax_inputs_take_the_keyed_read_and_match_numpy(jax: Any, vsn: Any, rng: np.random.Generator) -> None:
    fwd = launcher_of(vsn, "variable_selection_fwd")
    for _ in range(3):  # fresh data each time: the first call validates, the later ones reuse its plan
        window, w, b = _inputs(rng)
        gates, y = _poisoned(B, K, 40), _poisoned(B, K, 40)
        hits = fwd._fast.hits if fwd._fast is not None else 0
        vsn.variable_selection_fwd(_on_jax(jax, window), _on_jax(jax, w), _on_jax(jax, b), gates, y)
        _check(window, w, b, gates, y)
    if fwd._fast is not None:  # the compiled path launched the last call itself
        assert fwd._fast.hits == hits + 1


def test_a_written_jax_array_is_refused(jax: Any, vsn: Any, rng: np.random.Generator) -> None:
    from layoutgen.runtime.launch import LaunchError

    window, w, b = _inputs(rng)
    with pytest.raises(LaunchError) as refused:
        vsn.variable_selection_fwd(_on_jax(jax, window), _on_jax(jax, w), _on_jax(jax, b),
                                   _on_jax(jax, np.zeros((B, K, 40))), _poisoned(B, K, 40))
    assert refused.value.code == "LG607"


def test_a_deleted_jax_array_is_refused_with_it_named(jax: Any, vsn: Any, rng: np.random.Generator) -> None:
    from layoutgen.runtime.launch import LaunchError

    window, w, b = _inputs(rng)
    gone = _on_jax(jax, w)
    gone.delete()
    with pytest.raises(LaunchError) as refused:
        vsn.variable_selection_fwd(_on_jax(jax, window), gone, _on_jax(jax, b), _poisoned(B, K, 40),
                                   _poisoned(B, K, 40))
    assert refused.value.code == "LG608"
    assert "a jax array whose buffer cannot be read" in str(refused.value)


def test_dlpack_only_producers_launch_and_match_numpy(jax: Any, vsn: Any, rng: np.random.Generator) -> None:
    import cupy

    for _ in range(2):
        window, w, b = _inputs(rng)
        gates, y = _poisoned(B, K, 40), _poisoned(B, K, 40)
        vsn.variable_selection_fwd(DLPackOnly(cupy.asarray(window, dtype=cupy.float32)), DLPackOnly(_on_jax(jax, w)),
                                   DLPackOnly(_on_jax(jax, b)), DLPackOnly(gates), DLPackOnly(y))
        _check(window, w, b, gates, y)


def test_a_dlpack_only_producer_on_the_host_is_refused(vsn: Any, rng: np.random.Generator) -> None:
    import cupy

    from layoutgen.runtime.launch import LaunchError

    window, w, b = _inputs(rng)
    host = DLPackOnly(np.asarray(w, dtype=np.float32))
    with pytest.raises(LaunchError) as refused:
        vsn.variable_selection_fwd(cupy.asarray(window, dtype=cupy.float32), host, cupy.asarray(b, dtype=cupy.float32),
                                   _poisoned(B, K, 40), _poisoned(B, K, 40))
    assert refused.value.code == "LG608"
    assert "on DLPack device type 1 (kDLCPU) is not on a CUDA device" in str(refused.value)
