"""The VSN kernels on tensor cores, compiled for the host with their blocks emulated, against float64 and by hand.

`variable_selection_fwd` and `variable_selection_bwd` are Grid.persistent_warps kernels: each warp loops over
tiles of 32 rows of its own, through tiles scoped to the warp (a ring of three for the forward's x), and
computes with the 3xTF32 mma.sync of examples/vsn/include/vsn_tf32.cuh; the backward's warps add their sums
in shared memory after the loop, behind a barrier, and each block adds them to grad_W and grad_b once.
tests/host/cuda_block_shim.h runs each block's threads as host threads with real barriers (a block's, a
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
