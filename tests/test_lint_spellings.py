"""The seed bug in the spellings that passed `layoutgen check` (issue 30, "Measured this round"), and the lint
refusing each through what flows between statements, not a pattern per spelling.

A 96-column field in rows 136 elements apart (`Wide.feat`), read as if its rows were 96 apart: through a
local (`const`, `constexpr`, `auto`, plain `int`, file-scope `static const`), a macro, an offset in its own
statement, a helper's arguments, `Type::width`, a shift, a vector index. Each spelling is written as a
template body, and the hand-written ones as a `SourceKernel` file; each must be refused with LG401 at the
line that indexes. The same shapes written correctly must pass.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen import Field, Layout, SourceKernel, dims, f32
from layoutgen.checks.cuda_signatures import INTEGER_TYPES
from layoutgen.checks.lint import lint_template
from layoutgen.declare.kernels import In, Kernel, Out
from layoutgen.schema.diagnostics import Diagnostic

B, K, F, C = dims("B K F C")
Wide = Layout("Wide", [B, K], f32, [Field("feat", 96), Field("ctx", 40)])  # feat: 96 wide, rows 136 apart
Narrow = Layout("Narrow", [B, K], f32, width=40)
Packed = Layout("Packed", [B, K], f32, width=96)


def lint_body(body: str, x: Any = Wide.feat, vector: int | None = None) -> list[Diagnostic]:
    with tempfile.TemporaryDirectory() as folder:
        template = Path(folder) / "t.cu.j2"
        template.write_text(body)
        k = Kernel("spelled", str(template), [In("x", [B, K, F], vector=vector), Out("dst", [B, K, C])])
        return lint_template(k.bind(x=x, dst=Narrow), template)


def lint_source(text: str, entry: str = "entry") -> list[Diagnostic]:
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "k.cu"
        source.write_text(text)
        k = SourceKernel("handwritten", str(source), [In("x", [B, K, F]), Out("dst", [B, K, C])], entry=entry)
        return lint_template(k.bind(x=Wide.feat, dst=Narrow), source)


def found(diags: list[Diagnostic]) -> list[tuple[str, int]]:
    return [(d.code, d.site.line if d.site else 0) for d in diags]


# Each spelling: (body, the line that indexes, the start of its message). The last line indexes.
TEMPLATES = {
    "const local": ("    const int stride = 96;\n    dst.at(row, 0) = x.row(0)[row * stride + c];\n",
                    "`stride` (96) in index arithmetic of kernel `spelled` equals the width of `x` (Wide.feat)"),
    "plain int": ("    int stride = 96;\n    dst.at(row, 0) = x.row(0)[row * stride + c];\n",
                  "`stride` (96) in index arithmetic of kernel `spelled` equals the width of `x` (Wide.feat)"),
    "auto from the width": ("    auto w = x.width;\n    dst.at(row, 0) = x.raw_pointer()[row * w + c];\n",
                            "`w` (96) in index arithmetic of kernel `spelled` equals the width of `x` (Wide.feat)"),
    "macro": ("#define STRIDE 96\n    dst.at(row, 0) = x.row(0)[row * STRIDE + c];\n",
              "`STRIDE` (96) in index arithmetic of kernel `spelled` equals the width of `x` (Wide.feat)"),
    "constexpr from arithmetic": ("    constexpr int H = 2 * 48;\n    dst.at(row, 0) = x.at(0, row * H + c);\n",
                                  "`H` (96) in index arithmetic of kernel `spelled` equals the width of `x` "
                                  "(Wide.feat)"),
    "offset on its own line": ("    const long long off = row * 96;\n    dst.at(row, 0) = x.raw_pointer()[off + c];\n",
                               "literal 96 in index arithmetic of kernel `spelled` equals the width of `x` "
                               "(Wide.feat)"),
    "offset over two lines": ("    long long r96 = row * 96;\n    const long long off = r96 + c;\n"
                              "    dst.at(row, 0) = x.raw_pointer()[off];\n",
                              "literal 96 in index arithmetic of kernel `spelled` equals the width of `x` "
                              "(Wide.feat)"),
    "symbol in the column": ("    dst.at(row, 0) = x.at(0, row * F + c);\n",
                             "`F` (96) in index arithmetic of kernel `spelled` equals the width of `x` (Wide.feat)"),
    "call form": ("    constexpr int H = 96;\n    dst.at(row, 0) = x(0, 0, row * H + c);\n",
                  "`H` (96) in index arithmetic of kernel `spelled` equals the width of `x` (Wide.feat)"),
    "shift": ("    dst.at(row, 0) = x.row(0)[(row << 5) * 3 + c];\n",
              "`(row << 5) * 3` (96) in index arithmetic of kernel `spelled` equals the width of `x` (Wide.feat)"),
    "vector index": ("    const float4 v = x.vec<16>(0, row * 24 + i);\n",
                     "literal 24 in index arithmetic of kernel `spelled` equals the width of `x` (Wide.feat) in "
                     "16-byte steps"),
    "float4 cast": ("    const float4* p = reinterpret_cast<const float4*>(x.raw_pointer());\n"
                    "    const float4 v = p[row * 24 + i];\n",
                    "literal 24 in index arithmetic of kernel `spelled` equals the width of `x` (Wide.feat) in "
                    "16-byte steps"),
    "pointer set after its declaration": ("    const float* p;\n    p = x.raw_pointer();\n"
                                          "    dst.at(row, 0) = p[row * 96 + c];\n",
                                          "literal 96 in index arithmetic of kernel `spelled` equals the width of "
                                          "`x` (Wide.feat)"),
    "helper taking the pointer and the width": (
        "{% block preamble %}\n"
        "__device__ float row_sum(const float* p, int width, long long r) {\n"
        "    float s = 0.0f;\n"
        "    for (int c = 0; c < width; ++c) s += p[r * width + c];\n"
        "    return s;\n"
        "}\n"
        "{% endblock %}\n"
        "    dst.at(row, 0) = row_sum(x.raw_pointer(), 96, row);\n",
        "literal 96 in index arithmetic of kernel `spelled` equals the width of `x` (Wide.feat), in helper "
        "`row_sum` (line 2) as this line calls it"),
    "macro helper in the preamble": (
        "{% block preamble %}\n#define ROW_OF(p, r) ((p) + (r) * 96)\n{% endblock %}\n"
        "    const float* in = ROW_OF(x.raw_pointer(), row);\n",
        "literal 96 in index arithmetic of kernel `spelled` equals the width of `x` (Wide.feat), in helper "
        "`ROW_OF` (line 2) as this line calls it"),
}


@pytest.mark.parametrize("name", list(TEMPLATES))
def test_each_spelling_of_the_seed_bug_in_a_template_is_lg401(name: str) -> None:
    body, message = TEMPLATES[name]
    diags = lint_body(body, vector=16 if "vec<16>" in body else None)
    assert found(diags) == [("LG401", body.count("\n"))], diags
    assert diags[0].message == message
    assert diags[0].hint is not None and diags[0].hint.startswith("rows of `x` are 136 elements apart: index with ")


SOURCES = {
    "constexpr from Type::width": """\
using Snap = views::Wide_feat_view<const float, 4, lg::Packing::strided>;
__device__ void entry(Snap x, Out dst) {
    constexpr int W = Snap::width;
    const float* in = x.raw_pointer() + row * W;
}
""",
    "file-scope static const": """\
static const int kStride = 96;
__device__ void entry(Snap x, Out dst) {
    const float* in = x.raw_pointer() + row * kStride;
}
""",
    "a row offset in its own variable": """\
__device__ void entry(Snap x, Out dst) {
    const long long base = row * 96;
    const float* in = x.raw_pointer() + base;
}
""",
    "entry parameters named otherwise": """\
__device__ void entry(Snap features, Out out) {
    const float* in = features.raw_pointer() + row * 96;
}
""",
    "decltype": """\
__device__ void entry(Snap x, Out dst) {
    const float* in = x.raw_pointer() + row * decltype(x)::width;
}
""",
}


@pytest.mark.parametrize("name", list(SOURCES))
def test_each_hand_written_spelling_is_lg401(name: str) -> None:
    text = SOURCES[name]
    diags = lint_source(text)
    line = next(n for n, code in enumerate(text.split("\n"), 1) if "raw_pointer() +" in code)
    assert found(diags) == [("LG401", line)], diags
    assert "equals the width of `x` (Wide.feat)" in diags[0].message


CORRECT = {
    "locals used as columns": "    const int c0 = 8;\n    auto w = x.width;\n"
                              "    for (int c = 0; c < w; ++c) dst.at(row, c % 40) = x.at(row, c0 + c - 8);\n",
    "counting down from the width": "    constexpr int W = 96;\n    dst.at(row, 0) = x.at(row, W - 1 - d)"
                                    " + x.at(row, 12 - 1 - d) + x.row(row)[W - 1 - d];\n",
    "an offset of rows through the accessor": "    const long long r = row * 2 + 1;\n    dst.at(row, 0) = x.at(r, c);\n",
    "a helper given a row": "{% block preamble %}\n__device__ float total(const float* p, int n) {\n"
                            "    float s = 0.0f;\n    for (int c = 0; c < n; ++c) s += p[c];\n    return s;\n}\n"
                            "{% endblock %}\n    dst.at(row, 0) = total(&x.at(row, 0), x.width);\n",
    "a table of the preamble's own": "{% block preamble %}\n__constant__ float kTable[4 * 96];\n"
                                     "__device__ float lut(const float* table, int i, int j) {\n"
                                     "    return table[i * 96 + j];\n}\n{% endblock %}\n"
                                     "    dst.at(row, 0) = lut(kTable, 1, 2) * x.at(row, 0);\n",
    "float values are no strides": "    const float scale = 96.0f;\n    dst.at(row, 0) = x.at(row, 0) * scale;\n",
    # assigned in a loop, `s` is 96 only on the first pass: no constant (straight-line assignments fold:
    # tests/test_lint_flow_property.py)
    "a loop counter is no constant": "    int s = 96;\n    for (int k = 0; k < n; ++k) {\n        s += 40;\n    }\n"
                                     "    dst.at(row, 0) = x.row(0)[row * s + c];\n",
}


@pytest.mark.parametrize("name", list(CORRECT))
def test_correct_kernels_of_the_same_shapes_pass(name: str) -> None:
    assert lint_body(CORRECT[name]) == []


def test_a_hand_written_kernel_through_its_views_passes() -> None:
    text = """\
__device__ float total(const float* p, int n) {
    float s = 0.0f;
    for (int c = 0; c < n; ++c) s += p[c];
    return s;
}
__device__ void entry(Snap x, Out dst) {
    constexpr int F = Snap::width;
    const auto in = x.row(row);
    float acc = 0.0f;
    for (int j = 0; j < F; ++j) acc += in[j];
    dst.at(row, 0) = acc + total(&x.at(row, 0), F);
}
"""
    assert lint_source(text) == []


# -- the class: any spelling of the stride through a name, defined any way ---------------------------

DEFINITIONS = [
    "    const int {n} = {v};\n", "    int {n} = {v};\n", "    constexpr int {n} = {v};\n",
    "    static const long long {n} = {v};\n", "    auto {n} = {v};\n", "#define {n} {v}\n",
    "    const unsigned {n}({v});\n",
]
VALUES = ["{v}", "x.width", "2 * {h}", "({v})", "static_cast<int>({v})", "{h} << 1"]
USES = [
    ("    dst.at(row, 0) = x.row(0)[row * {n} + c];\n", "x.at(row, c)"),
    ("    dst.at(row, 0) = x.raw_pointer()[{n} * row];\n", "x.at(row, 0)"),
    ("    const float* p = x.raw_pointer() + row * {n};\n", "x.row(row)"),
    ("    dst.at(row, 0) = x.at(0, row * {n} + c);\n", "x.at(row, c)"),
]


@settings(max_examples=60, deadline=None)
@given(definition=st.sampled_from(DEFINITIONS), value=st.sampled_from(VALUES), use=st.sampled_from(USES),
       name=st.sampled_from(["stride", "W", "kCols", "n_"]), through=st.booleans())
def test_a_width_defined_any_way_and_used_as_a_row_step_is_lg401(definition: str, value: str, use: tuple[str, str],
                                                                 name: str, through: bool) -> None:
    """Whatever declares the name and however its value is computed, a row step of 96 is refused with the
    rows' real distance; through a second name (`const int s2 = stride;`) as well."""
    spelled = value.format(v=96, h=48)
    body = definition.format(n=name, v=spelled)
    used = name
    if through:
        body += f"    const int {name}2 = {name};\n"
        used = f"{name}2"
    body += use[0].format(n=used)
    diags = lint_body(body)
    assert found(diags) == [("LG401", body.count("\n"))], (body, diags)
    assert diags[0].message.startswith(f"`{used}` (96) in index arithmetic of kernel `spelled` equals the width of `x`")
    assert diags[0].hint == f"rows of `x` are 136 elements apart: index with `{use[1]}`"


@settings(max_examples=60, deadline=None)
@given(definition=st.sampled_from(DEFINITIONS), value=st.sampled_from(VALUES),
       name=st.sampled_from(["stride", "W", "kCols"]),
       use=st.sampled_from([
           "    for (int c = 0; c < {n}; ++c) dst.at(row, c % 40) = x.at(row, c);\n",
           "    dst.at(row, 0) = x.at(row, {n} - 1 - d);\n",
           "    dst.at(row, 0) = x.row(row)[{n} - 1];\n",
           "    float acc[{n}];\n    acc[{n} - 1] = x.at(row, 0);\n",
       ]))
def test_a_width_defined_any_way_and_used_as_a_bound_passes(definition: str, value: str, name: str, use: str) -> None:
    body = definition.format(n=name, v=value.format(v=96, h=48)) + use.format(n=name)
    assert lint_body(body) == [], body


@settings(max_examples=40, deadline=None)
@given(factor=st.sampled_from(["r * 96", "r * 24 * 4", "(r << 5) * 3", "r96"]),
       x=st.sampled_from([Wide.feat, Packed.view]))
def test_a_row_step_is_read_against_the_view_it_steps(factor: str, x: Any) -> None:
    """The same text is the bug where rows are 136 apart, and the layout where they are 96 apart (packed):
    a literal stride is reported for both (the lint asks for the accessor), the view's real distance named."""
    body = ("    const long long r96 = r * 96;\n" if factor == "r96" else "") + \
        f"    dst.at(row, 0) = x.row(0)[{factor} + c];\n"
    (diag,) = lint_body(body, x=x)
    assert diag.hint is not None and diag.hint.startswith(f"rows of `x` are {x.row_stride} elements apart")


# -- issue 29 item 12: columns counted down from a bound are no strides ------------------------------

Twelve = Layout("Twelve", [B, K], f32, [Field("head", 12), Field("feat", 12)])  # feat: 12 wide, at offset 12


def test_a_column_counted_down_from_the_width_is_not_a_stride_or_an_offset() -> None:
    """`feat.at(row, 12 - 1 - d)` was refused as the width and the offset of `feat`, with a hint to write
    `feat.at(r, c)`, which it does: a column counted down from 12 stays in the row."""
    body = ("    dst.at(row, 0) = x.at(row, 12 - 1 - d) + x.row(row)[12 - 1 - d] + x.at(row, (12 - 1) - d)"
            " + x(0, row, 12 - d - 1);\n")
    assert lint_body(body, x=Twelve.feat) == []


@pytest.mark.parametrize(("column", "said", "hint"), [
    ("c + 12", "equals the width and the offset of `x` (Twelve.feat)",
     "rows of `x` are 24 elements apart: index with `x.at(row, c)`"),
    ("12 + c", "equals the width and the offset of `x` (Twelve.feat)",
     "rows of `x` are 24 elements apart: index with `x.at(row, c)`"),
    ("row * 24 + c", "equals the row stride of `x` (Twelve.feat)",
     "rows of `x` are 24 elements apart: index with `x.at(row, c)`"),
])
def test_a_column_stepped_past_the_field_is_still_lg401_with_the_call_to_write(column: str, said: str,
                                                                              hint: str) -> None:
    (diag,) = lint_body(f"    dst.at(row, 0) = x.at({'0' if 'row' in column else 'row'}, {column});\n",
                        x=Twelve.feat)
    assert diag.message.endswith(said)
    assert diag.hint is not None and diag.hint.endswith(hint)


# -- LG409: a loop's counter as a column, running past the width ----------------------------------------

LOOPS = {
    "a lane loop to the row stride": ("    float acc = 0.0f;\n"
                                      "    for (int c = lane; c < x.row_stride; c += 32) acc += x.at(row, c);\n",
                                      "`c` runs to `x.row_stride` (136) in kernel `spelled` and indexes `x` "
                                      "(Wide.feat) in `x.at(row, c)`, which has 96 columns (columns 0..96 of Wide "
                                      "[B, K, 136]): it reads 40 columns past the end of each of its rows"),
    "a row object to a literal": ("    const auto in = x.row(row);\n    float acc = 0.0f;\n"
                                  "    for (int c = 0; c <= 96; ++c) {\n        acc += in[c];\n    }\n",
                                  "`c` runs to `96` (97) in kernel `spelled` and indexes `x` (Wide.feat) in `in[c]`, "
                                  "which has 96 columns (columns 0..96 of Wide [B, K, 136]): it reads 1 column past "
                                  "the end of each of its rows"),
    "vectors to a constant": ("    constexpr int V = 96 / 2;\n"
                              "    for (int j = 0; j < V; j++) dst.at(row, 0) += x.vec<16>(row, j).x;\n",
                              "`j` runs to `V` (48) in kernel `spelled` and indexes `x` (Wide.feat) in "
                              "`x.vec<16>(row, j)`, which has 24 16-byte vectors (columns 0..96 of Wide [B, K, 136]): "
                              "it reads 24 16-byte vectors past the end of each of its rows"),
}


@pytest.mark.parametrize("name", list(LOOPS))
def test_a_loop_counter_that_indexes_columns_past_the_width_is_lg409(name: str) -> None:
    body, message = LOOPS[name]
    diags = lint_body(body, vector=16)
    line = next(n for n, code in enumerate(body.split("\n"), 1) if "x.at(row, c)" in code or "in[c]" in code
                or "vec<16>" in code)
    assert found(diags) == [("LG409", line)], diags
    assert diags[0].message == message
    assert diags[0].severity.value == "error"


def test_another_views_width_as_the_bound_is_lg409_for_the_narrower_view() -> None:
    body = "    for (int c = 0; c < dst.width; ++c) dst.at(row, c) = x.at(row, c);\n"
    (diag,) = lint_body(body, x=Twelve.feat)
    assert diag.code == "LG409" and diag.message.startswith("`c` runs to `dst.width` (40) in kernel `spelled` and "
                                                            "indexes `x` (Twelve.feat) in `x.at(row, c)`")
    assert diag.hint == "bound the loop by the width of `x`: `c < x.width`"


@settings(max_examples=60, deadline=None)
@given(end=st.integers(1, 200), spelled=st.sampled_from(["{v}", "W", "x.width + ({v} - 96)", "(2 * {v}) / 2"]),
       op=st.sampled_from(["<", "<="]), step=st.sampled_from(["++c", "c++", "c += 32"]),
       use=st.sampled_from(["x.at(row, c)", "x.row(row)[c]", "x(0, row, c)"]))
def test_a_loop_is_lg409_exactly_when_its_counter_passes_the_width(end: int, spelled: str, op: str, step: str,
                                                                   use: str) -> None:
    bound = spelled.format(v=end)
    body = (f"    constexpr int W = {end};\n" if bound == "W" else "") + \
        f"    for (int c = 0; c {op} {bound}; {step}) dst.at(row, 0) += {use};\n"
    diags = lint_body(body)
    past = end + (op == "<=") > 96
    assert [d.code for d in diags] == (["LG409"] if past else []), (body, diags)


@pytest.mark.parametrize("body", [
    "    const float* p = x.raw_pointer();\n    float acc = 0.0f;\n"
    "    for (int i = row * 96; i < row * 96 + 96; ++i) acc += p[i];\n",
    "    const float* p = x.raw_pointer();\n    float acc = 0.0f;\n"
    "    for (long long i = 0; i < (long long)B * K * 96; ++i) acc += p[i];\n",
    "    const float* p = x.raw_pointer();\n    float acc = 0.0f;\n    for (long long i = 0; i < B * K * F; i++)\n"
    "        acc += p[i];\n",
])
def test_a_flattened_loop_over_a_pointer_from_a_view_is_lg401(body: str) -> None:
    """The counter is the whole index: the values it runs between are indices into the view."""
    diags = lint_body(body)
    assert found(diags) == [("LG401", body.count("\n"))], diags
    assert diags[0].message.endswith("equals the width of `x` (Wide.feat)")


def test_a_loop_over_a_row_or_a_count_passes() -> None:
    body = ("    const float* p = &x.at(row, 0);\n    const float* q = x.raw_pointer();\n    float acc = 0.0f;\n"
            "    for (int c = 0; c < 96; ++c) acc += p[c] + x.row(row)[c];\n"
            "    for (int i = 0; i < 96; ++i) acc += q[i];\n")
    assert lint_body(body) == []


# -- LG410: one view's rows walked with another view's row stride --------------------------------------


@pytest.mark.parametrize("body", [
    "    dst.at(row, 0) = x.raw_pointer()[row * dst.row_stride + c];\n",
    "    const float* p = x.raw_pointer() + row * dst.width;\n",
    "    dst.at(row, 0) = x.at(0, row * dst.row_stride + c);\n",
])
def test_a_view_stepped_by_another_views_row_stride_is_lg410(body: str) -> None:
    diags = lint_body(body)
    assert found(diags) == [("LG410", 1)], diags
    assert diags[0].message.endswith("steps the rows of `x` (Wide.feat), which are 136 elements apart: it is the "
                                     f"{'row stride' if 'row_stride' in body else 'width'} of `dst` (Narrow)")
    assert diags[0].hint == "index `x` through its own accessors (`x.at(r, c)`, `x.row(r)[c]`)"


def test_a_view_stepped_by_its_own_facts_through_another_name_is_not_lg410() -> None:
    body = "    dst.at(row, 0) = x.at(row, c) + dst.raw_pointer()[0] + x.at(b * dst.width + k, c);\n"
    assert lint_body(body) == []


# -- LG411: a barrier only some threads of the block reach --------------------------------------------


def lint_tiles(body: str) -> list[Diagnostic]:
    from layoutgen import Grid

    with tempfile.TemporaryDirectory() as folder:
        template = Path(folder) / "t.cu.j2"
        template.write_text(body)
        k = Kernel("tiled", str(template), [In("x", [B, K, F]), Out("dst", [B, K, C])], grid=Grid.tiles("x", rows=64))
        return lint_template(k.bind(x=Wide.feat, dst=Narrow), template)


@pytest.mark.parametrize(("body", "condition", "returned"), [
    ("    if (threadIdx.x < tile_rows) {\n        dst.at(tile_row + threadIdx.x, 0) = 1.0f;\n"
     "        __syncthreads();\n    }\n", "threadIdx.x < tile_rows", False),
    ("    const int t = threadIdx.x % 32;\n    if (t == 0) dst.at(tile_row, 0) = 0.0f;\n    else {\n"
     "        __syncthreads();\n    }\n", "t == 0", False),
    ("    for (int r = threadIdx.x; r < tile_rows; r += blockDim.x) {\n        dst.at(tile_row + r, 0) = 0.0f;\n"
     "        __syncthreads();\n    }\n", "int r = threadIdx.x; r < tile_rows; r += blockDim.x", False),
    ("    if (threadIdx.x >= tile_rows) return;\n    dst.at(tile_row + threadIdx.x, 0) = 0.0f;\n"
     "    __syncthreads();\n", "threadIdx.x >= tile_rows", True),
])
def test_a_barrier_that_only_some_threads_reach_is_lg411(body: str, condition: str, returned: bool) -> None:
    diags = lint_tiles(body)
    line = next(n for n, code in enumerate(body.split("\n"), 1) if "__syncthreads" in code)
    assert found(diags) == [("LG411", line)], diags
    assert diags[0].message == (
        f"`__syncthreads()` in kernel `tiled` {'after a return under' if returned else 'under'} `{condition}`, which "
        f"depends on the thread: the threads that {'returned' if returned else 'do not take it'} never reach the "
        "barrier, which is undefined behaviour")


@pytest.mark.parametrize("op", ["=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="])
def test_a_value_made_thread_dependent_by_any_assignment_divides_the_barrier(op: str) -> None:
    # whichever assignment makes `t` depend on the thread, a barrier under `t == 0` is reached by some threads
    body = (f"    int t = 1;\n    t {op} threadIdx.x;\n    if (t == 0) dst.at(tile_row, 0) = 0.0f;\n    else {{\n"
            "        __syncthreads();\n    }\n")
    assert found(lint_tiles(body)) == [("LG411", 5)]


def test_barriers_every_thread_reaches_pass() -> None:
    body = ("{% block preamble %}\n__device__ float first(float v, int lane) {\n    if (lane != 0) return 0.0f;\n"
            "    return v;\n}\n{% endblock %}\n"
            "    if (threadIdx.x < tile_rows) dst.at(tile_row + threadIdx.x, 0) = first(1.0f, threadIdx.x % 32);\n"
            "    __syncthreads();\n"
            "    for (int s = 0; s < 4; ++s) {\n        __syncthreads();\n    }\n"
            "    if (tile_rows == tile_capacity) {\n        __syncthreads();\n    }\n")
    assert lint_tiles(body) == []


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet="xpr0145()[]{}<>*+-/&.,;=:?#\"' \n_lgatowdefinsucFWkv", max_size=160))
def test_the_flow_reading_reads_any_text_without_failing(text: str) -> None:
    """Definitions, helpers, macros, loops and branches drawn from the same letters never crash the lint."""
    for body in (text, "#define S 96\nconst int w = x.width;\n" + text, "for (int c = 0; c < w; ++c) {\n" + text):
        for diag in lint_body(body):
            assert diag.code in ("LG401", "LG403", "LG405", "LG409", "LG410", "LG411") and diag.site is not None


def test_definitions_of_definitions_stay_short() -> None:
    """A chain of names each defined from the last twice over would double the text each line: past a length
    the name stays a name, and the lint stays fast."""
    body = "    long long a0 = row * 2;\n" + "".join(f"    long long a{i + 1} = a{i} + a{i};\n" for i in range(40))
    body += "    dst.at(row, 0) = x.raw_pointer()[a40 + c] + x.raw_pointer()[a1 * 96];\n"
    (diag,) = lint_body(body)
    assert diag.message.startswith("literal 96 in index arithmetic of kernel `spelled` equals the width of `x`")


@pytest.mark.parametrize("spelled", sorted(n for n, (bits, _) in INTEGER_TYPES.items() if bits >= 8))
def test_a_cast_to_any_spelling_of_an_integer_steps_in_its_own_bytes(spelled: str) -> None:
    # The unit of a cast pointer comes from the one table of integer spellings: `unsigned long long` steps 8 bytes
    # (read as its first word, `unsigned`, it stepped 4), `uint16_t` 2. The seed bug in that unit is LG401.
    size = INTEGER_TYPES[spelled][0] // 8
    step = 96 * 4 // size
    body = (f"    const {spelled}* p = reinterpret_cast<const {spelled}*>(x.raw_pointer());\n"
            f"    const {spelled} v = p[row * {step} + i];\n")
    diags = lint_body(body)
    assert found(diags) == [("LG401", 2)], diags
    assert diags[0].message == (f"literal {step} in index arithmetic of kernel `spelled` equals the width of `x` "
                                f"(Wide.feat)" + ("" if size == 4 else f" in {size}-byte steps"))
