"""The VSN trained for 1000 steps on the GPU, with context values that grow large.

In the original pipeline the VSN read `snap` at row stride 40, so it mixed the
context columns (time in trade, unrealized R, position size) into its
features; as those grew, the softmax overflowed and NaN spread through the
run by step 4-7. Here the same growth stays in the context columns, the loss
falls and every value stays finite. The backward kernel is also checked
against finite differences of the forward kernel.
"""

from __future__ import annotations

import numpy as np
import pytest

from examples.vsn import reference as ref

pytestmark = pytest.mark.gpu


def test_backward_matches_finite_differences_of_the_forward_kernel() -> None:
    import cupy

    import generated.vsn as vsn

    rng = np.random.default_rng()
    b_, k_ = 3, 5
    window = rng.normal(size=(b_, k_, 56))
    w, bias, grad_y = rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40), rng.normal(size=(b_, k_, 40))
    dev = lambda a: cupy.asarray(np.asarray(a, np.float32))  # noqa: E731

    def loss(window_: np.ndarray, w_: np.ndarray, bias_: np.ndarray) -> float:
        gates, y = cupy.empty((b_, k_, 40), cupy.float32), cupy.empty((b_, k_, 40), cupy.float32)
        vsn.variable_selection_fwd(dev(window_), dev(w_), dev(bias_), gates, y)
        return float((y.get().astype(np.float64) * grad_y).sum())

    gates, y = cupy.empty((b_, k_, 40), cupy.float32), cupy.empty((b_, k_, 40), cupy.float32)
    vsn.variable_selection_fwd(dev(window), dev(w), dev(bias), gates, y)
    grad_x = cupy.full((b_, k_, 40), cupy.nan, cupy.float32)
    grad_w, grad_b = cupy.zeros((40, 40), cupy.float32), cupy.zeros(40, cupy.float32)
    vsn.variable_selection_bwd(dev(window), dev(w), gates, dev(grad_y), grad_x, grad_w, grad_b)
    eps = 1e-2
    for _ in range(6):  # random coordinates of x, W and b; central differences in float32 kernels
        i, j, f = rng.integers(b_), rng.integers(k_), rng.integers(40)
        up, down = window.copy(), window.copy()
        up[i, j, f] += eps
        down[i, j, f] -= eps
        fd = (loss(up, w, bias) - loss(down, w, bias)) / (2 * eps)
        assert fd == pytest.approx(float(grad_x[i, j, f]), rel=2e-2, abs=2e-3)
        p, q = rng.integers(40), rng.integers(40)
        up_w, down_w = w.copy(), w.copy()
        up_w[p, q] += eps
        down_w[p, q] -= eps
        fd = (loss(window, up_w, bias) - loss(window, down_w, bias)) / (2 * eps)
        assert fd == pytest.approx(float(grad_w[p, q]), rel=2e-2, abs=2e-3)
        up_b, down_b = bias.copy(), bias.copy()
        up_b[p] += eps
        down_b[p] -= eps
        fd = (loss(window, w, up_b) - loss(window, w, down_b)) / (2 * eps)
        assert fd == pytest.approx(float(grad_b[p]), rel=2e-2, abs=2e-3)


def test_training_loop_stays_finite_with_falling_loss() -> None:
    import cupy

    import generated.vsn as vsn

    rng = np.random.default_rng()
    b_, k_, steps, lr = 32, 16, 1000, 30.0
    rows = b_ * k_
    dev = lambda a: cupy.asarray(np.asarray(a, np.float32))  # noqa: E731
    raw = dev(rng.normal(1.0, 2.0, (b_, k_, 40)))
    stats = dev(np.stack([np.full(40, 1.0), np.full(40, 0.5)], axis=1))
    window = cupy.full((b_, k_, 56), cupy.nan, cupy.float32)
    vsn.snap_feature_assemble(raw, stats, stats, window)
    true_w, true_b = rng.normal(size=(40, 40)) * 0.5, rng.normal(size=40)
    target = dev(ref.vsn_forward(window.get()[..., ref.SNAP], true_w, true_b)[1])
    w, bias = dev(rng.normal(size=(40, 40)) * 0.05), dev(np.zeros(40))
    gates, y = cupy.empty((b_, k_, 40), cupy.float32), cupy.empty((b_, k_, 40), cupy.float32)
    grad_x = cupy.empty((b_, k_, 40), cupy.float32)
    grad_w, grad_b = cupy.empty((40, 40), cupy.float32), cupy.empty(40, cupy.float32)
    ctx = np.zeros((b_, 16), np.float32)
    losses = []
    for step in range(steps):
        ctx[:, 0] = step  # time in trade: grows every bar
        ctx[:, 1] = step * 0.5 * np.sin(step / 50.0)  # unrealized R
        ctx[:, 2] = step * 1000.0  # position size: 1e6 by the end
        vsn.context_broadcast(dev(ctx), window)
        vsn.variable_selection_fwd(window, w, bias, gates, y)
        diff = y - target
        losses.append(float((diff * diff).mean()))
        grad_w.fill(0)
        grad_b.fill(0)
        vsn.variable_selection_bwd(window, w, gates, 2.0 * diff / 40.0, grad_x, grad_w, grad_b)
        w -= (lr / rows) * grad_w
        bias -= (lr / rows) * grad_b
    host = window.get()
    assert host[..., 42].max() == pytest.approx((steps - 1) * 1000.0)  # the context really grew
    assert np.isfinite(losses).all()
    assert all(bool(cupy.isfinite(a).all()) for a in (w, bias, gates, y, grad_x))
    assert losses[-1] < 0.25 * losses[0], (losses[0], losses[-1])
