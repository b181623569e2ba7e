"""Fields with their own shape: `q: [H, D]` in a fused QKV row, `mix: [4, 4]` beside other columns.

Views expose every dim with derived strides and offset; numpy views match;
declarations that cannot be expressed are LG1xx at the user's line; a packed
contract bound to a padded view is LG201 naming the padded stride; the
generated accessors take one index per dim; launches bind `D` from the last
axis and refuse outputs whose strides overlap (LG610).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from layoutgen import Field, Grid, Group, In, InOut, Kernel, Layout, LayoutError, Pad, Spec, dims, f32
from layoutgen.checks.bindings import check_binding
from layoutgen.codegen.library import library_namespace
from layoutgen.codegen.model import view_model
from layoutgen.runtime.arrays import ArrayInfo
from layoutgen.runtime.errors import LaunchError
from layoutgen.runtime.plan import LayoutSpec, ParamSpec
from layoutgen.runtime.validate import check_param

REPO = Path(__file__).resolve().parent.parent
B, S, D, H, Hkv, N = dims("B S D H Hkv N")

QKV = Layout("QKV", [B, S], f32, [
    Field("q", shape=[32, D]),
    Field("k", shape=[8, D]),
    Field("v", shape=[8, D]),
])
Mix = Layout("Mix", [N], f32, [Field("a", 2), Field("mix", shape=[4, 4]), Pad(2)])


# -- views -----------------------------------------------------------------------


def test_qkv_views_expose_every_dim_with_derived_strides_and_offsets() -> None:
    assert [str(d) for d in QKV.shape] == ["B", "S", "D*48"]
    assert QKV.symbols == ("B", "S", "D") and str(QKV.column_unit) == "D" and QKV.width == 48
    q, k, v = QKV.q, QKV.k, QKV.v
    assert [str(d) for d in k.shape] == ["B", "S", "8", "D"]
    assert [str(s) for s in k.strides] == ["D*S*48", "D*48", "D", "1"]
    assert [str(s) for s in q.packed_strides] == ["D*S*32", "D*32", "D", "1"]
    assert (str(q.column_offset), str(k.column_offset), str(v.column_offset)) == ("0", "D*32", "D*40")
    assert (q.cols, k.cols, v.cols) == ("0..D*32", "D*32..D*40", "D*40..D*48")
    assert k.box == (None, None, (32, 40)) and QKV.view.box == (None, None, None)
    assert str(k.rows) == "B*S" and not k.contiguous and k.padded_axis() == 1
    assert str(k) == ("QKV.k [B, S, 8, D] f32 columns D*32..D*40 of D*48, strides (D*S*48, D*48, D, 1), "
                      "offset D*32")


def test_static_sub_array_field_beside_flat_columns() -> None:
    mix = Mix.mix
    assert [str(d) for d in mix.shape] == ["N", "4", "4"]
    assert [str(s) for s in mix.strides] == ["20", "4", "1"]
    assert mix.offset == 2 and mix.width == 16 and mix.box == (None, (2, 18))
    assert mix.align == 8 and mix.vector_bytes == 8
    dtype = Mix.numpy_dtype()
    assert dtype is not None and dtype["mix"].shape == (4, 4) and dtype.fields["mix"][1] == 8


def test_numpy_views_of_sub_array_fields_match_and_share_memory() -> None:
    rng = np.random.default_rng(0)
    a = rng.normal(size=(3, 20)).astype(np.float32)
    m = Mix.mix.of(a)
    assert m.shape == (3, 4, 4) and np.shares_memory(m, a)
    assert np.array_equal(m, a[:, 2:18].reshape(3, 4, 4))
    assert m.strides == (80, 16, 4)
    qkv = rng.normal(size=(2, 5, 48 * 16)).astype(np.float32)
    k = QKV.k.of(qkv)
    assert k.shape == (2, 5, 8, 16) and np.shares_memory(k, qkv)
    assert np.array_equal(k[1, 2, 3], qkv[1, 2, 32 * 16 + 3 * 16 : 32 * 16 + 4 * 16])
    with pytest.raises(LayoutError) as info:
        QKV.k.of(qkv[..., :-1])
    assert info.value.code == "LG110" and "[B, S, D*48]" in str(info.value)


def test_the_text_table_shows_shapes_and_symbolic_columns() -> None:
    assert str(QKV) == (
        "QKV [B, S, D*48] f32  (row stride D*48 elements, D*192 bytes)\n"
        "  field         columns  width  offset               strides  align\n"
        "  q [32, D]     0..D*32   D*32       0  (D*S*48, D*48, D, 1)   64 B\n"
        "  k [8, D]   D*32..D*40    D*8    D*32  (D*S*48, D*48, D, 1)   64 B\n"
        "  v [8, D]   D*40..D*48    D*8    D*40  (D*S*48, D*48, D, 1)   32 B"
    )
    assert str(Mix).splitlines()[3] == "  mix [4, 4]    2..18     16       2  (20, 4, 1)    8 B"


def test_a_plain_row_of_a_symbolic_width() -> None:
    cache = Layout("KCache", [B, 8, S], f32, width=D)
    assert [str(d) for d in cache.shape] == ["B", "8", "S", "D"]
    assert [str(s) for s in cache.view.strides] == ["D*S*8", "D*S", "D", "1"]
    assert cache.view.contiguous


def test_groups_nest_sub_array_fields() -> None:
    lay = Layout("G", [N], f32, [Group("blk", [Field("x", 2), Field("m", shape=[2, 3])]), Pad(4)])
    m = lay["blk.m"]
    assert m.offset == 2 and [str(s) for s in m.strides] == ["12", "3", "1"] and m.box == (None, (2, 8))


# -- declaration errors ----------------------------------------------------------


def test_lg112_two_symbols_in_one_field(expect_site) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LayoutError) as info:
        Layout("QKV", [B, S], f32, [
            Field("q", shape=[H, D]),  # site: lg112-two
        ])
    assert info.value.code == "LG112"
    assert info.value.diagnostic.message == (
        "`q` has 2 symbolic dims (D, H); a row may count its columns in one symbol only, which the launch "
        "binds from the array's last axis")
    expect_site(info.value, "lg112-two")


def test_lg112_fields_of_different_symbols(expect_site) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LayoutError) as info:
        Layout("QKV", [B, S], f32, [
            Field("q", shape=[32, D]),
            Field("k", shape=[8, H]),  # site: lg112-other
        ])
    assert info.value.code == "LG112"
    assert "`k` has H*8 elements but `q` counts the row in `D`" in str(info.value)
    expect_site(info.value, "lg112-other")


@pytest.mark.parametrize("entry", [
    lambda: Field("bias", 4),
    lambda: Pad(2),
    lambda: Field("k", cols=(0, 8), shape=[8, D]),
])
def test_lg112_flat_or_placed_entries_in_a_symbolic_row(entry) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LayoutError) as info:
        Layout("QKV", [B, S], f32, [Field("q", shape=[32, D]), entry()])
    assert info.value.code == "LG112" and info.value.site is not None


def test_lg112_width_given_for_a_symbolic_row() -> None:
    with pytest.raises(LayoutError) as info:
        Layout("QKV", [B, S], f32, [Field("q", shape=[32, D])], width=32)
    assert info.value.code == "LG112" and "must not be given, got width=32" in str(info.value)


def test_lg101_a_block_overlapping_a_column_across_its_dims(expect_site) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LayoutError) as info:
        Layout("M", [N], f32, [
            Field("mix", shape=[4, 4], cols=(0, 16)),
            Field("gain", cols=(12, 13)),  # site: lg101-block
            Pad(cols=(13, 16)),
        ])
    assert info.value.code == "LG101"
    assert info.value.diagnostic.message == "`gain` (columns 12..13) overlaps `mix` [4, 4] (columns 0..16) in `M`"
    expect_site(info.value, "lg101-block")


@pytest.mark.parametrize(("shape", "code"), [([], "LG110"), ("4x4", "LG110"), ([4, 0], "LG103"), ([4, "4x"], "LG105")])
def test_bad_shapes(shape, code) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LayoutError) as info:
        Layout("M", [N], f32, [Field("mix", shape=shape)])
    assert info.value.code == code


def test_lg108_width_and_shape_disagree() -> None:
    with pytest.raises(LayoutError) as info:
        Layout("M", [N], f32, [Field("mix", 12, shape=[4, 4])])
    assert info.value.code == "LG108" and "shape [4, 4] has 16 elements" in str(info.value)


# -- binding checks --------------------------------------------------------------

packed_heads = Kernel("packed_heads", "unused.cu.j2", [
    InOut("q", [B, S, H, D], contiguous=True),
], grid=Grid.rows("q"))


def test_lg201_a_packed_contract_on_a_sub_array_view_names_the_padded_stride() -> None:
    (diag,) = check_binding(packed_heads.bind(q=QKV.q))
    assert diag.code == "LG201"
    assert diag.message == (
        "`packed_heads.q` needs packed elements [B, S, H, D] but is bound to `QKV.q` [B, S, 32, D], whose axis 1 "
        "has stride D*48, not D*32 (strides (D*S*48, D*48, D, 1); `QKV` [B, S, D*48], columns 0..D*32)")


def test_a_strided_sub_array_view_binds_without_the_contract() -> None:
    heads = Kernel("heads", "unused.cu.j2", [InOut("q", [B, S, H, D])], grid=Grid.rows("q"))
    assert check_binding(heads.bind(q=QKV.q)) == []
    packed = Layout("Packed", [B, S], f32, [Field("q", shape=[32, D])])
    assert check_binding(packed_heads.bind(q=packed.q)) == []


def test_qkv_bug_fails_layoutgen_check_with_the_padded_stride() -> None:
    run = subprocess.run([sys.executable, "-m", "layoutgen", "check", "examples/qkv/qkv_bug.py"],
                         cwd=REPO, capture_output=True, text=True)
    assert run.returncode == 1, run.stdout + run.stderr
    assert ("examples/qkv/qkv_bug.py:32: error[LG201]: `rope.q` needs packed elements [B, S, Hq, D] but is bound "
            "to `QKVPadded.q.head` [B, S, 32, 128], whose axis 2 has stride 136, not 128") in run.stdout
    assert "Found 2 errors in 1 spec." in run.stdout


# -- generated accessors ---------------------------------------------------------


def test_accessors_take_one_index_per_dim_with_the_unit_bound_at_launch() -> None:
    model = view_model(QKV.k, "spec.py:1")
    assert (model.width, model.row_stride, model.offset) == (8, 48, 32)  # columns of D elements
    assert model.policies == ", lg::Scaled" and model.scale_init == ", {lg_dim_D}"
    assert model.index_type == "long long" and model.symbols == ("B", "S", "D")
    assert model.column_params == "long long j0, long long c" and model.column_expr == "j0 * lg_dim_D + c"  # 64-bit: D*H can pass 2^31
    static = view_model(Mix.mix, "spec.py:1")
    assert static.policies == "" and static.column_expr == "j0 * 4 + c" and static.index_type == "long long"
    committed = (REPO / "generated" / "qkv" / "qkv.cuh").read_text()
    lib = f"lg::{library_namespace()}"  # the device library's versioned namespace (lg/version.cuh)
    assert (f"struct QKV_k_view : {lib}::Field<QKV_k_view_rows, T, 8, 48, 32, VectorBytes, Pack, long long, "
            f"{lib}::Scaled> {{") in committed
    assert "operator()(long long i0, long long i1, long long j0, long long c) const {" in committed
    rope = (REPO / "generated" / "qkv" / "rope.cu").read_text()
    assert "const lg::views::qkv::QKV_k_view<float, 4, lg::Packing::strided> k{ {lg_arg_k, {lg_dim_D}}, lg_dim_B, lg_dim_S, lg_dim_D };" in rope


# -- launch ----------------------------------------------------------------------

QKV_SPEC = LayoutSpec("QKV", ("B", "S"), 48, "f32", 4, unit="D")
CACHE_SPEC = LayoutSpec("KCache", ("B", 8, "S"), 1, "f32", 4, unit="D")


def _info(shape: tuple[int, ...], strides: tuple[int, ...] | None = None) -> ArrayInfo:
    packed = tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape)))
    return ArrayInfo(0x7F0000000000, shape, strides or packed, "float32", 0, False)


def test_the_launch_binds_the_unit_from_the_last_axis() -> None:
    bound: dict[str, int] = {}
    check_param("rope", ParamSpec("q", "inout", QKV_SPEC, "QKV.q", 4), _info((2, 5, 48 * 128)), bound, 0)
    assert bound == {"D": 128, "B": 2, "S": 5}
    check_param("kv", ParamSpec("kc", "out", CACHE_SPEC, "KCache", 4), _info((2, 8, 5, 128)), bound, 0)
    with pytest.raises(LaunchError) as info:
        check_param("kv", ParamSpec("vc", "out", CACHE_SPEC, "VCache", 4), _info((2, 8, 5, 64)), bound, 0)
    assert info.value.code == "LG603" and "layout KCache [B, 8, S, D] f32" in str(info.value)
    assert "last axis is 64, but `D` = 128 from an earlier argument makes its rows 128 elements" in str(info.value)
    with pytest.raises(LaunchError) as info:
        check_param("rope", ParamSpec("q", "inout", QKV_SPEC, "QKV.q", 4), _info((2, 5, 47)), {}, 0)
    assert info.value.code == "LG601" and "[B, S, D*48]" in str(info.value)


@pytest.mark.parametrize(("strides", "axis", "stride"), [((0, 5 * 128, 128, 1), 0, 0), ((8 * 5 * 128, 5 * 128, 0, 1), 2, 0),
                                                         ((8 * 128, 128, 64, 1), 2, 64)])
def test_lg610_an_output_with_a_zero_or_overlapping_stride(strides, axis: int, stride: int) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(LaunchError) as info:
        check_param("kv", ParamSpec("kc", "out", CACHE_SPEC, "KCache", 4), _info((2, 8, 5, 128), strides), {}, 0)
    assert info.value.code == "LG610"
    assert f"axis {axis} of the array has stride {stride}, so several of its elements are one memory location" \
        in str(info.value)


def test_an_input_with_a_zero_stride_is_lg604_not_lg610() -> None:
    with pytest.raises(LaunchError) as info:
        check_param("kv", ParamSpec("k", "in", CACHE_SPEC, "KCache", 4), _info((2, 8, 5, 128), (0, 640, 128, 1)), {}, 0)
    assert info.value.code == "LG604"


def test_field_copies_of_a_sub_array_field(tmp_path: Path) -> None:
    from layoutgen import field_copies
    from layoutgen.codegen.render import render_spec

    from tests.helpers import host
    if host.COMPILER is None:
        pytest.skip("no host C++ compiler (g++) here")
    gather, scatter = field_copies(Mix.mix)
    assert gather.view("dst").name == "Mix_mix_packed.block" and gather.view("src").vector_bytes == 8
    rendered = render_spec(Spec("copies", kernels=[gather, scatter]), REPO, "tests/test_subarray_fields.py")
    assert rendered.diagnostics == ()
    for name, text in rendered.files.items():
        (tmp_path / Path(name).name).write_text(text, encoding="utf-8")
    n = 5
    a = np.random.default_rng().normal(size=(n, 20)).astype(np.float32)
    out = np.full((n, 16), np.nan, dtype=np.float32)
    sig = "const float* src, float* dst, long long N"
    host.host_launch(host.host_kernel("g", tmp_path, tmp_path, (gather.name, sig, "src, dst, N")), [a, out], [n],
                     threads=n * 8, block=256)
    assert np.array_equal(out.reshape(n, 4, 4), Mix.mix.of(a))


def test_field_copies_of_a_symbolic_row_are_refused() -> None:
    from layoutgen import KernelError, field_copies

    with pytest.raises(KernelError) as info:
        field_copies(QKV.k)
    assert info.value.code == "LG208" and "its columns count `D`" in str(info.value)


def test_lg210_a_grid_per_vector_of_a_symbolic_row() -> None:
    per_vector = Kernel("scale_q", "unused.cu.j2", [InOut("q", [B, S, H, D])], grid=Grid.vectors("q"))
    (diag,) = check_binding(per_vector.bind(q=QKV.q))
    assert diag.code == "LG210" and "whose rows hold D*32 elements" in diag.message
    per_element = Kernel("scale_q", "unused.cu.j2", [InOut("q", [B, S, H, D])], grid=Grid.elements("q"))
    assert check_binding(per_element.bind(q=QKV.q)) == []
    per_row = Kernel("scale_q", "unused.cu.j2", [InOut("q", [B, S, H, D])], grid=Grid.rows("q"))
    assert check_binding(per_row.bind(q=QKV.q)) == []


def test_the_generated_layout_class_of_a_symbolic_row() -> None:
    import generated.qkv as qkv

    assert qkv.QKV.spec == LayoutSpec("QKV", ("B", "S"), 48, "f32", 4, unit="D")
    assert qkv.QKV.spec.shape_text == "[B, S, D*48]" and qkv.KCache.spec.shape_text == "[B, 8, S, D]"
    with pytest.raises(LaunchError) as info:
        qkv.QKV.empty(2, 5)  # D is needed by name
    assert info.value.code == "LG601" and "takes `D=...`" in str(info.value)


def test_a_grid_counted_in_a_symbolic_row_is_counted_at_launch() -> None:
    import generated.qkv as qkv

    # rope: blocks of 256 threads, a thread per 4 pairs of a q head (B*S rows of 32 heads of D / 2 pairs);
    # kv_split: a thread per 4 elements of a cache row of D. (Grid.elements over such a row: tests/test_thread_grids.py)
    assert qkv._lg_kernel_rope.blocks({"B": 2, "S": 3, "D": 64}) == -(-2 * 3 * 32 * 64 // (8 * 256))
    assert qkv._lg_kernel_kv_split.blocks({"B": 2, "S": 3, "D": 64}) == -(-2 * 8 * 3 * 64 // (4 * 256))


def test_a_dim_derived_from_another_shape_is_refused() -> None:
    from layoutgen import LayoutError

    with pytest.raises(LayoutError, match=r"is `D\*48`, a product of dims taken from another shape") as info:
        Layout("Flat", [B], f32, width=QKV.shape[-1])
    assert info.value.code == "LG110"
    with pytest.raises(LayoutError, match="the shape of parameter `x`"):
        InOut("x", [B, S, QKV.shape[-1]])


def test_field_copies_of_a_sub_array_into_a_given_packed_layout() -> None:
    from layoutgen import field_copies
    from layoutgen.checks import check_binding

    packed = Layout("MixPacked", [N], f32, [Field("block", shape=[4, 4])])
    gather, scatter = field_copies(Mix.mix, packed)
    assert check_binding(gather) == [] and check_binding(scatter) == []
    assert gather.view("dst").name == "MixPacked.block"


def test_a_layout_spec_knows_its_symbols_and_shape_in_elements() -> None:
    assert QKV_SPEC.symbols == ("B", "S", "D") and CACHE_SPEC.symbols == ("B", "S", "D")
    assert QKV_SPEC.shape_of({"B": 2, "S": 5, "D": 64}) == (2, 5, 48 * 64)
    assert CACHE_SPEC.shape_of({"B": 2, "S": 5, "D": 64}) == (2, 8, 5, 64)
