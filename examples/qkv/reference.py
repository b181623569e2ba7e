"""Float64 NumPy references of the QKV kernels, on arrays of each layout.

The GPU tests compare every kernel with these; the CPU tests check these
against a direct rotation and against the layout's numpy views, so a
reference cannot quietly share a kernel's mistake.
"""

from __future__ import annotations

from typing import Any

import numpy as np

Arr = np.ndarray[Any, Any]
H, HKV = 32, 8  # the configuration of spec.py


def split(qkv: Arr, d: int) -> tuple[Arr, Arr, Arr]:
    """(q [B, S, H, D], k [B, S, Hkv, D], v [B, S, Hkv, D]) views of a [B, S, (H + 2*Hkv)*D] buffer."""
    b, s, width = qkv.shape
    if width != (H + 2 * HKV) * d:
        raise ValueError(f"a QKV row is {(H + 2 * HKV) * d} wide for D = {d}, got {width}")
    q = qkv[..., : H * d].reshape(b, s, H, d)
    k = qkv[..., H * d : (H + HKV) * d].reshape(b, s, HKV, d)
    v = qkv[..., (H + HKV) * d :].reshape(b, s, HKV, d)
    return q, k, v


def rotate(x: Arr, pos: Arr) -> Arr:
    """Rotary position embedding of x [B, S, heads, D] at positions pos [B, S]: pairs (i, i + D/2)."""
    d = x.shape[-1]
    half = d // 2
    inv_freq = 10000.0 ** (-2.0 * np.arange(half, dtype=np.float64) / d)
    angle = pos.astype(np.float64)[:, :, None, None] * inv_freq  # [B, S, 1, D/2]
    cos, sin = np.cos(angle), np.sin(angle)
    x0, x1 = x[..., :half].astype(np.float64), x[..., half:].astype(np.float64)
    return np.concatenate([x0 * cos - x1 * sin, x1 * cos + x0 * sin], axis=-1)


def rope(qkv: Arr, pos: Arr, d: int) -> Arr:
    """The QKV buffer after `rope`: q and k rotated, v untouched."""
    out = qkv.astype(np.float64).copy()
    q, k, _ = split(out, d)
    q[...] = rotate(q, pos)
    k[...] = rotate(k, pos)
    return out


def kv_split(qkv: Arr, d: int) -> tuple[Arr, Arr]:
    """(k_cache, v_cache) [B, Hkv, S, D]: each head's keys and values packed per sequence."""
    _, k, v = split(qkv.astype(np.float64), d)
    return np.ascontiguousarray(k.transpose(0, 2, 1, 3)), np.ascontiguousarray(v.transpose(0, 2, 1, 3))


def relative_error(got: Arr, want: Arr) -> float:
    """max |got - want| / max(1, max |want|)."""
    return float(np.max(np.abs(got.astype(np.float64) - want)) / max(1.0, float(np.max(np.abs(want)))))
