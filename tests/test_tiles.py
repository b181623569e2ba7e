"""Shared tiles without a GPU: the layout layoutgen chooses, the declarations it refuses, what it generates.

A `Tile("xs", "x")` is laid out once the kernel is bound (declare/tiles.py): copies as wide as the
field's rows are aligned for (at most 16 bytes), rows an odd number of such groups apart. The device
behaviour (copies of aligned and unaligned fields, tails, the debug build's check) is in
tests/gpu/test_tiles_gpu.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Shared, Spec, Tile, dims, f32
from layoutgen.codegen.render import render_spec
from layoutgen.declare.kernels import KernelError
from layoutgen.declare.tiles import shared_arrays, tile_pitch, tile_vector_bytes
from layoutgen.project.specload import load_spec
from layoutgen.checks import check_spec
from tests.helpers.rendering import nvrtc

REPO = Path(__file__).resolve().parent.parent
SPEC = "tests/specs/tiles/spec.py"
B, K, F, D = dims("B K F D")


def _rendered(debug: bool = False) -> dict[str, str]:
    loaded = load_spec(REPO / SPEC)
    assert loaded.spec is not None, loaded.diagnostics
    rendered = render_spec(loaded.spec, REPO, SPEC, debug=debug)
    assert rendered.diagnostics == ()
    return rendered.files


@settings(max_examples=200, deadline=None)
@given(width=st.integers(1, 300), itemsize=st.sampled_from([1, 2, 4, 8]), log=st.integers(0, 4))
def test_a_tiles_pitch_is_the_least_odd_number_of_groups_that_holds_a_row(width: int, itemsize: int,
                                                                           log: int) -> None:
    vector = max(itemsize, 1 << log)
    pitch = tile_pitch(width, itemsize, vector)
    groups, rest = divmod(pitch * itemsize, vector)
    assert rest == 0 and groups % 2 == 1 and pitch >= width
    assert groups <= 2 or (groups - 2) * vector < width * itemsize  # no smaller odd count holds the row
    # An odd number of groups apart: the rows a warp's threads read at once fall in different banks.
    lanes = 128 // vector  # threads whose groups one 128-byte pass of the banks serves
    assert len({r * groups % lanes for r in range(lanes)}) == lanes


def test_copies_are_as_wide_as_the_fields_rows_are_aligned() -> None:
    window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)])
    odd = Layout("Odd", [B], f32, [Field("head", 1), Field("mid", 3), Field("tail", 3)])
    assert tile_vector_bytes(window.snap) == 16  # 160 bytes at offset 0 of 224-byte rows
    assert tile_vector_bytes(window.context) == 16  # 64 bytes at 160
    assert tile_vector_bytes(odd.mid) == 4  # 12 bytes at 4 of 28
    assert tile_pitch(40, 4, 16) == 44 and tile_pitch(3, 4, 4) == 3 and tile_pitch(16, 4, 16) == 20


def test_the_prologue_declares_each_tile_with_its_layout_and_the_launcher_checks_its_alignment() -> None:
    files = _rendered()
    assert ("    [[maybe_unused]] const lg::SharedTile<float, 64, 40, 44, 16, 64> xs{ reinterpret_cast<float*>("
            "lg_shared + 0) };  // f32 [64, 44], rows of `x`\n") in files["tiles/scale_snap.cu"]
    assert "lg::SharedTile<float, 64, 3, 3, 4, 64> xs{" in files["tiles/scale_odd.cu"]
    # x is tiled in 16-byte groups: its view takes 16 and its launcher checks arrays for it
    assert "Window_snap_view<const float, 16, lg::Packing::strided> x{" in files["tiles/scale_snap.cu"]
    assert "_lg_ParamSpec('x', 'in', Window.spec, 'Window.snap', 16, cols=(0, 40))" in files["tiles/__init__.py"]


def test_the_debug_build_names_each_tile() -> None:
    debug = _rendered(debug=True)["tiles/shift_tile.cu"]
    assert ('const lg::SharedTile<float, 33, 3, 3, 4, 32> xs{ reinterpret_cast<float*>(lg_shared + 0), 0, '
            '"shift_tile.xs (a tile of x)" };') in debug


def test_async_tile_copies_are_cp_async_on_sm_90() -> None:
    """The offline compile below is for sm_90, where load_async() is cp.async: its PTX must assemble."""
    files = _rendered()
    assert "xs.load_async(x, tile_row, tile_rows);" in files["tiles/scale_snap_async.cu"]
    library = Path(__file__).resolve().parent.parent / "layoutgen/include/lg/detail/shared_tile.cuh"
    assert "cp.async.cg.shared.global [%0], [%1], 16;" in library.read_text(encoding="utf-8")
    assert "#include <lg/lg.cuh>" in files["tiles/tiles.cuh"]


def test_tiles_compile_offline_in_both_builds() -> None:
    loaded = load_spec(REPO / SPEC)
    assert loaded.spec is not None
    for debug in (False, True):
        nvrtc(render_spec(loaded.spec, REPO, SPEC, debug=debug), "tiles")


def test_a_tile_takes_its_rows_from_the_grid_or_from_rows() -> None:
    window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)])
    k = Kernel("k", "k.cu.j2", [In("x", [B, K, F]), In("w", [F, F])], grid=Grid.persistent("x", rows=96),
               shared=[Tile("xs", "x"), Tile("ws", "w", rows=40), Shared("acc", f32, [F])])
    weights = Layout("Weights", [40], f32, width=40)
    laid = shared_arrays(k.bind(x=window.snap, w=weights))
    assert [(a.name, a.shape) for a in laid] == [
        ("xs", (96, 44)), ("ws", (40, 44)), ("acc", (F,))] or [
        (a.name, tuple(d.size if d.size is not None else str(d) for d in a.shape)) for a in laid] == [
        ("xs", (96, 44)), ("ws", (40, 44)), ("acc", ("F",))]


@pytest.mark.parametrize(("shared", "grid", "message"), [
    ([Tile("xs", "z")], Grid.tiles("x"),
     "shared tile `xs` of `k` holds rows of `z`, which is no array parameter of it (x)"),
    ([Tile("xs", "x")], Grid.rows("x"),
     "shared tile `xs` of `k` needs `rows`: its grid has no tile of rows"),
])
def test_a_tile_of_no_parameter_or_of_no_rows_is_lg219(shared: list[Tile], grid: Grid, message: str) -> None:
    with pytest.raises(KernelError) as info:
        Kernel("k", "k.cu.j2", [In("x", [B, F])], grid=grid, shared=shared)
    assert info.value.diagnostic.code == "LG219"
    assert info.value.diagnostic.message == message


def test_bad_rows_of_a_tile_are_lg219() -> None:
    with pytest.raises(KernelError) as info:
        Tile("xs", "x", rows=0)
    assert info.value.diagnostic.message == "`rows` of shared tile `xs` must be a positive integer, got 0"


def test_a_tile_of_a_field_counted_in_a_symbol_is_lg219_at_check_time() -> None:
    heads = Layout("Heads", [B], f32, [Field("h", shape=[4, D])])
    k = Kernel("k", "k.cu.j2", [In("x", [B, 4, D]), Out("y", [B, 4, D])], grid=Grid.tiles("x", rows=32),
               shared=[Tile("xs", "x")])
    diags = check_spec(Spec("s", kernels=[k.bind(x=heads.h, y=heads.h)]))
    assert [(d.code, d.message) for d in diags if d.code == "LG219"] == [(
        "LG219", "shared tile `xs` of `k` holds rows of `x`, bound to Heads.h, whose columns count `D` elements "
        "each: a tile's width must be a number")]


# -- run on the host, a block's threads as host threads (lg/host/runtime.h) -----------------------------

@pytest.fixture(scope="module")
def host_tiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from tests.helpers.host import COMPILER, cooperative, written_flat

    if COMPILER is None:
        pytest.skip("no host C++ compiler (g++) here")
    tmp = written_flat(tmp_path_factory, "tiles_host", _rendered())
    return {
        "scale_snap": cooperative(tmp, tmp / "scale_snap.cu", "scale_snap",
                                  "const float* x, float* y, long long B, long long K"),
        "scale_odd": cooperative(tmp, tmp / "scale_odd.cu", "scale_odd", "const float* x, float* y, long long B"),
        "scale_snap_async": cooperative(tmp, tmp / "scale_snap_async.cu", "scale_snap_async",
                                        "const float* x, float* y, long long B, long long K"),
        "scale_odd_async": cooperative(tmp, tmp / "scale_odd_async.cu", "scale_odd_async",
                                       "const float* x, float* y, long long B"),
    }


@pytest.mark.parametrize("rows", [1, 63, 64, 65, 127, 300])  # tiles of 64 rows: tails of 1 and 63
def test_tile_copies_of_aligned_and_unaligned_fields_round_trip_on_the_host(host_tiles: dict[str, Any],
                                                                            rows: int) -> None:
    import ctypes

    import numpy as np

    rng = np.random.default_rng()
    blocks = ctypes.c_int(-(-rows // 64))
    for suffix in ("", "_async"):  # on the host, load_async() is load(): the same rows land
        window = rng.normal(size=(rows, 1, 56)).astype(np.float32)
        y = np.full((rows, 1, 40), np.nan, np.float32)
        host_tiles["scale_snap" + suffix](ctypes.c_void_p(window.ctypes.data), ctypes.c_void_p(y.ctypes.data),
                                          ctypes.c_longlong(rows), ctypes.c_longlong(1), blocks, ctypes.c_int(64))
        assert np.array_equal(y, 2 * window[..., :40])
        odd = rng.normal(size=(rows, 7)).astype(np.float32)
        out = np.full((rows, 3), np.nan, np.float32)
        host_tiles["scale_odd" + suffix](ctypes.c_void_p(odd.ctypes.data), ctypes.c_void_p(out.ctypes.data),
                                         ctypes.c_longlong(rows), blocks, ctypes.c_int(64))
        assert np.array_equal(out, 2 * odd[:, 1:4])
