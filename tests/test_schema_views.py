"""The happy path: layouts that are valid, their views, text and numpy forms.

``Window`` is the layout of the motivating bug (DESIGN.md): ``[B, K, 56]``
float32 rows, columns 0..40 per-snapshot features, 40..56 per-batch context.
The variable-selection network read ``snap`` at row stride 40; every number
here is what generated code must use instead.
"""

from __future__ import annotations

import numpy as np
import pytest

from layoutgen.schema import (
    DTYPES,
    Dim,
    Field,
    Group,
    Layout,
    LayoutError,
    Pad,
    Site,
    Size,
    View,
    bf16,
    dims,
    f16,
    f32,
    f64,
    i32,
    u8,
)

B, K = dims("B K")

Window = Layout(  # site: window
    "Window",
    [B, K],
    f32,
    [
        Field("snap", 40, doc="per-snapshot market features"),  # site: snap
        Group("context", [
            Group("trade", [Field("time_in_trade", 1), Field("unrealized_R", 1), Field("position_lots", 1)]),
            Field("regime", 8),
            Field("calendar", 5),
        ], doc="per-batch context, broadcast over K"),
    ],
    width=56,
    doc="one training window",
)

WINDOW_TABLE = """\
Window [B, K, 56] f32  (row stride 56 elements, 224 bytes)
  one training window
  field              columns  width  offset        strides  align
  snap                 0..40     40       0  (K*56, 56, 1)   32 B
  context             40..56     16      40  (K*56, 56, 1)   32 B
    trade             40..43      3      40  (K*56, 56, 1)   32 B
      time_in_trade   40..41      1      40  (K*56, 56, 1)   32 B
      unrealized_R    41..42      1      41  (K*56, 56, 1)    4 B
      position_lots   42..43      1      42  (K*56, 56, 1)    8 B
    regime            43..51      8      43  (K*56, 56, 1)    4 B
    calendar          51..56      5      51  (K*56, 56, 1)    4 B"""


def window_array(b: int = 2, k: int = 3, dtype: type = np.float32) -> np.ndarray:
    """A [b, k, 56] array whose every element holds its own flat index."""
    return np.arange(b * k * 56).reshape(b, k, 56).astype(dtype)


def byte_offset(part: np.ndarray, whole: np.ndarray) -> int:
    return part.__array_interface__["data"][0] - whole.__array_interface__["data"][0]


# -- the layout --------------------------------------------------------------------------------


def test_window_shape_and_identity(site_of) -> None:
    assert Window.name == "Window"
    assert Window.dims == (B, K)
    assert Window.shape == (B, K, Dim.of(56))
    assert Window.width == 56
    assert Window.row_bytes == 224
    assert Window.dtype is f32
    assert str(Window.rows) == "B*K"
    assert Window.symbols == ("B", "K")
    assert Window.doc == "one training window"
    assert not Window.read_only
    assert repr(Window) == "<Layout Window [B, K, 56] f32>"
    assert Window.site == site_of("window")


def test_window_fields_depth_first() -> None:
    assert [v.path for v in Window.fields()] == [
        "snap",
        "context",
        "context.trade",
        "context.trade.time_in_trade",
        "context.trade.unrealized_R",
        "context.trade.position_lots",
        "context.regime",
        "context.calendar",
    ]
    assert [v.path for v in Window.context.fields()] == [v.path for v in Window.fields()][2:]


def test_window_table_is_the_golden_text() -> None:
    assert str(Window) == WINDOW_TABLE


# -- views ----------------------------------------------------------------------------------


def test_snap_is_strided_at_the_row_width_not_its_own() -> None:
    snap = Window.snap
    assert isinstance(snap, View)
    assert snap.name == "Window.snap" and snap.path == "snap"
    assert snap.shape == (B, K, Dim.of(40))
    assert snap.strides == (Size(56, ("K",)), Size(56), Size(1))
    assert [str(s) for s in snap.strides] == ["K*56", "56", "1"]
    assert snap.offset == 0 and snap.byte_offset == 0
    assert snap.width == 40
    assert snap.cols == "0..40"
    assert snap.row_stride == 56  # the bug: the VSN kernel used 40
    assert not snap.contiguous
    assert snap.offset_align == 256  # column 0: the allocation's alignment
    assert snap.row_align == 32  # 224-byte rows
    assert snap.align == 32
    assert snap.vector_bytes == 16
    assert snap.dtype is f32
    assert snap.region.doc == "per-snapshot market features"
    assert str(snap) == (
        "Window.snap [B, K, 40] f32 columns 0..40 of 56, strides (K*56, 56, 1), offset 0"
    )
    assert repr(snap) == "<View Window.snap>"


def test_context_at_byte_160_of_224_byte_rows_takes_16_byte_loads() -> None:
    ctx = Window.context
    assert ctx.shape == (B, K, Dim.of(16))
    assert [str(s) for s in ctx.strides] == ["K*56", "56", "1"]
    assert ctx.offset == 40 and ctx.byte_offset == 160
    assert ctx.width == 16 and ctx.row_stride == 56 and not ctx.contiguous
    assert (ctx.offset_align, ctx.row_align, ctx.align) == (32, 32, 32)
    assert ctx.vector_bytes == 16
    assert ctx.region.doc == "per-batch context, broadcast over K"


def test_a_nested_field_by_path_and_by_attribute() -> None:
    lots = Window["context.trade.position_lots"]
    assert lots.region == Window.context.trade.position_lots.region
    assert lots.region == Window.context["trade.position_lots"].region
    assert lots.region == Window["context"]["trade"]["position_lots"].region
    assert lots.name == "Window.context.trade.position_lots"
    assert lots.shape == (B, K, Dim.of(1))
    assert [str(s) for s in lots.strides] == ["K*56", "56", "1"]
    assert lots.offset == 42 and lots.width == 1 and lots.row_stride == 56
    assert not lots.contiguous
    assert (lots.offset_align, lots.row_align, lots.align) == (8, 32, 8)  # byte 168
    assert lots.vector_bytes == 4
    assert str(lots) == (
        "Window.context.trade.position_lots [B, K, 1] f32 columns 42..43 of 56, strides (K*56, 56, 1), offset 42"
    )
    assert Window["context.trade.unrealized_R"].align == 4


def test_the_whole_layout_as_a_view() -> None:
    whole = Window.view
    assert whole.is_whole and whole.name == "Window" and whole.path == ""
    assert whole.contiguous and whole.width == 56 and whole.offset == 0
    assert whole.shape == Window.shape
    assert whole.align == 32 and whole.vector_bytes == 16
    assert not Window.snap.is_whole


def test_views_carry_their_declaration_site(site_of) -> None:
    assert Window.snap.site == site_of("snap")
    assert Window.view.site == site_of("window")


def test_strides_with_static_and_symbolic_leading_dims() -> None:
    tile = Layout("Tile", [4, K, "H"], f16, [Field("q", 8), Field("v", 8)])
    assert tile.shape == (Dim.of(4), K, Dim("H"), Dim.of(16))
    assert [str(s) for s in tile.v.strides] == ["H*K*16", "H*16", "16", "1"]
    assert tile.v.strides[0].evaluate({"H": 2, "K": 3}) == 96
    assert tile.v.strides[0].c_expr() == "(long long)H * K * 16LL"
    assert tile.symbols == ("K", "H")
    rows = Layout("Rows", [B, 4], i32, width=8)
    assert [str(s) for s in rows.view.strides] == ["32", "8", "1"]
    assert rows.view.strides[0].is_static and rows.view.strides[0].c_expr() == "32"
    assert str(rows.rows) == "B*4"


def test_read_only_layouts_and_views() -> None:
    ro = Layout("Ro", [B], f32, [Field("a", 4)], read_only=True)
    assert ro.a.effective_read_only and not ro.a.read_only
    assert Window.snap.as_read_only().effective_read_only
    assert not Window.snap.effective_read_only
    assert Window.snap.as_read_only().region == Window.snap.region
    assert "read-only" in str(ro).splitlines()[0]


# -- explicit placement and padding -------------------------------------------------------


def test_fields_placed_by_cols_in_any_order() -> None:
    packed = Layout("Packed", [B], f32, [
        Field("x", cols=(0, 4)),
        Field("z", cols=(12, 16)),
        Field("y", cols=(4, 8)),
        Field("w", 4),  # continues after `y`, the entry declared before it
    ])
    assert packed.width == 16
    assert [(v.path, v.offset, v.width) for v in packed.fields()] == [
        ("x", 0, 4), ("y", 4, 4), ("w", 8, 4), ("z", 12, 4),
    ]
    assert [str(s) for s in packed.z.strides] == ["16", "1"] and packed.z.align == 16


def test_a_width_field_continues_after_a_placed_one() -> None:
    packed = Layout("Packed", [B], f32, [
        Field("z", cols=(8, 12)),
        Field("x", cols=(0, 4)),
        Field("y", 4),
    ])
    assert [(v.path, v.offset, v.width) for v in packed.fields()] == [("x", 0, 4), ("y", 4, 4), ("z", 8, 4)]


def test_groups_placed_by_cols_and_by_width() -> None:
    layout = Layout("G", [B], f32, [
        Group("tail", [Field("a", 2), Field("b", cols=(10, 12))], cols=(8, 12)),
        Group("more", [Field("d", 2)], width=2),  # after `tail`, the entry declared before it
        Group("head", [Field("c", 4), Pad(4)], cols=(0, 8)),
    ], width=14)
    assert [(v.path, v.cols) for v in layout.fields()] == [
        ("head", "0..8"), ("head.c", "0..4"),
        ("tail", "8..12"), ("tail.a", "8..10"), ("tail.b", "10..12"),
        ("more", "12..14"), ("more.d", "12..14"),
    ]
    assert layout["tail.b"].offset == 10 and layout.more.d.offset == 12


def test_width_and_cols_together_must_agree() -> None:
    layout = Layout("W", [B], f32, [Field("a", 4, cols=(0, 4)), Group("g", [Field("b", 2)], width=2, cols=(4, 6))])
    assert layout.g.b.offset == 4


def test_padding() -> None:
    padded = Layout("Padded", [B, 3], f16, [
        Field("a", 3),
        Pad(1),
        Group("g", [Field("b", 4), Pad(cols=(8, 12)), Field("c", 4)]),
    ])
    assert padded.width == 16
    assert [v.path for v in padded.fields()] == ["a", "g", "g.b", "g.c"]
    assert padded.g.c.offset == 12
    assert (padded.g.b.align, padded.g.b.vector_bytes) == (8, 8)
    assert (padded.a.align, padded.a.vector_bytes) == (32, 2)  # 6 bytes wide: only 2-byte accesses fit
    assert str(padded) == (
        "Padded [B, 3, 16] f16  (row stride 16 elements, 32 bytes)\n"
        "  field        columns  width  offset      strides  align\n"
        "  a               0..3      3       0  (48, 16, 1)   32 B\n"
        "  (padding)       3..4      1       3\n"
        "  g              4..16     12       4  (48, 16, 1)    8 B\n"
        "    b             4..8      4       4  (48, 16, 1)    8 B\n"
        "    (padding)    8..12      4       8\n"
        "    c           12..16      4      12  (48, 16, 1)    8 B"
    )
    dt = padded.numpy_dtype()
    assert dt is not None and dt.itemsize == 32
    assert dt.names == ("a", "g")
    assert dt.fields["g"][1] == 8 and dt["g"].fields["c"][1] == 16  # padding leaves holes
    with pytest.raises(LayoutError):
        padded.g[""]


def test_a_layout_without_fields() -> None:
    bias = Layout("Bias", [], f32, width=40)
    assert bias.shape == (Dim.of(40),)
    assert bias.fields() == []
    assert bias.symbols == () and str(bias.rows) == "1"
    whole = bias.view
    assert whole.strides == (Size(1),) and whole.contiguous
    assert (whole.align, whole.vector_bytes) == (256, 16)
    assert str(bias) == (
        "Bias [40] f32  (row stride 40 elements, 160 bytes)\n"
        "  field        columns  width  offset  strides  align\n"
        "  (whole row)    0..40     40       0      (1)  256 B"
    )
    assert bias.numpy_dtype() == np.dtype((np.float32, (40,)))
    arr = np.arange(40, dtype=np.float32)
    assert np.shares_memory(whole.of(arr), arr) and whole.of(arr).shape == (40,)
    batched = Layout("Bias2", [B], f64, width=3)
    assert [str(s) for s in batched.view.strides] == ["3", "1"]
    assert (batched.view.row_align, batched.view.vector_bytes) == (8, 8)


# -- numpy -------------------------------------------------------------------------------------


def test_structured_dtype_of_window() -> None:
    dt = Window.numpy_dtype()
    trade = np.dtype([("time_in_trade", "<f4"), ("unrealized_R", "<f4"), ("position_lots", "<f4")])
    context = np.dtype([("trade", trade), ("regime", "<f4", (8,)), ("calendar", "<f4", (5,))])
    assert dt == np.dtype([("snap", "<f4", (40,)), ("context", context)])
    assert dt.itemsize == Window.row_bytes
    assert dt.fields["context"][1] == Window.context.byte_offset
    assert dt["context"].fields["trade"][0].fields["position_lots"][1] == 8  # 42 - 40 columns in
    arr = window_array()
    rows = arr.view(dt)[..., 0]
    np.testing.assert_array_equal(rows["context"]["trade"]["position_lots"], arr[..., 42])
    np.testing.assert_array_equal(rows["context"]["regime"], arr[..., 43:51])


def test_view_of_gives_the_strided_numpy_view() -> None:
    arr = window_array()
    snap = Window.snap.of(arr)
    assert snap.shape == (2, 3, 40)
    assert snap.strides == tuple(s.evaluate({"B": 2, "K": 3}) * 4 for s in Window.snap.strides) == (672, 224, 4)
    assert byte_offset(snap, arr) == 0 and np.shares_memory(snap, arr)
    # row 1 of snap starts at element 56, not 40: the whole point
    assert snap[0, 1, 0] == 56
    lots = Window["context.trade.position_lots"].of(arr)
    assert lots.shape == (2, 3, 1)
    assert byte_offset(lots, arr) == 42 * 4
    np.testing.assert_array_equal(lots[..., 0], arr[..., 42])
    ctx = Window.context.of(arr)
    np.testing.assert_array_equal(ctx.ravel(), [i * 56 + j for i in range(6) for j in range(40, 56)])
    assert Window.view.of(arr) is not arr and np.shares_memory(Window.view.of(arr), arr)


@pytest.mark.parametrize(
    ("shape", "message"),
    [
        ((2, 3, 40), "an array of `Window` must have shape [B, K, 56], got [2, 3, 40]"),
        ((6, 56), "an array of `Window` must have shape [B, K, 56], got [6, 56]"),
        ((1, 2, 3, 56), "an array of `Window` must have shape [B, K, 56], got [1, 2, 3, 56]"),
    ],
)
def test_view_of_refuses_an_array_of_the_wrong_shape(expect_site, shape, message) -> None:
    arr = np.zeros(shape, np.float32)
    with pytest.raises(LayoutError) as info:
        Window.snap.of(arr)  # site: of-shape
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == message
    expect_site(info.value, "of-shape")


def test_view_of_refuses_a_transposed_array() -> None:
    with pytest.raises(LayoutError, match="must have shape"):
        Window.snap.of(window_array().T)


def test_view_of_checks_static_dims(expect_site) -> None:
    tile = Layout("Tile", [B, 4], f32, width=8)
    with pytest.raises(LayoutError) as info:
        tile.view.of(np.zeros((2, 3, 8), np.float32))  # site: of-static
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == "axis 1 of an array of `Tile` must be 4, got 3"
    expect_site(info.value, "of-static")


def test_view_of_checks_a_repeated_symbol_takes_one_size(expect_site) -> None:
    square = Layout("Square", [B, B], f32, width=4)
    assert square.view.of(np.zeros((3, 3, 4), np.float32)).shape == (3, 3, 4)
    with pytest.raises(LayoutError) as info:
        square.view.of(np.zeros((2, 3, 4), np.float32))  # site: of-symbol
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == "axis 1 of an array of `Square` must be `B` = 2 (axis 0), got 3"
    expect_site(info.value, "of-symbol")


@pytest.mark.parametrize("dtype", [np.float64, np.float16, np.int32])
def test_view_of_refuses_the_wrong_dtype(expect_site, dtype) -> None:
    with pytest.raises(LayoutError) as info:
        Window.snap.of(window_array(dtype=dtype))  # site: of-dtype
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == (
        f"an array of `Window` must have dtype f32, got {np.dtype(dtype)}"
    )
    expect_site(info.value, "of-dtype")


def test_view_of_refuses_what_is_not_an_array() -> None:
    with pytest.raises(LayoutError, match=r"must have shape \[B, K, 56\], got \[\]"):
        Window.snap.of([1.0, 2.0])


def test_bf16_has_no_numpy_dtype_but_its_storage_views() -> None:
    half = Layout("Half", [B], bf16, [Field("a", 4), Field("b", 4)])
    assert half.numpy_dtype() is None
    assert bf16.numpy_name is None and bf16.storage == "uint16" and bf16.c_type == "__nv_bfloat16"
    arr = np.zeros((3, 8), np.uint16)
    assert byte_offset(half.b.of(arr), arr) == 8
    with pytest.raises(LayoutError, match="must have dtype bf16, got float16"):
        half.b.of(arr.view(np.float16))


def test_u8_and_i32_views() -> None:
    raw = Layout("Raw", [B], u8, [Field("tag", 3), Field("payload", 13)])
    assert raw.payload.offset_align == 1 and raw.payload.vector_bytes == 1
    assert raw.view.vector_bytes == 16
    ints = Layout("Ints", [B], i32, [Field("a", 2), Field("b", 2)])
    assert ints.b.vector_bytes == 8


def test_dtype_table_agrees_with_numpy() -> None:
    for d in DTYPES.values():
        assert np.dtype(d.storage).itemsize == d.size
        assert d.align == d.size
        if d.numpy_name is not None:
            assert np.dtype(d.numpy_name).itemsize == d.size
        assert str(d) == d.name


# -- attribute lookup --------------------------------------------------------------------------


def test_hasattr_is_false_for_fields_that_do_not_exist() -> None:
    assert hasattr(Window, "snap")
    assert not hasattr(Window, "nope")
    assert not hasattr(Window.snap, "nope")
    assert getattr(Window, "nope", None) is None


def test_attributes_are_not_fields() -> None:
    # Declared attributes win: a field may never be named like one (LG106).
    assert Window.width == 56 and Window.context.width == 16
    assert Window.name == "Window" and Window.context.name == "Window.context"
    assert isinstance(Window.context.layout, Layout)


def test_views_of_a_layout_in_another_file_point_there() -> None:
    assert isinstance(Window.site, Site)
    assert Window.site.path == __file__
