"""The cooperative grids and dynamic shared memory on the GPU (issue 15, items 1 and 3).

`tests/specs/grids` is generated into build/ (release and debug) and its kernels run on fresh random
data against float64 numpy, every output poisoned with NaN first so that an element nothing wrote
shows: tiles with tails of 1 and of R - 1 rows, warps of one and of four rows, a persistent grid that
must visit every row exactly once, a general grid of a block per series, shared memory past 48 KiB
(the launcher raises the kernel's limit) and past the device's limit (refused, LG624), and the same
kernels run by the program runner and replayed from a CUDA graph.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
REPO = Path(__file__).resolve().parents[2]
R = 64  # rows of a tile_reverse tile
TOL = 1e-5


def _build(out: str, *flags: str) -> ModuleType:
    """Generate the grids spec into ``build/<out>`` (ignored by git) and import its module."""
    done = subprocess.run([sys.executable, "-m", "layoutgen", "generate", *flags, "--out", f"build/{out}",
                           "tests/specs/grids/spec.py"], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    init = REPO / "build" / out / "grids" / "__init__.py"
    module_spec = importlib.util.spec_from_file_location(f"{out.replace('-', '_')}_grids", init)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module", params=["release", "debug"])
def grids(request: pytest.FixtureRequest) -> ModuleType:
    return _build(f"test-grids-{request.param}", *(["--debug"] if request.param == "debug" else []))


def _rows(n: int, rng: np.random.Generator) -> tuple[Any, np.ndarray]:
    """A Rows [n, 48] array of random values (its padding too) and its `x` field in float64."""
    import cupy

    host = rng.normal(size=(n, 48))
    return cupy.asarray(host.astype(np.float32)), host.astype(np.float32).astype(np.float64)[:, :40]


def _poisoned(shape: tuple[int, ...]) -> Any:
    import cupy

    return cupy.full(shape, cupy.nan, cupy.float32)


@pytest.mark.parametrize("n", [3 * R + 1, 3 * R + R - 1, R, 1, 5000])
def test_tiles_reverse_every_row_through_shared_memory_tails_included(grids: ModuleType, n: int) -> None:
    rows, x = _rows(n, np.random.default_rng())
    y = _poisoned((n, 40))
    grids.tile_reverse(rows, y)
    np.testing.assert_allclose(y.get(), x[:, ::-1], rtol=0, atol=0)  # a copy: exact


@pytest.mark.parametrize(("kernel", "n"), [("warp_center", 1), ("warp_center", 1001), ("warp_center4", 1),
                                           ("warp_center4", 1001), ("warp_center4", 4 * 2 * 50 + 3)])
def test_warps_centre_their_rows_with_shuffles(grids: ModuleType, kernel: str, n: int) -> None:
    rows, x = _rows(n, np.random.default_rng())
    y = _poisoned((n, 40))
    getattr(grids, kernel)(rows, y)
    np.testing.assert_allclose(y.get(), x - x.mean(axis=1, keepdims=True), rtol=TOL, atol=TOL)


@pytest.mark.parametrize("n", [1, 31, 32 * 1000 + 17, 200_000])
def test_a_persistent_grid_visits_every_row_exactly_once_and_sums_each_column(grids: ModuleType, n: int) -> None:
    import cupy

    rows, x = _rows(n, np.random.default_rng())
    hits = cupy.zeros((n, 1), cupy.float32)
    sums = cupy.zeros((40,), cupy.float32)
    grids.persistent_colsum(rows, hits, sums)
    assert (hits.get() == 1.0).all(), "a row was visited twice or not at all"
    np.testing.assert_allclose(sums.get(), x.sum(axis=0), rtol=1e-4, atol=1e-3 * np.sqrt(n))


@pytest.mark.parametrize("k", [1, 1000, 16384, 40000])  # 16384 and 40000 floats: 64 KiB and 156 KiB of shared
def test_a_general_grid_reverses_each_series_through_shared_memory_past_48_kib(grids: ModuleType, k: int) -> None:
    import cupy

    b = 5
    host = np.random.default_rng().normal(size=(b, k, 1)).astype(np.float32)
    y = _poisoned((b, k, 1))
    grids.series_reverse(cupy.asarray(host), y)
    np.testing.assert_array_equal(y.get(), host[:, ::-1])


def test_shared_memory_past_the_devices_limit_is_refused_and_nothing_is_written(grids: ModuleType) -> None:
    import cupy

    from layoutgen.runtime.launch import LaunchError

    limit = cupy.cuda.runtime.deviceGetAttribute(cupy.cuda.runtime.cudaDevAttrMaxSharedMemoryPerBlockOptin, 0)
    k = limit // 4 + 1
    y = _poisoned((2, k, 1))
    with pytest.raises(LaunchError) as info:
        grids.series_reverse(cupy.zeros((2, k, 1), cupy.float32), y)
    assert info.value.code == "LG624"
    assert f"`K` = {k}), but device 0 allows a block at most {limit} bytes" in str(info.value)
    assert bool(cupy.isnan(y).all())


def test_the_program_and_its_graph_size_shared_memory_as_the_launchers_do(grids: ModuleType) -> None:
    import cupy

    rng = np.random.default_rng()
    rows, x = _rows(3 * R + 5, rng)
    series = rng.normal(size=(3, 20000, 1)).astype(np.float32)  # 80000 bytes of shared memory
    dense, reversed_series = _poisoned((3 * R + 5, 40)), _poisoned((3, 20000, 1))
    buffers = {"rows": rows, "dense": dense, "series": cupy.asarray(series), "reversed_series": reversed_series}
    grids.stage(**buffers)
    np.testing.assert_array_equal(dense.get(), x[:, ::-1])
    np.testing.assert_array_equal(reversed_series.get(), series[:, ::-1])
    if "debug" in grids.__name__:
        return  # a debug build's checks run between launches, which a graph replay does not make
    dense.fill(cupy.nan)
    reversed_series.fill(cupy.nan)
    graph = grids.capture_stage(**buffers)
    graph.replay()
    cupy.cuda.get_current_stream().synchronize()
    np.testing.assert_array_equal(dense.get(), x[:, ::-1])
    np.testing.assert_array_equal(reversed_series.get(), series[:, ::-1])
