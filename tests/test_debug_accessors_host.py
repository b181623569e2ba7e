"""The debug build checks every accessor of every view, and reaches the release build's element: run on the host.

The release and the debug views header of one spec (views with two leading dims, a row counted in a symbol, a
named range of rows, a packed parameter with 16-byte vectors) are compiled for the CPU into one program, the debug
build's fault functions (lg/fault.cuh on the GPU, lg/host/sanitizer.h in the CPU run) replaced by ones that throw
what they are told. Each accessor (`at(r, c)`, `row(r)[c]`, `x(i, ..., c)`, `vec(r, i)`, `row(r).vec(i)`, an
element through a pointer taken with `&x.at(r, c)`, `raw_pointer()[k]`) is called through both builds at random
sizes and indices, inside the field and around it. Inside, both builds reach the element that numpy's strided view
of the field names; outside, the debug build reports the fault with the words the launcher reads (the parameter,
the row and column or the index and its extent, the field's rows and width), and the release build is not asked.
The same checks on a GPU: tests/gpu/test_program_gpu.py.
"""

from __future__ import annotations

import ctypes
import itertools
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen import Axis, Field, Grid, In, InOut, Kernel, Layout, Pad, Spec, dims, f32
from layoutgen.codegen.library import library_namespace
from layoutgen.runtime.device_library import LIBRARY_INCLUDE
from tests.helpers.host import COMPILER, needs_compiler
from tests.helpers.rendering import render, write_template

pytestmark = needs_compiler

B, K, D, N = dims("B K D N")
Window = Layout("Window", [B, K], f32, [Field("snap", 5), Field("context", 3)])
Heads = Layout("Heads", [B], f32, [Field("lead", shape=[1, D]), Field("q", shape=[3, D])])
Obs = Layout("Obs", [N, Axis([Field("early", 2), Pad(1), Field("late", 3)]), 4], f32, [Field("a", 2), Field("b", 6)])
Packed = Layout("Packed", [B], f32, width=8)


@dataclass(frozen=True)
class Probed:
    """One parameter of the probe kernel: its view, its layout's array shape (from the sizes), how many trailing
    dims of the view are the field's own columns, its vector's elements, whether it is packed."""

    name: str
    view: Any
    shape: Any
    columns: int
    vector: int = 1
    packed: bool = False


PARAMS = (
    Probed("w", Window.snap, lambda s: (s["B"], s["K"], 8), 1),
    Probed("h", Heads.q, lambda s: (s["B"], 4 * s["D"]), 2),
    Probed("o", Obs.late.b, lambda s: (s["N"], 6, 4, 8), 1),
    Probed("p", Packed.view, lambda s: (s["B"], 8), 1, vector=4, packed=True),
)
ACCESSORS = ("at", "row", "call", "vec", "row_vec", "pointer", "raw")

# The debug build's fault functions, throwing what they are told (their words are lg::Fault's, lg/fault.cuh).
FAULTS = """#include "lg/host/runtime.h"
#define LG_DEBUG_DEFINED
#include <lg/site.cuh>
namespace lg {
struct Hit { long long param, row, col, rows, width, access; };
inline void out_of_field(const char*, int param, long long row, long long col, long long rows, long long width,
                         const char* = nullptr, int = 0) { throw Hit{param, row, col, rows, width, -1}; }
inline void out_of_footprint(const char*, int param, long long row, long long col, long long field_row, long long,
                             long long width, long long, int access, const char*, int) {
    throw Hit{param, row, col, field_row, width, access};
}
inline void unheld_read(const char*, int, long long, long long, long long, long long, const char*, int) {}
}  // namespace lg
"""
# The element an accessor hands out: a reference (release), or a checked reference read as one (debug).
ADDR = """template <typename R> const void* addr(R& r) { return &r; }
template <typename T> const void* addr(const lg::%(ns)s::debug::checked_ref<T>& r) { return &static_cast<T&>(r); }
"""


def _accessor_cases(p: Probed, rank: int) -> str:
    call = ", ".join(f"i[{k}]" for k in range(rank))
    cases = [
        "case 0: return addr(v.at(i[0], i[1]));",
        "case 1: return addr(v.row(i[0])[i[1]]);",
        f"case 2: return addr(v({call}));",
        "case 3: return addr(v.vec(i[0], static_cast<int>(i[1])));",
        "case 4: return addr(v.row(i[0]).vec(static_cast<int>(i[1])));",
        "case 5: { auto q = &v.at(i[0], i[1]); return addr(q[i[2]]); }",
    ]
    if p.packed:
        cases.append("case 6: return addr(v.raw_pointer()[i[0]]);")
    body = "\n        ".join(cases)
    return (f"template <typename V> const void* probe_{p.name}(const V& v, int accessor, const long long* i) {{\n"
            f"    switch (accessor) {{\n        {body}\n    }}\n    return nullptr;\n}}\n")


def _setup(kernel: str, build: str) -> list[str]:
    """The kernel's own set-up of its views (the generated lines), named in ``build``'s namespace."""
    lines = [ln for ln in kernel.splitlines() if re.match(r"    const lg::views::\w+::\w+<", ln)]
    assert len(lines) == len(PARAMS), kernel
    return [ln.replace("lg::views::", f"lg::{library_namespace()}::{build}::views::") for ln in lines]


@dataclass
class Program:
    fn: Any
    dims: tuple[str, ...]  # the kernel's symbols, in the order of its signature


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Program:
    tmp = tmp_path_factory.mktemp("debug_accessors")
    kernel = Kernel("probe", write_template(tmp, "    (void)row;\n"),
                    [In("w", [B, K, 5]), In("h", [B, 3, D]), In("o", [N, 3, 4, 6]),
                     InOut("p", [B, 8], contiguous=True, vector=16)], grid=Grid.rows("p"), template_root=tmp)
    spec = Spec("probe", kernels=[kernel.bind(w=Window.snap, h=Heads.q, o=Obs.late.b, p=Packed)])
    kernels = {}
    for build in ("release", "debug"):
        files = render(spec, tmp, debug=build == "debug").files
        (tmp / build).mkdir()
        (tmp / build / "probe.cuh").write_text(files["probe/probe.cuh"], encoding="utf-8")
        kernels[build] = files["probe/probe.cu"]
    signature = kernels["release"].split("probe(\n", 1)[1].split(")\n{", 1)[0]
    symbols = tuple(re.findall(r"long long lg_dim_(\w+)", signature))
    params = ", ".join(f"float* lg_arg_{p.name}" for p in PARAMS) + "".join(f", long long lg_dim_{s}" for s in symbols)
    chosen = " : ".join(f"param == {n} ? probe_{p.name}({p.name}, accessor, i)" for n, p in enumerate(PARAMS))
    bases = ", ".join(f"lg_arg_{p.name}" for p in PARAMS)
    source = tmp / "probe.cpp"
    source.write_text(
        FAULTS + '#include "release/probe.cuh"\n#include "debug/probe.cuh"\n' + ADDR % {"ns": library_namespace()}
        + "".join(_accessor_cases(p, len(p.view.of(np.zeros(p.shape({"B": 1, "K": 1, "D": 1, "N": 1}),
                                                                np.float32)).shape)) for p in PARAMS)
        + f'extern "C" int probe(int param, int accessor, const long long* i, long long* out, {params}) {{\n'
        f"    const float* bases[] = {{{bases}}};\n"
        "    try {\n        " + "\n        ".join(_setup(kernels["debug"], "debug")) + "\n"
        f"        out[0] = static_cast<const float*>({chosen} : nullptr) - bases[param];\n"
        "    } catch (const lg::Hit& h) {\n"
        "        const long long words[] = {h.param, h.row, h.col, h.rows, h.width, h.access};\n"
        "        for (int n = 0; n < 6; ++n) out[n] = words[n];\n"
        "        return 1;\n"
        "    }\n"
        "    {\n        " + "\n        ".join(_setup(kernels["release"], "release")) + "\n"
        f"        out[1] = static_cast<const float*>({chosen} : nullptr) - bases[param];\n"
        "    }\n"
        "    return 0;\n"
        "}\n",
        encoding="utf-8")
    library = tmp / "probe.so"
    run = subprocess.run([str(COMPILER), "-std=c++17", "-O1", "-shared", "-fPIC", "-Wall", "-Werror",
                          "-Wno-unused-variable", "-Wno-unknown-pragmas", "-I", str(tmp), "-I",
                          str(LIBRARY_INCLUDE / "lg" / "host" / "cuda"), "-I", str(LIBRARY_INCLUDE), str(source),
                          "-o", str(library)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return Program(ctypes.CDLL(str(library)).probe, symbols)


class Truth:
    """What numpy's strided view of one parameter's field says: its elements (each holds its offset in the array,
    from ``np.arange``), its rows and columns as the accessors count them, the array rows it holds."""

    def __init__(self, p: Probed, number: int, array: np.ndarray[Any, Any]) -> None:
        self.p, self.number, self.row_stride = p, number, array.shape[-1]
        self.view = p.view.of(array)
        self.m = self.view.reshape(int(np.prod(self.view.shape[:-p.columns])), -1)  # rows of the field, its columns
        self.rows, self.width = self.m.shape
        self.held = set(self.view.ravel().astype(np.int64).tolist())
        self.field_rows = sorted({e // self.row_stride for e in self.held})  # the array's rows that are the field's

    def field(self, r: int, c: int) -> tuple[int, tuple[int, ...]] | None:
        """The fault of an accessor's check of row `r`, column `c` (lg_check), or None inside the field."""
        if 0 <= r < self.rows and 0 <= c < self.width:
            return None
        return 1, (self.number, r, c, self.rows, self.width, -1)

    def element(self, target: int) -> tuple[int, tuple[int, ...]]:
        """A read through a checked pointer of element `target` of the array: the element, or the footprint's fault."""
        if target in self.held:
            return 0, (target,)
        row, col = target // self.row_stride, target % self.row_stride
        frow = self.field_rows.index(row) if row in self.field_rows else -1
        return 1, (self.number, row, col, frow, self.width, 0)

    def expected(self, accessor: str, index: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
        """(0, (the element)) where the access is inside the field, else (1, the fault's words)."""
        rows, m, vector = self.rows, self.m, self.p.vector
        if accessor == "call":
            # Each index against its extent (lg_index: the axis, the index, the extent), but a single column's,
            # which at(r, c) checks against the row's width (at the flattened row).
            checked = len(index) - (1 if self.p.columns == 1 else 0)
            for axis, (i, extent) in enumerate(zip(index[:checked], self.view.shape)):
                if not 0 <= i < extent:
                    return 1, (self.number, axis, i, extent, -1, -1)
            if checked < len(index):
                fault = self.field(int(np.ravel_multi_index(index[:-1], self.view.shape[:-1])), index[-1])
                if fault is not None:
                    return fault
            return 0, (int(self.view[index]),)
        if accessor == "raw":
            return self.element(int(m[0, 0]) + index[0])
        r, c = index[0], index[1]
        if accessor in ("row", "row_vec") and not 0 <= r < rows:
            return 1, (self.number, r, 0, rows, self.width, -1)  # row(r) checks the row first
        if accessor in ("vec", "row_vec"):  # the vector's last element is checked
            fault = self.field(r, (c + 1) * vector - 1)
            return fault if fault is not None else (0, (int(m[r, c * vector]),))
        fault = self.field(r, c)
        if fault is not None:
            return fault
        return self.element(int(m[r, c]) + index[2]) if accessor == "pointer" else (0, (int(m[r, c]),))

    def indices(self, accessor: str) -> list[tuple[int, ...]]:
        """Every index of ``accessor`` inside the field and up to two past each edge."""
        near = lambda extent: range(-2, extent + 2)  # noqa: E731
        if accessor == "call":
            return list(itertools.product(*(near(e) for e in self.view.shape)))
        if accessor in ("vec", "row_vec"):
            return list(itertools.product(near(self.rows), near(self.width // self.p.vector)))
        if accessor == "raw":
            return [(k,) for k in near(self.rows * self.width)]
        if accessor == "pointer":  # from each element to each column of the array rows before, at and after it
            return [(r, c, dr * self.row_stride + c2 - c) for r in range(self.rows) for c in range(self.width)
                    for dr in (-1, 0, 1) for c2 in range(-2, self.row_stride + 2)]
        return list(itertools.product(near(self.rows), near(self.width)))


SIZES = st.fixed_dictionaries({"B": st.integers(1, 4), "K": st.integers(1, 3), "D": st.integers(1, 4),
                               "N": st.integers(1, 3)})


def _call(program: Program, arrays: list[np.ndarray[Any, Any]], sizes: dict[str, int], number: int,
          accessor: str, index: tuple[int, ...]) -> tuple[int, tuple[int, ...]]:
    out = (ctypes.c_longlong * 6)()
    got = program.fn(number, ACCESSORS.index(accessor), (ctypes.c_longlong * 4)(*index), out,
                     *[ctypes.c_void_p(a.ctypes.data) for a in arrays],
                     *[ctypes.c_longlong(sizes[s]) for s in program.dims])
    return got, tuple(out)


@settings(max_examples=12, deadline=None)
@given(sizes=SIZES)
def test_every_accessor_is_checked_and_reaches_the_release_builds_element(
        program: Program, sizes: dict[str, int]) -> None:
    arrays = [np.arange(int(np.prod(p.shape(sizes))), dtype=np.float32).reshape(p.shape(sizes)) for p in PARAMS]
    wrong = []
    for number, p in enumerate(PARAMS):
        truth = Truth(p, number, arrays[number])
        for accessor in ACCESSORS if p.packed else ACCESSORS[:-1]:
            for index in truth.indices(accessor):
                fault, words = truth.expected(accessor, index)
                got, out = _call(program, arrays, sizes, number, accessor, index)
                # Inside: both builds reach the element numpy's view names. Outside: the debug build's fault.
                if (got, out[:len(words)] if fault else out[:2]) != (fault, words if fault else words * 2):
                    wrong.append((p.name, accessor, index, (got, out), (fault, words)))
    assert wrong[:5] == [], (sizes, len(wrong))


def test_the_probe_can_fail(program: Program) -> None:
    """A probe that reads outside a field is told: row 2 of `w` at sizes B=1, K=2 (two rows) is a fault."""
    sizes = {"B": 1, "K": 2, "D": 1, "N": 1}
    arrays = [np.zeros(p.shape(sizes), np.float32) for p in PARAMS]
    assert _call(program, arrays, sizes, 0, "at", (2, 4)) == (1, (0, 2, 4, 2, 5, -1))
