"""A warp per row, run on the host: the layer norm of tests/specs/warps against float64.

`Grid.warps("x", rows_per_warp=2, block=128)` gives each warp two rows of `Window.snap`; a warp past
the last row returns whole before the body. The shipped lg/host/runtime.h runs each block's threads as
host threads, with a barrier per warp for `__syncwarp()` and `__shfl_xor_sync()`, so the generated
kernel runs here on tails of every size: rows that fill no block, one warp, and a last warp of one row.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np
import pytest

from layoutgen.codegen.render import render_spec
from layoutgen.project.specload import load_spec
from tests.helpers.rendering import nvrtc
from tests.helpers.host import COMPILER, REPO, cooperative, written_flat

pytestmark = pytest.mark.skipif(COMPILER is None, reason="no host C++ compiler (g++) here")
SPEC = "tests/specs/warps/spec.py"


@pytest.fixture(scope="module")
def rendered() -> Any:
    loaded = load_spec(REPO / SPEC)
    assert loaded.spec is not None, loaded.diagnostics
    out = render_spec(loaded.spec, REPO, SPEC)
    assert out.diagnostics == ()
    return out


def test_the_warp_grid_compiles_offline(rendered: Any) -> None:
    nvrtc(rendered, "warps")


@pytest.fixture(scope="module")
def layer_norm(rendered: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = written_flat(tmp_path_factory, "warps_host", rendered.files)
    return cooperative(tmp, tmp / "layer_norm.cu", "layer_norm",
                       "const float* x, const float* gamma, const float* beta, float* y, float eps, long long B, "
                       "long long K")  # arrays, then scalars, then the layouts' symbols


@pytest.mark.parametrize("rows", [1, 2, 7, 8, 9, 200])  # 4 warps of 2 rows a block: 8 rows fill one
def test_a_layer_norm_a_warp_per_two_rows_matches_float64(layer_norm: Any, rows: int) -> None:
    rng = np.random.default_rng()
    window = (rng.normal(size=(rows, 1, 56)) * 3 + 1).astype(np.float32)
    affine = rng.normal(size=80).astype(np.float32)
    y = np.full((rows, 1, 40), np.nan, np.float32)
    eps = 1e-5
    blocks = -(-rows // 8)
    pointer = ctypes.c_void_p
    layer_norm(pointer(window.ctypes.data), pointer(affine.ctypes.data), pointer(affine.ctypes.data),
               pointer(y.ctypes.data), ctypes.c_float(eps), ctypes.c_longlong(rows), ctypes.c_longlong(1),
               ctypes.c_int(blocks), ctypes.c_int(128))
    x = window[..., :40].astype(np.float64)
    mean = x.mean(axis=-1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    want = (x - mean) / np.sqrt(var + eps) * affine[:40] + affine[40:]
    assert np.max(np.abs(y - want)) < 1e-4 * max(1.0, float(np.max(np.abs(want))))


@pytest.fixture(scope="module")
def softmax_gate(rendered: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = written_flat(tmp_path_factory, "warps_softmax_host", rendered.files)
    return cooperative(tmp, tmp / "softmax_gate_warps.cu", "softmax_gate_warps",
                       "const float* x, float* gates, float* y, long long B, long long K")


@pytest.mark.parametrize("rows", [1, 3, 4, 5, 130])  # 4 warps of 1 row a block
def test_the_tutorials_warp_softmax_matches_float64(softmax_gate: Any, rows: int) -> None:
    rng = np.random.default_rng()
    window = rng.normal(size=(rows, 1, 56)).astype(np.float32)
    window[..., 40:] = 1e4  # context: a wrong stride would read it
    gates, y = np.full((rows, 1, 40), np.nan, np.float32), np.full((rows, 1, 40), np.nan, np.float32)
    pointer = ctypes.c_void_p
    softmax_gate(pointer(window.ctypes.data), pointer(gates.ctypes.data), pointer(y.ctypes.data),
                 ctypes.c_longlong(rows), ctypes.c_longlong(1), ctypes.c_int(-(-rows // 4)), ctypes.c_int(128))
    x = window[..., :40].astype(np.float64)
    want = np.exp(x - x.max(axis=-1, keepdims=True))
    want /= want.sum(axis=-1, keepdims=True)
    assert np.max(np.abs(gates - want)) < 1e-6 and np.max(np.abs(y - want * x)) < 1e-5


def test_the_tutorial_shows_the_kernel_run_here() -> None:
    """docs/tutorial.md's warp softmax is this spec's template, byte for byte: what the tutorial shows ran."""
    tutorial = (REPO / "docs" / "tutorial.md").read_text(encoding="utf-8")
    template = (REPO / "tests" / "specs" / "warps" / "softmax_gate_warps.cu.j2").read_text(encoding="utf-8")
    assert "`softmax_gate_warps.cu.j2`:\n\n```cuda\n" + template + "```\n" in tutorial
