"""Existing kernels declared as they are: the declaration, its comparison with the `__global__`, the symbol,
the carried values against numpy, and `layoutgen import`."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen import (Dim, ExistingKernel, Field, Grid, In, KernelError, Layout, Offset, Out, Pitch, Rows,
                       RowStride, Scalar, dims, f32)
from layoutgen.checks.cuda_signatures import read_kernels
from layoutgen.cli import main
from layoutgen.codegen.existing_kernel import existing_kernel, mangled_name
from layoutgen.declare.existing_kernels import carried_values

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "existing_kernels"
B, K, F = dims("B K F")
Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)])


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "k.cu").write_text(text, encoding="utf-8")
    return tmp_path


def problems(tmp_path: Path, cu: str, args: list[object], **bind: object) -> list[str]:
    write(tmp_path, cu)
    kernel = ExistingKernel("k", "k.cu", args, source_root=tmp_path)
    binding = kernel.bind(**(bind or {"x": Window.snap}))
    made = existing_kernel(binding, (tmp_path / "k.cu").read_text(), "k.cu", "demo.cuh")
    return [f"{d.code}: {d.message}" for d in made] if isinstance(made, list) else []


GOOD = 'extern "C" __global__ void k(const float* x, int n_rows, int x_stride) {}\n'


def test_a_declaration_that_matches_its_global_generates_the_file_and_the_raw_arguments(tmp_path: Path) -> None:
    write(tmp_path, GOOD)
    binding = ExistingKernel("k", "k.cu", [In("x", [B, K, F]), Rows("x"), RowStride("x")],
                             source_root=tmp_path).bind(x=Window.snap)
    made = existing_kernel(binding, GOOD, "k.cu", "demo.cuh")
    assert not isinstance(made, list)
    text, symbol, raw = made
    assert symbol == "k"
    assert raw == (("pointer", 0), ("value", 0, 1, ("B", "K"), 32, True, '`int n_rows` (Rows("x"))'),
                   ("value", 0, 56, (), 32, True, '`int x_stride` (RowStride("x"))'))
    assert text.endswith('#include "demo.cuh"\n#line 1 "k.cu"\n' + GOOD)  # the file, unchanged


@pytest.mark.parametrize(("cu", "args", "expected"), [
    ('extern "C" __global__ void other(const float* x) {}', [In("x", [B, K, F])],
     "LG232: `k.cu` must define the `__global__` function `k` of kernel `k`, got `other`"),
    (GOOD, [In("x", [B, K, F]), Rows("x")],
     "LG233: `k` (k.cu:1) takes 3 parameters, so kernel `k` must declare as many arguments, got 2"),
    (GOOD, [In("x", [B, K, F]), In("y", [B, K, F]), Rows("x")],
     "LG234: parameter 2 `int n_rows` (k.cu:1) must be a pointer to carry array `y`, got `int`"),
    (GOOD, [In("x", [B, K, F]), Rows("x"), Scalar("s", f32)],
     "LG238: parameter 3 `int x_stride` (k.cu:1) must be `float` to carry scalar `s` (scalar f32), got `int`"),
    ('extern "C" __global__ void k(float* x, int n) {}', [In("x", [B, K, F]), Rows("x")],
     "LG235: parameter 1 `float* x` (k.cu:1) must point to `const` elements to carry In `x`, got `float*`"),
    ('extern "C" __global__ void k(const float* x, int n) {}', [Out("x", [B, K, F]), Rows("x")],
     "LG235: parameter 1 `const float* x` (k.cu:1) points to `const` elements, so `x` must be In, got Out"),
    ('extern "C" __global__ void k(const double* x, int n) {}', [In("x", [B, K, F]), Rows("x")],
     "LG237: parameter 1 `const double* x` (k.cu:1) must point to float elements: `x` is bound to "
     "`Window.snap` of f32, got `double`"),
    ('extern "C" __global__ void k(const float* x, short n) {}', [In("x", [B, K, F]), Rows("x")],
     "LG236: parameter 2 `short n` (k.cu:1) must hold `Rows(\"x\")` = B*K, set at launch, but `short` holds at "
     "most 32767"),
    ('extern "C" __global__ void k(const float* x, signed char s) {}', [In("x", [B, K, F]), Pitch("x")],
     "LG236: parameter 2 `signed char s` (k.cu:1) must hold 224 to carry `Pitch(\"x\")`, but `signed char` holds "
     "at most 127"),
    ('extern "C" __global__ void k(const float* x, float s) {}', [In("x", [B, K, F]), Offset("x")],
     "LG234: parameter 2 `float s` (k.cu:1) must be an integer to carry `Offset(\"x\")` (0), got `float`"),
    ('template <int N> __global__ void k(const float* x, int n) {}', [In("x", [B, K, F]), Rows("x")],
     "LG239: `k` (k.cu:1) is a template, so kernel `k` cannot find its symbol in the cubin; it must be "
     "`extern \"C\"` or take builtin types"),
])
def test_each_disagreement_with_the_global_is_named_with_both_sides(tmp_path: Path, cu: str, args: list[object],
                                                                    expected: str) -> None:
    bind = {"x": Window.snap} if len([a for a in args if isinstance(a, type(In("q", [B]))) ]) == 1 else \
        {"x": Window.snap, "y": Window.snap}
    assert problems(tmp_path, cu, args, **bind) == [expected]


def test_declarations_are_validated_where_they_are_written() -> None:
    with pytest.raises(KernelError) as info:
        ExistingKernel("k", "k.cu", [In("x", [B, K, F]), RowStride("z")])
    assert str(info.value.diagnostic.message) == "`RowStride(\"z\")` of `k` must name an array parameter (x), got `z`"
    assert info.value.diagnostic.code == "LG231"
    with pytest.raises(KernelError) as info:
        ExistingKernel("k", "k.cu", [In("x", [B, F]), Dim("K")])
    assert info.value.diagnostic.message == "`Dim(\"K\")` of `k` must be a dim of its shapes (B, F), got `K`"
    with pytest.raises(KernelError) as info:
        ExistingKernel("k", "k.cu", [In("x", [B, F]), 40])
    assert info.value.diagnostic.message == ("argument 2 of `k` must be In, Out, InOut, Scalar, a Dim, Rows, RowStride, "
                                             "Pitch or Offset, got 40")
    assert info.value.diagnostic.site is not None and info.value.diagnostic.site.path == __file__


# -- the carried values of any layout equal numpy's strides and offsets of the same field ------------------------

@settings(max_examples=60, deadline=None)
@given(widths=st.lists(st.integers(1, 9), min_size=1, max_size=5), pick=st.integers(0, 4), rows=st.integers(2, 4))
def test_carried_values_equal_the_numpy_view_of_the_field(widths: list[int], pick: int, rows: int) -> None:
    fields = [Field(f"f{i}", w) for i, w in enumerate(widths)]
    lay = Layout("L", [B], f32, fields)
    name = f"f{pick % len(widths)}"
    view = getattr(lay, name)
    kernel = ExistingKernel("k", "k.cu", [In("x", [B, Dim.of(view.width)]), Rows("x"), RowStride("x"), Pitch("x"),
                                          Offset("x"), B])
    values = {a.kind: v.evaluate({"B": rows}) for _, a, v in carried_values(kernel.bind(x=view))}
    whole = np.zeros((rows, sum(widths)), np.float32)
    start = sum(widths[: pick % len(widths)])
    field = whole[:, start : start + view.width]
    assert values["row_stride"] == field.strides[0] // 4
    assert values["pitch"] == field.strides[0]
    assert values["offset"] == (field.__array_interface__["data"][0] - whole.__array_interface__["data"][0]) // 4
    assert values["rows"] == field.shape[0] == values["dim"]


# -- the symbol of a kernel of C++ linkage is the one a C++ compiler writes ---------------------------------------

SIGNATURES = [
    "const float* a, const float* __restrict__ b, float* c, int n, const __half* h, const __half* h2, long long q",
    "const float* a, const float* b, float* c, const int n, float* const d, float4* e, const float4* f, float4 g",
    "double* x, unsigned long long n, size_t m, int64_t i, uint32_t u, bool flag, unsigned char* bytes",
    "",
]


@pytest.mark.skipif(shutil.which("g++") is None, reason="no g++ to compare the mangled names with")
@pytest.mark.parametrize("namespace", ["", "ns"])
def test_mangled_names_are_what_gxx_writes(tmp_path: Path, namespace: str) -> None:
    kernels = "\n".join(f"__global__ void k{i}({s}) {{}}" for i, s in enumerate(SIGNATURES))
    body = f"namespace {namespace} {{ {kernels} }}" if namespace else kernels
    src = ("#include <cstddef>\n#include <cstdint>\nusing std::size_t; struct __half {}; struct float4 {};\n"
           "#define __global__\n" + body + "\n")
    (tmp_path / "m.cpp").write_text(src)
    subprocess.run(["g++", "-c", str(tmp_path / "m.cpp"), "-o", str(tmp_path / "m.o")], check=True)
    symbols = set(subprocess.run(["nm", str(tmp_path / "m.o")], capture_output=True, text=True, check=True)
                  .stdout.split())
    found = read_kernels(body)
    assert len(found) == len(SIGNATURES)
    for k in found:
        assert mangled_name(k) in symbols, (k.qualified, mangled_name(k))


# -- reading signatures, and import-kernels ------------------------------------------------------------------------

TRICKY = r'''
#define FEATURES 40
#define KERNEL extern "C" __global__
// __global__ void commented_out(int x);
/* __global__ void also_commented(int) */
template <int N, typename T>
__global__ void __launch_bounds__(256, 2) templated(const T* __restrict__ x, int n = N * 2, float s = 1.0f) {}
KERNEL void by_macro(const float* a, float b[], int n = FEATURES) { }
namespace ns { __global__ void spaced(double* y, long long ld) {} }
__global__ void declared(int a);
__global__ void declared(int a) {}
'''


def test_signatures_are_read_through_comments_macros_templates_and_defaults() -> None:
    found = {k.qualified: k for k in read_kernels(TRICKY)}
    assert list(found) == ["templated", "by_macro", "ns::spaced", "declared"]
    assert found["templated"].template == "int N, typename T" and found["templated"].line == 7
    assert [(p.text, p.default) for p in found["templated"].params] == [
        ("const T* __restrict__ x", None), ("int n", "N * 2"), ("float s", "1.0f")]
    assert found["by_macro"].extern_c and not found["templated"].extern_c
    assert [(p.text, p.pointer, p.const, p.default) for p in found["by_macro"].params] == [
        ("const float* a", True, True, None), ("float* b", True, False, None), ("int n", False, False, "40")]
    assert found["ns::spaced"].namespace == ("ns",) and found["declared"].defined


def test_import_kernels_lists_every_kernel_with_todo_bindings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.cu").write_text(TRICKY)
    assert main(["import", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    for line in ['templated = ExistingKernel("templated", ', 'In("x", [TODO]),  # const T* __restrict__ x',
                 'Dim("TODO"),  # int n: a dim, Rows/RowStride/Pitch/Offset("array"), or Scalar("n", "i32")  '
                 "(default: N * 2)", 'Scalar("s", "f32"),  # float s  (default: 1.0f)',
                 'Out("b", [TODO]),  # float* b', 'RowStride("TODO"),  # long long ld',
                 '], grid=Grid.rows("y", block=128), function="ns::spaced")']:
        assert line in out, line


def test_import_kernels_refuses_files_without_kernels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.cu").write_text("__device__ int f(int x) { return x; }\n")
    assert main(["import", str(tmp_path / "a.cu")]) == 1
    assert capsys.readouterr().err == (f"error[LG541]: `layoutgen import` must find a `__global__` function, got none in "
                                       f"`{tmp_path / 'a.cu'}`\n  hint: a kernel defined by a function-like macro is "
                                       "not read\n")


def test_the_imported_spec_of_the_example_once_filled_in_passes_check(tmp_path: Path) -> None:
    """`layoutgen import` on the fixed example, its TODOs filled in as examples/existing_kernels/spec.py does."""
    shutil.copy(EXAMPLE / "vsn_kernels_fixed.cu", tmp_path / "vsn_kernels_fixed.cu")
    shutil.copy(EXAMPLE / "vsn_buffers.py", tmp_path / "vsn_buffers.py")
    (tmp_path / "pyproject.toml").write_text("")
    assert main(["import", str(tmp_path / "vsn_kernels_fixed.cu"), "-o", str(tmp_path / "spec.py")]) == 0
    text = (tmp_path / "spec.py").read_text()
    fills = [
        ("# B, K = dims(\"B K\")", "import sys; sys.path.insert(0, __import__('os').path.dirname(__file__))\n"
         "from vsn_buffers import B, C, F, K, Bias, Context, Features, Weights, Window"),
        ('In("context", [TODO])', 'In("context", [B, C])'), ('Out("window", [TODO])', 'Out("window", [B, K, C])'),
        ('Rows("TODO"),  # int n_rows\n    Dim("TODO")', 'Rows("window"),  # int n_rows\n    K'),
        ('RowStride("TODO"),  # int window_stride', 'RowStride("window"),'),
        ('Offset("TODO"),  # int context_offset', 'Offset("window"),'),
        ('Grid.rows("context"', 'Grid.rows("window"'),
        ('In("x", [TODO])', 'In("x", [B, K, F])'), ('In("W", [TODO])', 'In("W", [F, F])'),
        ('In("b", [TODO])', 'In("b", [F])'), ('Out("gates", [TODO])', 'Out("gates", [B, K, F])'),
        ('Out("y", [TODO])', 'Out("y", [B, K, F])'), ('In("gates", [TODO])', 'In("gates", [B, K, F])'),
        ('In("grad_y", [TODO])', 'In("grad_y", [B, K, F])'), ('Out("grad_x", [TODO])', 'Out("grad_x", [B, K, F])'),
        ('Out("grad_z", [TODO])', 'Out("grad_z", [B, K, F])'),
        ('Rows("TODO")', 'Rows("x")'), ('RowStride("TODO")', 'RowStride("x")'),
        ("    # context_broadcast.bind(...),  # TODO: each array parameter's view",
         "    context_broadcast.bind(context=Context, window=Window.context),"),
        ("    # vsn_forward.bind(...),  # TODO: each array parameter's view",
         "    vsn_forward.bind(x=Window.snap, W=Weights, b=Bias, gates=Features, y=Features),"),
        ("    # vsn_backward.bind(...),  # TODO: each array parameter's view",
         "    vsn_backward.bind(x=Window.snap, W=Weights, gates=Features, grad_y=Features, grad_x=Features, "
         "grad_z=Features),"),
    ]
    for old, new in fills:
        assert old in text, old
        text = text.replace(old, new)
    assert "[TODO]" not in text and '"TODO"' not in text
    (tmp_path / "spec.py").write_text(text)
    assert main(["generate", "--quiet", str(tmp_path / "spec.py")]) == 0
    assert main(["check", str(tmp_path / "spec.py")]) == 0


def test_the_example_passes_check_and_its_committed_package_is_current() -> None:
    assert main(["check", "--quiet", str(EXAMPLE / "spec.py")]) == 0  # drift included (LG502)


def test_a_grid_is_required_of_each_array_kernel_only() -> None:
    kernel = ExistingKernel("k", "k.cu", [In("x", [B, F]), Rows("x")], grid=Grid.rows("x", block=64))
    assert kernel.grid.block == 64 and kernel.function == "k"
