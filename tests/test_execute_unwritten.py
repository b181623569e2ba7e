"""`layoutgen check --execute`: reads of output elements nothing wrote (LG656) and racing plain writes (LG657).

tests/specs/sanitizer/unwritten.py reads an output before writing it in four spellings (a view's accessor, a
pointer taken from the view, `+=` into an output nobody zeroed, atomicAdd into one); race.py writes one element
from two threads with nothing ordering them in three (every lane of a warp, thread 0 of every block, two
threads of a block without a barrier between). unwritten_good.py holds correct kernels of the same shapes:
none is refused. Which thread meets a finding first varies between runs: the messages are asserted whole,
with the numbers that depend on it as patterns.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen.project.config import load_config
from layoutgen.project.execute import execute_results
from layoutgen.project.execute_findings import finding_diagnostic
from layoutgen.project.execute_harness import HostProgram, find_compiler
from layoutgen.project.footprints import Footprint
from layoutgen.project.process import SpecResult
from layoutgen.project.specload import load_spec
from layoutgen.schema.diagnostics import Diagnostic

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "tests" / "specs" / "sanitizer"
needs_compiler = pytest.mark.skipif(find_compiler() is None, reason="no host C++ compiler here")


def executed(spec: Path) -> list[Diagnostic]:
    """The findings of running every kernel of ``spec`` on the CPU (its static checks not asked)."""
    loaded = load_spec(spec)
    assert loaded.spec is not None, loaded
    result = SpecResult(spec.relative_to(REPO).as_posix(), loaded.spec, {"rendered": ""}, (), None)
    return execute_results([result], load_config(REPO), progress=False)


def _by_kernel(diags: list[Diagnostic]) -> dict[str, str]:
    out = {}
    for d in diags:
        name = re.match(r"`(\w+)`", d.message)
        assert name is not None, d
        assert name.group(1) not in out, (out, d)  # one finding a kernel
        out[name.group(1)] = f"{d.site}: {d.code}: {d.message}"
    return out


@pytest.fixture(scope="module")
def unwritten() -> dict[str, str]:
    return _by_kernel(executed(SPECS / "unwritten.py"))


@pytest.fixture(scope="module")
def racing() -> dict[str, str]:
    return _by_kernel(executed(SPECS / "race.py"))


T = "in block <N>, thread <N>"
UNWRITTEN = {
    "unwritten_mirror": ("tests/specs/sanitizer/unwritten_mirror.cu.j2:2: LG656: `unwritten_mirror` read `y` (Packed) "
                         "at row <N>, column 95 before anything wrote it, " + T),
    "unwritten_pointer": ("tests/specs/sanitizer/unwritten_pointer.cu.j2:2: LG656: `unwritten_pointer` read `y` "
                          "(Packed) at row <N>, column 95 before anything wrote it, " + T),
    "unwritten_accumulate": ("tests/specs/sanitizer/unwritten_accumulate.cu.j2:1: LG656: `unwritten_accumulate` read "
                             "`y` (Packed) at row <N>, column 0 before anything wrote it (a compound assignment such "
                             "as `+=` reads it first), " + T),
    "unwritten_atomic": ("tests/specs/sanitizer/unwritten_atomic.cu.j2:2: LG656: `unwritten_atomic` read `total` "
                         "(Sums) at row 0, column <N> before anything wrote it (an atomic such as atomicAdd reads it "
                         "first), in block 0, thread <N>"),
}
RACES = {
    "race_lanes": ("tests/specs/sanitizer/race_lanes.cu.j2:5: LG657: `race_lanes` wrote `s` (RowSum) at row <N>, "
                   "column 0 in block <N>, thread <N> after block <N>, thread <N> wrote it with no barrier between: "
                   "plain writes of one element race"),
    "race_blocks": ("tests/specs/sanitizer/race_blocks.cu.j2:2: LG657: `race_blocks` wrote `first` (Sums) at row 0, "
                    "column 0 in block 1, thread 0 after block 0, thread 0 wrote it (nothing orders two blocks): "
                    "plain writes of one element race"),
    "race_column": ("tests/specs/sanitizer/race_column.cu.j2:5: LG657: `race_column` wrote `total` (Sums) at row 0, "
                    "column <N> in block 0, thread <N> after block 0, thread <N> wrote it with no barrier between: "
                    "plain writes of one element race"),
}


def _matches(expected: str, got: str | None) -> bool:
    return got is not None and re.fullmatch(re.escape(expected).replace("<N>", r"\d+"), got) is not None


@needs_compiler
@pytest.mark.parametrize("kernel", sorted(UNWRITTEN))
def test_a_read_of_an_output_nothing_wrote_is_refused_at_the_read(unwritten: dict[str, str], kernel: str) -> None:
    assert _matches(UNWRITTEN[kernel], unwritten.get(kernel)), unwritten.get(kernel)


@needs_compiler
def test_every_unwritten_read_kernel_is_refused_and_nothing_else(unwritten: dict[str, str]) -> None:
    assert sorted(unwritten) == sorted(UNWRITTEN)


@needs_compiler
@pytest.mark.parametrize("kernel", sorted(RACES))
def test_two_plain_writes_nothing_orders_are_refused_at_the_second(racing: dict[str, str], kernel: str) -> None:
    assert _matches(RACES[kernel], racing.get(kernel)), racing.get(kernel)


@needs_compiler
def test_every_racing_kernel_is_refused_and_nothing_else(racing: dict[str, str]) -> None:
    assert sorted(racing) == sorted(RACES)


@needs_compiler
def test_correct_kernels_of_the_same_shapes_pass() -> None:
    """Written then read back after a barrier, zeroed then accumulated, written through vec<16> (unseen by the
    shadow) then read, atomics into an InOut, one lane writing, two writers a barrier apart."""
    assert executed(SPECS / "unwritten_good.py") == []


# The messages of each kind of finding, from the host program's record (no compiler needed).
PROGRAM = HostProgram("k", "k.cu", (Footprint("x", "Window.snap", "in", 4, "f32", 6, 136, 0, 96),
                                    Footprint("y", "Window.ctx", "out", 4, "f32", 6, 136, 96, 40)), 2, 2, 128, 0, "")


def _finding(**fields: str) -> Diagnostic:
    return finding_diagnostic(PROGRAM, {"pc": "", "calls": "", "block": "1", "thread": "33", **fields}, None, None)


@pytest.mark.parametrize(("access", "how"), [
    ("0", ""),
    ("3", " (a compound assignment such as `+=` reads it first)"),
    ("4", " (an atomic such as atomicAdd reads it first)"),
])
def test_an_unwritten_read_names_the_output_its_element_and_how_it_was_read(access: str, how: str) -> None:
    d = _finding(kind="unwritten-read", region="1", access=access, row="2", col="100", field_row="2")
    assert d.code == "LG656"
    assert d.message == (f"`k` read `y` (Window.ctx) at row 2, column 4 before anything wrote it{how}, in block 1, "
                         "thread 33")
    assert d.hint == ("an Out parameter holds nothing until the kernel writes it: write each element before reading "
                      "it or accumulating into it (zero it first, a barrier between where other threads read it), "
                      "or declare the parameter InOut where its values come in")


@pytest.mark.parametrize(("other_block", "between"), [("1", "with no barrier between"),
                                                      ("0", "(nothing orders two blocks)")])
def test_a_race_names_both_writers(other_block: str, between: str) -> None:
    d = _finding(kind="race", region="1", row="3", col="97", field_row="3", other_block=other_block, other_thread="2")
    assert d.code == "LG657"
    assert d.message == (f"`k` wrote `y` (Window.ctx) at row 3, column 1 in block 1, thread 33 after block "
                         f"{other_block}, thread 2 wrote it {between}: plain writes of one element race")
    assert d.hint == ("let one thread write each element (`if (lane == 0)` after a warp's reduction), put a barrier "
                      "between the writers, or accumulate with an atomic into an output zeroed before")


def test_the_host_programs_cache_key_covers_every_header_of_the_device_library(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A host program includes lg/checked.cuh and the other device headers through the debug build's files: a change
    to any of them is a new program (the key covered only lg/host/, so a changed checked.cuh ran the old one)."""
    import shutil

    from layoutgen.project import execute_harness

    root = tmp_path / "include"
    shutil.copytree(execute_harness.INCLUDE_ROOT, root)
    monkeypatch.setattr(execute_harness, "INCLUDE_ROOT", root)
    before = execute_harness.headers_digest([])
    for header in ("lg/checked.cuh", "lg/detail/shared_tile.cuh", "lg/host/runtime.h"):
        with open(root / header, "a", encoding="utf-8") as f:
            f.write("// changed\n")
        after = execute_harness.headers_digest([])
        assert after != before, header
        before = after


# -- a property of the shadow: over random footprints and accesses, exactly the reads of elements nothing wrote
# and exactly the plain writes that nothing orders after another thread's are reported ---------------------------

SHADOW_PROBE = r"""
#include "lg/host/runtime.h"
#include "lg/host/sanitizer.h"
#include "lg/checked.cuh"
#include <iostream>
int main(int argc, char** argv) {
    long long v[9];
    for (int i = 0; i < 9; ++i) v[i] = std::atoll(argv[i + 1]);
    static lg_san::Region region{"y", "Probe.field", static_cast<int>(v[8]), 4, 'f', v[0], v[1], v[2], v[3],
                                 v[4], v[5], v[6], v[7], 0};
    static lg_san::Launch launch{"probe", &region, 1, 0, 1u};
    lg_san::prepare(launch);
    const long long rows = v[4] == 0 ? v[0] : v[0] / v[4] * v[6];  // the field's rows
    const lg::footprint f{region.base, rows, v[1], v[2], v[3], v[5], v[6], v[4], v[7], 4, 0, "probe.y", {nullptr, 0}};
    lg_host::BlockState state(32);
    lg_host::state = &state;
    long long b, t, g, w, access, e, bytes;
    for (int i = 0; std::cin >> b >> t >> g >> w >> access >> e >> bytes; ++i) {
        char line[64];
        std::snprintf(line, sizeof line, "LGSAN\tkind=event\ti=%d\n", i);
        lg_san::say(line);
        lg_san::findings.count = 0;  // every event's findings, not only each place's first
        blockIdx.x = static_cast<unsigned>(b);
        threadIdx.x = static_cast<unsigned>(t);
        state.block.generation.store(static_cast<unsigned long long>(g));
        state.warps[t / 32].generation.store(static_cast<unsigned long long>(w));
        unsigned char* at = region.base + e * 4;
        if (access != 9) f.check(at, bytes, static_cast<int>(access));  // 9: a write the checks do not see
        const bool writes = access == 1 || access >= 3;
        if (writes && e >= 0 && (e * 4 + bytes) <= region.elements() * 4) std::memset(at, 0, bytes);  // the write made
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def shadow_probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import subprocess

    from layoutgen.project.execute_harness import FLAGS, INCLUDE_ROOT

    folder = tmp_path_factory.mktemp("shadow")
    (folder / "probe.cpp").write_text(SHADOW_PROBE, encoding="utf-8")
    compiler = find_compiler()
    assert compiler is not None
    run = subprocess.run([compiler, *FLAGS, "-I", str(INCLUDE_ROOT), str(folder / "probe.cpp"), "-o",
                          str(folder / "probe")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return folder / "probe"


def _races(before: tuple[int, int, int, int], now: tuple[int, int, int, int]) -> bool:
    """Two plain writes (block, thread, __syncthreads() generation, __syncwarp() generation) nothing orders."""
    (b0, t0, g0, w0), (b1, t1, g1, w1) = before, now
    if b0 != b1:
        return True
    if t0 == t1 or g0 != g1:
        return False
    return t0 // 32 != t1 // 32 or w0 == w1


def _expected(f: Footprint, access_of_region: int, events: list[tuple[int, ...]]) -> list[list[str]]:
    """What the shadow must report at each event: the model of docs/diagnostics.md's LG656 and LG657, each kind
    once a place (an event: the first element of a vector access that has it)."""
    written: set[int] = set()
    poisoned = set(range(f.elements)) if access_of_region == 1 else set()
    last: dict[int, tuple[int, int, int, int]] = {}
    out = []
    for b, t, g, w, access, e, nbytes in events:
        found = []
        covered = range(e, e + nbytes // 4)
        inside = e >= 0 and e + nbytes // 4 <= f.elements
        for el in covered if inside and access != 9 else ():
            if not f.holds(el):
                continue
            row, col = divmod(el, f.row_stride)
            if access in (0, 3, 4) and access_of_region == 1 and el not in written and el in poisoned:
                found.append(f"unwritten-read {row} {col}")
            if access in (1, 3):
                if el in last and _races(last[el], (b, t, g, w)):
                    found.append(f"race {row} {col} {last[el][0]} {last[el][1]}")
                last[el] = (b, t, g, w)
                written.add(el)
            elif access in (4, 5):
                written.add(el)
        if inside and access in (1, 3, 4, 5, 9):
            poisoned.difference_update(covered)
        kinds = [x.split()[0] for x in found]
        out.append([x for n, x in enumerate(found) if x.split()[0] not in kinds[:n]])
    return out


@st.composite
def shadow_cases(draw: st.DrawFn) -> tuple[Footprint, int, list[tuple[int, ...]]]:
    stride = draw(st.integers(1, 6))
    offset = draw(st.integers(0, stride - 1))
    width = draw(st.integers(1, stride - offset))
    rows = draw(st.integers(1, 4))
    axis = None
    if draw(st.booleans()):
        size, inner = draw(st.integers(1, 3)), draw(st.integers(1, 2))
        start = draw(st.integers(0, size - 1))
        axis = (size, start, draw(st.integers(1, size - start)), inner)
        rows = size * inner * draw(st.integers(1, 2))
    access_of_region = draw(st.sampled_from([1, 2]))
    f = Footprint("y", "Probe.field", "out" if access_of_region == 1 else "inout", 4, "f32", rows, stride, offset,
                  width, axis)
    event = st.tuples(st.sampled_from([0, 1, 2, 65535]), st.sampled_from([0, 1, 31, 32, 33, 1023]),
                      st.sampled_from([0, 1, 2, 2**20 - 1]), st.sampled_from([0, 1, 2**16 - 1]),
                      st.sampled_from([0, 1, 2, 3, 4, 5, 9]), st.integers(-1, f.elements), st.sampled_from([4, 8]))
    return f, access_of_region, draw(st.lists(event, min_size=1, max_size=24))


@needs_compiler
@settings(max_examples=80, deadline=None)
@given(case=shadow_cases())
def test_the_shadow_reports_exactly_unwritten_reads_and_unordered_plain_writes(
        shadow_probe: Path, case: tuple[Footprint, int, list[tuple[int, ...]]]) -> None:
    import subprocess

    from layoutgen.project.execute import ASAN_OPTIONS

    f, access_of_region, events = case
    axis = f.axis or (0, 0, 0, 1)
    run = subprocess.run([str(shadow_probe), *map(str, (f.layout_rows, f.row_stride, f.offset, f.width, *axis,
                                                        access_of_region))],
                         input="".join(" ".join(map(str, e)) + "\n" for e in events),
                         capture_output=True, text=True, timeout=60, env={"ASAN_OPTIONS": ASAN_OPTIONS})
    assert run.returncode == 0, run.stderr
    got: list[list[str]] = []
    for line in run.stderr.splitlines():
        if not line.startswith("LGSAN\t"):
            continue
        fields = dict(part.split("=", 1) for part in line.split("\t")[1:] if "=" in part)
        if fields["kind"] == "event":
            got.append([])
        elif fields["kind"] == "unwritten-read":
            got[-1].append(f"unwritten-read {fields['row']} {fields['col']}")
        elif fields["kind"] == "race":
            got[-1].append(f"race {fields['row']} {fields['col']} {fields['other_block']} {fields['other_thread']}")
    assert got == _expected(f, access_of_region, events)
