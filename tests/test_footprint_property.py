"""A property of the footprint sanitizer: over random footprints, every access outside is reported, none inside.

A probe program (compiled once, against the host runtime and sanitizer layoutgen ships) allocates one
parameter's array as `check --execute` does for a footprint given on its command line, and reads one
element of it through a raw pointer. Hypothesis draws the footprint (rows, row stride, the field's offset
and width, a named range of rows) and the index (a row and a column, each possibly outside, flattened at
the array's own row stride): the probe must report exactly where :meth:`Footprint.holds` says the element
is outside, naming its row and column. Elements are 8 bytes, one AddressSanitizer granule each, so the
footprint is exact (a 4-byte field starting at an odd column leaves the one column before it to the views'
checks: docs/diagnostics.md, LG650).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen.project.execute import ASAN_OPTIONS
from layoutgen.project.execute_harness import FLAGS, INCLUDE_ROOT, find_compiler
from layoutgen.project.footprints import Footprint

pytestmark = pytest.mark.skipif(find_compiler() is None, reason="no host C++ compiler here")

PROBE = r"""
#include "lg/host/runtime.h"
#include "lg/host/sanitizer.h"
int main(int argc, char** argv) {
    long long v[9];
    for (int i = 0; i < 9; ++i) v[i] = std::atoll(argv[i + 1]);
    static lg_san::Region region{"x", "Probe.field", 0, 8, 'f', v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], 0};
    static lg_san::Launch launch{"probe", &region, 1, 0, 1u};
    lg_san::prepare(launch);
    const double* first = reinterpret_cast<const double*>(region.base);
    volatile double read = first[v[8]];  // the access under test, through a raw pointer
    (void)read;
    return lg_san::finish(launch);
}
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("probe")
    (folder / "probe.cpp").write_text(PROBE, encoding="utf-8")
    compiler = find_compiler()
    assert compiler is not None
    run = subprocess.run([compiler, *FLAGS, "-I", str(INCLUDE_ROOT), str(folder / "probe.cpp"), "-o",
                          str(folder / "probe")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return folder / "probe"


@st.composite
def footprints(draw: st.DrawFn) -> Footprint:
    stride = draw(st.integers(1, 12))
    offset = draw(st.integers(0, stride - 1))
    width = draw(st.integers(1, stride - offset))
    rows = draw(st.integers(1, 12))
    axis = None
    if draw(st.booleans()):  # a named range of rows: rows are (outer, size, inner)
        size, inner = draw(st.integers(1, 4)), draw(st.integers(1, 3))
        start = draw(st.integers(0, size - 1))
        axis = (size, start, draw(st.integers(1, size - start)), inner)
        rows = size * inner * draw(st.integers(1, 3))
    return Footprint("x", "Probe.field", "in", 8, "f64", rows, stride, offset, width, axis)


@settings(max_examples=60, deadline=None)
@given(f=footprints(), row=st.integers(-1, 14), col=st.integers(-2, 14))
def test_every_access_outside_the_footprint_is_reported_and_none_inside(
        probe: Path, f: Footprint, row: int, col: int) -> None:
    element = row * f.row_stride + col
    if element < 0:  # outside the array altogether: within AddressSanitizer's redzone around it
        element = max(element, -2)
    elif element >= f.elements:
        element = f.elements + (element - f.elements) % 2
    axis = f.axis or (0, 0, 0, 1)
    run = subprocess.run([str(probe), *map(str, (f.layout_rows, f.row_stride, f.offset, f.width, *axis, element))],
                         capture_output=True, text=True, timeout=60, env={"ASAN_OPTIONS": ASAN_OPTIONS})
    findings = [line for line in run.stderr.splitlines() if line.startswith("LGSAN\t")]
    assert findings, run.stderr
    fields = dict(part.split("=", 1) for part in findings[0].split("\t")[1:] if "=" in part)
    if f.holds(element):
        assert fields["kind"] == "done", findings[0]
    elif 0 <= element < f.elements:
        assert fields["kind"] == "footprint", findings[0]
        assert (int(fields["row"]), int(fields["col"])) == divmod(element, f.row_stride)
    else:
        assert fields["kind"] == "address", findings[0]


# The debug build's checked pointer (layoutgen/include/lg/checked.cuh) over the same random footprints, with
# 4-byte elements, so that a field may start inside an 8-byte granule: its check is exact where
# AddressSanitizer's cannot be, and reports before AddressSanitizer would, in the same fields.
CHECKED_PROBE = r"""
#include "lg/host/runtime.h"
#include "lg/host/sanitizer.h"
#include "lg/checked.cuh"
int main(int argc, char** argv) {
    long long v[9];
    for (int i = 0; i < 9; ++i) v[i] = std::atoll(argv[i + 1]);
    static lg_san::Region region{"x", "Probe.field", 0, 4, 'f', v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], 0};
    static lg_san::Launch launch{"probe", &region, 1, 0, 1u};
    lg_san::prepare(launch);
    const long long rows = v[4] == 0 ? v[0] : v[0] / v[4] * v[6];  // the field's rows
    const lg::footprint f{region.base, rows, v[1], v[2], v[3], v[5], v[6], v[4], v[7], 4, 0, "probe.x", {nullptr, 0}};
    const auto first = lg::checked_ptr<const float>(reinterpret_cast<const float*>(region.base), f);
    volatile float read = first[v[8]];  // the access under test, through the checked pointer
    (void)read;
    return lg_san::finish(launch);
}
"""


@pytest.fixture(scope="module")
def checked_probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("checked")
    (folder / "probe.cpp").write_text(CHECKED_PROBE, encoding="utf-8")
    compiler = find_compiler()
    assert compiler is not None
    run = subprocess.run([compiler, *FLAGS, "-I", str(INCLUDE_ROOT), "-I", str(folder), str(folder / "probe.cpp"),
                          "-o", str(folder / "probe")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return folder / "probe"


@settings(max_examples=60, deadline=None)
@given(f=footprints(), row=st.integers(-2, 14), col=st.integers(-3, 14))
def test_a_checked_pointer_reports_every_access_outside_its_footprint_exactly(
        checked_probe: Path, f: Footprint, row: int, col: int) -> None:
    element = row * f.row_stride + col  # anywhere, inside the array or not: the check comes before the access
    axis = f.axis or (0, 0, 0, 1)
    run = subprocess.run([str(checked_probe), *map(str, (f.layout_rows, f.row_stride, f.offset, f.width, *axis,
                                                         element))],
                         capture_output=True, text=True, timeout=60, env={"ASAN_OPTIONS": ASAN_OPTIONS})
    findings = [line for line in run.stderr.splitlines() if line.startswith("LGSAN\t")]
    assert findings, run.stderr
    fields = dict(part.split("=", 1) for part in findings[0].split("\t")[1:] if "=" in part)
    if f.holds(element):
        assert fields["kind"] == "done", findings[0]
    else:
        assert fields["kind"] == "pointer", findings[0]
        assert (int(fields["row"]), int(fields["col"])) == divmod(element, f.row_stride)


# A shared tile's rows past those its copy held (views.cuh.j2's SharedTile in the debug build): the CPU run names
# the read of one (LG655) exactly where its value reaches an output, and never a read that is thrown away (a
# tensor-core tile computes rows it never stores) or one of a held row. The probe is the kernel of
# tests/specs/sanitizer/tile_probe.py, one block over a tile of 8 rows: `count` rows copied in, row `read` read
# through the accessor, its value stored in the output where `flows`.
TILE_PROBE = r"""
#include "lg/host/runtime.h"
#include "lg/host/sanitizer.h"
#include "tile_probe.cu"
static lg_san::Region lg_regions[] = {
    {"x", "Rows", 0, 4, 'f', 8LL, 4LL, 0LL, 4LL, 0LL, 0LL, 0LL, 1LL, 0LL},
    {"y", "Rows", 1, 4, 'f', 8LL, 4LL, 0LL, 4LL, 0LL, 0LL, 0LL, 1LL, 0LL},
    {"xs", "a tile of x", 3, 4, 'f', 8LL, 4LL, 0LL, 4LL, 0LL, 0LL, 0LL, 1LL, 0LL},
};
static int count, row, flows;
int main(int argc, char** argv) {
    count = std::atoi(argv[1]), row = std::atoi(argv[2]), flows = std::atoi(argv[3]);
    static lg_san::Launch launch{"tile_probe", lg_regions, 3, 128LL, 1u};
    lg_san::prepare(launch);
    lg_host::run(1u, 32u, [] { tile_probe(reinterpret_cast<const float*>(lg_regions[0].base),
                                          reinterpret_cast<float*>(lg_regions[1].base), count, row, flows, 8LL); },
                 lg_san::reset_shared);
    return lg_san::finish(launch);
}
"""


@pytest.fixture(scope="module")
def tile_probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from layoutgen.project.config import load_config
    from layoutgen.project.execute import _spec_jobs
    from layoutgen.project.process import SpecResult
    from layoutgen.project.specload import load_spec

    repo = Path(__file__).resolve().parent.parent
    spec = repo / "tests" / "specs" / "sanitizer" / "tile_probe.py"
    loaded = load_spec(spec)
    assert loaded.spec is not None, loaded
    result = SpecResult(spec.relative_to(repo).as_posix(), loaded.spec, {"rendered": ""}, (), None)
    ((_, files, _),) = _spec_jobs(result, load_config(repo))
    folder = tmp_path_factory.mktemp("tile")
    for name, text in files.items():  # the debug build's copies of the project headers lie in folders
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    (folder / "probe.cpp").write_text(TILE_PROBE, encoding="utf-8")
    compiler = find_compiler()
    assert compiler is not None
    run = subprocess.run([compiler, *FLAGS, "-I", str(INCLUDE_ROOT), "-I", str(folder), str(folder / "probe.cpp"),
                          "-o", str(folder / "probe")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return folder / "probe"


@settings(max_examples=40, deadline=None)
@given(count=st.integers(0, 8), read=st.integers(0, 7), flows=st.booleans())
def test_a_read_past_a_tiles_rows_is_named_where_its_value_reaches_an_output(
        tile_probe: Path, count: int, read: int, flows: bool) -> None:
    run = subprocess.run([str(tile_probe), str(count), str(read), str(int(flows))], capture_output=True, text=True,
                         timeout=60, env={"ASAN_OPTIONS": ASAN_OPTIONS})
    findings = [line for line in run.stderr.splitlines() if line.startswith("LGSAN\t")]
    assert findings, run.stderr
    fields = dict(part.split("=", 1) for part in findings[0].split("\t")[1:] if "=" in part)
    if flows and read >= count:
        assert fields["kind"] == "unheld", findings[0]
        assert (fields["tile"], fields["tile_row"], fields["tile_col"], fields["held"], fields["capacity"]) == (
            "0", str(read), "0", str(count), "8")
        assert (fields["region"], fields["row"], fields["col"]) == ("1", "0", "0")  # y's element it reached
    else:
        assert fields["kind"] == "done", findings[0]
