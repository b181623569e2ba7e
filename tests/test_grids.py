"""The cooperative grids (issue 15, item 1), without a GPU: declaration, checks, generation, compile, launch sizes.

`tests/specs/grids` has one kernel per cooperative grid and a program of the two with shared memory.
Its generated code is pinned by golden files (`LAYOUTGEN_UPDATE_GOLDEN=1` refreshes them) and compiled
offline with NVRTC, release and debug builds. What its launchers start (blocks, threads, shared
bytes) is recorded by a device that launches nothing; execution is tests/gpu/test_grids_gpu.py.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutgen import Dim, Grid, In, Kernel, KernelError, Layout, Out, Shared, Site, Spec, ceil_div, dims, f32
from layoutgen.codegen.model import kernel_model, view_model
from layoutgen.codegen.render import render_spec
from layoutgen.declare.grids import GRID_NAMES, BlockCount
from layoutgen.declare.kernels import THREAD_INDEX
from layoutgen.runtime import debug as debug_faults
from layoutgen.runtime import driver, launch, occupancy
from layoutgen.runtime.launch import BlockRule, KernelLauncher, KernelSpec, LaunchError, LayoutSpec, ParamSpec
from tests.fake_device import FUNCTION, SMS
from tests.helpers.golden import check_golden, render
from tests.helpers.grids import OUT, device, raises  # noqa: F401  (device: the fixture that records what it would start)
from tests.helpers.launch import BASE, Dev, launcher_of, runner_of
from tests.helpers.rendering import load

REPO = Path(__file__).resolve().parent.parent
SPEC = "tests/specs/grids/spec.py"
KERNELS = ("persistent_colsum", "series_reverse", "tile_reverse", "warp_center", "warp_center4")
N, B, K, F = dims("N B K F")
_MODULES = itertools.count()


def grids_module(tmp: Path, debug: bool = False) -> Any:
    return load(render(SPEC, debug).files["grids/__init__.py"], tmp, f"grids_{next(_MODULES)}")


# -- declarations ----------------------------------------------------------------------------------------------


def test_each_grid_is_a_frozen_value_that_says_what_it_is() -> None:
    assert Grid.tiles("x") == Grid("x", "tile", 256, 128)
    assert Grid.warps("x", rows_per_warp=4, block=64) == Grid("x", "warp", 64, 4)
    assert Grid.persistent("x", rows=32, blocks_per_sm=2) == Grid("x", "persistent", 256, 32, blocks_per_sm=2)
    assert Grid.general(blocks=[B, K]) == Grid(None, "general", 256, blocks=BlockCount((B, K)))
    assert Grid.general(threads=[B, K], block=128).blocks == ceil_div([B, K], 128) == BlockCount((B, K), 128)
    assert Grid.general(blocks=4).blocks == BlockCount((Dim.of(4),))
    assert repr(Grid.rows("y")) == "Grid(param='y', per='row', block=128)"  # as messages showed it before
    assert repr(Grid.tiles("x", rows=64)) == "Grid(param='x', per='tile', block=256, capacity=64)"
    assert repr(Grid.general(blocks=ceil_div([B, K], 4))) == (
        "Grid(param=None, per='general', block=256, blocks=ceil_div(B*K, 4))")
    assert Grid.warps("x").names == ("row", "warp_rows", "lane", "warp") == GRID_NAMES["warp"]


@pytest.mark.parametrize(("marker", "make", "code", "message", "hint"), [
    ("warp-48", lambda: Grid.warps("x", block=48),  # site: warp-48
     "LG216", "the block of Grid.warps must be a multiple of 32 threads (whole warps), got 48", "use block=32 or 64"),
    ("warp-20", lambda: Grid.warps("x", block=20),  # site: warp-20
     "LG216", "the block of Grid.warps must be a multiple of 32 threads (whole warps), got 20", "use block=32"),
    ("rows-0", lambda: Grid.tiles("x", rows=0),  # site: rows-0
     "LG218", "`rows` of Grid.tiles must be a positive integer below 2^31, got 0", "a tile or a warp owns at least one row"),
    ("rows-bool", lambda: Grid.warps("x", rows_per_warp=True),  # site: rows-bool
     "LG218", "`rows_per_warp` of Grid.warps must be a positive integer below 2^31, got True",
     "a tile or a warp owns at least one row"),
    ("rows-big", lambda: Grid.persistent("x", rows=2**31),  # site: rows-big
     "LG218", "`rows` of Grid.persistent must be a positive integer below 2^31, got 2147483648",
     "a tile or a warp owns at least one row"),
    ("per-sm", lambda: Grid.persistent("x", blocks_per_sm=0),  # site: per-sm
     "LG218", "`blocks_per_sm` of Grid.persistent must be None or a positive integer up to 1024, got 0",
     "None keeps as many blocks as the compiled kernel's occupancy allows"),
    ("per-sm-rows", lambda: Grid("x", "row", blocks_per_sm=2),  # site: per-sm-rows
     "LG218", "`blocks_per_sm` is for Grid.persistent and Grid.persistent_warps, got 2 for Grid.rows", None),
    ("capacity", lambda: Grid("x", "element", capacity=4),  # site: capacity
     "LG218", "`capacity` of Grid.elements must be 1, got 4",
     "tiles, warps and persistent grids own rows: Grid.tiles, Grid.warps, Grid.persistent, Grid.persistent_warps"),
    ("both", lambda: Grid.general(blocks=[B], threads=[B]),  # site: both
     "LG218", "Grid.general takes `blocks` or `threads`, one of them, got blocks=[Dim(name='B', size=None)] and "
     "threads=[Dim(name='B', size=None)]", "for example Grid.general(blocks=[B, H])"),
    ("neither", lambda: Grid.general(),  # site: neither
     "LG218", "Grid.general takes `blocks` or `threads`, one of them, got blocks=None and threads=None",
     "for example Grid.general(blocks=[B, H])"),
    ("empty", lambda: Grid.general(blocks=[]),  # site: empty
     "LG218", "`blocks` must be a dim, an int or a list of them, got []", None),
    ("divisor", lambda: ceil_div([B, K], 0),  # site: divisor
     "LG218", "the divisor of `ceil_div` must be a positive integer, got 0", None),
    ("general-param", lambda: Grid("x", "general", blocks=BlockCount((B,))),  # site: general-param
     "LG218", "Grid.general counts `blocks` of the kernel's symbols and follows no parameter, got param='x', "
     "blocks=BlockCount(factors=(Dim(name='B', size=None),), divisor=1)", "make it with Grid.general(blocks=...)"),
])
def test_malformed_grid_arguments_are_refused_where_the_grid_is_made(
        site_of: Callable[[str], Site], marker: str, make: Callable[[], object], code: str, message: str,
        hint: str | None) -> None:
    err = raises(make)
    assert (err.code, err.diagnostic.message, err.hint) == (code, message, hint)
    assert err.site == site_of(marker)


def test_a_general_grid_counted_in_a_symbol_the_kernel_lacks_is_lg218_at_the_kernel(
        site_of: Callable[[str], Site]) -> None:
    err = raises(lambda: Kernel("k", "k.cu.j2", [In("x", [B, K])], grid=Grid.general(blocks=ceil_div([B, "Q"], 4))))  # site: kernel
    assert (err.code, err.site) == ("LG218", site_of("kernel"))
    assert err.diagnostic.message == ("the grid of `k` counts its blocks as ceil_div(B*Q, 4), but `Q` is no symbol of "
                                      "its parameters' shapes (B, K): its value would be known nowhere")
    assert err.hint == "count the blocks in the parameters' symbols, or in numbers"
    assert Kernel("k", "k.cu.j2", [In("x", [B, K])], grid=Grid.general(blocks=[B, 2])).grid.blocks == BlockCount(
        (B, Dim.of(2)))


def test_a_cooperative_grid_must_still_follow_a_parameter_and_fit_a_block(site_of: Callable[[str], Site]) -> None:
    err = raises(lambda: Kernel("k", "k.cu.j2", [In("x", [B])], grid=Grid.tiles("y")))  # site: follows
    assert (err.code, err.site) == ("LG208", site_of("follows"))
    assert err.diagnostic.message == (
        "the grid of `k` must follow one of its parameters, got Grid(param='y', per='tile', block=256, capacity=128)")
    err = raises(lambda: Kernel("k", "k.cu.j2", [In("x", [B])], grid=Grid.warps("x", block=2048)))
    assert (err.code, err.diagnostic.message) == ("LG208", "the block size of `k` must be 1..1024, got 2048")


def test_a_parameter_or_symbol_named_like_what_its_grid_defines_is_lg208(site_of: Callable[[str], Site]) -> None:
    err = raises(lambda: Kernel("k", "k.cu.j2", [In("lane", [B])], grid=Grid.warps("lane")))
    assert err.diagnostic.message == (
        "parameter `lane` of `k` clashes with `lane`, which Grid.warps defines in the body (row, warp_rows, lane, warp)")
    assert (err.code, err.hint) == ("LG208", "rename the parameter")
    err = raises(lambda: Kernel("k", "k.cu.j2", [
        In("x", [B, "tile_row"]),  # site: symbol
    ], grid=Grid.tiles("x")))
    assert err.diagnostic.message == ("shape symbol `tile_row` of `k` clashes with `tile_row`, which Grid.tiles "
                                      "defines in the body (tile, tile_row, tile_rows, tile_capacity)")
    assert (err.code, err.hint, err.site) == ("LG208", "rename the symbol", site_of("symbol"))
    # What another grid defines is free: `lane` under tiles, `tiles` under warps.
    assert Kernel("k", "k.cu.j2", [In("lane", [B]), Out("tiles", [B])], grid=Grid.tiles("lane")).grid.per == "tile"


KINDS = {
    "row": lambda p: Grid.rows(p), "element": lambda p: Grid.elements(p), "vector": lambda p: Grid.vectors(p),
    "tile": lambda p: Grid.tiles(p, rows=16, block=64), "warp": lambda p: Grid.warps(p, rows_per_warp=2, block=64),
    "persistent": lambda p: Grid.persistent(p, rows=16, block=64), "general": lambda p: Grid.general(blocks=[4]),
    "persistent_warp": lambda p: Grid.persistent_warps(p, rows=8, block=64),
}
POOL = sorted({n for names in GRID_NAMES.values() for n in names} | {"xs", "acc", "count"})


@settings(max_examples=int(os.environ.get("LAYOUTGEN_GRID_NAME_EXAMPLES", "30")), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kind=st.sampled_from(sorted(KINDS)), role=st.sampled_from(["param", "symbol", "shared"]),
       name=st.sampled_from(POOL), debug=st.booleans())
def test_a_name_is_refused_where_the_grid_defines_it_and_compiles_everywhere_else(
        tmp_path_factory: pytest.TempPathFactory, kind: str, role: str, name: str, debug: bool) -> None:
    """The class of the clash: whatever the grid, a parameter, symbol or shared array is refused (LG208, LG219)
    exactly where the generated prologue defines its name; anywhere else the kernel compiles with NVRTC."""
    from layoutgen.runtime.nvrtc import CompileRequest, compile_cubin

    tmp = tmp_path_factory.mktemp("grid_names")
    param, symbol, array = {"param": (name, "S", "buf"), "symbol": ("x", name, "buf"),
                            "shared": ("x", "S", name)}[role]
    grid = KINDS[kind](param)
    defined = set(grid.names) | (set(THREAD_INDEX) if role != "shared" else set())
    (tmp / "k.cu.j2").write_text(f"    {array}[0] = {param}.at(0, 0) + static_cast<float>({symbol});\n"
                                 f"    {param}.at(0, 1) = {array}[0];\n", encoding="utf-8")
    try:
        kernel = Kernel("k", "k.cu.j2", [Out(param, [symbol, 4])], grid=grid, shared=[Shared(array, f32, [symbol])],
                        template_root=tmp)
    except KernelError as exc:
        assert name in defined, f"`{name}` as a {role} under {kind} was refused: {exc}"
        assert exc.code == ("LG219" if role == "shared" else "LG208"), exc
        return
    assert name not in defined, f"`{name}` as a {role} under {kind} was accepted: the prologue defines it"
    rows = Layout("Rows", [symbol], f32, width=4)
    rendered = render_spec(Spec("names", kernels=[kernel.bind(**{param: rows})]), tmp, "spec.py", debug=debug)
    assert rendered.diagnostics == (), rendered.diagnostics
    headers = (("names.cuh", rendered.files["names/names.cuh"]),)
    compile_cubin(CompileRequest(source=rendered.files["names/k.cu"], name="generated/names/k.cu", headers=headers))


# -- generation ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", KERNELS)
def test_golden_grids(name: str) -> None:
    check_golden(f"grids/{name}.cu", render(SPEC).files[f"grids/{name}.cu"])


def test_each_grid_places_its_prologue_and_the_launcher_its_count() -> None:
    files = render(SPEC).files
    tiles, warps, persistent, general = (files[f"grids/{k}.cu"] for k in (
        "tile_reverse", "warp_center4", "persistent_colsum", "series_reverse"))
    assert "    [[maybe_unused]] const int tile_rows = x.rows() - tile_row < tile_capacity ? " \
           "static_cast<int>(x.rows() - tile_row) : tile_capacity;\n" in tiles
    assert " return;" not in tiles.split("#line 1")[0]  # every thread of a tile runs the body
    assert "    const long long row = warp * 4;\n    if (row >= x.rows()) return;\n" in warps
    assert "    [[maybe_unused]] const lg::Tiles tiles{ x.rows(), tile_capacity, blockIdx.x, gridDim.x };\n" in persistent
    assert "using Tile = TileOf<long long>;\nusing Tiles = TilesOf<long long>;\n" in persistent  # lg/grid.cuh's, at its index type
    assert " return;" not in general.split("#line 1")[0]
    assert "    [[maybe_unused]] float* const stage = reinterpret_cast<float*>(lg_shared + 0);  // f32 [K]\n" in general
    module = files["grids/__init__.py"]
    assert "        count=_lg_BlockRule('rows', 64),\n        shared=(_lg_SharedArray('xs', 4, (64, 40)),),\n" in module
    assert "        count=_lg_BlockRule('rows', 8),\n" in module  # warp_center4: 2 warps of 4 rows a block
    assert "        count=_lg_BlockRule('persistent', 32),\n" in module
    assert "        count=_lg_BlockRule('general', 1, dims=('B',)),\n        shared=(_lg_SharedArray('stage', 4, " \
           "('K',)),),\n" in module


def _grid_kernel(rows: int, grid: Grid) -> Any:
    lay = Layout("Rows", [rows], f32, width=2)
    binding = Kernel("k", "k.cu.j2", [In("x", [N, 2])], grid=grid).bind(x=lay)
    return kernel_model(binding, {lay.view.name: view_model(lay.view, "here")}, "k.cu.j2", "here")


def test_a_cooperative_grids_indices_are_long_long_where_they_could_pass_2_to_the_31() -> None:
    assert _grid_kernel(1000, Grid.tiles("x", rows=64)).index_type == "int"
    assert _grid_kernel(1000, Grid.rows("x")).index_type == "int"
    # 2^31 - 100 static rows: the views still index in `int`, but a warp's first row can pass it
    assert _grid_kernel(2**31 - 100, Grid.warps("x", rows_per_warp=4)).index_type == "long long"
    assert _grid_kernel(2**31 - 100, Grid.tiles("x", rows=64)).index_type == "long long"


def _project(tmp: Path) -> Path:
    project = tmp / "project"
    shutil.copytree(REPO / "tests" / "specs" / "grids", project / "specs" / "grids",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (project / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["specs/grids/spec.py"]\n')
    return project


@pytest.mark.parametrize("debug", [False, True], ids=["release", "debug"])
def test_every_grid_kind_compiles_offline(tmp_path: Path, debug: bool) -> None:
    project, cache = _project(tmp_path), tmp_path / "cache"
    env = {**os.environ, "PYTHONPATH": str(REPO), "LAYOUTGEN_CACHE_DIR": str(cache)}
    flags = ["--debug"] if debug else []
    for command in (["generate", "-q", *flags], ["check", "--compile", *flags]):
        run = subprocess.run([sys.executable, "-m", "layoutgen", *command], cwd=project, env=env,
                             capture_output=True, text=True, timeout=600)
        assert run.returncode == 0, run.stdout + run.stderr
    assert len(list(cache.rglob("*.cubin"))) == len(KERNELS)


# -- launches, recorded ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def grids(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return grids_module(tmp_path_factory.mktemp("grids_module"))


@pytest.mark.parametrize(("rows", "blocks"), [(64 * 3 + 1, 4), (64 * 3 + 63, 4), (64, 1), (1, 1)])
def test_tiles_start_a_block_per_tile_with_the_tiles_shared_memory(
        device: dict[str, Any], grids: Any, rows: int, blocks: int) -> None:
    grids.tile_reverse(Dev((rows, 48)), Dev((rows, 40), ptr=OUT))
    assert device["made"] == [("tile_reverse", blocks, 128, 64 * 40 * 4)]
    assert device["raised"] == []  # 10 KiB: within the 48 KiB every kernel has


@pytest.mark.parametrize(("kernel", "rows", "blocks"), [
    ("warp_center", 10, 3), ("warp_center", 8, 2), ("warp_center", 1, 1),  # 4 warps of a row a block
    ("warp_center4", 10, 2), ("warp_center4", 8, 1), ("warp_center4", 17, 3),  # 2 warps of 4 rows
])
def test_warps_start_a_warp_per_group_of_rows(device: dict[str, Any], grids: Any, kernel: str, rows: int,
                                              blocks: int) -> None:
    getattr(grids, kernel)(Dev((rows, 48)), Dev((rows, 40), ptr=OUT))
    assert device["made"] == [(kernel, blocks, 128 if kernel == "warp_center" else 64, 0)]


@pytest.mark.parametrize(("rows", "blocks"), [(32 * 100 + 5, 101), (32 * 5000, 8 * SMS), (0, 0)])
def test_a_persistent_grid_starts_what_stays_resident_at_most_a_block_a_tile(
        device: dict[str, Any], grids: Any, rows: int, blocks: int) -> None:
    grids.persistent_colsum(Dev((rows, 48)), Dev((rows, 1), ptr=OUT), Dev((40,), ptr=OUT + 2**30))
    assert device["made"] == ([("persistent_colsum", blocks, 64, 0)] if blocks else [])


def test_blocks_per_sm_replaces_the_occupancy(device: dict[str, Any]) -> None:
    rows = LayoutSpec("Rows", ("N",), 4, "f32", 4)
    spec = KernelSpec("spread", "spread.cu", (ParamSpec("x", "inout", rows, "Rows", 4),), symbols=("N",), grid_param=0,
                      per_row=1, block=128, count=BlockRule("persistent", 16, blocks_per_sm=2))
    KernelLauncher(spec, Path(), "")(Dev((10**6, 4)))
    assert device["made"] == [("spread", 2 * SMS, 128, 0)]


def test_a_general_grid_counts_its_blocks_and_raises_the_48_kib_limit_once(device: dict[str, Any], grids: Any) -> None:
    for k in (1000, 16384, 16384, 12000):
        grids.series_reverse(Dev((3, k, 1)), Dev((3, k, 1), ptr=OUT))
    assert device["made"] == [("series_reverse", 3, 256, 4000), ("series_reverse", 3, 256, 65536),
                              ("series_reverse", 3, 256, 65536), ("series_reverse", 3, 256, 48000)]
    assert device["raised"] == [(0, FUNCTION, 65536)]  # 48000 bytes is over 48 KiB but within what was raised


def test_shared_memory_over_the_devices_limit_is_refused_before_anything_runs(
        device: dict[str, Any], grids: Any) -> None:
    with pytest.raises(LaunchError) as info:
        grids.series_reverse(Dev((3, 60000, 1)), Dev((3, 60000, 1), ptr=OUT))
    assert str(info.value) == (
        "error[LG624]: `series_reverse` needs 240000 bytes of dynamic shared memory (`stage` 240000 bytes at byte 0; "
        "`K` = 60000), but device 0 allows a block at most 232448 bytes\n  hint: launch it on smaller sizes (the "
        "arrays are sized by the symbols shown), or declare smaller arrays: fewer rows a tile")
    occupancy._STATIC[(0, FUNCTION)] = 1024  # the body's own __shared__ arrays count too
    with pytest.raises(LaunchError) as info:
        grids.series_reverse(Dev((3, 57900, 1)), Dev((3, 57900, 1), ptr=OUT))
    assert "needs 231600 bytes of dynamic shared memory (`stage` 231600 bytes at byte 0; `K` = 57900) and 1024 " \
           "bytes its body declares, but device 0 allows a block at most 232448 bytes" in str(info.value)
    assert device["made"] == [] and device["raised"] == []


def test_a_persistent_grid_no_block_of_which_fits_is_refused(device: dict[str, Any], grids: Any,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import cupy

    monkeypatch.setattr(cupy.cuda.driver, "occupancyMaxActiveBlocksPerMultiprocessor", lambda fn, block, shared: 0)
    with pytest.raises(LaunchError) as info:
        grids.persistent_colsum(Dev((100, 48)), Dev((100, 1), ptr=OUT), Dev((40,), ptr=OUT + 2**30))
    assert str(info.value) == (
        "error[LG625]: `persistent_colsum` is a persistent grid, but device 0 keeps no block of it resident: the "
        "occupancy of its 64 threads a block with 0 bytes of dynamic shared memory is 0\n  hint: use a smaller block "
        "or less shared memory; `layoutgen check --compile --report` shows the kernel's registers")
    assert device["made"] == []


def test_a_general_grid_of_more_blocks_than_cuda_allows_is_lg617(device: dict[str, Any], grids: Any) -> None:
    with pytest.raises(LaunchError) as info:
        grids.series_reverse(Dev((2**31, 1, 1)), Dev((2**31, 1, 1), ptr=BASE + 2**40))
    assert str(info.value).startswith(
        "error[LG617]: `series_reverse` needs 2147483648 blocks of 256 threads (`B` = 2147483648, `K` = 1), but a "
        "CUDA grid has at most 2147483647 blocks\n")
    assert device["made"] == []


def test_a_program_sizes_each_launch_as_its_launcher_does(device: dict[str, Any], grids: Any) -> None:
    """What a run launches and a capture records: the prepared launches, shared memory included."""
    arrays = (Dev((130, 48)), Dev((130, 40), ptr=OUT), Dev((2, 20000, 1), ptr=OUT + 2**30),
              Dev((2, 20000, 1), ptr=OUT + 2**31))
    prepared = runner_of(grids, "stage").prepare(arrays, device=0)
    assert [(blocks, block, getattr(fn, "shared", 0)) for fn, blocks, block, _ in prepared] == [
        (3, 128, 64 * 40 * 4), (2, 256, 80000)]
    assert device["raised"] == [(0, FUNCTION, 80000)]
    grids.stage(rows=arrays[0], dense=arrays[1], series=arrays[2], reversed_series=arrays[3])
    assert device["made"] == [("tile_reverse", 3, 128, 10240), ("series_reverse", 2, 256, 80000)]


def test_the_debug_build_launches_with_the_same_shared_memory(device: dict[str, Any], tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    debug = grids_module(tmp_path, debug=True)
    fn = launcher_of(debug, "series_reverse")
    assert fn.spec.debug
    monkeypatch.setattr(fn, "_modules", {(0, "sm_90"): object()})
    for name in ("clear_fault", "check_fault", "scan_outputs"):  # the debug launch's checks (runtime/debug.py)
        monkeypatch.setattr(debug_faults, name, lambda *args: None)
    debug.series_reverse(Dev((2, 20000, 1)), Dev((2, 20000, 1), ptr=OUT))
    assert device["made"] == [("series_reverse", 2, 256, 80000)]


def test_both_launch_paths_pass_the_shared_memory_to_the_driver() -> None:
    calls: list[Any] = []
    packed = object.__new__(driver.PackedLaunch)  # without cuda.bindings: its driver call faked
    packed.__dict__.update(_launch=lambda *a: calls.append(a) or ("CUDA_SUCCESS",), _success="CUDA_SUCCESS",
                           _function=0, _name="k", _values=(ctypes.c_uint64 * 1)(), _address=0, _streams={},
                           _stream_type=int, _lock=threading.Lock(), handle=FUNCTION)
    stream = type("S", (), {"__cuda_stream__": lambda self: (0, 7)})()
    occupancy.SharedMemoryLaunch(packed, 65536)(2, 128, [0], stream)
    assert calls[0][1:8] == (2, 1, 1, 128, 1, 1, 65536)
    cupy_launch = driver.CupyLaunch(lambda *a, **kw: calls.append(kw), "k")
    import cupy

    cupy_launch(2, 128, [0], cupy.cuda.Stream.null, 4096)
    assert calls[1]["shared_mem"] == 4096
    cupy_launch(2, 128, [0], cupy.cuda.Stream.null)
    assert calls[2]["shared_mem"] == 0


def test_grids_are_in_the_architecture_table() -> None:
    table = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert "| `Grid`, `ceil_div` (the grids and what each guarantees) | `declare/grids.py` |" in table
    assert re.search(r"\| dynamic shared memory and resident blocks at launch .*\| `runtime/occupancy.py` \|", table)
