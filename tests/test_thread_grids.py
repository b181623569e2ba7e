"""The grids of threads (issue 33, item 1): `Grid.rows`, `Grid.elements`, `Grid.vectors`, without a GPU.

`tests/specs/thread_grids` has one kernel per grid of threads, written as the examples are: 16-byte groups
where the views allow them, no division by a symbol bound at launch but through `lg::divmod`. Their generated
code is pinned by golden files (`LAYOUTGEN_UPDATE_GOLDEN=1` refreshes them) and compiled offline with NVRTC,
release and debug builds. Execution on the GPU: tests/gpu/test_vsn_kernels_gpu.py and tests/gpu/test_qkv_gpu.py
run the examples written on these grids.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen import Field, Grid, In, Kernel, Layout, Out, Pad, dims, f16, f32, f64
from layoutgen.codegen.grids import vector_params, vector_width
from layoutgen.codegen.model import grid_shape, param_vector_bytes

N, F, C = dims("N F C")


def _assemble(**kw: Any) -> Any:
    """A kernel as snap_feature_assemble is: rows moved in groups, a per-column table read by element."""
    Raw = Layout("Raw", [N], f32, width=40)
    Window = Layout("Window", [N], f32, [Field("snap", 40), Field("context", 16)])
    Stats = Layout("Stats", [40], f32, [Field("mean", 1), Field("inv_std", 1)])
    kernel = Kernel("assemble", "unused.cu.j2", [In("raw", [N, F]), In("mean", [F, 1]), Out("snap", [N, F])],
                    grid=Grid.vectors("snap", **kw))
    return kernel.bind(raw=Raw, mean=Stats.mean, snap=Window.snap)


def test_a_table_read_by_element_does_not_narrow_the_groups_of_grid_vectors() -> None:
    binding = _assemble()
    assert vector_params(binding) == ("raw", "snap")
    assert vector_width(binding) == 16
    assert grid_shape(binding) == (16, 10)  # 10 groups of 16 bytes a row of 40 floats, not 40 of 4
    by_name = {p.name: (p, v) for p, v in binding.pairs}
    # the launcher checks 16-byte alignment where the body moves 16-byte groups, one element elsewhere
    assert [param_vector_bytes(binding, *by_name[n]) for n in ("raw", "mean", "snap")] == [16, 4, 16]


# -- generation: golden files and an offline compile --------------------------------------------------------------

from tests.helpers.golden import check_golden, render  # noqa: E402

SPEC = "tests/specs/thread_grids/spec.py"
KERNELS = ("row_center", "element_scale", "vector_assemble", "series_broadcast", "head_negate")


@pytest.mark.parametrize("name", KERNELS)
def test_golden_thread_grids(name: str) -> None:
    check_golden(f"thread_grids/{name}.cu", render(SPEC).files[f"thread_grids/{name}.cu"])


def test_the_grids_of_threads_place_their_index_and_the_vector_grid_its_widest_groups() -> None:
    files = render(SPEC).files
    vector, broadcast = files["thread_grids/vector_assemble.cu"], files["thread_grids/series_broadcast.cu"]
    # the rows moved in groups are checked for 16 bytes (10 groups a row), the table for 4
    assert "    const long long vector = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;\n" \
           "    if (vector >= y.rows() * 10) return;\n" in vector
    assert "lg::views::thread_grids::Rows_x_view<const float, 16, lg::Packing::strided> x" in vector
    assert "lg::views::thread_grids::Stats_scale_view<const float, 4, lg::Packing::strided> scale" in vector
    # symbolic rows: `long long`; the body divides with lg::divmod (lg/thread.cuh: 32 bits wherever the sizes fit)
    assert "    const long long vector = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;\n" \
           "    if (vector >= dst.rows() * 4) return;\n" in broadcast
    assert "lg::divmod(" in broadcast and "QuotRem divmod" not in broadcast  # the library's, not pasted in
    # a row of heads of D elements (D bound at launch): the threads are counted with D, at launch
    assert "    if (element >= q.rows() * 4 * lg_dim_D) return;\n" in files["thread_grids/head_negate.cu"]
    module = files["thread_grids/__init__.py"]
    assert "per_row=10," in module and "per_row=4," in module and "per_row_symbols=('D',)," in module


@pytest.mark.parametrize("debug", [False, True], ids=["release", "debug"])
def test_the_thread_grids_compile_to_cubins(debug: bool) -> None:
    from layoutgen.runtime.nvrtc import CompileRequest, compile_cubin

    pytest.importorskip("cupy")
    files = render(SPEC, debug).files
    headers = tuple((path.split("/")[-1], text) for path, text in files.items() if path.endswith(".cuh"))
    for name in KERNELS:
        result = compile_cubin(CompileRequest(source=files[f"thread_grids/{name}.cu"], name=f"{name}.cu",
                                              headers=headers, report=True))
        assert result.cubin and all(r.spill_stores == 0 for r in result.resources), name


# -- the width of Grid.vectors, for any layouts -------------------------------------------------------------------

_DTYPES = {"f16": f16, "f32": f32, "f64": f64}


@settings(max_examples=60, deadline=None)
@given(dtype=st.sampled_from(sorted(_DTYPES)), width=st.integers(1, 24), pad=st.integers(0, 9),
       offset=st.integers(0, 9), table_width=st.integers(1, 5), same=st.booleans())
def test_the_groups_of_grid_vectors_are_aligned_on_every_view_moved_with_them(
        dtype: str, width: int, pad: int, offset: int, table_width: int, same: bool) -> None:
    """For random fields: every view whose rows are as wide as the grid's moves in groups aligned on all its rows
    and dividing them; a view of another width narrows nothing and keeps its element-wide check."""
    t = _DTYPES[dtype]
    fields = ([Pad(offset)] if offset else []) + [Field("a", width)] + ([Pad(pad)] if pad else [])
    Packed = Layout("Packed", [N], t, width=width)
    Strided = Layout("Strided", [N], t, fields)
    Table = Layout("Table", [N], t, width=width if same else width + table_width)
    kernel = Kernel("k", "unused.cu.j2", [In("x", [N, F]), In("t", [N, C]), Out("y", [N, F])],
                    grid=Grid.vectors("y"))
    binding = kernel.bind(x=Strided.a, t=Table, y=Packed)
    moved = {p.name: v for p, v in binding.pairs if p.name in vector_params(binding)}
    assert set(moved) == ({"x", "y", "t"} if same else {"x", "y"})
    nbytes, per_row = grid_shape(binding)
    for p, v in binding.pairs:
        row_bytes = v.width * v.dtype.size
        checked = param_vector_bytes(binding, p, v)
        if p.name in moved:
            assert checked == nbytes and v.vector_bytes >= nbytes and row_bytes == nbytes * per_row
            # aligned on every row: the field's start, and each row's, are multiples of the group
            assert (v.offset * v.dtype.size) % nbytes == 0 and v.layout.row_bytes % nbytes == 0
        else:
            assert checked == v.dtype.size
    assert nbytes == min(v.vector_bytes for v in moved.values())
