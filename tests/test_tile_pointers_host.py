"""A pointer taken from a shared tile is checked in the debug build too: run on the host.

In the debug build a shared tile's element (`xs(r, c)`, lg/detail/shared_tile.cuh) is an lg::checked_ref whose
address is an lg::checked_ptr with the tile's footprint: the tile's data (its stage's), the rows it holds now (a
copy of a short last tile leaves fewer), its pitch and its columns 0..Width. The user's `const float* a = &xs(0, 0)`
is written as a checked pointer (layoutgen/codegen/checked_types.py), so a read through it past the tile's width
(into the pitch's padding) or past the rows it holds stops the thread on the GPU. Here the debug headers are
compiled for the CPU with the fault functions replaced by ones that record the first fault (as
tests/test_checked_pointers_host.py does for views), and the record is read back by the launcher's own reader
(layoutgen/runtime/debug.py's check_fault) into the words the CPU run of `check --execute` gives the same read.
Reads inside the footprint, and the tile's own accessor reading rows past those held (a tensor-core tile computes
rows it never stores), report nothing.
"""

from __future__ import annotations

import ctypes
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen.codegen.checked_types import checked_pointer_types
from layoutgen.project.execute_findings import finding_diagnostic
from layoutgen.project.execute_harness import HostProgram
from layoutgen.project.footprints import Footprint
from layoutgen.runtime import debug
from layoutgen.runtime.plan import KernelSpec, SharedArray
from tests.helpers.debug_fault import FaultRecord, fault_words
from tests.helpers.host import build_shared, needs_compiler

pytestmark = needs_compiler

CAPACITY, WIDTH, PITCH = 8, 96, 100  # the corpus's tile: rows of x's 96 columns, 100 apart (16-byte rows, odd groups)

# The fault functions of the debug build (lg/fault.cuh on the GPU), recording the first fault as lg::Fault's words.
FAULTS = """#include "lg/host/runtime.h"
[[noreturn]] void lg_host_violation(const char*, const char*, const void*) { std::abort(); }
#define LG_DEBUG_DEFINED
#include <lg/site.cuh>
namespace lg {
inline long long lg_test_hit[12], lg_test_hits;
inline char lg_test_name[128];
inline void out_of_field(const char*, int param, long long row, long long col, long long rows, long long width,
                         const char* = nullptr, int = 0) {
    if (lg_test_hits++ == 0) {
        const long long words[] = {param, row, col, rows, width, -1, 0, 0, 0};
        for (int n = 0; n < 9; ++n) lg_test_hit[n] = words[n];
    }
}
inline void out_of_footprint(const char* where, int param, long long row, long long col, long long field_row,
                             long long offset, long long width, long long row_stride, int access, const char*, int line) {
    if (lg_test_hits++ == 0) {
        const long long words[] = {param, row, col, field_row, width, access, line, offset, row_stride};
        for (int n = 0; n < 9; ++n) lg_test_hit[n] = words[n];
        std::snprintf(lg_test_name, sizeof lg_test_name, "%s", where);
    }
}
inline void unheld_read(const char*, int, long long, long long, long long, long long, const char*, int) {}
}  // namespace lg
#include <lg/debug.cuh>
"""

# The user's code, as the debug build writes it (its `const float*` rewritten): `which` picks the access.
USER = """
float probe_user(const Tile& xs, int which, int r, int i) {
    const float* a = &xs(0, 0);
    if (which == 0) return a[r * xs.pitch + i];  // the tile's own rows, at its pitch
    if (which == 1) return a[r * xs.width + i];  // the tile product's leading dimension: the width, not the pitch
    if (which == 2) {  // a column down to row r
        const float* column = &xs(0, i);
        return column[r * xs.pitch];
    }
    if (which == 3) {  // a write through a pointer taken at row r, to its column i
        float* w = &xs(r, 0);
        w[i] = 1.0f;
        return 0.0f;
    }
    return xs(r, i);  // the accessor itself: rows past those held are recorded, not refused
}
"""


def _program(tmp: Path) -> Any:
    """The probe built for the host: ``fn(which, held, r, i, out, name) -> faults`` over one tile of
    :data:`CAPACITY` rows whose last copy counted ``held`` (-1: never copied into)."""
    user = checked_pointer_types(USER)
    assert "lg::checked_ptr<const float> a = &xs(0, 0);" in user and "lg::checked_ptr<float> w" in user, user
    source = tmp / "tile_probe.cpp"
    source.write_text(
        FAULTS + f"using Tile = lg::SharedTile<float, {CAPACITY}, {WIDTH}, {PITCH}, 16, 1>;\n" + user +
        f"alignas(16) float lg_test_buffer[{(CAPACITY + 8) * PITCH}];  // the tile, 4 rows of margin either side\n"
        "float* const lg_test_tile = lg_test_buffer + " + str(4 * PITCH) + ";\n"
        'extern "C" long long probe(int which, int held, int r, int i, long long* out, char* name) {\n'
        "    lg::lg_test_hits = 0;\n"
        f"    for (int e = 0; e < {CAPACITY * PITCH}; ++e) lg_test_tile[e] = static_cast<float>(e);\n"
        '    const Tile xs{lg_test_tile, 2, "k.xs (a tile of x)"};\n'
        "    if (held >= 0) xs.lg_copied(held);\n"
        "    probe_user(xs, which, r, i);\n"
        "    for (int n = 0; n < 9; ++n) out[n] = lg::lg_test_hit[n];\n"
        "    std::snprintf(name, 128, \"%s\", lg::lg_test_name);\n"
        "    return lg::lg_test_hits;\n"
        "}\n", encoding="utf-8")
    return build_shared(source, tmp / "tile_probe.so", "c++17", (), "-O1", symbol="probe")


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return _program(tmp_path_factory.mktemp("tile_pointers"))


def _run(fn: Any, which: int, held: int, r: int, i: int) -> tuple[int, list[int], str]:
    out = (ctypes.c_longlong * 9)()
    name = ctypes.create_string_buffer(128)
    hits = fn(ctypes.c_int(which), ctypes.c_int(held), ctypes.c_int(r), ctypes.c_int(i), out, name)
    return int(hits), list(out), name.value.decode()


def _message(words: list[int], name: str, block: int = 0, thread: int = 0) -> str:
    """The launcher's report of a fault record holding ``words`` (as the probe records them) and the tile's ``name``
    (check_fault over lg::Fault's words, the file's name, then the tile's), as `code: message`."""
    param, row, col, rows, width, access, line, offset, row_stride = words
    values = np.concatenate([fault_words(b"tile_probe.cu", hit=1, param=param, row=row, col=col, rows=rows,
                                         width=width, block=block, thread=thread, access=access, line=line,
                                         offset=offset, row_stride=row_stride),
                             np.frombuffer(name.encode().ljust(debug.TILE_BYTES, b"\0"), np.int64)])
    spec = KernelSpec("k", "k.cu", (), (), 0, 1, 128,
                      shared=(SharedArray("ws", 4, (8, 8)), SharedArray("vs", 4, (8, 8)),
                              SharedArray("xs", 4, (CAPACITY, PITCH))))
    real = debug._fault_record, debug._synchronize
    debug._fault_record, debug._synchronize = (lambda module: FaultRecord(values)), (lambda stream: None)
    try:
        with pytest.raises(debug.KernelFault) as info:
            debug.check_fault(spec, object(), None)
    finally:
        debug._fault_record, debug._synchronize = real
    assert not values.any()  # cleared for the next launch
    return f"{info.value.code}: {info.value.diagnostic.message}"


def _cpu_message(fields: dict[str, str], tile: Footprint) -> str:
    """The CPU run's finding (AddressSanitizer's, over the shared buffer's region of ``tile``) as `code: message`."""
    program = HostProgram("k", "k.cu", (tile,), 0, 1, 128, 0, "")
    found = finding_diagnostic(program, {"kind": "footprint", "region": "0", "write": "0", "pc": "", "calls": "",
                                         **fields}, None, None)
    return f"{found.code}: {found.message}"


def test_a_read_past_the_tiles_width_through_a_pointer_is_the_tiles_fault(probe: Any) -> None:
    # Row 1 of a product given the width as its leading dimension: a[96], row 0's column 96 (the pitch's padding).
    hits, words, name = _run(probe, 1, 5, 1, 0)
    assert hits == 1 and name == "k.xs (a tile of x)"
    assert words[:3] == [-3, 0, 96] and words[5] == 0  # the third shared array (-1 - 2), row 0, column 96, a read
    assert _message(words, name) == (
        "LG611: `k` read shared `xs` (a tile of x) at row 0, column 96, outside its 96 columns (pitch 100), in "
        "block 0, thread 0")


def test_a_read_past_the_rows_the_tile_holds_through_a_pointer_is_the_tiles_fault(probe: Any) -> None:
    # A short last tile holds 5 of its 8 rows; a column read down to its capacity reaches row 5.
    hits, words, name = _run(probe, 2, 5, 5, 7)
    assert hits == 1
    assert _message(words, name) == (
        "LG611: `k` read shared `xs` (a tile of x) at row 5, column 7, outside the 5 rows it holds (capacity 8), "
        "in block 0, thread 0")


def test_the_cpu_run_words_the_same_read_past_the_width_alike(probe: Any) -> None:
    """AddressSanitizer's finding of the same read in `check --execute` (the tile's region of the shared buffer)
    gives the GPU's message under the CPU run's code (one wording: layoutgen/runtime/debug.py's tile_fault)."""
    _, words, name = _run(probe, 1, 5, 1, 0)
    tile = Footprint("xs", "a tile of x", "shared", 4, "f32", CAPACITY, PITCH, 0, WIDTH)
    cpu = _cpu_message({"row": "0", "col": "96", "field_row": "0", "block": "0", "thread": "0"}, tile)
    assert _message(words, name) == "LG611: " + cpu.removeprefix("LG650: ") and cpu.startswith("LG650: ")


@settings(max_examples=80, deadline=None)
@given(capacity=st.integers(1, 64), groups=st.integers(1, 40), pad=st.integers(1, 4), row=st.integers(0, 63),
       past=st.integers(0, 3), block=st.integers(0, 2**31 - 1), thread=st.integers(0, 1023))
def test_every_read_past_a_tiles_width_is_worded_alike_on_the_gpu_and_the_cpu(
        capacity: int, groups: int, pad: int, row: int, past: int, block: int, thread: int) -> None:
    """Whatever the tile (capacity, width, pitch) and the read past its width, the GPU's record of a tile pointer's
    fault and the CPU run's AddressSanitizer finding of the same read give one message."""
    width, pitch = 4 * groups, 4 * (groups + pad)
    row, col = row % capacity, width + past % (pitch - width)
    tile = Footprint("xs", "a tile of x", "shared", 4, "f32", capacity, pitch, 0, width)
    cpu = _cpu_message({"row": str(row), "col": str(col), "field_row": str(row), "block": str(block),
                        "thread": str(thread)}, tile)
    gpu = _message([-3, row, col, capacity, width, 0, 1, capacity, pitch], "k.xs (a tile of x)", block, thread)
    assert gpu == "LG611: " + cpu.removeprefix("LG650: ")
    assert cpu == (f"LG650: `k` read shared `xs` (a tile of x) at row {row}, column {col}, outside its {width} columns "
                   f"(pitch {pitch}), in block {block}, thread {thread}")


def test_a_plain_shared_arrays_finding_keeps_its_words() -> None:
    """A plain shared array (one row of its extent) is named by its element, as before the tile's words moved to
    runtime/debug.py."""
    array = Footprint("part", "shared f32", "shared", 4, "f32", 1, 3072, 0, 3072)
    assert _cpu_message({"row": "0", "col": "3073", "field_row": "0", "block": "1", "thread": "2"}, array) == (
        "LG650: `k` read shared `part` (shared f32) at element 3073, outside its 3072 columns (pitch 3072), in block "
        "1, thread 2")


def test_reads_inside_the_tile_and_its_accessors_own_reads_report_nothing(probe: Any) -> None:
    for held in (-1, 5, CAPACITY):  # never copied into (every row counts), a short tile, a full one
        rows = CAPACITY if held < 0 else held
        for r in range(rows):
            for i in (0, 1, WIDTH - 1):
                assert _run(probe, 0, held, r, i)[0] == 0, (held, r, i)
                assert _run(probe, 2, held, r, i)[0] == 0, (held, r, i)
                assert _run(probe, 3, held, r, i)[0] == 0, (held, r, i)
    # The accessor reads rows past those held without a fault (recorded as an unheld read, named at a NaN).
    assert _run(probe, 4, 5, CAPACITY - 1, 3)[0] == 0


@settings(max_examples=60, deadline=None)
@given(held=st.integers(-1, CAPACITY), r=st.integers(-2, CAPACITY + 2), i=st.integers(-3, PITCH + 3))
def test_every_read_through_a_tiles_pointer_is_reported_exactly_outside_its_footprint(
        probe: Any, held: int, r: int, i: int) -> None:
    """`a[r * pitch + i]` from `&xs(0, 0)`: element (r, i) of the tile, laid out as the pointer sees it (an `i` past
    the pitch is the next row's). Reported exactly where that element is outside the rows held and the width."""
    rows = CAPACITY if held < 0 else held
    element = r * PITCH + i
    row, col = element // PITCH, element % PITCH
    inside = 0 <= row < rows and col < WIDTH
    hits, words, _ = _run(probe, 0, held, r, i)
    assert hits == (0 if inside else 1), (held, r, i)
    if not inside:
        assert words[:5] == [-3, row, col, rows, WIDTH] and words[7:9] == [CAPACITY, PITCH]
