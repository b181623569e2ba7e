"""Warps that work alone through tiles of their own, on the device: rings of cp.async copies of aligned and
unaligned fields, tails, the block's reduction after the loop, and the debug build's checks of a warp's tile.

tests/specs/warp_tiles: `warp_scale_snap` tiles `Window.snap` (16-byte copies), `warp_scale_odd` tiles
`Odd.mid` (3 f32 at offset 1 of 7-element rows: 4-byte copies); both write y = 2 x through a ring of two x
tiles a warp and add the rows they saw to `total`, once a block, after a barrier past the loop. `warp_shift`
reads its tile `amount` columns further along, from stage `t.index - back`. Warp tiles of 8 rows, 2 warps a
block; inputs are fresh random data, outputs poisoned with NaN first.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.gpu_program import build

pytestmark = pytest.mark.gpu
SPEC = "tests/specs/warp_tiles/spec.py"


# tails of 1 and 7 rows of a warp tile; one row; and as many rows as keep every resident warp looping
@pytest.mark.parametrize("rows", [1, 7, 8, 9, 23, 1001, 1_000_003])
def test_warps_alone_round_trip_aligned_and_unaligned_fields_and_count_every_row_once(rows: int) -> None:
    import cupy

    tiles = build(SPEC, "gpu-warp-tiles")
    rng = np.random.default_rng()
    window = rng.normal(size=(rows, 1, 56)).astype(np.float32)
    y, total = cupy.full((rows, 1, 40), cupy.nan, cupy.float32), cupy.zeros(1, cupy.float32)
    tiles.warp_scale_snap(cupy.asarray(window), y, total)
    assert np.array_equal(y.get(), 2 * window[..., :40])
    assert float(total.get()[0]) == rows
    odd = rng.normal(size=(rows, 7)).astype(np.float32)
    out, total = cupy.full((rows, 3), cupy.nan, cupy.float32), cupy.zeros(1, cupy.float32)
    tiles.warp_scale_odd(cupy.asarray(odd), out, total)
    assert np.array_equal(out.get(), 2 * odd[:, 1:4])
    assert float(total.get()[0]) == rows


def test_the_debug_build_stops_a_read_outside_a_warps_tile_and_a_negative_stage() -> None:
    import cupy

    from layoutgen.runtime.debug import KernelFault

    release = build(SPEC, "gpu-warp-tiles")
    debug = build(SPEC, "gpu-warp-tiles-debug", "--debug")
    x = cupy.asarray(np.random.default_rng().normal(size=(40, 3)).astype(np.float32))
    for module in (release, debug):  # in the tile: both builds copy
        y = cupy.full((40, 3), cupy.nan, cupy.float32)
        module.warp_shift(x, 0, 0, y)
        assert np.array_equal(y.get(), x.get())
    y = cupy.full((40, 3), cupy.nan, cupy.float32)
    release.warp_shift(x, 1, 0, y)  # the tile's rows are 3 apart: column 3 is the next row's column 0
    assert np.array_equal(y.get()[:7, 2], x.get()[1:8, 0])
    with pytest.raises(KernelFault) as fault:
        debug.warp_shift(x, 1, 0, cupy.full((40, 3), cupy.nan, cupy.float32))
    assert fault.value.code == "LG611"
    assert "`warp_shift` indexed shared tile `xs` at row " in str(fault.value)
    assert ", column 3, outside the tile (9 rows, 3 columns)" in str(fault.value)
    with pytest.raises(KernelFault) as fault:
        debug.warp_shift(x, 0, 1, cupy.full((40, 3), cupy.nan, cupy.float32))
    assert "`warp_shift` asked shared tile `xs` for stage -1, but a stage must not be negative" in str(fault.value)


@pytest.mark.parametrize("rows", [1, 15, 16, 17, 100_003])
def test_a_ring_of_a_blocks_tile_and_a_warps_tile_in_a_grid_of_warps_round_trip(rows: int) -> None:
    """`block_ring`: Grid.persistent through a ring of two block tiles (cp.async, the next tile in flight);
    `warp_rows`: Grid.warps, a tile of 4 rows for each warp."""
    import cupy

    tiles = build(SPEC, "gpu-warp-tiles")
    window = np.random.default_rng().normal(size=(rows, 1, 56)).astype(np.float32)
    for kernel in (tiles.block_ring, tiles.warp_rows):
        y = cupy.full((rows, 1, 40), cupy.nan, cupy.float32)
        kernel(cupy.asarray(window), y)
        assert np.array_equal(y.get(), 2 * window[..., :40]), kernel
