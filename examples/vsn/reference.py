"""Float64 NumPy references of the VSN kernels, on arrays of each layout.

The GPU tests compare every kernel with these; the CPU tests check these
against finite differences and against each other, so a reference cannot
quietly share a kernel's mistake.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Arr = np.ndarray[Any, Any]
SNAP, CONTEXT = slice(0, 40), slice(40, 56)


def snap_feature_assemble(raw: Arr, stats: Arr) -> Arr:
    """[B, K, 40] normalised, clipped features from raw input and [40, 2] (mean, inv_std)."""
    z = (raw.astype(np.float64) - stats[:, 0]) * stats[:, 1]
    return np.clip(z, -5.0, 5.0)


def context_broadcast(ctx: Arr, k: int) -> Arr:
    """[B, K, 16]: each series' context repeated over K."""
    return np.repeat(ctx.astype(np.float64)[:, None, :], k, axis=1)


def vsn_forward(x: Arr, w: Arr, b: Arr) -> tuple[Arr, Arr]:
    """(gates, y): gates = softmax(W x + b) over the 40 features, y = gates * x."""
    x64 = x.astype(np.float64)
    z = x64 @ w.astype(np.float64).T + b.astype(np.float64)
    z -= z.max(axis=-1, keepdims=True)
    e = np.exp(z)
    gates = e / e.sum(axis=-1, keepdims=True)
    return gates, gates * x64


def vsn_backward(x: Arr, w: Arr, gates: Arr, grad_y: Arr) -> tuple[Arr, Arr, Arr]:
    """(grad_x, grad_W, grad_b) of sum(grad_y * y) at x, given the forward gates."""
    x64, w64, g, gy = (a.astype(np.float64) for a in (x, w, gates, grad_y))
    dg = gy * x64
    dz = g * (dg - (g * dg).sum(axis=-1, keepdims=True))
    grad_x = gy * g + dz @ w64
    rows = x64.reshape(-1, x64.shape[-1])
    dz_rows = dz.reshape(-1, dz.shape[-1])
    return grad_x, dz_rows.T @ rows, dz_rows.sum(axis=0)


def mse_grad(y: Arr, target: Arr) -> Arr:
    """Gradient of the per-row mean over features of (y - target)^2."""
    return 2.0 * (y.astype(np.float64) - target.astype(np.float64)) / y.shape[-1]


def vsn_step(raw: Arr, stats: Arr, ctx: Arr, target: Arr, w: Arr, b: Arr, lr: float) -> dict[str, Arr]:
    """Every buffer the `vsn_step` program writes, for one step from these inputs."""
    k = raw.shape[1]
    window = np.concatenate([snap_feature_assemble(raw, stats), context_broadcast(ctx, k)], axis=-1)
    gates, y = vsn_forward(window[..., SNAP], w, b)
    grad_y = mse_grad(y, target)
    grad_x, grad_w, grad_b = vsn_backward(window[..., SNAP], w, gates, grad_y)
    return {"window": window, "gates": gates, "y": y, "grad_y": grad_y, "grad_x": grad_x, "grad_W": grad_w,
            "grad_b": grad_b, "W": w.astype(np.float64) - lr * grad_w, "b": b.astype(np.float64) - lr * grad_b}


def relative_error(got: Any, want: Arr) -> float:
    """‖got − want‖ / ‖want‖ in float64; NaN anywhere gives inf."""
    got64 = np.asarray(got, dtype=np.float64)
    if not np.all(np.isfinite(got64)):
        return float("inf")
    return float(np.linalg.norm(got64 - want) / max(np.linalg.norm(want), 1e-300))
