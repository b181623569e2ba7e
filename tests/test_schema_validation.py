"""Declaration-time validation: every LG1xx code, its wording and the user's line.

Each error must carry its code, a message that names the layout, the field(s)
and the columns, and the site of the declaration that is wrong: this file and
the line marked ``# site: <marker>`` (see ``conftest.py``).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

from layoutgen.schema import (
    CODES,
    Diagnostic,
    Dim,
    Field,
    Group,
    Layout,
    LayoutError,
    LayoutgenError,
    Pad,
    Severity,
    Site,
    UnknownFieldError,
    dims,
    f32,
)

B, K = dims("B K")

DTYPE_LIST = "f64, f32, f16, bf16, i64, i32, i16, i8, u64, u32, u16, u8, bool"
NOT_C_IDENT = "must be a C identifier (letters, digits, `_`; not starting with a digit)"


def here() -> Site:
    """The site of the caller's current line: a declaration on the same line points here."""
    frame = inspect.currentframe()
    assert frame is not None and frame.f_back is not None
    return Site(__file__, frame.f_back.f_lineno)


# -- the registry and the error model ------------------------------------------


def test_every_declaration_code_is_registered_as_an_error() -> None:
    declaration = sorted(c for c in CODES if c.startswith("LG1"))
    assert declaration == [f"LG1{n:02d}" for n in range(1, 15)]
    assert all(CODES[c].severity is Severity.ERROR for c in declaration)
    assert CODES["LG102"].name == "field-out-of-range"


def test_a_diagnostic_renders_like_a_compiler_message() -> None:
    with pytest.raises(LayoutError) as info:
        site = here(); Layout("W", [B], f32, [Field("a", 40), Field("b", 20)], width=56)  # noqa: E702
    err = info.value
    assert isinstance(err, LayoutgenError)
    assert err.site == site
    assert str(err) == (
        f"{site}: error[LG102]: `b` must end at or before column 56 of `W`, got 60\n"
        "  hint: `W` spans columns 0..56; shrink the field or widen `W`"
    )
    assert err.hint == "`W` spans columns 0..56; shrink the field or widen `W`"
    assert err.diagnostic.severity is Severity.ERROR


def test_an_unknown_code_is_refused() -> None:
    with pytest.raises(ValueError, match="LG999"):
        Diagnostic("LG999", "nope")


# -- LG101 overlapping fields ----------------------------------------------------


def test_lg101_field_overlaps_the_one_before(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B, K], f32, [
            Field("snap", 40),
            Field("context", cols=(30, 56)),  # site: lg101-row
        ])
    err = info.value
    assert err.code == "LG101"
    assert err.diagnostic.message == "`context` (columns 30..56) overlaps `snap` (columns 0..40) in `W`"
    assert err.hint == "give each column to one field; use a Group to name a range that contains others"
    expect_site(err, "lg101-row")


def test_lg101_points_at_the_later_declaration_even_when_it_comes_first_in_columns(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("b", cols=(10, 20)),
            Field("a", cols=(0, 12)),  # site: lg101-later
        ])
    assert info.value.code == "LG101"
    assert info.value.diagnostic.message == "`b` (columns 10..20) overlaps `a` (columns 0..12) in `W`"
    expect_site(info.value, "lg101-later")


def test_lg101_inside_a_group_names_the_group(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("snap", 40),
            Group("context", [
                Field("trade", 3),
                Field("regime", cols=(42, 56)),  # site: lg101-group
            ]),
        ])
    assert info.value.code == "LG101"
    assert info.value.diagnostic.message == (
        "`context.regime` (columns 42..56) overlaps `context.trade` (columns 40..43) in `W.context`"
    )
    expect_site(info.value, "lg101-group")


def test_lg101_overlap_with_padding_says_the_columns_once(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Pad(4),
            Field("b", cols=(2, 6)),  # site: lg101-pad
        ])
    assert info.value.code == "LG101"
    assert info.value.diagnostic.message == "`b` (columns 2..6) overlaps padding at columns 0..4 in `W`"
    expect_site(info.value, "lg101-pad")


def test_lg101_a_width_field_continues_after_the_entry_declared_before_it(expect_site) -> None:
    # `b` follows `a` in the list, so it starts at column 2 and runs into `c`.
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("c", cols=(4, 8)),
            Field("a", cols=(0, 2)),
            Field("b", 4),  # site: lg101-cursor
        ])
    assert info.value.code == "LG101"
    assert info.value.diagnostic.message == "`c` (columns 4..8) overlaps `b` (columns 2..6) in `W`"
    expect_site(info.value, "lg101-cursor")


# -- LG102 out of range -----------------------------------------------------------


def test_lg102_field_ends_past_the_row(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B, K], f32, [
            Field("a", 40),
            Field("b", 20),  # site: lg102-row
        ], width=56)
    err = info.value
    assert err.code == "LG102"
    assert err.diagnostic.message == "`b` must end at or before column 56 of `W`, got 60"
    assert err.hint == "`W` spans columns 0..56; shrink the field or widen `W`"
    expect_site(err, "lg102-row")


def test_lg102_field_ends_past_its_group(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("Window", [B, K], f32, [
            Field("snap", 40),
            Group("context", [
                Field("trade", 3),
                Field("regime", 17),  # site: lg102-group
            ], width=16),
        ])
    err = info.value
    assert err.code == "LG102"
    assert err.diagnostic.message == (
        "`context.regime` must end at or before column 56 of `Window.context`, got 60"
    )
    assert err.hint == "`Window.context` spans columns 40..56; shrink the field or widen `Window.context`"
    expect_site(err, "lg102-group")


def test_lg102_field_starts_before_its_group(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("x", 4),
            Group("g", [
                Field("a", cols=(0, 4)),  # site: lg102-before-group
            ], cols=(4, 8)),
        ])
    assert info.value.code == "LG102"
    assert info.value.diagnostic.message == "`g.a` must start at or after column 4 of `W.g`, got 0"
    expect_site(info.value, "lg102-before-group")


def test_lg102_negative_start_column(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", cols=(-2, 4)),  # site: lg102-negative
        ])
    assert info.value.code == "LG102"
    assert info.value.diagnostic.message == "`a` of `W` must start at column 0 or later, got -2"
    expect_site(info.value, "lg102-negative")


def test_lg102_a_group_ends_past_the_row(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Group("g", [Field("a", 12), Field("b", 8)]),  # site: lg102-group-row
        ], width=16)
    assert info.value.code == "LG102"
    assert info.value.diagnostic.message == "`g` must end at or before column 16 of `W`, got 20"
    expect_site(info.value, "lg102-group-row")


def test_lg102_padding_past_the_row(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", 4),
            Pad(4),  # site: lg102-pad
        ], width=6)
    assert info.value.code == "LG102"
    assert info.value.diagnostic.message == "padding at columns 4..8 must end at or before column 6 of `W`, got 8"
    expect_site(info.value, "lg102-pad")


# -- LG103 zero or negative widths ---------------------------------------------------


@pytest.mark.parametrize("width", [0, -1, -40])
def test_lg103_field_width(expect_site, width: int) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", 4),
            Field("b", width),  # site: lg103-field
        ])
    assert info.value.code == "LG103"
    assert info.value.diagnostic.message == f"`b` of `W` must have a positive width, got {width}"
    expect_site(info.value, "lg103-field")


@pytest.mark.parametrize("cols", [(4, 4), (6, 2)])
def test_lg103_empty_or_reversed_cols(expect_site, cols: tuple[int, int]) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", 4),
            Field("b", cols=cols),  # site: lg103-cols
        ])
    assert info.value.code == "LG103"
    assert info.value.diagnostic.message == (
        f"`b` of `W` must have a positive width, got columns {cols[0]}..{cols[1]}"
    )
    expect_site(info.value, "lg103-cols")


def test_lg103_padding_width(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", 4),
            Pad(0),  # site: lg103-pad
        ])
    assert info.value.code == "LG103"
    assert info.value.diagnostic.message == "padding of `W` must have a positive width, got 0"
    expect_site(info.value, "lg103-pad")


def test_lg103_group_width(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Group("g", [Field("a", 1)], width=-4),  # site: lg103-group
        ])
    assert info.value.code == "LG103"
    assert info.value.diagnostic.message == "`g` of `W` must have a positive width, got -4"
    expect_site(info.value, "lg103-group")


def test_lg103_empty_group(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", 4),
            Group("g", []),  # site: lg103-empty-group
        ])
    assert info.value.code == "LG103"
    assert info.value.diagnostic.message == "group `g` of `W` must contain at least one column"
    expect_site(info.value, "lg103-empty-group")


@pytest.mark.parametrize("width", [0, -56])
def test_lg103_layout_width(expect_site, width: int) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, width=width)  # site: lg103-layout
    assert info.value.code == "LG103"
    assert info.value.diagnostic.message == f"the width of `W` must be positive, got {width}"
    expect_site(info.value, "lg103-layout")


def test_lg103_layout_without_fields_or_width(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32)  # site: lg103-nothing
    assert info.value.code == "LG103"
    assert info.value.diagnostic.message == "`W` has no fields and no width"
    assert info.value.hint == "give fields=[...] or width=N"
    expect_site(info.value, "lg103-nothing")


@pytest.mark.parametrize("size", [0, -3])
def test_lg103_static_dims(expect_site, size: int) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B, size], f32, width=4)  # site: lg103-dim
    assert info.value.code == "LG103"
    assert info.value.diagnostic.message == f"the dims of `W`[1] must be positive, got {size}"
    expect_site(info.value, "lg103-dim")
    with pytest.raises(LayoutError) as info:
        Dim.of(size)  # site: lg103-dim-of
    assert info.value.code == "LG103"
    assert info.value.diagnostic.message == f"a static dim must be a positive integer, got {size}"
    expect_site(info.value, "lg103-dim-of")


# -- LG104 duplicate names --------------------------------------------------------------


def test_lg104_duplicate_field(expect_site, site_of) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", 4),  # site: lg104-first
            Field("a", 2),  # site: lg104-second
        ])
    err = info.value
    assert err.code == "LG104"
    first = site_of("lg104-first")
    assert err.diagnostic.message == f"`W` declares `a` twice: columns 0..4 at {first} and columns 4..6"
    expect_site(err, "lg104-second")


def test_lg104_a_group_and_a_field_of_one_name(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("snap", 40),
            Group("context", [
                Group("trade", [Field("lots", 1)]),
                Field("trade", 2),  # site: lg104-group
            ]),
        ])
    assert info.value.code == "LG104"
    assert info.value.diagnostic.message.startswith("`W.context` declares `trade` twice: columns 40..41 at ")
    assert info.value.diagnostic.message.endswith(" and columns 41..43")
    expect_site(info.value, "lg104-group")


def test_lg104_the_same_name_in_different_groups_is_fine() -> None:
    layout = Layout("W", [B], f32, [
        Group("x", [Field("v", 2)]),
        Group("y", [Field("v", 2)]),
    ])
    assert layout["x.v"].offset == 0 and layout["y.v"].offset == 2


def test_lg104_padding_has_no_name_to_clash() -> None:
    assert Layout("W", [B], f32, [Pad(1), Field("a", 1), Pad(2)]).width == 4


# -- LG105 names that are not C identifiers ---------------------------------------------------


@pytest.mark.parametrize("name", ["a b", "x;y", "1a", "", "a-b", "caf\u00e9", "a\n"])
def test_lg105_field_names(expect_site, name: str) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field(name, 4),  # site: lg105-field
        ])
    assert info.value.code == "LG105"
    assert info.value.diagnostic.message == f"a field name of `W` {NOT_C_IDENT}, got {name!r}"
    expect_site(info.value, "lg105-field")


def test_lg105_group_name_in_a_nested_record(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Group("context", [
                Group("x;y", [Field("a", 1)]),  # site: lg105-group
            ]),
        ])
    assert info.value.code == "LG105"
    assert info.value.diagnostic.message == f"a field name of `W.context` {NOT_C_IDENT}, got 'x;y'"
    expect_site(info.value, "lg105-group")


@pytest.mark.parametrize("name", [5, None, b"ab"])
def test_lg105_names_that_are_not_strings(expect_site, name: object) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field(name, 4),  # site: lg105-type
        ])
    assert info.value.code == "LG105"
    assert info.value.diagnostic.message == (
        f"a field name of `W` must be a string, got {type(name).__name__} {name!r}"
    )
    expect_site(info.value, "lg105-type")


def test_lg105_layout_name(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("my window", [B], f32, width=4)  # site: lg105-layout
    assert info.value.code == "LG105"
    assert info.value.diagnostic.message == f"a layout name {NOT_C_IDENT}, got 'my window'"
    expect_site(info.value, "lg105-layout")


def test_lg105_dim_names(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        dims("B 1a")  # site: lg105-dims
    assert info.value.code == "LG105"
    assert info.value.diagnostic.message == f"a symbolic dim's name {NOT_C_IDENT}, got '1a'"
    expect_site(info.value, "lg105-dims")
    with pytest.raises(LayoutError) as info:
        Layout("W", [B, "x;y"], f32, width=4)  # site: lg105-dim-str
    assert info.value.code == "LG105"
    assert info.value.diagnostic.message == f"the dims of `W`[1] {NOT_C_IDENT}, got 'x;y'"
    expect_site(info.value, "lg105-dim-str")


# -- LG106 reserved names ------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["int", "float", "class", "__global__", "__shared__", "threadIdx", "blockDim", "warpSize", "None"]
)
def test_lg106_keywords(expect_site, name: str) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field(name, 4),  # site: lg106-keyword
        ])
    assert info.value.code == "LG106"
    assert info.value.diagnostic.message == (
        f"a field name of `W` is a reserved word in C++, CUDA or Python, got `{name}`"
    )
    expect_site(info.value, "lg106-keyword")


@pytest.mark.parametrize("name", ["__x", "_Foo"])
def test_lg106_implementation_reserved(expect_site, name: str) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field(name, 4),  # site: lg106-impl
        ])
    assert info.value.code == "LG106"
    assert info.value.diagnostic.message == (
        "a field name of `W` is reserved for the implementation (leading `__` or `_` and a capital), "
        f"got `{name}`"
    )
    expect_site(info.value, "lg106-impl")


def test_lg106_layoutgen_prefix(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("lg_row", 4),  # site: lg106-prefix
        ])
    assert info.value.code == "LG106"
    assert info.value.diagnostic.message == (
        "a field name of `W` starts with `lg_`, which layoutgen reserves for generated names, got `lg_row`"
    )
    expect_site(info.value, "lg106-prefix")


# Every public attribute of layouts and views, including the dataclass fields
# that have no class-level default (`dims`, `record`, `doc`, `layout`, `region`).
SHADOWING = [
    "width", "shape", "strides", "offset", "row_stride", "contiguous", "align", "vector_bytes", "name",
    "path", "dtype", "site", "view", "fields", "of", "rows", "symbols", "numpy_dtype", "read_only",
    "dims", "record", "doc", "layout", "region",
]


@pytest.mark.parametrize("name", SHADOWING)
def test_lg106_names_that_shadow_layout_and_view_attributes(expect_site, name: str) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", 2),
            Group("g", [
                Field(name, 2),  # site: lg106-shadow
            ]),
        ])
    err = info.value
    assert err.code == "LG106"
    assert err.diagnostic.message == (
        f"field `{name}` of `W.g` would shadow the attribute `{name}` of layouts and views"
    )
    assert err.hint == "rename the field; layoutgen reserves the names of Layout and View attributes"
    expect_site(err, "lg106-shadow")


def _buffer_attributes() -> list[str]:
    """What `window.<name>` finds on a program's buffer (or a field of one) before a field: read off the
    classes themselves, so an attribute added to them is covered here without a list to keep."""
    from dataclasses import fields as dataclass_fields

    from layoutgen.declare.program import Buffer, BufferView

    names = {n for c in (Buffer, BufferView) for n in [*dir(c), *(f.name for f in dataclass_fields(c))]}
    return sorted(n for n in names if not n.startswith("_") and n not in SHADOWING)


@pytest.mark.parametrize("name", _buffer_attributes())
def test_lg106_a_field_named_like_a_buffer_attribute_is_refused_at_its_line(expect_site, name: str) -> None:
    assert {"whole", "input", "output", "role", "buffer"} <= set(_buffer_attributes())
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", 2),
            Group("g", [
                Field(name, 2),  # site: lg106-buffer
            ]),
        ])
    err = info.value
    assert err.code == "LG106"
    assert err.diagnostic.message == (
        f"field `{name}` of `W.g` would shadow the attribute `{name}` of program buffers: in a program, "
        f"`<buffer>.{name}` would be the buffer's `{name}`, not the field"
    )
    assert err.hint == "rename the field; layoutgen reserves the names of Buffer and BufferView attributes"
    expect_site(err, "lg106-buffer")


def test_lg106_layout_and_dim_names(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("int", [B], f32, width=4)  # site: lg106-layout
    assert info.value.code == "LG106"
    assert info.value.diagnostic.message == "a layout name is a reserved word in C++, CUDA or Python, got `int`"
    expect_site(info.value, "lg106-layout")
    with pytest.raises(LayoutError) as info:
        dims("B blockIdx")  # site: lg106-dim
    assert info.value.code == "LG106"
    assert info.value.diagnostic.message == (
        "a symbolic dim's name is a reserved word in C++, CUDA or Python, got `blockIdx`"
    )
    expect_site(info.value, "lg106-dim")


# -- LG107 unknown dtypes ---------------------------------------------------------------


@pytest.mark.parametrize("dtype", ["f128", "float32", "F32", None, np.float32, 4])
def test_lg107_unknown_dtypes(expect_site, dtype: object) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], dtype, width=4)  # site: lg107
    assert info.value.code == "LG107"
    assert info.value.diagnostic.message == f"the dtype of `W` must be one of {DTYPE_LIST}, got {dtype!r}"
    expect_site(info.value, "lg107")


def test_lg107_a_dtype_by_its_short_name_is_fine() -> None:
    assert Layout("W", [B], "f16", width=4).dtype.c_type == "__half"


# -- LG108 declared widths that disagree ----------------------------------------------------


def test_lg108_layout_wider_than_its_fields(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("Window", [B, K], f32, [  # site: lg108-layout
            Field("snap", 40),
        ], width=56)
    err = info.value
    assert err.code == "LG108"
    assert err.diagnostic.message == "`Window` is declared 56 columns wide but its fields end at column 40"
    assert err.hint == "declare the rest with Pad(16) or set width=40"
    expect_site(err, "lg108-layout")


def test_lg108_group_wider_than_its_fields(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("Window", [B, K], f32, [
            Field("snap", 40),
            Group("context", [Field("trade", 3)], width=16),  # site: lg108-group
        ])
    err = info.value
    assert err.code == "LG108"
    assert err.diagnostic.message == (
        "group `context` of `Window` is declared as columns 40..56 but its fields end at column 43"
    )
    assert err.hint == "declare the rest with Pad(13) or narrow the group"
    expect_site(err, "lg108-group")


def test_lg108_width_and_cols_disagree(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", 4, cols=(0, 6)),  # site: lg108-cols
        ])
    assert info.value.code == "LG108"
    assert info.value.diagnostic.message == "`a` of `W` is declared 4 wide but its columns 0..6 are 6"
    expect_site(info.value, "lg108-cols")


def test_a_layout_narrower_than_its_fields_is_lg102_at_the_field(expect_site) -> None:
    # Declaring fewer columns than the fields need is caught as the field past the row.
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", 40),
            Field("b", 16),  # site: lg108-narrow
        ], width=50)
    assert info.value.code == "LG102"
    assert info.value.diagnostic.message == "`b` must end at or before column 50 of `W`, got 56"
    expect_site(info.value, "lg108-narrow")


# -- LG109 uncovered columns ----------------------------------------------------------


def test_lg109_gap_between_fields(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("Window", [B, K], f32, [
            Field("snap", 40),
            Field("context", cols=(44, 56)),  # site: lg109-gap
        ])
    err = info.value
    assert err.code == "LG109"
    assert err.diagnostic.message == "columns 40..44 of `Window` belong to no field (before `context`)"
    assert err.hint == "declare them as padding with Pad(4) or move `context`"
    expect_site(err, "lg109-gap")


def test_lg109_gap_at_the_start(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", cols=(2, 4)),  # site: lg109-start
        ])
    assert info.value.code == "LG109"
    assert info.value.diagnostic.message == "columns 0..2 of `W` belong to no field (before `a`)"
    expect_site(info.value, "lg109-start")


def test_lg109_gap_inside_a_group(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("x", 4),
            Group("g", [
                Field("a", cols=(4, 6)),
                Field("b", cols=(7, 10)),  # site: lg109-group
            ]),
        ])
    assert info.value.code == "LG109"
    assert info.value.diagnostic.message == "columns 6..7 of `W.g` belong to no field (before `g.b`)"
    expect_site(info.value, "lg109-group")


def test_lg109_padding_fills_the_gap() -> None:
    layout = Layout("W", [B], f32, [Field("a", 4), Pad(cols=(4, 6)), Field("b", cols=(6, 8))])
    assert layout.b.offset == 6


# -- LG110 malformed arguments ------------------------------------------------------------


@pytest.mark.parametrize("width", ["4", 4.0, True, False, [4]])
def test_lg110_field_width_of_the_wrong_type(expect_site, width: object) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", 4),
            Field("b", width),  # site: lg110-width
        ])
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == f"`b` of `W` must have an integer width, got {width!r}"
    expect_site(info.value, "lg110-width")


@pytest.mark.parametrize("width", ["1", 1.0, True])
def test_lg110_a_bad_width_is_refused_even_with_cols(expect_site, width: object) -> None:
    # `True == 1` and `1.0 == 1`: the width's type must be checked before it is compared to `cols`.
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", width, cols=(0, 1)),  # site: lg110-width-cols
        ])
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == f"`a` of `W` must have an integer width, got {width!r}"
    expect_site(info.value, "lg110-width-cols")


@pytest.mark.parametrize("cols", [[0, 4], (0, 4, 8), (0,), (0.0, 4), (0, True), "0:4", (None, 4)])
def test_lg110_malformed_cols(expect_site, cols: object) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", cols=cols),  # site: lg110-cols
        ])
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == f"`a` of `W` must give `cols` as (start, stop) integers, got {cols!r}"
    expect_site(info.value, "lg110-cols")


def test_lg110_field_and_padding_without_a_width(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a"),  # site: lg110-no-width
        ])
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == "`a` of `W` needs a width or `cols=(start, stop)`"
    expect_site(info.value, "lg110-no-width")
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Field("a", 1),
            Pad(),  # site: lg110-pad-no-width
        ])
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == "padding of `W` needs a width or `cols=(start, stop)`"
    expect_site(info.value, "lg110-pad-no-width")


@pytest.mark.parametrize("entry", ["snap", ("snap", 40), 40, None, {"name": "snap"}, Dim("B")])
def test_lg110_entries_that_are_not_fields(expect_site, entry: object) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [  # site: lg110-entry
            Field("a", 4),
            entry,
        ])
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == (
        f"the fields of `W` must be Field, Group or Pad, got {type(entry).__name__} {entry!r}"
    )
    expect_site(info.value, "lg110-entry")  # the list's owner: an entry that is no Field has no site


def test_lg110_an_entry_of_a_group_that_is_not_a_field(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [
            Group("g", [  # site: lg110-group-entry
                Field("a", 4),
                "b",
            ]),
        ])
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == "the fields of `W.g` must be Field, Group or Pad, got str 'b'"
    expect_site(info.value, "lg110-group-entry")


@pytest.mark.parametrize("fields", [None, "snap", Field("snap", 4), {"snap": 4}, 4])
def test_lg110_fields_that_are_not_a_list(expect_site, fields: object) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, fields)  # site: lg110-fields
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == f"the fields of `W` must be a list, got {fields!r}"
    expect_site(info.value, "lg110-fields")
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [Group("g", fields)])  # site: lg110-group-fields
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == f"the fields of `W.g` must be a list, got {fields!r}"
    expect_site(info.value, "lg110-group-fields")


@pytest.mark.parametrize("width", ["56", 56.0, True, False])
def test_lg110_layout_width_of_the_wrong_type(expect_site, width: object) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, width=width)  # site: lg110-layout-width
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == f"the width of `W` must be an integer, got {width!r}"
    expect_site(info.value, "lg110-layout-width")


@pytest.mark.parametrize("shape", [B, "B K", None, 3])
def test_lg110_dims_that_are_not_a_list(expect_site, shape: object) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", shape, f32, width=4)  # site: lg110-dims
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == f"the dims of `W` must be a list of dims, got {shape!r}"
    expect_site(info.value, "lg110-dims")


@pytest.mark.parametrize("dim", [True, None, 2.0, (2,)])
def test_lg110_dims_of_the_wrong_type(expect_site, dim: object) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B, dim], f32, width=4)  # site: lg110-dim
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == f"the dims of `W`[1] must be a Dim, an int or a name, got {dim!r}"
    expect_site(info.value, "lg110-dim")


@pytest.mark.parametrize("names", [5, None, ["B", "K"]])
def test_lg110_dims_of_something_else_than_a_string(expect_site, names: object) -> None:
    with pytest.raises(LayoutError) as info:
        dims(names)  # site: lg110-dims-call
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == f"dims() takes a string of names, got {names!r}"
    expect_site(info.value, "lg110-dims-call")


def test_lg110_read_only_must_be_a_bool(expect_site) -> None:
    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, width=4, read_only=1)  # site: lg110-read-only
    assert info.value.code == "LG110"
    assert info.value.diagnostic.message == "`read_only` of `W` must be True or False, got 1"
    expect_site(info.value, "lg110-read-only")


# -- LG111 unknown fields --------------------------------------------------------------


Window = Layout(  # site: window
    "Window",
    [B, K],
    f32,
    [
        Field("snap", 40),
        Group("context", [
            Group("trade", [Field("time_in_trade", 1), Field("unrealized_R", 1), Field("position_lots", 1)]),
            Field("regime", 8),
            Field("calendar", 5),
        ]),
    ],
    width=56,
)


def test_lg111_unknown_attribute(expect_site, site_of) -> None:
    with pytest.raises(UnknownFieldError) as info:
        Window.nope  # site: lg111-attr
    err = info.value
    assert isinstance(err, LayoutError) and isinstance(err, AttributeError)
    assert err.code == "LG111"
    assert err.diagnostic.message == "`Window` has no field `nope` (its fields: `snap`, `context`)"
    assert err.hint == f"`Window` is declared at {Window.site}"
    expect_site(err, "lg111-attr")
    assert Window.site == site_of("window")


def test_lg111_unknown_path(expect_site) -> None:
    with pytest.raises(UnknownFieldError) as info:
        Window["context.nope"]  # site: lg111-path
    assert info.value.code == "LG111"
    assert info.value.diagnostic.message == (
        "`Window.context` has no field `nope` (its fields: `trade`, `regime`, `calendar`)"
    )
    expect_site(info.value, "lg111-path")


def test_lg111_below_a_leaf_and_through_a_view(expect_site) -> None:
    with pytest.raises(UnknownFieldError) as info:
        Window.context.trade.position_lots.x  # site: lg111-leaf
    assert info.value.diagnostic.message == (
        "`Window.context.trade.position_lots` has no field `x` (its fields: none)"
    )
    expect_site(info.value, "lg111-leaf")
    with pytest.raises(UnknownFieldError) as info:
        Window.context["trade.lots"]  # site: lg111-view-path
    assert info.value.diagnostic.message == (
        "`Window.context.trade` has no field `lots` (its fields: `time_in_trade`, `unrealized_R`, `position_lots`)"
    )
    expect_site(info.value, "lg111-view-path")


@pytest.mark.parametrize("path", ["", 3, None])
def test_lg111_paths_that_are_not_names(expect_site, path: object) -> None:
    with pytest.raises(LayoutError) as info:
        Window[path]  # site: lg111-bad-path
    assert info.value.code == "LG111"
    assert info.value.diagnostic.message == f"a field path of `Window` must be a dotted name, got {path!r}"
    expect_site(info.value, "lg111-bad-path")


def test_lg111_hasattr_is_false_for_unknown_fields_only() -> None:
    assert not hasattr(Window, "nope")
    assert not hasattr(Window.context, "nope")
    assert hasattr(Window, "snap") and hasattr(Window.context, "trade")
    with pytest.raises(AttributeError) as info:
        Window._private
    assert not isinstance(info.value, LayoutError)


# -- sites -------------------------------------------------------------------------------------


def test_the_site_of_a_one_line_declaration_is_that_line() -> None:
    with pytest.raises(LayoutError) as info:
        line = inspect.currentframe().f_lineno; Layout("W", [B], f32, [Field("a", 0)])  # noqa: E702
    assert info.value.site == Site(__file__, line)


def test_a_field_declared_in_a_helper_points_at_the_helper(expect_site) -> None:
    def trade() -> Group:
        return Group("trade", [Field("lots", 1), Field("int", 1)])  # site: helper

    with pytest.raises(LayoutError) as info:
        Layout("W", [B], f32, [trade()])
    assert info.value.code == "LG106"
    expect_site(info.value, "helper")
