"""Warps that work alone and tiles of their own, without a GPU: declarations, layout, generation, launch sizes,
offline compiles, the lint's barrier rule, and host runs of a small kernel.

`Grid.persistent_warps` gives each warp of a resident block tiles of its own (`tiles`, `tiles.nth(i)`,
`lane`, `warp`, `warps`); `Tile(..., scope="warp", stages=S)` a ring of S tiles for each warp, copied by its
32 lanes. tests/specs/warp_tiles has the kernels; the VSN kernels on tensor cores (tests/test_vsn_host.py)
are the large example. The device runs are tests/gpu/test_warp_tiles_gpu.py.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Site, Spec, Tile, dims, f32
from layoutgen.checks import check_spec
from layoutgen.checks.lint import lint_template
from layoutgen.checks.tile_loops import lines_in_tile_loops
from layoutgen.codegen.render import render_spec
from layoutgen.declare.tiles import shared_arrays
from layoutgen.project.specload import load_spec
from layoutgen.runtime.debug import check_fault
from layoutgen.runtime.plan import KernelSpec, SharedArray
from tests.fake_device import SMS
from tests.helpers.rendering import load, nvrtc
from tests.helpers.golden import render
from tests.helpers.grids import OUT, device, raises  # noqa: F401  (device: the fixture that records what it would start)
from tests.helpers.debug_fault import install_fault
from tests.helpers.launch import Dev

REPO = Path(__file__).resolve().parent.parent
SPEC = "tests/specs/warp_tiles/spec.py"
B, K, F, N = dims("B K F N")
Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)])
Rows = Layout("Rows", [N], f32, width=40)


def rendered_files(debug: bool = False) -> dict[str, str]:
    return render(SPEC, debug).files


# -- declarations -----------------------------------------------------------------------------------------------


def test_persistent_warps_is_a_frozen_grid_that_says_what_its_body_sees() -> None:
    grid = Grid.persistent_warps("x", rows=16, block=64, blocks_per_sm=2)
    assert grid == Grid("x", "persistent_warp", 64, 16, blocks_per_sm=2)
    assert repr(grid) == "Grid(param='x', per='persistent_warp', block=64, capacity=16, blocks_per_sm=2)"
    assert grid.names == ("tiles", "tile_capacity", "lane", "warp", "warps")
    assert Grid.persistent_warps("x") == Grid("x", "persistent_warp", 128, 32)


@pytest.mark.parametrize(("make", "code", "message", "hint"), [
    (lambda: Grid.persistent_warps("x", block=48), "LG216",
     "the block of Grid.persistent_warps must be a multiple of 32 threads (whole warps), got 48", "use block=32 or 64"),
    (lambda: Grid.persistent_warps("x", rows=0), "LG218",
     "`rows` of Grid.persistent_warps must be a positive integer below 2^31, got 0",
     "a tile or a warp owns at least one row"),
    (lambda: Grid.persistent_warps("x", blocks_per_sm=2000), "LG218",
     "`blocks_per_sm` of Grid.persistent_warps must be None or a positive integer up to 1024, got 2000",
     "None keeps as many blocks as the compiled kernel's occupancy allows"),
])
def test_malformed_persistent_warps_are_refused_where_made(make: Callable[[], object], code: str, message: str,
                                                           hint: str) -> None:
    err = raises(make)
    assert (err.code, err.diagnostic.message, err.hint) == (code, message, hint)


@pytest.mark.parametrize(("make", "message"), [
    (lambda: Tile("xs", "x", scope="lane"),  # type: ignore[arg-type]
     "`scope` of shared tile `xs` must be \"block\" or \"warp\", got 'lane'"),
    (lambda: Tile("xs", "x", stages=0), "`stages` of shared tile `xs` must be an integer from 1 to 8, got 0"),
    (lambda: Tile("xs", "x", stages=9), "`stages` of shared tile `xs` must be an integer from 1 to 8, got 9"),
    (lambda: Tile("xs", "x", stages=True), "`stages` of shared tile `xs` must be an integer from 1 to 8, got True"),
])
def test_a_bad_scope_or_count_of_stages_is_lg219_where_the_tile_is_made(make: Callable[[], object],
                                                                         message: str) -> None:
    err = raises(make)
    assert (err.code, err.diagnostic.message) == ("LG219", message)


def test_a_tile_is_a_frozen_value_that_shows_what_is_not_its_default() -> None:
    assert repr(Tile("xs", "x", scope="warp", stages=3)) == "Tile('xs', 'x', scope='warp', stages=3)"
    assert repr(Tile("xs", "x", rows=9)) == "Tile('xs', 'x', rows=9)"
    assert Tile("xs", "x", scope="warp") == Tile("xs", "x", scope="warp")


@pytest.mark.parametrize(("grid", "why"), [
    (Grid.rows("x"), "Grid.rows returns the threads past the last row before the body: a warp may have lost lanes"),
    (Grid.elements("x"), "Grid.elements returns the threads past the last element before the body: a warp may "
     "have lost lanes"),
    (Grid.tiles("x", rows=32, block=48), "the block of 48 threads ends in a part warp"),
    (Grid.general(blocks=[N], block=40), "the block of 40 threads ends in a part warp"),
])
def test_a_warp_tile_in_a_grid_whose_warps_can_lose_lanes_is_lg227(site_of: Callable[[str], Site], grid: Grid,
                                                                   why: str) -> None:
    err = raises(lambda: Kernel("k", "k.cu.j2", [In("x", [N, F])], grid=grid, shared=[
        Tile("xs", "x", rows=32, scope="warp"),  # site: tile
    ]))
    assert err.code == "LG227"
    assert err.diagnostic.message == ("shared tile `xs` of `k` is scoped to a warp, whose 32 lanes copy it together, "
                                      f"but {why}")
    assert err.site == site_of("tile")


def test_a_tile_takes_the_rows_of_its_own_scope_from_the_grid() -> None:
    warps = Kernel("k", "k.cu.j2", [In("x", [B, K, F]), In("w", [F, F])], grid=Grid.persistent_warps("x", rows=16),
                   shared=[Tile("xs", "x", scope="warp", stages=3), Tile("ws", "w", rows=40)])
    weights = Layout("Weights", [40], f32, width=40)
    xs, ws = shared_arrays(warps.bind(x=Window.snap, w=weights))
    assert (xs.capacity, xs.scope, xs.stages, xs.copies, xs.threads) == (16, "warp", 3, 4, 32)
    assert [d.size for d in xs.shape] == [4, 3, 16, 44] and xs.nbytes.coef == 4 * 3 * 16 * 44 * 4
    assert (ws.capacity, ws.scope, ws.copies, ws.threads) == (40, "block", 1, 128)
    per_warp = Kernel("k", "k.cu.j2", [In("x", [N, F])], grid=Grid.warps("x", rows_per_warp=4, block=64),
                      shared=[Tile("xs", "x", scope="warp")])
    assert shared_arrays(per_warp.bind(x=Rows))[0].capacity == 4
    err = raises(lambda: Kernel("k", "k.cu.j2", [In("x", [N, F])], grid=Grid.persistent_warps("x"),
                                shared=[Tile("xs", "x")]))
    assert (err.code, err.diagnostic.message, err.hint) == (
        "LG219", "shared tile `xs` of `k` needs `rows`: its grid has no tile of rows",
        "Tile('xs', 'x', rows=128), or a grid of tiles (Grid.tiles, Grid.persistent)")
    err = raises(lambda: Kernel("k", "k.cu.j2", [In("x", [N, F])], grid=Grid.tiles("x", block=64),
                                shared=[Tile("xs", "x", scope="warp")]))
    assert err.diagnostic.message == "shared tile `xs` of `k` needs `rows`: its grid has no tile of rows for a warp"


def test_every_warps_tiles_and_stages_count_toward_lg217() -> None:
    """One ring of 8 stages of 64 rows of 40 f32 is 90 KiB; four warps of them are more than an sm_90 block has."""
    kernel = Kernel("k", "k.cu.j2", [In("x", [N, F]), Out("y", [N, F])], grid=Grid.persistent_warps("x", rows=64),
                    shared=[Tile("xs", "x", scope="warp", stages=8)])
    diags = [d for d in check_spec(Spec("s", kernels=[kernel.bind(x=Rows, y=Rows)])) if d.code == "LG217"]
    assert [d.message for d in diags] == [
        "`k` needs 360448 bytes of dynamic shared memory (`xs` [4, 8, 64, 44] f32 = 360448 bytes), but a block on "
        "sm_90 may have at most 232448 bytes (227 KiB)"]


# -- generation and launch sizes --------------------------------------------------------------------------------


def test_the_prologue_gives_each_warp_its_ring_and_its_tiles() -> None:
    files = rendered_files()
    snap = files["warp_tiles/warp_scale_snap.cu"]
    assert ("    [[maybe_unused]] const lg::SharedTile<float, 8, 40, 44, 16, 32, lg::TileScope::warp, 2> xs{ "
            "reinterpret_cast<float*>(lg_shared + 0 + lg::warp_in_block() * 2816) };  // f32 [2, 2, 8, 44], rows of "
            "`x`, each warp its own\n") in snap
    assert ("const lg::SharedTile<float, 8, 40, 44, 16, 32, lg::TileScope::warp, 1> ys{ reinterpret_cast<float*>("
            "lg_shared + 5632 + lg::warp_in_block() * 1408) };") in snap
    assert "    [[maybe_unused]] int* const seen = reinterpret_cast<int*>(lg_shared + 8448);  // i32 [2]\n" in snap
    assert ("    [[maybe_unused]] const lg::Tiles tiles{ x.rows(), tile_capacity, static_cast<long long>(blockIdx.x) * "
            "warps + warp, static_cast<long long>(gridDim.x) * warps };\n") in snap
    assert "    [[maybe_unused]] constexpr int warps = 64 / 32;\n" in snap
    assert " return;" not in snap.split("#line 1")[0]  # every thread runs the body: the barrier after the loop is safe
    assert "lg::SharedTile<float, 8, 3, 3, 4, 32, lg::TileScope::warp, 2> xs{" in files["warp_tiles/warp_scale_odd.cu"]
    module = files["warp_tiles/__init__.py"]
    # a block of 2 warps owns 2 warp tiles of 8 rows at once; the shared memory is both warps' rings
    assert "        count=_lg_BlockRule('persistent', 16),\n" in module
    assert ("shared=(_lg_SharedArray('xs', 4, (2, 2, 8, 44)), _lg_SharedArray('ys', 4, (2, 8, 44)), "
            "_lg_SharedArray('seen', 4, (2,)),),") in module


def test_the_debug_build_checks_each_stage_and_names_the_tile() -> None:
    debug = rendered_files(debug=True)
    assert ('lg::SharedTile<float, 9, 3, 3, 4, 32, lg::TileScope::warp, 1> xs{ reinterpret_cast<float*>(lg_shared + 0 '
            '+ lg::warp_in_block() * 108), 0, "warp_shift.xs (a tile of x)" };') in debug["warp_tiles/warp_shift.cu"]
    assert "#include <lg/debug.cuh>\n" in debug["warp_tiles/warp_tiles.cuh"]  # the debug build's tile: the library's
    tile = (Path(__file__).resolve().parent.parent / "layoutgen/include/lg/detail/shared_tile.cuh").read_text()
    assert ("        Stage one{ data + (i % Stages) * (Capacity * Pitch) };\n#if LG_DETAIL_DEBUG\n"
            "        if (i < 0) out_of_field(lg_where, -1 - lg_tile, 0, i, Stages, -1);\n"
            "        one.lg_tile = lg_tile;\n") in tile


def test_a_stage_fault_names_the_tile_and_the_stage(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the debug build's record of stage(-1) becomes at the launcher: LG611, naming the tile and the stage."""
    from layoutgen.runtime import debug

    # hit; tile 0 (-1 - 0); index -1 of 1 stage (width -1: a stage's check) in block 1, thread 33; an accessor's
    # check (access -1), at no known line
    record = install_fault(monkeypatch, hit=1, param=-1, row=0, col=-1, rows=1, width=-1, block=1, thread=33,
                           access=-1)
    spec = KernelSpec("warp_shift", "warp_shift.cu", (), (), 0, 1, 64, shared=(SharedArray("xs", 4, (2, 9, 3)),))
    with pytest.raises(debug.KernelFault) as info:
        check_fault(spec, object(), None)
    assert info.value.diagnostic.code == "LG611"
    assert info.value.diagnostic.message == (
        "`warp_shift` asked shared tile `xs` for stage -1, but a stage must not be negative (the ring of 1 stage "
        "wraps at its end itself), in block 1, thread 33; the thread stopped before the access")
    assert not record.values.any()  # cleared for the next launch


def test_the_fault_record_is_the_debug_headers_struct() -> None:
    """The runtime's description of the record names the words of lg/fault.cuh's lg::Fault in its order, and the
    file's bytes after them: the launcher reads what the device writes."""
    from layoutgen.runtime import debug

    header = (Path(__file__).resolve().parent.parent / "layoutgen/include/lg/fault.cuh").read_text()
    body = header[header.index("struct Fault {"):].split("};", 1)[0]
    words: list[str] = []
    for line in body.splitlines()[1:]:
        declaration = line.split("//", 1)[0].strip().rstrip(";")
        if declaration.startswith(("unsigned long long ", "long long ")):
            words += [w.strip() for w in declaration.removeprefix("unsigned ").removeprefix("long long ").split(",")]
    assert tuple(words) == debug.FaultRecord._fields
    assert f"char file[{debug.FAULT_FILE_BYTES}];" in body


@pytest.mark.parametrize(("rows", "blocks"), [(16 * 100 + 5, 101), (16 * 5000, 8 * SMS), (1, 1)])
def test_resident_blocks_of_warps_each_own_a_warp_tile_a_warp_at_least(device: dict[str, Any], tmp_path: Path,
                                                                        rows: int, blocks: int) -> None:
    module = load(rendered_files()["warp_tiles/__init__.py"], tmp_path, "warp_tiles_launch")
    module.warp_shift(Dev((rows, 3)), 0, 0, Dev((rows, 3), ptr=OUT))
    assert device["made"] == [("warp_shift", blocks, 64, 224)]  # 2 warps' 9 rows of 3 f32: 216 bytes, to 16 bytes


@pytest.mark.parametrize("debug", [False, True], ids=["release", "debug"])
def test_warp_tiles_compile_offline(debug: bool) -> None:
    loaded = load_spec(REPO / SPEC)
    assert loaded.spec is not None
    nvrtc(render_spec(loaded.spec, REPO, SPEC, debug=debug), "warp_tiles")


# -- the barrier rule: LG407 ------------------------------------------------------------------------------------


def _lint(tmp: Path, body: str, grid: Grid) -> list[tuple[str, int, str]]:
    (tmp / "k.cu.j2").write_text(body, encoding="utf-8")
    kernel = Kernel("k", "k.cu.j2", [In("x", [N, F]), Out("y", [N, F])], grid=grid, template_root=tmp)
    return [(d.code, d.site.line if d.site else 0, d.message) for d in lint_template(kernel.bind(x=Rows, y=Rows),
                                                                                     tmp / "k.cu.j2")]


IN_LOOP = ("`__syncthreads()` in the loop over the tiles of kernel `k`, whose warps work alone "
           "(Grid.persistent_warps): each warp runs its own number of tiles, so the warps of a block do not reach "
           "the barrier together")


@pytest.mark.parametrize(("body", "lines"), [
    ("    for (const lg::Tile t : tiles) {\n        __syncwarp();\n        __syncthreads();\n    }\n", [3]),
    ("    for (const lg::Tile t : tiles)\n        __syncthreads();\n    __syncthreads();\n", [2]),
    ("    for (auto t : tiles) {\n        for (int i = 0; i < 2; ++i) { __syncthreads(); }\n    }\n", [2]),
    ("    __syncthreads();\n    for (const lg::Tile t : tiles) { __syncwarp(); }\n    __syncthreads();\n", []),
    ("    // for (const lg::Tile t : tiles) { __syncthreads(); }\n    __syncthreads();\n", []),
    ("    for (int i = 0; i < 4; ++i) { __syncthreads(); }\n", []),
])
def test_a_barrier_in_the_loop_over_a_warps_tiles_is_lg407_and_one_outside_it_is_not(
        tmp_path: Path, body: str, lines: list[int]) -> None:
    found = _lint(tmp_path, body, Grid.persistent_warps("x", rows=8, block=64))
    assert found == [("LG407", n, IN_LOOP) for n in lines]


def test_a_barrier_in_a_persistent_blocks_loop_is_safe() -> None:
    """Grid.persistent's blocks loop over their tiles together: a barrier there is what the grid is for."""
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        found = _lint(Path(tmp), "    for (const lg::Tile t : tiles) {\n        __syncthreads();\n    }\n",
                      Grid.persistent("x", rows=8, block=64))
    assert found == []


def test_the_loops_over_tiles_end_where_their_statement_ends() -> None:
    assert lines_in_tile_loops(["a;", "for (const lg::Tile t : tiles) {", "  { x; }", "}", "b;"]) == {1, 2, 3}
    assert lines_in_tile_loops(["for (auto t : tiles)", "  for (int i = 0; i < 3; ++i) y;", "z;"]) == {0, 1}
    assert lines_in_tile_loops(["for (int i = 0; i < 3; ++i) {}", "for (auto t: tiles) {}", "z;"]) == {1}
    assert lines_in_tile_loops(["for (auto [a, b] : pairs) {}", "z;"]) == set()


def test_the_vsn_kernels_keep_their_barrier_after_the_loop() -> None:
    loaded = load_spec(REPO / "examples/vsn/spec.py")
    assert loaded.spec is not None
    assert [d for d in check_spec(loaded.spec) if d.code in ("LG406", "LG407")] == []


# -- run on the host, a block's threads as host threads (lg/host/runtime.h) -------------------------------------


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from tests.helpers.host import COMPILER, cooperative, written_flat

    if COMPILER is None:
        pytest.skip("no host C++ compiler (g++) here")
    tmp = written_flat(tmp_path_factory, "warp_tiles_host", rendered_files())
    return {
        "snap": cooperative(tmp, tmp / "warp_scale_snap.cu", "warp_scale_snap",
                            "const float* x, float* y, float* total, long long B, long long K"),
        "odd": cooperative(tmp, tmp / "warp_scale_odd.cu", "warp_scale_odd",
                           "const float* x, float* y, float* total, long long B"),
        "block ring": cooperative(tmp, tmp / "block_ring.cu", "block_ring",
                                  "const float* x, float* y, long long B, long long K"),
        "warp rows": cooperative(tmp, tmp / "warp_rows.cu", "warp_rows",
                                 "const float* x, float* y, long long B, long long K"),
    }


def _pointers(*arrays: np.ndarray[Any, Any]) -> list[ctypes.c_void_p]:
    return [ctypes.c_void_p(a.ctypes.data) for a in arrays]


# warp tiles of 8 rows, 2 warps a block: tails of 1 and 7, one row, one tile, and blocks whose warps loop over
# several tiles (both stages of the ring used), some warps with none
@pytest.mark.parametrize("rows", [1, 7, 8, 9, 23, 300])
@pytest.mark.parametrize("blocks", [1, 2, 3])
def test_warps_alone_copy_aligned_and_unaligned_fields_through_their_rings(host: dict[str, Any], rows: int,
                                                                           blocks: int) -> None:
    rng = np.random.default_rng()
    grid, block = ctypes.c_int(blocks), ctypes.c_int(64)
    window = rng.normal(size=(rows, 1, 56)).astype(np.float32)
    y, total = np.full((rows, 1, 40), np.nan, np.float32), np.array([0.5], np.float32)
    host["snap"](*_pointers(window, y, total), ctypes.c_longlong(rows), ctypes.c_longlong(1), grid, block)
    assert np.array_equal(y, 2 * window[..., :40]) and total[0] == rows + 0.5
    odd = rng.normal(size=(rows, 7)).astype(np.float32)
    out, total = np.full((rows, 3), np.nan, np.float32), np.array([0.0], np.float32)
    host["odd"](*_pointers(odd, out, total), ctypes.c_longlong(rows), grid, block)
    assert np.array_equal(out, 2 * odd[:, 1:4]) and total[0] == rows


@pytest.mark.parametrize("rows", [1, 15, 16, 17, 100])
def test_a_ring_of_a_blocks_tile_and_a_warps_tile_in_a_grid_of_warps_round_trip(host: dict[str, Any],
                                                                                 rows: int) -> None:
    """Grid.persistent with a ring of two block tiles (1 to 3 blocks over tiles of 16 rows); Grid.warps with a
    tile for each warp of 4 rows (a block of 2 warps for every 8 rows, the last warp's rows fewer or none)."""
    rng = np.random.default_rng()
    window = rng.normal(size=(rows, 1, 56)).astype(np.float32)
    size = (ctypes.c_longlong(rows), ctypes.c_longlong(1))
    for blocks in (1, 2, 3):
        y = np.full((rows, 1, 40), np.nan, np.float32)
        host["block ring"](*_pointers(window, y), *size, ctypes.c_int(blocks), ctypes.c_int(64))
        assert np.array_equal(y, 2 * window[..., :40]), blocks
    y = np.full((rows, 1, 40), np.nan, np.float32)
    host["warp rows"](*_pointers(window, y), *size, ctypes.c_int(-(-rows // 8)), ctypes.c_int(64))
    assert np.array_equal(y, 2 * window[..., :40])
