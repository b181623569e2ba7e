"""Shared tiles on the device: copies of aligned and unaligned fields, tails, and the debug build's check.

tests/specs/tiles: `scale_snap` tiles `Window.snap` (16-byte copies), `scale_odd` tiles `Odd.mid`
(3 f32 at offset 1 of 7-element rows: 4-byte copies), `shift_tile` reads its tile `amount` columns
further along. Inputs are fresh random data, outputs poisoned with NaN first, compared with numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.gpu_program import build

pytestmark = pytest.mark.gpu
SPEC = "tests/specs/tiles/spec.py"


@pytest.mark.parametrize("rows", [1, 63, 64, 65, 127, 1000])  # tiles of 64 rows: tails of 1 and 63
def test_tiles_of_aligned_and_unaligned_fields_round_trip(rows: int) -> None:
    import cupy

    tiles = build(SPEC, "gpu-tiles")
    rng = np.random.default_rng()
    for suffix in ("", "_async"):  # load() and load_async() (cp.async on the H200)
        window = rng.normal(size=(rows, 1, 56)).astype(np.float32)
        y = cupy.full((rows, 1, 40), cupy.nan, cupy.float32)
        getattr(tiles, "scale_snap" + suffix)(cupy.asarray(window), y)
        assert np.array_equal(y.get(), 2 * window[..., :40])
        odd = rng.normal(size=(rows, 7)).astype(np.float32)
        out = cupy.full((rows, 3), cupy.nan, cupy.float32)
        getattr(tiles, "scale_odd" + suffix)(cupy.asarray(odd), out)
        assert np.array_equal(out.get(), 2 * odd[:, 1:4])


def test_the_debug_build_stops_a_read_outside_the_tile() -> None:
    import cupy

    from layoutgen.runtime.debug import KernelFault

    release = build(SPEC, "gpu-tiles")
    debug = build(SPEC, "gpu-tiles-debug", "--debug")
    x = cupy.asarray(np.random.default_rng().normal(size=(40, 3)).astype(np.float32))
    for module in (release, debug):  # in the tile: both builds copy
        y = cupy.full((40, 3), cupy.nan, cupy.float32)
        module.shift_tile(x, 0, y)
        assert np.array_equal(y.get(), x.get())
    y = cupy.full((40, 3), cupy.nan, cupy.float32)
    release.shift_tile(x, 1, y)  # the tile's rows are 3 apart: column 3 is the next row's column 0
    assert np.array_equal(y.get()[:31, 2], x.get()[1:32, 0])
    with pytest.raises(KernelFault) as fault:
        debug.shift_tile(x, 1, cupy.full((40, 3), cupy.nan, cupy.float32))
    assert fault.value.code == "LG611"
    assert "`shift_tile` indexed shared tile `xs` at row " in str(fault.value)
    assert ", column 3, outside the tile (33 rows, 3 columns)" in str(fault.value)
