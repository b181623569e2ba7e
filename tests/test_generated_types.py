"""Numbers in generated code fit their C++ types, and a view's widest access is what its launcher checks.

- A static symbol past 2^31 is a ``constexpr long long``; rows of 2^31 columns
  or more (the views hold widths, strides and offsets as ``int``) and layouts
  of 2^63 elements are refused when bound (LG114); a row counted in a symbol
  indexes its columns with ``long long``; named-axis row maps multiply in 64
  bits.
- ``VectorBytes`` of a view is the alignment its launcher checks: the
  parameter's ``vector=``, the kernel's with ``Grid.vectors``, else one
  element. A body's ``x.vec<16>()`` without ``vector=16`` does not compile.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from layoutgen import Axis, Field, In, Kernel, Layout, Out, Pad, Spec, dims, f32, field_copies
from layoutgen.codegen.library import library_namespace
from layoutgen.codegen.render import render_spec
from layoutgen.codegen.pymodule import module_model
from layoutgen.declare.kernels import KernelError
from layoutgen.runtime.nvrtc import CompileError, CompileRequest, compile_cubin
from tests.helpers.rendering import nvrtc, render, write_template


def test_a_static_symbol_past_2_to_the_31_is_a_long_long_constant(tmp_path: Path) -> None:
    (n, m) = dims("N M")
    wide = Layout("Wide", [n, 2**32 + 5], f32, width=1)
    k = Kernel("k", write_template(tmp_path, "    x.at(row, 0) = static_cast<float>(M % 7);\n"),
               [Out("x", [n, m, 1])], template_root=tmp_path)
    rendered = render(Spec("big", kernels=[k.bind(x=wide)]), tmp_path)
    kernel = rendered.files["big/k.cu"]
    assert "    [[maybe_unused]] constexpr long long M = 4294967301LL;\n" in kernel
    assert "//   M = 4294967301\n" in kernel
    nvrtc(rendered, "big")


def test_rows_of_2_to_the_31_columns_are_refused_where_they_are_bound(site_of: Any) -> None:
    (n,) = dims("N")
    huge = Layout("Huge", [n], f32, width=2**31)
    k = Kernel("k", "k.cu.j2", [Out("x", [n, 2**31])])
    with pytest.raises(KernelError) as info:
        k.bind(x=huge)  # site: huge rows
    assert info.value.code == "LG114"
    assert info.value.site == site_of("huge rows")
    assert info.value.diagnostic.message == (
        "`k.x` is bound to `Huge` [N, 2147483648] f32, whose rows are 2147483648 columns wide; a generated view "
        "holds a row's width, stride and offset as `int`, so they must be less than 2^31")
    assert info.value.hint == "split each row across a further leading dim (a layout [N, M, W] for [N, M*W])"
    many = Layout("Many", [2**40, 2**30], f32, width=64)
    with pytest.raises(KernelError) as info:
        Kernel("k", "k.cu.j2", [Out("x", [2**40, 2**30, 64])]).bind(x=many)
    assert info.value.code == "LG114"
    assert info.value.diagnostic.message == (
        "`k.x` is bound to `Many` [1099511627776, 1073741824, 64] f32, whose static dims hold 75557863725914323419136 "
        "elements; a generated view indexes with `long long`, so they must be less than 2^63")


def test_a_row_counted_in_a_symbol_indexes_its_columns_in_64_bits(tmp_path: Path) -> None:
    """[32, D] per row: a row holds 32 * D elements, which can pass 2^31."""
    (b, d) = dims("B D")
    heads = Layout("Heads", [b], f32, [Field("q", shape=[32, d])])
    k = Kernel("k", write_template(tmp_path, "    x(row, 31, D - 1) = 1.0f;\n    x.at(row, 32 * D - 1) = 2.0f;\n"),
               [Out("x", [b, 32, d])], template_root=tmp_path)
    rendered = render(Spec("heads", kernels=[k.bind(x=heads.q)]), tmp_path)
    header = rendered.files["heads/heads.cuh"]
    assert ("    __device__ __forceinline__ T& operator()(long long i0, long long j0, long long c) const {\n"
            "        return this->at(i0, j0 * lg_dim_D + c);\n") in header
    # The library's accessors of that view (lg::Field and lg::Row, lg/field.cuh) take the column as `long long`
    # too: asked of the compiler, as the view's base is the library's, not text of the header.
    view = f"lg::views::heads::Heads_q_view<float, 4, lg::{library_namespace()}::Packing::strided>"
    probe = (f'#include "heads.cuh"\n'
             "template <typename A, typename B> struct same { static constexpr bool value = false; };\n"
             "template <typename A> struct same<A, A> { static constexpr bool value = true; };\n"
             "template <typename C, typename R, typename I, typename J> __host__ __device__ constexpr bool wide(R (C::*)(I, J) const) "
             "{ return same<J, long long>::value; }\n"
             "template <typename C, typename R, typename J> __host__ __device__ constexpr bool wide(R (C::*)(J) const) "
             "{ return same<J, long long>::value; }\n"
             f"using V = {view};\n"
             'static_assert(same<V::column_type, long long>::value, "the column type");\n'
             'static_assert(wide(&V::at), "at(r, c)");\n'
             'static_assert(wide(&V::Row::operator[]), "row(r)[c]");\n')
    assert compile_cubin(CompileRequest(source=probe, name="probe.cu", headers=(("heads.cuh", header),))).cubin
    with pytest.raises(CompileError) as info:  # the probe can fail: a 32-bit column is refused
        compile_cubin(CompileRequest(source=probe.replace("same<J, long long>", "same<J, int>"), name="probe.cu",
                                     headers=(("heads.cuh", header),)))
    assert [d.message.splitlines()[0] for d in info.value.diagnostics] == [
        'static assertion failed with "at(r, c)"', 'static assertion failed with "row(r)[c]"']
    nvrtc(rendered, "heads")


def test_a_named_axis_of_2_to_the_32_rows_maps_its_rows_in_64_bits(tmp_path: Path) -> None:
    (n,) = dims("N")
    obs = Layout("Obs", [n, Axis([Field("early", 5), Pad(3)]), 65536, 65536], f32, width=1)
    k = Kernel("k", write_template(tmp_path, "    x.at(row, 0) = 1.0f;\n"), [Out("x", [n, 5, 65536, 65536, 1])],
               template_root=tmp_path)
    rendered = render(Spec("obs", kernels=[k.bind(x=obs.early)]), tmp_path)
    assert f"lg::{library_namespace()}::AxisRows<0, 5, 8, 4294967296>" in rendered.files["obs/obs.cuh"]
    nvrtc(rendered, "obs")


# -- vec<N> follows what the launcher checks ----------------------------------------------------------------


VEC_BODY = "    x.vec<16>(row, 0) = y.vec<16>(row, 0);\n"


def test_a_vec_wider_than_the_launcher_checks_does_not_compile(tmp_path: Path) -> None:
    (n,) = dims("N")
    rows = Layout("Rows", [n], f32, width=8)
    k = Kernel("k", write_template(tmp_path, VEC_BODY), [Out("x", [n, 8]), In("y", [n, 8])], template_root=tmp_path)
    rendered = render(Spec("vec", kernels=[k.bind(x=rows, y=rows)]), tmp_path)
    with pytest.raises(CompileError) as info:
        compile_cubin(CompileRequest(source=rendered.files["vec/k.cu"], name="generated/vec/k.cu",
                                     headers=(("vec.cuh", rendered.files["vec/vec.cuh"]),)))
    assert info.value.diagnostics[0].message.startswith(
        'static assertion failed with "vec<N>: the launcher checks this parameter\'s alignment for narrower accesses '
        'only; declare vector=N on the parameter (see the instantiation below)"')
    assert "at line 1 of k.cu.j2" in info.value.log  # NVRTC names the template's line that asked for it
    assert "lg::views::vec::Rows_view<float, 4, lg::Packing::strided> x{" in rendered.files["vec/k.cu"]


def test_with_vector_16_the_view_and_the_launcher_agree_on_16_bytes(tmp_path: Path) -> None:
    (n,) = dims("N")
    rows = Layout("Rows", [n], f32, width=8)
    k = Kernel("k", write_template(tmp_path, VEC_BODY), [Out("x", [n, 8], vector=16), In("y", [n, 8], vector=16)],
               template_root=tmp_path)
    spec = Spec("vec", kernels=[k.bind(x=rows, y=rows)])
    rendered = render(spec, tmp_path)
    assert "lg::views::vec::Rows_view<float, 16, lg::Packing::strided> x{" in rendered.files["vec/k.cu"]
    assert "_lg_ParamSpec('x', 'out', Rows.spec, 'Rows', 16, cols=(0, 8))" in rendered.files["vec/__init__.py"]
    nvrtc(rendered, "vec")


def test_grid_vectors_kernels_check_and_use_the_kernels_width(tmp_path: Path) -> None:
    (b, k) = dims("B K")
    window = Layout("Window", [b, k], f32, [Field("snap", 40), Field("context", 16)])
    gather, scatter = field_copies(window.context)
    rendered = render_spec(Spec("copies", kernels=[gather, scatter]), tmp_path, "spec.py")
    assert "lg::views::copies::Window_context_view<const float, 16, lg::Packing::strided> src{" in rendered.files["copies/gather_Window_context.cu"]
    params = module_model(Spec("copies", kernels=[gather, scatter]), {id(lay): "" for lay in (window, gather.view("dst").layout)})
    assert [p.align for kernel in params["kernels"] for p in kernel.params] == [16, 16, 16, 16]  # type: ignore[attr-defined]
    nvrtc(rendered, "copies")
