"""Named ranges on a non-last axis: `t1` = rows 0..3 of axis 1 of `Obs` [N, 8, 32, 32].

The ranges are declared with `Axis([...])` in place of a dim, validated like
a record (overlaps, gaps, names, at the user's line), and nest with the
last axis' fields in either order. Views, boxes, numpy views, the text
table, binding checks and generated accessors all follow; a kernel on a
named range is compiled for the host and run against numpy.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from layoutgen import Axis, Field, Grid, Group, InOut, Kernel, Layout, LayoutError, Pad, dims, f32
from layoutgen.checks.bindings import check_binding
from layoutgen.codegen.model import view_model

N, T, R, C = dims("N T R C")

Obs = Layout("Obs", [N, Axis([Field("t1", 3), Field("t2", 5)]), 32], f32, [Field("x", 30), Pad(2)])


def test_a_named_range_narrows_its_axis() -> None:
    assert [str(d) for d in Obs.shape] == ["N", "8", "32", "32"] and Obs.named_axis == 1
    t1, t2 = Obs.t1, Obs.t2
    assert [str(d) for d in t1.shape] == ["N", "3", "32", "32"]
    assert [str(s) for s in t2.strides] == ["8192", "1024", "32", "1"]
    assert str(t1.base_offset) == "0" and str(t2.base_offset) == "3072" and str(t2.rows) == "N*160"
    assert t1.box == (None, (0, 3), None, None) and t2.box == (None, (3, 8), None, None)
    assert not t1.contiguous and t1.padded_axis() == 0
    assert str(t2) == "Obs.t2 [N, 5, 32, 32] f32 rows 3..8 of axis 1, columns 0..32 of 32, strides (8192, 1024, 32, 1), offset 3072"


def test_ranges_nest_with_last_axis_fields_in_either_order() -> None:
    a, b = Obs.t2.x, Obs.x.t2
    assert a.name == b.name == "Obs.t2.x" and a.path == "t2.x"
    assert a.box == b.box == (None, (3, 8), None, (0, 30))
    assert [str(d) for d in a.shape] == ["N", "5", "32", "30"] and str(a.base_offset) == "3072"
    assert [v.name for v in Obs.fields()] == ["Obs.x", "Obs.t1", "Obs.t2"]
    with pytest.raises(AttributeError) as info:
        Obs.t1.t2  # noqa: B018  (one range at a time)
    assert "`Obs.t1` has no field `t2` (its fields: `x`)" in str(info.value)


def test_groups_of_ranges() -> None:
    lay = Layout("Terms", [N, Axis([Group("obs", [Field("t1", 3), Field("t2", 5)]), Field("mask", 1)]), 4], f32,
                 width=4)
    assert lay["obs.t2"].box == (None, (3, 8), None, None) and lay.obs.box == (None, (0, 8), None, None)
    assert [str(d) for d in lay.mask.shape] == ["N", "1", "4", "4"]


def test_numpy_views_of_named_ranges() -> None:
    a = np.random.default_rng(0).normal(size=(2, 8, 32, 32)).astype(np.float32)
    t2x = Obs.t2.x.of(a)
    assert t2x.shape == (2, 5, 32, 30) and np.shares_memory(t2x, a)
    assert np.array_equal(t2x, a[:, 3:8, :, :30])
    assert (t2x.ctypes.data - a.ctypes.data) // 4 == Obs.t2.x.base_offset.coef


def test_the_text_table_lists_the_named_ranges() -> None:
    assert str(Obs).splitlines()[-4:] == [
        "  named ranges of axis 1 (8 rows):",
        "  range  rows  count  offset              strides",
        "  t1     0..3      3       0  (8192, 1024, 32, 1)",
        "  t2     3..8      5    3072  (8192, 1024, 32, 1)",
    ]


# -- declaration errors ----------------------------------------------------------


def test_lg101_overlapping_ranges(expect_site) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LayoutError) as info:
        Layout("Obs", [N, Axis([
            Field("t1", cols=(0, 4)),
            Field("t2", cols=(3, 8)),  # site: lg101-axis
        ]), 32], f32, width=32)
    assert info.value.code == "LG101"
    assert info.value.diagnostic.message == "`t2` (entries 3..8) overlaps `t1` (entries 0..4) in `Obs`"
    expect_site(info.value, "lg101-axis")


def test_lg102_a_range_past_the_axis_size() -> None:
    with pytest.raises(LayoutError) as info:
        Layout("Obs", [N, Axis([Field("t1", 3), Field("t2", 6)], size=8), 32], f32, width=32)
    assert info.value.code == "LG102"


def test_lg109_a_gap_between_ranges() -> None:
    with pytest.raises(LayoutError) as info:
        Layout("Obs", [N, Axis([Field("t1", cols=(0, 3)), Field("t2", cols=(4, 8))]), 32], f32, width=32)
    assert info.value.code == "LG109"


def test_lg104_a_range_named_like_a_field(expect_site) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LayoutError) as info:
        Layout("Obs", [N, Axis([
            Field("x", 3),  # site: lg104-axis
            Field("t2", 5),
        ]), 32], f32, [Field("x", 32)])
    assert info.value.code == "LG104"
    assert "`Obs` declares `x` twice: as rows 0..3 of axis 1 and as columns 0..32" in str(info.value)
    expect_site(info.value, "lg104-axis")


def test_lg113_two_named_axes_or_a_symbolic_dim_after_one(expect_site) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LayoutError) as info:
        Layout("Obs", [Axis([Field("a", 2)]), Axis([Field("b", 2)]), 32], f32, width=32)
    assert info.value.code == "LG113" and "names ranges on axes 0 and 1" in str(info.value)
    with pytest.raises(LayoutError) as info:
        Layout("Obs", [N, Axis([Field("t1", 3)]), T], f32, width=32)  # site: lg113-symbolic
    assert info.value.code == "LG113" and "followed by symbolic dim `T`" in str(info.value)
    expect_site(info.value, "lg113-symbolic")


def test_lg110_a_range_with_its_own_shape() -> None:
    with pytest.raises(LayoutError) as info:
        Layout("Obs", [N, Axis([Field("t1", shape=[3, 2])]), 32], f32, width=32)
    assert info.value.code == "LG110" and "cannot have its own shape" in str(info.value)


# -- bindings, codegen, a run on the host -----------------------------------------

scale_rows = Kernel("scale_rows", "scale_rows.cu.j2", [InOut("x", [N, T, R, C])], grid=Grid.rows("x"))


def test_lg201_a_packed_contract_on_a_named_range() -> None:
    packed = Kernel("packed", "unused.cu.j2", [InOut("x", [N, T, R, C], contiguous=True)], grid=Grid.rows("x"))
    (diag,) = check_binding(packed.bind(x=Obs.t1))
    assert diag.code == "LG201" and "whose axis 0 has stride 8192, not 3072" in diag.message
    assert "`Obs` [N, 8, 32, 32], rows 0..3 of axis 1, columns 0..32" in diag.message
    first = Layout("First", [Axis([Field("a", 2), Field("b", 2)]), 3], f32, width=4)
    assert first.a.contiguous and first.b.contiguous  # a range of the first axis: rows back to back
    assert check_binding(scale_rows.bind(x=Obs.t2.x)) == []


def test_the_generated_view_maps_its_rows_into_the_named_range() -> None:
    model = view_model(Obs.t2.x, "spec.py:1")
    assert model.policies == ", lg::Unscaled, lg::AxisRows<3, 5, 8, 32>"
    assert model.row_index_expr == "(i0 * 5 + i1) * 32 + i2" and model.rows_expr == "(long long)lg_dim_N * 160LL"
    assert (model.width, model.row_stride, model.offset) == (30, 32, 0)


BODY = """\
    // Every element of the view: x = 2 x + 1, read by row and column, written by indices.
    const long long n = row / (T * R);
    const int t = static_cast<int>(row / R % T);
    const int r = static_cast<int>(row % R);
    for (int c = 0; c < C; ++c) x(n, t, r, c) = 2.0f * x.at(row, c) + 1.0f;
"""


def test_a_kernel_on_a_named_range_writes_exactly_that_range(tmp_path: Path) -> None:
    from layoutgen.codegen.render import render_spec
    from layoutgen.declare.spec import Spec

    from tests.helpers import host
    if host.COMPILER is None:
        pytest.skip("no host C++ compiler (g++) here")
    (tmp_path / "scale_rows.cu.j2").write_text(BODY, encoding="utf-8")
    kernel = Kernel("scale_rows", "scale_rows.cu.j2", [InOut("x", [N, T, R, C])], grid=Grid.rows("x"),
                    template_root=tmp_path)
    rendered = render_spec(Spec("ranges", kernels=[kernel.bind(x=Obs.t2.x)]), host.REPO, "tests/test_axis_ranges.py")
    assert rendered.diagnostics == ()
    for name, text in rendered.files.items():
        (tmp_path / Path(name).name).write_text(text, encoding="utf-8")
    fn = host.host_kernel("scale_rows", tmp_path, tmp_path,
                          ("scale_rows", "float* x, long long N", "x, N"))
    a = np.random.default_rng().normal(size=(3, 8, 32, 32)).astype(np.float32)
    before = a.copy()
    host.host_launch(fn, [a], [3], threads=3 * 5 * 32, block=128)
    want = before.copy()
    want[:, 3:8, :, :30] = 2 * before[:, 3:8, :, :30] + 1
    assert np.array_equal(a, want)


def test_field_copies_of_a_named_range_gather_and_scatter_exactly_it(tmp_path: Path) -> None:
    from layoutgen import field_copies
    from layoutgen.codegen.render import render_spec
    from layoutgen.declare.spec import Spec

    from tests.helpers import host
    if host.COMPILER is None:
        pytest.skip("no host C++ compiler (g++) here")
    gather, scatter = field_copies(Obs.t2.x)
    packed = gather.view("dst").layout
    assert [str(d) for d in packed.shape] == ["N", "5", "32", "30"] and gather.kernel.grid.per == "vector"
    rendered = render_spec(Spec("copies", kernels=[gather, scatter]), host.REPO, "tests/test_axis_ranges.py")
    assert rendered.diagnostics == ()
    for name, text in rendered.files.items():
        (tmp_path / Path(name).name).write_text(text, encoding="utf-8")
    n, per_row = 2, 30 * 4 // gather.view("src").vector_bytes
    a = np.random.default_rng().normal(size=(n, 8, 32, 32)).astype(np.float32)
    out = np.full((n, 5, 32, 30), np.nan, dtype=np.float32)
    fn = host.host_kernel("gather", tmp_path, tmp_path, (gather.name, "const float* src, float* dst, long long N",
                                                         "src, dst, N"))
    host.host_launch(fn, [a, out], [n], threads=n * 5 * 32 * per_row, block=256)
    assert np.array_equal(out, a[:, 3:8, :, :30])
    back = np.full_like(a, np.nan)
    fn = host.host_kernel("scatter", tmp_path, tmp_path, (scatter.name, "const float* src, float* dst, long long N",
                                                          "src, dst, N"))
    host.host_launch(fn, [out, back], [n], threads=n * 5 * 32 * per_row, block=256)
    assert np.array_equal(back[:, 3:8, :, :30], out) and np.isnan(back[:, :3]).all() and np.isnan(back[..., 30:]).all()


def test_a_range_whose_rows_follow_each_other_is_contiguous() -> None:
    from layoutgen import In, Kernel
    from layoutgen.checks import check_binding

    # One entry on axis 0: the t2 rows (3..8 of axis 1) are back to back in memory.
    lay = Layout("A", [1, Axis([Field("t1", 3), Field("t2", 5)])], f32, width=4)
    assert lay.t2.contiguous and not Layout("A2", [2, Axis([Field("t1", 3), Field("t2", 5)])], f32, width=4).t2.contiguous
    packed = Kernel("packed", "unused.cu.j2", [In("x", [1, 5, 4], contiguous=True)])
    assert check_binding(packed.bind(x=lay.t2)) == []


def test_a_launch_over_a_named_range_starts_threads_for_its_rows_only(tmp_path: Path) -> None:
    import importlib.util

    from layoutgen.codegen.render import render_spec
    from layoutgen.project.specload import load_spec

    repo = Path(__file__).resolve().parent.parent
    loaded = load_spec(repo / "tests/specs/ranges/spec.py")
    assert loaded.spec is not None
    rendered = render_spec(loaded.spec, repo, "tests/specs/ranges/spec.py")
    init = tmp_path / "__init__.py"
    init.write_text(rendered.files["ranges/__init__.py"], encoding="utf-8")
    module_spec = importlib.util.spec_from_file_location("ranges_generated_for_grid", init)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    assert module._lg_kernel_scale_rows.grid({"N": 2}) == 2 * 5 * 32  # t2's 5 entries of axis 1, not all 8


def test_named_axis_errors_speak_of_entries() -> None:
    with pytest.raises(LayoutError) as info:
        Layout("Obs", [N, Axis([Field("t1", 1), Field("t2", 1)], size=3), 4], f32, width=4)
    assert info.value.code == "LG108" and str(info.value.diagnostic.message) == (
        "the named axis of `Obs` is declared with 3 entries but its ranges end at entry 2")
    assert info.value.hint == "declare the rest with Pad(1) or set size=2"
    with pytest.raises(LayoutError) as info:
        Layout("Obs", [N, Axis([Field("t1", 1), Field("t2", cols=(2, 3))]), 4], f32, width=4)
    assert info.value.diagnostic.message == "entries 1..2 of `Obs` belong to no field (before `t2`)"


def test_a_named_range_view_is_sited_at_its_range() -> None:
    lay = Layout("Sited", [N, Axis([
        Field("t1", 3),
        Field("t2", 5),  # the line the view names
    ]), 4], f32, width=4)
    line = next(n for n, text in enumerate(Path(__file__).read_text().splitlines(), start=1)
                if "# the line the view names" in text and "Field(" in text)
    assert lay.t2.site is not None and lay.t2.site.line == line
