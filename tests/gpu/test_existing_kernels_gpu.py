"""The team's fixed VSN kernels (examples/existing_kernels/vsn_kernels_fixed.cu), declared as they are and
launched by the generated launchers, on a GPU against float64 NumPy; the launcher refuses wrong arrays."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from examples.vsn.reference import context_broadcast, relative_error, vsn_backward, vsn_forward

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")


@pytest.fixture
def ek() -> object:
    if cp.cuda.runtime.getDeviceCount() == 0:
        pytest.skip("no GPU")
    return importlib.import_module("generated.existing_kernels")


def data(seed: int, b_: int = 37, k_: int = 65) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)  # fresh random data each seed, never zeros; a partial last block
    return {"window": rng.standard_normal((b_, k_, 56)).astype(np.float32),
            "ctx": rng.standard_normal((b_, 16)).astype(np.float32),
            "W": (rng.standard_normal((40, 40)) * 0.2).astype(np.float32),
            "b": rng.standard_normal(40).astype(np.float32),
            "grad_y": rng.standard_normal((b_, k_, 40)).astype(np.float32)}


def poisoned(shape: tuple[int, ...]) -> object:
    return cp.full(shape, np.nan, np.float32)


@pytest.mark.parametrize("seed", [3, 4])
def test_the_fixed_kernels_match_float64(ek: object, seed: int) -> None:
    d = data(seed)
    b_, k_ = d["window"].shape[:2]
    window = cp.asarray(d["window"])
    window[..., 40:] = np.nan  # the context columns are the broadcast's to write
    ek.context_broadcast(cp.asarray(d["ctx"]), window)  # type: ignore[attr-defined]
    want_ctx = context_broadcast(d["ctx"], k_)
    assert relative_error(cp.asnumpy(window)[..., 40:], want_ctx) < 1e-6
    assert relative_error(cp.asnumpy(window)[..., :40], d["window"][..., :40].astype(np.float64)) == 0.0
    gates, y = poisoned((b_, k_, 40)), poisoned((b_, k_, 40))
    ek.vsn_forward(window, cp.asarray(d["W"]), cp.asarray(d["b"]), gates, y)  # type: ignore[attr-defined]
    want_gates, want_y = vsn_forward(d["window"][..., :40], d["W"], d["b"])
    assert relative_error(cp.asnumpy(gates), want_gates) < 1e-5 and relative_error(cp.asnumpy(y), want_y) < 1e-5
    grad_x, grad_z = poisoned((b_, k_, 40)), poisoned((b_, k_, 40))
    ek.vsn_backward(window, cp.asarray(d["W"]), gates, cp.asarray(d["grad_y"]), grad_x, grad_z)  # type: ignore[attr-defined]
    want_grad_x, _, want_grad_b = vsn_backward(d["window"][..., :40], d["W"], cp.asnumpy(gates), d["grad_y"])
    assert relative_error(cp.asnumpy(grad_x), want_grad_x) < 1e-5
    assert relative_error(cp.asnumpy(grad_z).reshape(-1, 40).sum(axis=0), want_grad_b) < 1e-4


def test_the_program_runs_the_broadcast_then_the_forward(ek: object) -> None:
    d = data(5)
    b_, k_ = d["window"].shape[:2]
    window = cp.asarray(d["window"])
    gates, y = poisoned((b_, k_, 40)), poisoned((b_, k_, 40))
    ek.forward(ctx=cp.asarray(d["ctx"]), window=window, W=cp.asarray(d["W"]), b=cp.asarray(d["b"]),  # type: ignore[attr-defined]
               gates=gates, y=y)
    assert relative_error(cp.asnumpy(y), vsn_forward(d["window"][..., :40], d["W"], d["b"])[1]) < 1e-5


def test_the_launcher_refuses_features_packed_at_stride_40(ek: object) -> None:
    from layoutgen.runtime.launch import LaunchError

    d = data(6)
    b_, k_ = d["window"].shape[:2]
    gates, y = poisoned((b_, k_, 40)), poisoned((b_, k_, 40))
    with pytest.raises(LaunchError) as info:  # the seed bug's buffer: rows 40 apart, not the Window's 56
        ek.vsn_forward(cp.asarray(d["window"][..., :40].copy()), cp.asarray(d["W"]), cp.asarray(d["b"]), gates, y)  # type: ignore[attr-defined]
    assert info.value.code == "LG601"
    assert bool(cp.isnan(y).all())  # nothing ran
