"""The VSN's simple kernels on Grid.vectors (issue 33), each alone, against float64 NumPy, on the GPU.

`snap_feature_assemble` and `context_broadcast` are in test_vsn_kernels_gpu.py; here `mse_grad`, `zero_grads`
and `sgd_update`, and the first two again at sizes whose last block is partly idle and at one row, on outputs
poisoned with NaN first and fresh random inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

from examples.vsn import reference as ref

pytestmark = pytest.mark.gpu
TOL = 1e-5


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng()


@pytest.fixture
def vsn():  # type: ignore[no-untyped-def]
    import generated.vsn as module

    return module


def _device(a: np.ndarray):  # type: ignore[no-untyped-def]
    import cupy

    return cupy.asarray(np.ascontiguousarray(a, dtype=np.float32))


def _poisoned(*shape: int):  # type: ignore[no-untyped-def]
    import cupy

    return cupy.full(shape, cupy.nan, dtype=cupy.float32)


SIZES = [(1, 1), (7, 33), (3, 1000)]  # B * K rows: one; a last block partly idle; several blocks


@pytest.mark.parametrize(("b", "k"), SIZES)
def test_mse_grad(vsn, rng, b: int, k: int) -> None:  # type: ignore[no-untyped-def]
    y, target = rng.normal(size=(b, k, 40)), rng.normal(size=(b, k, 40))
    grad_y = _poisoned(b, k, 40)
    vsn.mse_grad(_device(y), _device(target), grad_y)
    want = ref.mse_grad(y.astype(np.float32), target.astype(np.float32))
    assert ref.relative_error(grad_y.get(), want) < TOL


def test_zero_grads_then_sgd_update(vsn, rng) -> None:  # type: ignore[no-untyped-def]
    grad_w, grad_b = _device(rng.normal(size=(40, 40))), _device(rng.normal(size=40))
    vsn.zero_grads(grad_w, grad_b)
    assert not grad_w.get().any() and not grad_b.get().any()
    w, b = rng.normal(size=(40, 40)).astype(np.float32), rng.normal(size=40).astype(np.float32)
    gw, gb = rng.normal(size=(40, 40)).astype(np.float32), rng.normal(size=40).astype(np.float32)
    w_dev, b_dev = _device(w), _device(b)
    vsn.sgd_update(w_dev, b_dev, _device(gw), _device(gb), 0.125)
    assert ref.relative_error(w_dev.get(), w.astype(np.float64) - 0.125 * gw) < TOL
    assert ref.relative_error(b_dev.get(), b.astype(np.float64) - 0.125 * gb) < TOL


@pytest.mark.parametrize(("b", "k"), SIZES)
def test_assemble_and_broadcast_fill_the_window_between_them(vsn, rng, b: int, k: int) -> None:  # type: ignore[no-untyped-def]
    raw = rng.normal(2.0, 3.0, (b, k, 40))
    stats = np.stack([rng.normal(size=40), rng.uniform(0.1, 2.0, 40)], axis=1)
    ctx = rng.normal(size=(b, 16)) * 10
    window = _poisoned(b, k, 56)
    vsn.snap_feature_assemble(_device(raw), _device(stats), _device(stats), window)
    assert np.isnan(window.get()[..., ref.CONTEXT]).all(), "snap_feature_assemble wrote outside Window.snap"
    vsn.context_broadcast(_device(ctx), window)
    got = window.get()
    assert ref.relative_error(got[..., ref.SNAP], ref.snap_feature_assemble(raw.astype(np.float32),
                                                                             stats.astype(np.float32))) < TOL
    assert ref.relative_error(got[..., ref.CONTEXT], ref.context_broadcast(ctx.astype(np.float32), k)) < TOL
