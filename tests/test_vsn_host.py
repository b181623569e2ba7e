"""The VSN kernels on tensor cores, compiled for the host with their blocks emulated, against float64 and by hand.

`variable_selection_fwd` and `variable_selection_bwd` are Grid.persistent_warps kernels: each warp loops over
tiles of 32 rows of its own, through tiles scoped to the warp (a ring of three for the forward's x), and
computes with the 3xTF32 mma.sync of examples/vsn/include/vsn_tf32.cuh; the backward's warps add their sums
in shared memory after the loop, behind a barrier, and each block adds them to grad_W and grad_b once.
layoutgen's lg/host/runtime.h runs each block's threads as host threads with real barriers (a block's, a
warp's) and emulates the warp's mma, so the very same generated sources run here: on tails of 1 and of 31
rows, on a single tile, and on 1 to 3 persistent blocks whose warps loop over many tiles (every stage of the
ring used). They are compared with the float64 references and, bit for bit, with the same kernels written by
hand with literal strides (benchmarks/roofline/vsn_*_hand.cu, the baselines of benchmarks/bench_roofline.py);
grad_W and grad_b are sums of atomics, compared with float64 only. The H200 runs are
tests/gpu/test_vsn_kernels_gpu.py.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest

from examples.vsn import reference as ref
from tests.helpers.host import REPO, cooperative, needs_compiler

pytestmark = needs_compiler
GENERATED = REPO / "generated" / "vsn"
HAND = REPO / "benchmarks" / "roofline"
INCLUDE = REPO / "examples" / "vsn" / "include"  # vsn_tf32.cuh, [tool.layoutgen] include
FWD = "const float* x, const float* w, const float* b, float* gates, float* y, long long B, long long K"
BWD = ("const float* x, const float* w, const float* gates, const float* gy, float* gx, float* gw, float* gb, "
       "long long B, long long K")


def launch(fn: Any, arrays: list[np.ndarray[Any, Any]], b: int, k: int, grid: int, block: int = 128) -> None:
    assert all(a.flags.c_contiguous for a in arrays)
    fn(*[ctypes.c_void_p(a.ctypes.data) for a in arrays], ctypes.c_longlong(b), ctypes.c_longlong(k),
       ctypes.c_int(grid), ctypes.c_int(block))


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("vsn_host")
    inc = (INCLUDE,)
    return {
        "fwd": cooperative(tmp, GENERATED / "variable_selection_fwd.cu", "variable_selection_fwd", FWD, include=inc),
        "bwd": cooperative(tmp, GENERATED / "variable_selection_bwd.cu", "variable_selection_bwd", BWD, include=inc),
        "fwd by hand": cooperative(tmp, HAND / "vsn_fwd_hand.cu", "vsn_fwd_hand", FWD, shared="smem", include=inc),
        "bwd by hand": cooperative(tmp, HAND / "vsn_bwd_hand.cu", "vsn_bwd_hand", BWD, shared="smem", include=inc),
    }


def f32(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.ascontiguousarray(a, dtype=np.float32)


# ([B, K], blocks): B * K = 129 (a last warp tile of 1 row), 255 (of 31), 20 (one tile, less than a warp's; on 2
# blocks, 7 of the 8 warps have none) and 2100 (66 warp tiles: up to 17 a warp on 1 block of 4 warps, every
# stage of the forward's ring used).
CASES = [((1, 129), 1), ((3, 85), 2), ((4, 5), 1), ((4, 5), 2), ((7, 300), 3), ((7, 300), 1)]


@pytest.mark.parametrize(("shape", "grid"), CASES)
def test_the_forward_on_tensor_cores_matches_float64_and_the_kernel_by_hand(
        kernels: dict[str, Any], shape: tuple[int, int], grid: int) -> None:
    b, k = shape
    rng = np.random.default_rng()
    window = rng.normal(size=(b, k, 56))
    window[..., ref.CONTEXT] *= 50.0  # a wrong stride would read these
    w, bias = rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
    want_gates, want_y = ref.vsn_forward(window[..., ref.SNAP], w, bias)
    outs = {}
    for label in ("fwd", "fwd by hand"):
        gates, y = np.full((b, k, 40), np.nan, np.float32), np.full((b, k, 40), np.nan, np.float32)
        launch(kernels[label], [f32(window), f32(w), f32(bias), gates, y], b, k, grid)
        assert ref.relative_error(gates, want_gates) < 1e-5 and ref.relative_error(y, want_y) < 1e-5, label
        outs[label] = (gates, y)
    assert all(np.array_equal(g, h) for g, h in zip(outs["fwd"], outs["fwd by hand"]))


@pytest.mark.parametrize(("shape", "grid"), CASES)
def test_the_backward_on_tensor_cores_matches_float64_and_the_kernel_by_hand(
        kernels: dict[str, Any], shape: tuple[int, int], grid: int) -> None:
    """`grid` resident blocks: each warp loops over every (4 grid)-th warp tile; each block adds its sums once,
    to accumulators that start non-zero."""
    b, k = shape
    rng = np.random.default_rng()
    window = rng.normal(size=(b, k, 56))
    w, bias = rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
    gates, _ = ref.vsn_forward(window[..., ref.SNAP], w, bias)
    grad_y = rng.normal(size=(b, k, 40))
    want_x, want_w, want_b = ref.vsn_backward(window[..., ref.SNAP], w, gates, grad_y)
    w0, b0 = f32(rng.normal(size=(40, 40))), f32(rng.normal(size=40))
    outs = {}
    for label in ("bwd", "bwd by hand"):
        grad_x = np.full((b, k, 40), np.nan, np.float32)
        grad_w, grad_b = w0.copy(), b0.copy()
        launch(kernels[label], [f32(window), f32(w), f32(gates), f32(grad_y), grad_x, grad_w, grad_b], b, k, grid)
        assert ref.relative_error(grad_x, want_x) < 1e-5, label
        assert ref.relative_error(grad_w.astype(np.float64) - w0, want_w) < 1e-4, label
        assert ref.relative_error(grad_b.astype(np.float64) - b0, want_b) < 1e-4, label
        outs[label] = grad_x
    assert np.array_equal(outs["bwd"], outs["bwd by hand"])


# -- the simple kernels: Grid.vectors, 16-byte groups (issue 33) -------------------------------------------------

from tests.helpers.host import host_kernel  # noqa: E402  (the simple kernels: a call per thread)

# name -> (the generated kernel, its C++ parameter list, the arguments passed on)
SIMPLE = {
    "snap_feature_assemble": ("const float* raw, const float* mean, const float* inv_std, float* snap, long long B, "
                              "long long K", "raw, mean, inv_std, snap, B, K"),
    "context_broadcast": ("const float* ctx, float* dst, long long B, long long K", "ctx, dst, B, K"),
    "mse_grad": ("const float* y, const float* target, float* grad_y, long long B, long long K",
                 "y, target, grad_y, B, K"),
    "zero_grads": ("float* gw, float* gb", "gw, gb"),
    "sgd_update": ("float* w, float* b, const float* gw, const float* gb, float lr", "w, b, gw, gb, lr"),
}


def simple(name: str, tmp: Any) -> Any:
    params, args = SIMPLE[name]
    return host_kernel(name, tmp, GENERATED, (name, params, args))


def run(fn: Any, arrays: list[np.ndarray[Any, Any]], *values: Any, threads: int) -> None:
    """A launch of a Grid.vectors kernel of 16-byte groups: ``threads`` threads in blocks of 256."""
    assert all(a.flags.c_contiguous for a in arrays)
    fn(*[ctypes.c_void_p(a.ctypes.data) for a in arrays], *values, ctypes.c_longlong(threads), ctypes.c_int(256))


# B * K rows: 1 (one group of threads), 7 * 33 (a last block partly idle), 3 * 300
@pytest.mark.parametrize(("b", "k"), [(1, 1), (7, 33), (3, 300)])
def test_the_simple_kernels_match_float64_and_write_only_their_fields(tmp_path: Any, b: int, k: int) -> None:
    rng = np.random.default_rng()
    rows = b * k
    ll = ctypes.c_longlong
    raw = f32(rng.standard_normal((b, k, 40)) * 3)  # some past the clip at +-5
    stats = f32(np.stack([rng.standard_normal(40), rng.random(40) + 0.5], axis=1))
    ctx = f32(rng.standard_normal((b, 16)))
    window = np.full((b, k, 56), np.nan, np.float32)
    # Grid.vectors: 10 groups of 16 bytes a snap row, 4 a context row
    # mean and inv_std are two views of the same [40, 2] array: the launcher passes it twice
    run(simple("snap_feature_assemble", tmp_path), [raw, stats, stats, window], ll(b), ll(k), threads=rows * 10)
    assert ref.relative_error(window[..., ref.SNAP], ref.snap_feature_assemble(raw, stats)) < 1e-6
    assert np.isnan(window[..., ref.CONTEXT]).all(), "snap_feature_assemble wrote outside Window.snap"
    run(simple("context_broadcast", tmp_path), [ctx, window], ll(b), ll(k), threads=rows * 4)
    assert np.array_equal(window[..., ref.CONTEXT], ref.context_broadcast(ctx, k))
    assert ref.relative_error(window[..., ref.SNAP], ref.snap_feature_assemble(raw, stats)) < 1e-6

    y, target = f32(rng.standard_normal((b, k, 40))), f32(rng.standard_normal((b, k, 40)))
    grad_y = np.full((b, k, 40), np.nan, np.float32)
    run(simple("mse_grad", tmp_path), [y, target, grad_y], ll(b), ll(k), threads=rows * 10)
    assert ref.relative_error(grad_y, ref.mse_grad(y, target)) < 1e-6

    grad_w, grad_b = f32(rng.standard_normal((40, 40))), f32(rng.standard_normal(40))
    w, bias = f32(rng.standard_normal((40, 40))), f32(rng.standard_normal(40))
    w0, b0 = w.copy(), bias.copy()
    run(simple("sgd_update", tmp_path), [w, bias, grad_w, grad_b], ctypes.c_float(0.25), threads=400)
    assert ref.relative_error(w, w0 - 0.25 * grad_w.astype(np.float64)) < 1e-6
    assert ref.relative_error(bias, b0 - 0.25 * grad_b.astype(np.float64)) < 1e-6
    run(simple("zero_grads", tmp_path), [grad_w, grad_b], threads=400)
    assert not grad_w.any() and not grad_b.any()
