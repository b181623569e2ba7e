"""`layoutgen check --execute`: every kernel run on the CPU under the footprint sanitizer.

tests/specs/sanitizer/bad.py holds a kernel for each class of issue 30 (a wrong stride through a local
`const int`, an offset variable, a helper taking a `float*` and the width, a macro, a cast to float4 with
`row * 24`, another view's row stride, a lane loop to the row stride, a loop to a tile's capacity in a
short last tile, a tile filled from a narrower field, barriers in branches, a hand-written entry): each is
refused with its message at the user's line. tests/specs/sanitizer/good.py holds correct kernels of the
same shapes (shuffles, atomics, tails of 1 and R-1 rows, a cp.async ring, a hand-written entry): none is.
The examples raise no false alarm. Which thread meets a finding first varies between runs: the messages
are asserted whole, with the block, thread and (for a loop) the column as patterns. What each kernel of bad.py
and pointers.py is refused with is tests/helpers/sanitizer_expectations.py's, which the GPU's debug build is held
to as well (tests/gpu/test_sanitizer_gpu.py).
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from layoutgen.cli import main
from layoutgen.project.config import load_config
from layoutgen.project.execute import execute_results
from layoutgen.project.process import SpecResult
from layoutgen.project.specload import load_spec
from layoutgen.schema.diagnostics import Diagnostic
from tests.helpers.debug_fault import install_fault
from tests.helpers.sanitizer_expectations import EXPECTED, POINTERS, T, pattern

REPO = Path(__file__).resolve().parent.parent
SPECS = REPO / "tests" / "specs" / "sanitizer"
pytestmark = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                                reason="no host C++ compiler here")


def executed(spec: Path) -> list[Diagnostic]:
    """The findings of running every kernel of ``spec`` on the CPU (its static checks not asked)."""
    loaded = load_spec(spec)
    assert loaded.spec is not None, loaded
    result = SpecResult(spec.relative_to(REPO).as_posix(), loaded.spec, {"rendered": ""}, (), None)
    return execute_results([result], load_config(REPO), progress=False)


@pytest.fixture(scope="module")
def bad() -> dict[str, str]:
    """Each finding of bad.py as `site: code: message`, by kernel."""
    out = {}
    for d in executed(SPECS / "bad.py"):
        name = re.match(r"`(\w+)`", d.message)
        assert name is not None, d
        out[name.group(1)] = f"{d.site}: {d.code}: {d.message}"
    return out


@pytest.mark.parametrize("kernel", sorted(EXPECTED))
def test_each_spelling_of_a_wrong_footprint_is_refused_at_its_line(bad: dict[str, str], kernel: str) -> None:
    assert re.fullmatch(pattern(EXPECTED[kernel], kernel), bad[kernel]), bad[kernel]


def test_every_bad_kernel_is_refused_and_nothing_else(bad: dict[str, str]) -> None:
    assert sorted(bad) == sorted(EXPECTED)


def test_correct_kernels_of_the_same_shapes_pass() -> None:
    assert executed(SPECS / "good.py") == []


def test_the_vsn_example_raises_no_false_alarm() -> None:
    """Its tensor-core kernels (a cp.async ring of warps' tiles, shuffles, atomics), copies and updates."""
    assert executed(REPO / "examples" / "vsn" / "spec.py") == []


def test_check_execute_passes_the_qkv_and_own_kernel_examples(capsys: pytest.CaptureFixture[str]) -> None:
    status = main(["check", "--execute", "--quiet", "examples/qkv/spec.py", "examples/own_kernel/spec.py"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert out == "All checks passed: 2 specs, no errors.\n"


@pytest.fixture(scope="module")
def pointers() -> dict[str, str]:
    out = {}
    for d in executed(SPECS / "pointers.py"):
        name = re.match(r"`(\w+)`", d.message)
        assert name is not None, d
        out[name.group(1)] = f"{d.site}: {d.code}: {d.message}"
    return out


@pytest.mark.parametrize("kernel", sorted(POINTERS))
def test_a_checked_pointer_is_refused_at_the_access(pointers: dict[str, str], kernel: str) -> None:
    assert re.fullmatch(pattern(POINTERS[kernel], kernel), pointers.get(kernel, "not refused")), pointers.get(kernel)


def _gpu_fault(monkeypatch: pytest.MonkeyPatch, words: list[int], file: bytes) -> Diagnostic:
    """The launcher's report of a debug build's fault record holding ``words`` and ``file`` (lg::Fault of
    views.cuh.j2), for kernel `lane_loop` with parameter `x` bound to Window.snap (136 columns, 0..96)."""
    from layoutgen.runtime import debug
    from layoutgen.runtime.plan import KernelSpec, LayoutSpec, ParamSpec

    values = install_fault(monkeypatch, file, **dict(zip(debug.FaultRecord._fields, words, strict=True))).values
    window = LayoutSpec("Window", ("B", "K"), 136, "f32", 4)
    spec = KernelSpec("lane_loop", "lane_loop.cu", (ParamSpec("x", "in", window, "Window.snap", 4, cols=(0, 96)),),
                      ("B", "K"), 0, 1, 128)
    with pytest.raises(debug.KernelFault) as info:
        debug.check_fault(spec, object(), None)
    assert not values.any()  # cleared for the next launch
    return info.value.diagnostic


def _cpu_finding(fields: dict[str, str]) -> Diagnostic:
    from layoutgen.project.execute_findings import finding_diagnostic
    from layoutgen.project.execute_harness import HostProgram
    from layoutgen.project.footprints import Footprint

    program = HostProgram("lane_loop", "lane_loop.cu", (Footprint("x", "Window.snap", "in", 4, "f32", 183, 136, 0, 96),),
                          1, 2, 128, 0, "")
    return finding_diagnostic(program, {"pc": "", "calls": "", **fields}, None, None)


def test_the_gpu_and_the_cpu_word_a_field_fault_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    """The debug build's record on the GPU (with the block, thread and the caller's line) and the CPU run's
    finding of the same access give one message: LG611 after a launch, LG651 from `check --execute`."""
    # hit, x, row 2, column 97 of 183 x 96; block 1, thread 33; an accessor's check (-1) at line 3
    gpu = _gpu_fault(monkeypatch, [1, 0, 2, 97, 183, 96, 1, 33, -1, 3, 0, 0], b"tests/specs/sanitizer/lane_loop.cu.j2")
    cpu = _cpu_finding({"kind": "field", "where": "lane_loop.x (Window.snap)", "param": "0", "row": "2", "col": "97",
                        "rows": "183", "width": "96", "block": "1", "thread": "33"})
    assert (gpu.code, cpu.code) == ("LG611", "LG651")
    assert gpu.message == cpu.message == (
        "`lane_loop` indexed `x` (Window.snap) at row 2, column 97, outside the field (183 rows, 96 columns), "
        "in block 1, thread 33; the thread stopped before the access")
    assert gpu.hint == cpu.hint
    assert str(gpu.site) == "tests/specs/sanitizer/lane_loop.cu.j2:3"


@pytest.mark.parametrize(("access", "verb"), [(0, "read"), (1, "wrote"), (2, "accessed")])
def test_the_gpu_and_the_cpu_word_a_checked_pointers_fault_alike(monkeypatch: pytest.MonkeyPatch, access: int,
                                                                 verb: str) -> None:
    """A checked pointer's access outside its footprint (lg::out_of_footprint): on the GPU the launcher's
    LG611, on the CPU the run's LG650, in the words of an AddressSanitizer finding of the same element."""
    # hit, x, array row 1, column 100 (the field's row 1); footprint columns 0..96 of rows 136 apart; block 0, thread 5
    gpu = _gpu_fault(monkeypatch, [1, 0, 1, 100, 1, 96, 0, 5, access, 4, 0, 136], b"macro_stride.cu.j2")
    cpu = _cpu_finding({"kind": "pointer", "region": "0", "write": str(access), "bytes": "0", "row": "1",
                        "col": "100", "field_row": "1", "block": "0", "thread": "5"})
    asan = _cpu_finding({"kind": "footprint", "region": "0", "write": str(access), "bytes": "4", "row": "1",
                         "col": "100", "field_row": "1", "block": "0", "thread": "5"})
    assert (gpu.code, cpu.code, asan.code) == ("LG611", "LG650", "LG650")
    assert gpu.message == cpu.message == asan.message == (
        f"`lane_loop` {verb} `x` (Window.snap) at row 1, column 100, outside the field's columns 0..96 (rows 136 "
        "elements apart), in block 0, thread 5")
    assert gpu.hint == cpu.hint
    assert str(gpu.site) == "macro_stride.cu.j2:4"


def test_a_kernel_the_host_runtime_cannot_build_is_reported_not_executed() -> None:
    (found,) = executed(SPECS / "odd.py")
    assert (str(found.site), found.code, found.message) == (
        "tests/specs/sanitizer/odd.py:12", "LG531",
        "`library` was not executed on the CPU: the host runtime cannot build it: "
        "tests/specs/sanitizer/odd_library.cu.j2:2:10: fatal error: cub/cub.cuh: No such file or directory")


def test_16_bit_float_kernels_execute_and_a_wrong_stride_in_one_is_refused() -> None:
    """f16 and bf16 kernels build against the host's cuda_fp16.h and cuda_bf16.h (they were reported not
    executed): an f16 kernel and a bf16 warp reduction pass, an f16 read at the packed stride is refused."""
    found = [f"{d.site}: {d.code}: {d.message}" for d in executed(SPECS / "halves.py")]
    pattern = re.escape("tests/specs/sanitizer/half_stride.cu.j2:2: LG650: `half_stride` read `x` (Mixed.feat) at row "
                        "<N>, column <N>, outside the field's columns 0..8 (rows 12 elements apart), " + T)
    assert len(found) == 1 and re.fullmatch(pattern.replace("<N>", r"\d+"), found[0]), found


def test_a_kernel_that_crashes_is_reported_at_its_line() -> None:
    (found,) = executed(SPECS / "crash.py")
    assert (str(found.site), found.code) == ("tests/specs/sanitizer/crash_divide.cu.j2:2", "LG532")
    assert re.fullmatch(r"`divide` crashed on the CPU \(FPE\), in block \d+, thread \d+", found.message), found.message


def test_no_host_compiler_is_an_error_not_a_pass(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", "no-such-compiler-here")
    (found,) = executed(SPECS / "crash.py")
    assert (found.site, found.code, found.message) == (
        None, "LG530", "`check --execute` needs a host C++ compiler with AddressSanitizer, found none (tried `CXX`, "
        "g++, clang++)")


# -- what a finding's address means --------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["footprint", "address", "pointer", "field", "barrier", "barrier-exit",
                                  "divergent", "unheld", "crash"])
def test_a_findings_pc_is_read_as_a_return_address_but_a_crashs(kind: str) -> None:
    """Every finding's pc is the return address of a call (AddressSanitizer's reports too: `__asan_report_*`
    is called, and its pc is where it returns), which may lie on the next line: its line is that of the byte
    before. A crash's pc is the faulting instruction itself. (`float4_cast` was reported at line 4, where the
    report's call returned, for its read at line 3.)"""
    from layoutgen.project.execute_findings import finding_place

    assert finding_place({"kind": kind, "pc": "0x401000", "calls": "0x401100"}) == (
        "0x401000", "0x401100", kind != "crash")


def test_a_finding_is_read_where_another_threads_output_leads_its_line() -> None:
    """AddressSanitizer's threads print too: a finding's line may follow their text without a newline
    (`AddressSanitizerLGSAN\\tkind=crash...`, seen in the crash test): it is read all the same."""
    from layoutgen.project.execute import finding_records

    stderr = ("AddressSanitizer:DEADLYSIGNAL\nAddressSanitizerLGSAN\tkind=crash\twhat=FPE\tblock=0\tthread=2\n"
              "==1==ABORTING\nLGSAN\tkind=done\n")
    assert finding_records(stderr) == [{"kind": "crash", "what": "FPE", "block": "0", "thread": "2"},
                                       {"kind": "done"}]


# -- a host program cached by content serves every checkout -------------------------------------------------

RELOCATED_SPEC = '''from layoutgen import Field, Grid, In, Kernel, Layout, Out, Spec, dims, f32

B, K, F = dims("B K F")
Window = Layout("Window", [B, K], f32, [Field("snap", 96), Field("ctx", 40)], doc="96 features, 40 of context")
Packed = Layout("Packed", [B, K], f32, width=96, doc="the features, packed")


def rows_kernel(name):
    return Kernel(name, f"{name}.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])], grid=Grid.rows("x", block=128))


spec = Spec("moved", kernels=[rows_kernel("const_stride").bind(x=Window.snap, y=Packed),
                              rows_kernel("helper_stride").bind(x=Window.snap, y=Packed)])
'''
RELOCATED_HELPER = '''#pragma once
// A project header's helper that assumes packed rows.
__device__ inline void copy_packed_row(const float* from, float* to, long long row, int width) {
    for (int c = 0; c < width; ++c) to[c] = from[row * width + c];
}
'''


def _relocated_project(root: Path, cache: Path) -> None:
    (root / "kernels" / "include").mkdir(parents=True)
    (root / "pyproject.toml").write_text(f'[tool.layoutgen]\nspecs = ["kernels/spec.py"]\ninclude = ["kernels/include"]\n'
                                         f'cache_dir = "{cache.as_posix()}"\n')
    (root / "kernels" / "spec.py").write_text(RELOCATED_SPEC)
    (root / "kernels" / "include" / "rows.cuh").write_text(RELOCATED_HELPER)
    (root / "kernels" / "const_stride.cu.j2").write_text((SPECS / "const_stride.cu.j2").read_text())
    (root / "kernels" / "helper_stride.cu.j2").write_text(
        '{% block preamble %}\n#include "rows.cuh"\n{% endblock %}\n'
        "    copy_packed_row(&x.at(0, 0), &y.at(row, 0), row, F);\n")


def _findings_in(root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> list[str]:
    monkeypatch.chdir(root)
    assert main(["check", "--execute", "--ignore", "LG4"]) == 1
    out = capsys.readouterr().out
    return sorted(line.split(" error[LG650]: ")[0] for line in out.splitlines() if "error[LG650]" in line)


def test_a_host_program_built_in_one_checkout_reports_relative_lines_in_another(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Host programs are cached by content, so a second checkout of a project runs the programs the first
    built: their findings name the lines relative to the project, a template's and a project header's, not
    where the first checkout lay (they named its absolute paths)."""
    cache = tmp_path / "cache"
    first, second = tmp_path / "first", tmp_path / "elsewhere" / "second"
    _relocated_project(first, cache)
    second.parent.mkdir()
    shutil.copytree(first, second)
    expected = ["kernels/const_stride.cu.j2:3:", "kernels/include/rows.cuh:4:"]
    assert _findings_in(first, monkeypatch, capsys) == expected
    built = sorted(p.parent.name for p in (cache / "execute").rglob("program"))
    assert len(built) == 2
    shutil.rmtree(first)  # nothing of the first checkout is left to read
    assert _findings_in(second, monkeypatch, capsys) == expected
    assert sorted(p.parent.name for p in (cache / "execute").rglob("program")) == built  # the same programs ran


# -- LG531 accepted for one kernel, on its line, with a reason -----------------------------------------------

def _odd_project(root: Path, comment: str) -> Path:
    root.mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["odd.py"]\n')
    (root / "odd_library.cu.j2").write_text((SPECS / "odd_library.cu.j2").read_text())
    text = (SPECS / "odd.py").read_text()
    binding = "spec = Spec(\"sanitizer_odd\", kernels=[library.bind(x=Rows, y=Rows)])"
    assert binding in text
    (root / "odd.py").write_text(text.replace(binding, binding + comment))
    return root / "odd.py"


def _executed_in(root: Path, spec: Path) -> list[Diagnostic]:
    loaded = load_spec(spec)
    assert loaded.spec is not None, loaded
    result = SpecResult(spec.relative_to(root).as_posix(), loaded.spec, {"rendered": ""}, (), None)
    return execute_results([result], load_config(root), progress=False)


def test_a_kernel_not_executed_is_an_error_that_only_its_binding_line_may_accept(tmp_path: Path) -> None:
    """LG531 is an error: a kernel the host runtime cannot run was not checked and must not pass. A team may
    accept it for one kernel, with a reason, by a comment on the line of its binding; without a reason, or for
    the whole project, it stays."""
    from layoutgen.schema.diagnostics import CODES, Off, Severity

    assert (CODES["LG531"].severity, CODES["LG531"].turned_off) == (Severity.ERROR, Off.LINE)
    accepted = _odd_project(tmp_path / "accepted", "  # layoutgen: ignore[LG531]: CUB's scan, checked on the GPU")
    assert _executed_in(tmp_path / "accepted", accepted) == []
    bare = _odd_project(tmp_path / "bare", "  # layoutgen: ignore[LG531]")
    (found,) = _executed_in(tmp_path / "bare", bare)
    assert (found.code, found.site.line if found.site else None) == ("LG531", 12)
    assert found.hint == ("the host runtime lacks what this kernel uses (see the compiler's message); its accesses "
                          "were not checked. To accept that for this kernel, end its binding's line with "
                          "`# layoutgen: ignore[LG531]: why`")
    other = _odd_project(tmp_path / "other", "  # layoutgen: ignore[LG401]: not this one")
    assert [d.code for d in _executed_in(tmp_path / "other", other)] == ["LG531"]


def test_lg531_is_accepted_by_any_spelling_of_the_comment_and_never_from_a_string(tmp_path: Path) -> None:
    """The binding line's comment is read as the templates' comments are (suppress.named_codes: a list of codes,
    any spacing), and as Python reads it: `#` inside a string on that line is no comment."""
    listed = _odd_project(tmp_path / "listed", "  #layoutgen:ignore[ LG404 , LG531 ]  CUB's scan")
    assert _executed_in(tmp_path / "listed", listed) == []
    text = _odd_project(tmp_path / "text", '; _why = "# layoutgen: ignore[LG531]: in a string"')
    assert [d.code for d in _executed_in(tmp_path / "text", text)] == ["LG531"]
