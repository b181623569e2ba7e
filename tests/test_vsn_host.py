"""The tiled VSN kernels, compiled for the host with their blocks emulated, against float64 and by hand.

`variable_selection_fwd` (Grid.tiles, shared tiles of W, b and x) and `variable_selection_bwd`
(Grid.persistent, a 4x4 block of grad_W a thread, atomics once a block) are cooperative: their
threads meet at barriers. tests/host/cuda_block_shim.h runs each block's threads as host threads
with a real barrier, so the very same generated sources run here, on tails of 1 and of 127 rows
and on persistent blocks that loop over many tiles. They are compared with the float64 references
and, bit for bit, with the same kernels written by hand with literal strides
(benchmarks/roofline/vsn_*_hand.cu, the baselines of benchmarks/bench_roofline.py). The H200 runs
are tests/gpu/test_vsn_kernels_gpu.py.
"""

from __future__ import annotations

import ctypes
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from examples.vsn import reference as ref
from tests.test_qkv_host import COMPILER, REPO

pytestmark = pytest.mark.skipif(COMPILER is None, reason="no host C++ compiler (g++) here")
GENERATED = REPO / "generated" / "vsn"
HAND = REPO / "benchmarks" / "roofline"
FWD = "const float* x, const float* w, const float* b, float* gates, float* y, long long B, long long K"
BWD = ("const float* x, const float* w, const float* gates, const float* gy, float* gx, float* gw, float* gb, "
       "long long B, long long K")


def cooperative(tmp: Path, source: Path, function: str, params: str, shared: str = "") -> Any:
    """``source``'s kernel ``function`` built for the host: ``fn(*pointers, B, K, grid, block)``.

    ``shared`` names the kernel's dynamic shared buffer where it is not ``lg_shared`` (the shim's)."""
    args = ", ".join(p.rsplit(" ", 1)[-1].lstrip("*") for p in params.split(", "))
    harness = tmp / f"{function}_host.cpp"
    harness.write_text(
        '#include "cuda_block_shim.h"\n'
        + (f"alignas(16) unsigned char {shared}[256 * 1024];\n" if shared else "")
        + f'#include "{source.name}"\n'
        f'extern "C" void host_launch({params}, int grid, int block) {{\n'
        f"    lg_host_run(grid, block, [&] {{ {function}({args}); }});\n"
        "}\n",
        encoding="utf-8",
    )
    library = tmp / f"{function}.so"
    run = subprocess.run(
        [str(COMPILER), "-std=c++20", "-O2", "-shared", "-fPIC", "-pthread", "-Wall", "-Werror",
         "-Wno-unused-variable", "-Wno-unknown-pragmas", "-I", str(source.parent), "-I", str(REPO / "tests" / "host"),
         str(harness), "-o", str(library)],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    return ctypes.CDLL(str(library)).host_launch


def launch(fn: Any, arrays: list[np.ndarray[Any, Any]], b: int, k: int, grid: int, block: int = 128) -> None:
    assert all(a.flags.c_contiguous for a in arrays)
    fn(*[ctypes.c_void_p(a.ctypes.data) for a in arrays], ctypes.c_longlong(b), ctypes.c_longlong(k),
       ctypes.c_int(grid), ctypes.c_int(block))


@pytest.fixture(scope="module")
def kernels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("vsn_host")
    return {
        "fwd": cooperative(tmp, GENERATED / "variable_selection_fwd.cu", "variable_selection_fwd", FWD),
        "bwd": cooperative(tmp, GENERATED / "variable_selection_bwd.cu", "variable_selection_bwd", BWD),
        "fwd by hand": cooperative(tmp, HAND / "vsn_fwd_hand.cu", "vsn_fwd_hand", FWD, shared="smem"),
        "bwd by hand": cooperative(tmp, HAND / "vsn_bwd_hand.cu", "vsn_bwd_hand", BWD, shared="smem"),
    }


def f32(a: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    return np.ascontiguousarray(a, dtype=np.float32)


# [B, K] with B * K = 129 (a last tile of 1 row), 255 (of 127), 100 (one tile) and 2100 (17 tiles).
SHAPES = [(1, 129), (3, 85), (4, 25), (7, 300)]


@pytest.mark.parametrize(("b", "k"), SHAPES)
def test_the_tiled_forward_matches_float64_and_the_kernel_by_hand(kernels: dict[str, Any], b: int, k: int) -> None:
    rng = np.random.default_rng()
    window = rng.normal(size=(b, k, 56))
    window[..., ref.CONTEXT] *= 50.0  # a wrong stride would read these
    w, bias = rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
    want_gates, want_y = ref.vsn_forward(window[..., ref.SNAP], w, bias)
    outs = {}
    for label in ("fwd", "fwd by hand"):
        gates, y = np.full((b, k, 40), np.nan, np.float32), np.full((b, k, 40), np.nan, np.float32)
        launch(kernels[label], [f32(window), f32(w), f32(bias), gates, y], b, k, grid=-(-b * k // 128))
        assert ref.relative_error(gates, want_gates) < 1e-5 and ref.relative_error(y, want_y) < 1e-5, label
        outs[label] = (gates, y)
    assert all(np.array_equal(g, h) for g, h in zip(outs["fwd"], outs["fwd by hand"]))


@pytest.mark.parametrize(("b", "k", "grid"), [(1, 129, 1), (3, 85, 2), (7, 300, 3), (4, 25, 1)])
def test_the_persistent_backward_matches_float64_and_the_kernel_by_hand(
        kernels: dict[str, Any], b: int, k: int, grid: int) -> None:
    """`grid` resident blocks: each loops over every grid-th tile and adds its sums once."""
    rng = np.random.default_rng()
    window = rng.normal(size=(b, k, 56))
    w, bias = rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
    gates, _ = ref.vsn_forward(window[..., ref.SNAP], w, bias)
    grad_y = rng.normal(size=(b, k, 40))
    want_x, want_w, want_b = ref.vsn_backward(window[..., ref.SNAP], w, gates, grad_y)
    outs = {}
    for label in ("bwd", "bwd by hand"):
        grad_x = np.full((b, k, 40), np.nan, np.float32)
        grad_w, grad_b = np.zeros((40, 40), np.float32), np.zeros(40, np.float32)
        launch(kernels[label], [f32(window), f32(w), f32(gates), f32(grad_y), grad_x, grad_w, grad_b], b, k, grid)
        assert ref.relative_error(grad_x, want_x) < 1e-5, label
        assert ref.relative_error(grad_w, want_w) < 1e-4 and ref.relative_error(grad_b, want_b) < 1e-4, label
        outs[label] = grad_x
    assert np.array_equal(outs["bwd"], outs["bwd by hand"])
