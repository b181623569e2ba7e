"""The lint of existing kernels' raw pointer arithmetic (issue 31 item 3, static part): each pointer parameter
is the base of its bound layout's array, each carried integer the quantity it is declared to carry.

The seed bug's three reads of `x` at stride 40 are refused at their lines with both strides; the fixed kernels
pass; spellings through macros, locals, offsets in their own statements, helpers and vector casts are read
through; a stride argument the kernel ignores for a literal is refused; and a property test draws strides,
widths and steps: exactly the steps that disagree with the layout are refused.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen import ExistingKernel, Field, In, Layout, Offset, Out, Pitch, Rows, RowStride, dims, f32
from layoutgen.checks.raw_kernels import lint_existing_kernel
from layoutgen.cli import main
from layoutgen.schema.diagnostics import Diagnostic

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "existing_kernels"
B, K, F = dims("B K F")
Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)])
Features = Layout("Features", [B, K], f32, width=40)

SEED_BUG = "(Window [B, K, 56], snap = columns 0..40)"


def lint(cu: str, args: list[object] | None = None, **bind: object) -> list[Diagnostic]:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "k.cu").write_text(cu, encoding="utf-8")
        kernel = ExistingKernel("k", "k.cu", args or [In("x", [B, K, F]), Out("y", [B, K, F]), Rows("x")],
                                source_root=folder)
        return lint_existing_kernel(kernel.bind(**(bind or {"x": Window.snap, "y": Features})))


def said(diags: list[Diagnostic]) -> list[tuple[str, int, str]]:
    return [(d.code, d.site.line if d.site else 0, d.message) for d in diags]


def test_the_seed_bug_is_refused_at_its_three_reads_with_both_strides(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", str(EXAMPLE / "seed_bug.py")]) == 1
    out = capsys.readouterr()
    lines = [line for line in (out.out + out.err).splitlines() if "error[" in line]
    cu = "examples/existing_kernels/vsn_kernels.cu"
    assert lines == [
        f"{cu}:36: error[LG401]: `x` is indexed at row stride 40 (`VSN_FEATURE_DIM`) in kernel `vsn_forward`, but "
        f"its rows are 56 elements apart {SEED_BUG}",
        f"{cu}:62: error[LG401]: `x` is indexed at row stride 40 (`VSN_FEATURE_DIM`) in kernel `vsn_forward`, but "
        f"its rows are 56 elements apart {SEED_BUG}",
        f"{cu}:84: error[LG401]: `x` is indexed at row stride 40 (`VSN_FEATURE_DIM`) in kernel `vsn_backward`, but "
        f"its rows are 56 elements apart {SEED_BUG}",
    ]
    assert ('hint: take the row stride as an `int` parameter declared RowStride("x"), which the launcher fills '
            "with 56, and step the rows of `x` by it") in out.out + out.err


def test_the_fixed_kernels_pass_the_lint() -> None:
    assert main(["check", "--quiet", str(EXAMPLE / "spec.py")]) == 0


HEAD = 'extern "C" __global__ void k(const float* x, float* y, int n) {\n'


@pytest.mark.parametrize(("body", "line", "spelled"), [
    ("    y[n * 40 + 1] = x[n * 40 + 1];\n", 2, "literal `40`"),
    ("    const float* xr = x + n * 40;\n    y[n * 40] = xr[3];\n", 2, "literal `40`"),
    ("    const int stride = 40;\n    y[n * 40] = x[n * stride];\n", 3, "`stride`"),
    ("    constexpr int F = 40;\n    y[n * 40] = x[F * n];\n", 3, "`F`"),
    ("    const long long at = n * 40;\n    y[at] = x[at + 2];\n", 3, "literal `40`"),
    ("    float* p = y + n * 40; const float* q = x + (n << 3) * 5;\n    p[0] = q[0];\n", 2, "`(n << 3) * 5`"),
    ("    y[n * 40] = reinterpret_cast<const float4*>(x)[n * 10].x;\n", 2, "literal `10`, 10 steps of 16 bytes"),
], ids=["literal", "pointer", "const local", "constexpr", "offset variable", "shift", "float4 cast"])
def test_a_row_step_of_the_field_width_is_refused_in_every_spelling(body: str, line: int, spelled: str) -> None:
    assert said(lint(HEAD + body + "}\n")) == [
        ("LG401", line, f"`x` is indexed at row stride 40 ({spelled}) in kernel `k`, but its rows are 56 elements "
                        f"apart {SEED_BUG}")]


def test_a_macro_and_a_helper_are_read_at_the_kernels_line() -> None:
    cu = ("#define ROW(p, r) ((p) + (r) * 40)\n"
          "__device__ float first(const float* p, long long r, int w) { return p[r * w]; }\n"
          + HEAD + "    y[n * 40] = ROW(x, n)[0] + first(x, n, 40);\n}\n")
    assert said(lint(cu)) == [
        ("LG401", 4, f"`x` is indexed at row stride 40 (literal `40`) in kernel `k`, but its rows are 56 elements "
                     f"apart {SEED_BUG}, in helper `ROW` (line 1) as this line calls it"),
        ("LG401", 4, f"`x` is indexed at row stride 40 (literal `40`) in kernel `k`, but its rows are 56 elements "
                     f"apart {SEED_BUG}, in helper `first` (line 2) as this line calls it"),
    ]


@pytest.mark.parametrize("body", [
    "    y[n * 40 + 3] = x[n * 56 + 3];\n",  # the layout's own row stride
    "    const float* xr = x + n * 56; y[n * 40] = xr[2 * 3 + n % 7];\n",  # columns within the row
    "    y[n * 40] = x[n * 56 + 2 * (n % 20)];\n",  # a step of 2 columns: pairs, within the field
    "    y[n * 40] = x[(n / 61 * 61 + n % 61) * 56];\n",  # rows through the leading dims
    "    __shared__ float s[40 * 40];\n    s[n * 40] = 1.0f; y[n * 40] = s[n * 40 + 1];\n",  # the kernel's own memory
], ids=["own stride", "columns", "pairs", "leading dims", "shared"])
def test_right_steps_and_the_kernels_own_memory_pass(body: str) -> None:
    assert lint(HEAD + body + "}\n") == []


WINDOW = ('extern "C" __global__ void k(const float* c, float* w, int n, int w_stride, int off) {{\n'
          "    float* dst = w + n * {step} + {offset};\n    dst[0] = c[n * 16];\n}}\n")


def broadcast(step: str, offset: str = "off") -> list[Diagnostic]:
    Context = Layout("Context", [B], f32, width=16)
    args = [In("c", [B, F]), Out("w", [B, K, F]), Rows("w"), RowStride("w"), Offset("w")]
    return lint(WINDOW.format(step=step, offset=offset), args, c=Context, w=Window.context)


def test_the_broadcast_writer_at_its_stride_and_offset_passes() -> None:
    assert broadcast("w_stride") == [] and broadcast("w_stride", "40") == []


def test_a_stride_argument_ignored_for_a_literal_is_refused() -> None:
    assert said(broadcast("56")) == [(
        "LG401", 2, "`w` is indexed at row stride 56 (literal `56`) in kernel `k`, which takes that stride as "
        '`int w_stride` (RowStride("w"), k.cu:1) and never reads it')]


def test_another_pointers_stride_is_named_as_such() -> None:
    cu = ('extern "C" __global__ void k(const float* x, float* y, int n, int x_stride) {\n'
          "    y[n * x_stride] = x[n * x_stride];\n}\n")
    args = [In("x", [B, K, F]), Out("y", [B, K, F]), Rows("x"), RowStride("x")]
    assert said(lint(cu, args)) == [(
        "LG410", 2, '`x_stride` (56) in index arithmetic of kernel `k` steps the rows of `y` (Features), which are '
        '40 elements apart: it is `RowStride("x")`, the row stride of `x` (Window.snap)')]


def test_a_pitch_in_bytes_steps_only_a_byte_pointer() -> None:
    cu = ('extern "C" __global__ void k(const float* x, float* y, int n, int pitch) {\n'
          "    const float* a = reinterpret_cast<const float*>(reinterpret_cast<const char*>(x) + n * pitch);\n"
          "    y[n * 40] = a[0] + x[n * pitch];\n}\n")
    args = [In("x", [B, K, F]), Out("y", [B, K, F]), Rows("x"), Pitch("x")]
    assert said(lint(cu, args)) == [(
        "LG401", 3, "`x` is indexed at row stride 224 (`pitch`) in kernel `k`, but `pitch` is a pitch in bytes (224) "
        f"and `x` steps 4-byte elements: its rows are 56 elements apart {SEED_BUG}")]


def test_other_kernels_of_the_file_are_not_read_as_this_ones_body() -> None:
    cu = ('extern "C" __global__ void other(const float* x, float* y, int n) { y[n] = x[n * 40]; }\n'
          + HEAD + "    y[n * 40] = x[n * 56];\n}\n")
    assert lint(cu) == []


@settings(max_examples=80, deadline=None)
@given(width=st.integers(2, 64), pad=st.integers(0, 32), step=st.integers(0, 130),
       spelling=st.sampled_from(["literal", "define", "const", "pointer", "offset", "argument"]),
       takes_stride=st.booleans())
def test_exactly_the_row_steps_that_disagree_with_the_layout_are_refused(width: int, pad: int, step: int,
                                                                        spelling: str, takes_stride: bool) -> None:
    """A field of `width` columns in rows `width + pad` apart, stepped by `step` in one of six spellings: refused
    exactly where the step is at least the field's width (a step between rows, not within one) and not a
    multiple of the row stride; where the kernel takes the row stride as an argument (`takes_stride`) and
    steps by a constant instead, every step between rows is refused, the right ones as an ignored argument;
    the argument itself is never refused."""
    stride = width + pad
    Lay = Layout("Lay", [B, K], f32, [Field("a", width), *([Field("pad", pad)] if pad else [])])
    bodies = {
        "literal": f"    y[n] = x[n * {step} + 1];\n",
        "define": f"#define STEP {step}\n    y[n] = x[n * STEP + 1];\n",
        "const": f"    const int step = {step};\n    y[n] = x[step * n];\n",
        "pointer": f"    const float* r = x + n * {step};\n    y[n] = r[0];\n",
        "offset": f"    long long at = n * {step};\n    y[n] = x[at + 1];\n",
        "argument": "    y[n] = x[n * s + 1];\n",
    }
    takes_stride = takes_stride or spelling == "argument"
    cu = ('extern "C" __global__ void k(const float* x, float* y, int n' + (", int s" * takes_stride) + ") {\n"
          + bodies[spelling] + "}\n")
    args = [In("x", [B, K, F]), Out("y", [B, K]), Rows("x"), *([RowStride("x")] * takes_stride)]
    Y = Layout("Y", [B, K], f32, width=1)
    diags = lint(cu, args, x=Lay.a, y=Y)
    between_rows = spelling != "argument" and step >= width
    wrong = between_rows and step % stride != 0
    ignored = between_rows and not wrong and takes_stride
    assert [d.code for d in diags] == ["LG401"] * (wrong or ignored)
    if wrong:
        assert f"at row stride {step} " in diags[0].message and f"rows are {stride} elements apart" in diags[0].message
    if ignored:
        assert diags[0].message.endswith('which takes that stride as `int s` (RowStride("x"), k.cu:1) and never '
                                         "reads it")
