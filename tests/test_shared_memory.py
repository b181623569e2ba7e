"""Dynamic shared memory (issue 15, item 3), without a GPU: `Shared`, its checks, its layout, its limits.

The buffer is laid out three times, by one rule: by the generated prologue (C++ offsets, or
`lg::shared_start` of symbolic ones), by the check of a static size against the target arch (LG217)
and by the launcher from the bound symbols (`runtime.plan.shared_offsets`). A property test holds
the three to the same numbers. The launcher's refusal over the device's limit (LG624) and its raise
of the 48 KiB default are in tests/test_grids.py, on recorded launches.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen import Grid, In, Kernel, KernelError, Layout, Out, Shared, Site, Spec, dims, f32, f64
from layoutgen.checks import check_binding, check_spec
from layoutgen.checks.grids import arch_shared_limit, static_shared_bytes
from layoutgen.codegen.grids import shared_models
from layoutgen.declare.unify import unify
from layoutgen.runtime import occupancy
from layoutgen.runtime.plan import SharedArray, shared_offsets
from layoutgen.schema import LayoutError
from layoutgen.schema.dtypes import DTYPES

N, F, T = dims("N F T")
Rows = Layout("Rows", [N], f32, width=40)
WIDE = Layout("Wide", [N], f32, width=512)


def raises(make: Callable[[], object]) -> KernelError:
    with pytest.raises(KernelError) as info:
        make()
    return info.value


def staged(*shared: Shared, layout: Layout = Rows, grid: Grid | None = None) -> Any:
    """A kernel over `x` [N, F] with these shared arrays, bound to ``layout``."""
    return Kernel("stage", "stage.cu.j2", [In("x", [N, F]), Out("y", [N, F])], grid=grid or Grid.tiles("x"),
                  shared=list(shared)).bind(x=layout, y=layout)


def test_a_shared_array_is_a_value_with_its_site(site_of: Callable[[str], Site]) -> None:
    w = Shared("w", "f32", [F, F])  # site: w
    assert (w.name, w.dtype, w.shape, w.site) == ("w", f32, (F, F), site_of("w"))
    assert repr(w) == "Shared('w', f32, [F, F])" and w == Shared("w", f32, [F, F])
    assert str(w.nbytes) == "F*F*4" and w.symbols == ("F",)
    kernel = Kernel("k", "k.cu.j2", [In("x", [N, F])], shared=[w, Shared("xs", f64, [128, 41])])
    assert [a.name for a in kernel.shared] == ["w", "xs"]
    assert Kernel("k", "k.cu.j2", [In("x", [N, F])]).shared == ()


@pytest.mark.parametrize(("marker", "make", "message", "hint"), [
    ("name", lambda: Shared("1w", f32, [F]),  # site: name
     "a shared array's name must be a C identifier (letters, digits, `_`; not starting with a digit), got '1w'",
     None),
    ("lg", lambda: Shared("lg_w", f32, [F]),  # site: lg
     "a shared array's name starts with `lg_`, which layoutgen reserves for generated names, got `lg_w`", None),
    ("no-dims", lambda: Shared("w", f32, []),  # site: no-dims
     "shared array `w` must have at least one dim", None),
    ("not-a-list", lambda: Kernel("k", "k.cu.j2", [In("x", [N])], shared=Shared("w", f32, [N])),  # type: ignore[arg-type]  # site: not-a-list
     "the shared memory of `k` must be a list of Shared(...), got Shared('w', f32, [N])", None),
    ("twice", lambda: Kernel("k", "k.cu.j2", [In("x", [N])], shared=[Shared("w", f32, [N]), Shared("w", f32, [4])]),  # site: twice
     "kernel `k` declares shared array `w` twice", None),
    ("param", lambda: Kernel("k", "k.cu.j2", [In("x", [N])], shared=[Shared("x", f32, [N])]),  # site: param
     "shared array `x` of `k` clashes with parameter `x`",
     "rename the array: the body sees parameters, symbols, the grid's names and shared arrays by name"),
    ("symbol", lambda: Kernel("k", "k.cu.j2", [In("x", [N])], shared=[Shared("N", f32, [4])]),  # site: symbol
     "shared array `N` of `k` clashes with shape symbol `N`",
     "rename the array: the body sees parameters, symbols, the grid's names and shared arrays by name"),
    ("grid", lambda: Kernel("k", "k.cu.j2", [In("x", [N])], grid=Grid.tiles("x"), shared=[Shared("tile_rows", f32, [4])]),  # site: grid
     "shared array `tile_rows` of `k` clashes with the grid's `tile_rows` (tile, tile_row, tile_rows, tile_capacity)",
     "rename the array: the body sees parameters, symbols, the grid's names and shared arrays by name"),
    ("unknown", lambda: Kernel("k", "k.cu.j2", [In("x", [N, F])], shared=[Shared("s", f32, [T, F])]),  # site: unknown
     "shared array `s` [T, F] of `k` is sized by `T`, which is no symbol of its parameters' shapes (N, F): its value "
     "would be known nowhere", "size it by the parameters' symbols, or by numbers"),
])
def test_lg219_malformed_shared_arrays(site_of: Callable[[str], Site], marker: str, make: Callable[[], object],
                                       message: str, hint: str | None) -> None:
    err = raises(make)
    assert (err.code, err.diagnostic.message, err.hint) == ("LG219", message, hint)
    assert err.site == site_of(marker)


def test_a_shared_arrays_dims_and_dtype_are_checked_like_a_parameters(site_of: Callable[[str], Site]) -> None:
    with pytest.raises(LayoutError) as info:
        Shared("w", f32, [F, 0])  # site: zero
    assert (info.value.code, info.value.site) == ("LG103", site_of("zero"))
    assert info.value.diagnostic.message == "the shape of shared array `w`[1] must be positive, got 0"
    with pytest.raises(LayoutError) as info:
        Shared("w", "f33", [F])  # type: ignore[arg-type]
    assert info.value.code == "LG107"


def test_lg217_static_shared_memory_past_what_the_arch_allows_a_block() -> None:
    binding = staged(Shared("w", f32, [F, F]), Shared("xs", f32, [128, F]), layout=WIDE)  # F = 512
    (d,) = check_binding(binding)
    assert d.code == "LG217" and d.site == binding.site
    assert d.message == (
        "`stage` needs 1310720 bytes of dynamic shared memory (`w` [F, F] f32 = 1048576 bytes, `xs` [128, F] f32 = "
        "262144 bytes; `F` = 512), but a block on sm_90 may have at most 232448 bytes (227 KiB)")
    assert d.hint == ("make the arrays smaller (fewer rows a tile), or compile for an arch with more shared memory "
                      "(`arch` in [tool.layoutgen], `--arch`)")
    fits = staged(Shared("xs", f32, [100, F]), layout=WIDE)  # 204800 bytes
    assert check_binding(fits) == [] and check_binding(fits, "sm_90a") == []
    (d,) = check_binding(fits, "sm_80")  # 163 KiB there
    assert d.message.endswith("but a block on sm_80 may have at most 166912 bytes (163 KiB)")
    assert check_binding(fits, "sm_61") == []  # an arch the table does not know: checked at launch (LG624)
    assert [x.code for x in check_spec(Spec("s", kernels=[fits]), "sm_75")] == ["LG217"]


def test_a_size_bound_at_launch_is_left_to_the_launcher() -> None:
    binding = Kernel("stage", "stage.cu.j2", [In("x", [N, F])], grid=Grid.tiles("x"),
                     shared=[Shared("rows", f32, [N, F])]).bind(x=WIDE)  # N is bound at launch
    assert static_shared_bytes(binding, unify(binding)) is None
    assert check_binding(binding) == []


def test_the_arch_table_reads_arch_names_as_nvrtc_takes_them() -> None:
    assert arch_shared_limit("sm_90") == arch_shared_limit("sm_90a") == 232448
    assert arch_shared_limit("sm_100") == 232448 and arch_shared_limit("sm_75") == 65536
    assert arch_shared_limit("compute_90") is None and arch_shared_limit("sm_1000") is None


def test_the_prologue_carves_one_buffer_into_typed_arrays_at_16_byte_boundaries() -> None:
    shared = (Shared("flags", "u8", [3]), Shared("w", f64, [F]), Shared("rows", f32, [T, 2]))
    values = {"F": Layout("L", [N], f32, width=5).shape[-1], "T": dims("R")[0]}  # F = 5, T bound to layout's R
    models = shared_models(shared, values)
    assert [(m.name, m.c_type, m.offset) for m in models] == [
        ("flags", "unsigned char", "0"), ("w", "double", "16"), ("rows", "float", "64")]
    symbolic = shared_models((Shared("rows", f32, [T, 2]), Shared("w", f64, [F])), values)
    assert [m.offset for m in symbolic] == ["0", "lg::shared_start(0 + (long long)lg_dim_R * 8LL)"]


# The one rule, three times: a property over random buffers ------------------------------------------------

ITEMS = {d.name: d.size for d in DTYPES.values() if d.name in ("u8", "f16", "f32", "f64", "i64")}


def _cpp_value(expr: str, bound: dict[str, int]) -> int:
    """The value of a generated offset: C++ of `lg::shared_start`, `(long long)`, `LL` and `lg_dim_<symbol>`."""
    text = expr.replace("lg::shared_start", "_start").replace("(long long)", "")
    text = re.sub(r"\blg_dim_(\w+)", lambda m: str(bound[m.group(1)]), re.sub(r"(\d+)LL\b", r"\1", text))
    return int(eval(text, {"_start": lambda end: (end + 15) // 16 * 16}))  # noqa: S307 - our own generated C++


@settings(max_examples=200, deadline=None)
@given(arrays=st.lists(st.tuples(st.sampled_from(sorted(ITEMS)), st.lists(st.one_of(st.integers(1, 50),
       st.sampled_from(["P", "Q"])), min_size=1, max_size=3)), min_size=1, max_size=5),
       p=st.integers(1, 300), q=st.integers(1, 300))
def test_prologue_check_and_launcher_lay_out_the_buffer_alike(arrays: list[tuple[str, list[int | str]]], p: int,
                                                               q: int) -> None:
    shared = tuple(Shared(f"a{n}", dtype, shape) for n, (dtype, shape) in enumerate(arrays))
    bound = {"P": p, "Q": q}
    models = shared_models(shared, {})  # the kernel's symbols P and Q are the layout's, bound at launch
    runtime = tuple(SharedArray(a.name, ITEMS[str(a.dtype)], tuple(d.size or str(d.name) for d in a.shape))
                    for a in shared)
    starts, total = shared_offsets(runtime, bound)
    assert [_cpp_value(m.offset, bound) for m in models] == list(starts)
    assert all(start % 16 == 0 for start in starts) and total % 16 == 0
    assert total >= starts[-1] + runtime[-1].nbytes(bound)
    kernel = Kernel("k", "k.cu.j2", [In("x", ["P", "Q", 1])], grid=Grid.tiles("x"), shared=list(shared))
    binding = kernel.bind(x=Layout("L", [p, q], f32, width=1))  # P and Q static: the check's numbers
    assert static_shared_bytes(binding, unify(binding)) == total


# The device's side, asked once --------------------------------------------------------------------------


def test_device_facts_and_occupancy_are_asked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import cupy

    asked: list[Any] = []
    monkeypatch.setattr(occupancy, "_DEVICES", {})
    monkeypatch.setattr(occupancy, "_RESIDENT", {})
    monkeypatch.setattr(cupy.cuda.runtime, "deviceGetAttribute", lambda attr, dev: asked.append(attr) or 100 + attr)
    monkeypatch.setattr(cupy.cuda.driver, "occupancyMaxActiveBlocksPerMultiprocessor",
                        lambda fn, block, shared: asked.append((fn, block, shared)) or 3)
    rt = cupy.cuda.runtime
    limits = occupancy.device_limits(1)
    assert limits == occupancy.DeviceLimits(100 + rt.cudaDevAttrMaxSharedMemoryPerBlockOptin,
                                            100 + rt.cudaDevAttrMultiProcessorCount)
    assert occupancy.device_limits(1) is limits
    from layoutgen.runtime.launch import BlockRule, KernelSpec, LayoutSpec, ParamSpec

    rows = LayoutSpec("Rows", ("N",), 4, "f32", 4)
    spec = KernelSpec("p", "p.cu", (ParamSpec("x", "in", rows, "Rows", 4),), symbols=("N",), grid_param=0,
                      per_row=1, block=128, count=BlockRule("persistent", 16))
    assert occupancy.resident_blocks(spec, 1, 0xABC, 512) == 3 * limits.multiprocessors
    assert occupancy.resident_blocks(spec, 1, 0xABC, 512) == 3 * limits.multiprocessors
    assert asked == [rt.cudaDevAttrMaxSharedMemoryPerBlockOptin, rt.cudaDevAttrMultiProcessorCount,
                     (0xABC, 128, 512)]


def test_docs_describe_shared_memory_and_the_grids() -> None:
    page = (Path(__file__).resolve().parent.parent / "docs" / "templates.md").read_text(encoding="utf-8")
    grids = page[page.index("## The grids"):page.index("## What Jinja sees")]
    for heading in ("### `Grid.tiles`", "### `Grid.warps`", "### `Grid.persistent`", "### `Grid.general`",
                    "### Shared memory"):
        assert heading in grids, heading


def test_a_function_loaded_at_the_handle_of_an_unloaded_one_gets_its_own_limit_raised(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The driver hands a CUfunction handle out again once the module that had it is unloaded (a launcher
    collected). What occupancy learnt of the earlier function there (its limit raised past 48 KiB) must not
    pass for the new one's: the new function's limit would stay at 48 KiB and its occupancy read 0 (LG625)."""
    from types import SimpleNamespace

    from tests.fake_device import FUNCTION, fake_device

    import generated.vsn as vsn
    from layoutgen.runtime import launch

    import cupy

    fake_device(monkeypatch)
    limit = {"max": occupancy.DEFAULT_DYNAMIC_SHARED}  # the function's, at the handle: a new one's is 48 KiB
    raised: list[tuple[int, int, int]] = []
    monkeypatch.setattr(cupy.cuda.driver, "funcGetAttribute", lambda attr, fn: limit["max"])
    monkeypatch.setattr(cupy.cuda.driver, "funcSetAttribute",
                        lambda fn, attr, value: raised.append((0, fn, value)) or limit.update(max=value))
    kernel = SimpleNamespace(kernel=SimpleNamespace(ptr=FUNCTION))  # each load: a new function at one handle
    monkeypatch.setattr(launch, "_load", lambda *args: SimpleNamespace(get_function=lambda name: kernel))
    fwd = vsn._lg_kernel_variable_selection_fwd
    bound = {"B": 64, "K": 512}
    _, shared = shared_offsets(fwd.spec.shared, bound)
    assert shared > occupancy.DEFAULT_DYNAMIC_SHARED
    for load in range(2):
        limit["max"] = occupancy.DEFAULT_DYNAMIC_SHARED
        function = fwd.fresh().function(0, "sm_90")  # a launcher of its own: its own module, loaded anew
        assert function.handle == FUNCTION
        occupancy.size_launch(fwd.spec, function, 0, 10_000, bound)
        assert raised == [(0, FUNCTION, shared)] * (load + 1)
