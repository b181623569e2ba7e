"""Existing kernels under `check --execute` (issue 31 item 3, the CPU run) and their debug build's copy.

The team's `__global__` is called in its own order (pointers into each parameter's own allocation, poisoned
outside the field's footprint; the carried integers at the chosen sizes), through the debug build's copy whose
pointer parameters are checked pointers. The original kernels' reads of `x` at stride 40 are refused at their
lines, every one of them in one run, with the row and column against the field's columns and rows 56 apart; the
fixed kernels pass.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from layoutgen import ExistingKernel, Field, In, Layout, Out, Rows, dims, f32
from layoutgen.checks.cuda_signatures import read_kernels
from layoutgen.cli import main
from layoutgen.codegen.existing_kernel import existing_kernel

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "existing_kernels"
needs_compiler = pytest.mark.skipif(shutil.which("g++") is None and shutil.which("clang++") is None,
                                    reason="check --execute needs a host C++ compiler")

# Which thread meets a bad read first is the host threads' choice: <N>.
BUGGY = {
    # `const float* xr = x + row * VSN_FEATURE_DIM;` (line 36), read at line 39
    "examples/existing_kernels/vsn_kernels.cu:39": "`vsn_forward` read `x` (Window.snap) at row <N>, column <N>, "
    "outside the field's columns 0..40 (rows 56 elements apart), in block <N>, thread <N>",
    # `x[row * VSN_FEATURE_DIM + i]` (line 62): the same kernel's second bad read, found in the same run
    "examples/existing_kernels/vsn_kernels.cu:62": "`vsn_forward` read `x` (Window.snap) at row <N>, column <N>, "
    "outside the field's columns 0..40 (rows 56 elements apart), in block <N>, thread <N>",
    "examples/existing_kernels/vsn_kernels.cu:84": "`vsn_backward` read `x` (Window.snap) at row <N>, column <N>, "
    "outside the field's columns 0..40 (rows 56 elements apart), in block <N>, thread <N>",
}


@needs_compiler
def test_the_original_kernels_are_refused_by_the_cpu_run_at_their_reads(capsys: pytest.CaptureFixture[str]) -> None:
    # LG401: the lint refuses them already; the CPU run must refuse them whatever the lint sees.
    assert main(["check", "--execute", "--ignore", "LG401", str(EXAMPLE / "seed_bug.py")]) == 1
    out = capsys.readouterr()
    found = {line.split(": error[LG650]: ")[0]: line.split(": error[LG650]: ")[1]
             for line in (out.out + out.err).splitlines() if "error[LG650]" in line}
    assert sorted(found) == sorted(BUGGY)
    for site, message in BUGGY.items():
        assert re.fullmatch(re.escape(message).replace("<N>", r"\d+"), found[site]), found[site]
    assert "LG531" not in out.out + out.err and "LG653" not in out.out + out.err  # each ran, the broadcast whole


@needs_compiler
def test_the_fixed_kernels_pass_the_cpu_run() -> None:
    assert main(["check", "--execute", "--quiet", str(EXAMPLE / "spec.py")]) == 0


CU = '''#define F 40
extern "C" __global__ void k(const float* __restrict__ x,
                             float* y, int n) {
    __shared__ float s[F];
    y[n * F] = x[n * 56] + s[0];
}
'''


def test_the_debug_copy_checks_each_pointer_and_keeps_every_line(tmp_path: Path) -> None:
    B, K, F = dims("B K F")
    Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)])
    Narrow = Layout("Narrow", [B, K], f32, width=40)
    (tmp_path / "k.cu").write_text(CU)
    binding = ExistingKernel("k", "k.cu", [In("x", [B, K, F]), Out("y", [B, K, F]), Rows("x")],
                             source_root=tmp_path).bind(x=Window.snap, y=Narrow)
    release = existing_kernel(binding, CU, "k.cu", "demo.cuh")
    debug = existing_kernel(binding, CU, "k.cu", "demo.cuh", debug=True)
    assert not isinstance(release, list) and not isinstance(debug, list)
    assert release[0].endswith('#line 1 "k.cu"\n' + CU)  # the release build: the file, unchanged
    copy = debug[0].split('#line 1 "k.cu"\n', 1)[1]
    assert copy.splitlines() == [
        "#define F 40",
        'extern "C" __global__ void k(const float* __restrict__ lg_raw_x,',
        "                             float* lg_raw_y, int n, long long lg_rows_x = 0, long long lg_rows_y = 0) {"
        "lg::checked_ptr<const float> x(lg_raw_x, lg::footprint{reinterpret_cast<const unsigned char*>(lg_raw_x), "
        "lg_rows_x, 56LL, 0LL, 40LL, 0LL, 0LL, 0LL, 1LL, static_cast<int>(sizeof(const float)), 0, "
        '"k.x (Window.snap)", lg::site{"k.cu", 2}}); lg::checked_ptr<float> y(lg_raw_y, lg::footprint{'
        "reinterpret_cast<const unsigned char*>(lg_raw_y), lg_rows_y, 40LL, 0LL, 40LL, 0LL, 0LL, 0LL, 1LL, "
        'static_cast<int>(sizeof(float)), 1, "k.y (Narrow)", lg::site{"k.cu", 3}});',
        "    static __shared__ float s[F];",
        "    y[n * F] = x[n * 56] + s[0];",
        "}",
    ]
    assert debug[1] == release[1] == "k"  # extern "C": the same symbol
    assert debug[2] == (*release[2], ("value", 0, 1, ("B", "K"), 64, True, "the rows of `x` (debug build)"),
                        ("value", 0, 1, ("B", "K"), 64, True, "the rows of `y` (debug build)"))
    assert [p.name for p in read_kernels(copy)[0].params] == ["lg_raw_x", "lg_raw_y", "n", "lg_rows_x", "lg_rows_y"]


def test_a_cpp_kernels_debug_copy_is_found_by_its_own_symbol(tmp_path: Path) -> None:
    B, K, F = dims("B K F")
    Narrow = Layout("Narrow", [B, K], f32, width=40)
    cu = "__global__ void k(const float* x, int n) { }\n"
    (tmp_path / "k.cu").write_text(cu)
    binding = ExistingKernel("k", "k.cu", [In("x", [B, K, F]), Rows("x")], source_root=tmp_path).bind(x=Narrow)
    release, debug = existing_kernel(binding, cu, "k.cu", "h.cuh"), existing_kernel(binding, cu, "k.cu", "h.cuh", debug=True)
    assert not isinstance(release, list) and not isinstance(debug, list)
    assert (release[1], debug[1]) == ("_Z1kPKfi", "_Z1kPKfix")  # the rows, a `long long`, mangled as g++ does
