"""Bring your own kernels (issue 19): hand-written .cu files against the generated views, without a GPU.

The views header compiles with nvcc (and clang where installed) as with NVRTC; a SourceKernel's entry is
checked against its binding by the generated kernel itself (LG224..LG226 at the entry's lines); the C facts
header static_asserts in plain C; `Window.check` raises the launcher's LG6xx errors.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from layoutgen.runtime.device_library import LIBRARY_INCLUDE

from tests.helpers.cli import nvrtc_missing, run_layoutgen

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "own_kernel"
GENERATED = REPO / "generated" / "own_kernel"
NVCC = shutil.which("nvcc")
CLANG = shutil.which("clang++")

needs_nvrtc = pytest.mark.skipif(nvrtc_missing() is not None, reason=str(nvrtc_missing()))
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not on the PATH")


def _device_compile(compiler: list[str], source: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*compiler, "-c", "-I", str(GENERATED), f"-I{LIBRARY_INCLUDE}", str(source), "-o", str(out)],
                          capture_output=True, text=True, timeout=300)


@needs_nvcc
def test_the_example_builds_against_the_generated_header_with_nvcc(tmp_path: Path) -> None:
    done = _device_compile([str(NVCC), "-arch=sm_90"], EXAMPLE / "vsn_forward.cu", tmp_path / "vsn.o")
    assert done.returncode == 0, done.stderr


@needs_nvcc
def test_a_kernel_of_ones_own_host_takes_the_views_with_nvcc(tmp_path: Path) -> None:
    source = tmp_path / "host_kernel.cu"
    source.write_text('#include "own_kernel.cuh"\n'
                      "using Snap = lg::views::own_kernel::Window_snap_view<const float, 4, lg::Packing::strided>;\n"
                      "__global__ void first_feature(Snap x, float* out) { out[0] = x.row(1)[0] + x(0, 1, 2); }\n")
    done = _device_compile([str(NVCC), "-arch=sm_90"], source, tmp_path / "host.o")
    assert done.returncode == 0, done.stderr


@needs_nvcc
def test_row_arithmetic_through_the_views_does_not_compile_with_nvcc(tmp_path: Path) -> None:
    source = tmp_path / "seed.cu"
    source.write_text('#include "own_kernel.cuh"\n'
                      "using Snap = lg::views::own_kernel::Window_snap_view<const float, 4, lg::Packing::strided>;\n"
                      "__device__ float bad(Snap x, long long row) { return (x.row(0) + row * 40)[3]; }\n")
    done = _device_compile([str(NVCC), "-arch=sm_90"], source, tmp_path / "seed.o")
    assert done.returncode != 0
    assert ("a row of 'Window.snap' is not a pointer: its rows are 56 elements apart (40 columns each); "
            "index the row with row(r)[c], or the view with at(r, c)") in done.stderr


def test_the_views_header_with_clang_or_a_visible_skip(tmp_path: Path) -> None:
    if CLANG is None:
        pytest.skip("clang++ is not installed: the header is tested with nvcc and NVRTC only here")
    done = _device_compile([CLANG, "-x", "cuda", "--cuda-gpu-arch=sm_90", "--cuda-device-only", "-nocudalib"],
                           EXAMPLE / "vsn_forward.cu", tmp_path / "vsn.o")
    assert done.returncode == 0, done.stderr


@needs_nvrtc
def test_the_example_compiles_with_nvrtc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(tmp_path / "cache"))
    out = run_layoutgen("layoutgen check --compile examples/own_kernel/spec.py", REPO)
    assert out == "All checks passed: 1 spec, no errors.\n"


def test_the_seed_bug_with_a_raw_pointer_is_lg201() -> None:
    out = run_layoutgen("layoutgen check seed_bug.py", EXAMPLE)
    assert out.splitlines()[0] == (
        "seed_bug.py:25: error[LG201]: `vsn_forward_raw.x` needs contiguous rows (stride 40) but is bound to "
        "`Window.snap`, row stride 56 (`Window` [B, K, 56], `snap` = columns 0..40)")


SPEC = '''from layoutgen import Grid, In, Layout, Out, Scalar, SourceKernel, Spec, dims, f32

B, F = dims("B F")
Rows = Layout("Rows", [B], f32, width=8)
scale = SourceKernel("scale", "scale.cu", [In("x", [B, F]), Out("y", [B, F]), Scalar("k", f32)],
                     entry="scale_rows", grid=Grid.rows("x"))
spec = Spec("demo", kernels=[scale.bind(x=Rows, y=Rows)])
'''
VIEW = "lg::views::demo::Rows_view"


def _project(tmp_path: Path, source: str) -> Path:
    project = tmp_path / "project"
    project.mkdir(parents=True)
    (project / "pyproject.toml").write_text("")
    (project / "spec.py").write_text(SPEC)
    (project / "scale.cu").write_text('#include "demo.cuh"\n' + source)
    return project


def _compiled(project: Path) -> str:
    """What `layoutgen check --compile` says after `layoutgen generate` (a mismatch is found by the compile)."""
    run_layoutgen("layoutgen generate spec.py", project)
    return run_layoutgen("layoutgen check --compile spec.py", project)


GOOD = (f"__device__ void scale_rows({VIEW}<const float, 4, lg::Packing::strided> x,\n"
        f"                           {VIEW}<float, 4, lg::Packing::strided> y, float k) {{\n"
        "    const long long r = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;\n"
        "    for (int c = 0; c < x.width; ++c) y.row(r)[c] = k * x.row(r)[c];\n}\n")


@needs_nvrtc
def test_a_matching_entry_compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(tmp_path / "cache"))
    project = _project(tmp_path, GOOD)
    assert _compiled(project) == "All checks passed: 1 spec, no errors.\n"


@needs_nvrtc
def test_a_parameter_of_another_type_is_lg226_at_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(tmp_path / "cache"))
    project = _project(tmp_path, GOOD.replace("float k)", "double k)"))
    out = _compiled(project)
    assert out.splitlines()[0] == (
        "scale.cu:3: error[LG226]: parameter 3 of entry `scale_rows` (`k` of `scale`) must be `float`, got `double`")
    raw = GOOD.replace(f"{VIEW}<const float, 4, lg::Packing::strided> x", "const float* x")
    out = _compiled(_project(tmp_path / "raw", raw))
    assert out.splitlines()[0] == (
        f"scale.cu:2: error[LG226]: parameter 1 of entry `scale_rows` (`x` of `scale`) must be "
        f"`{VIEW}<const float, 4, lg::Packing::strided>`, got `const float*`")


@needs_nvrtc
def test_an_entry_missing_a_parameter_is_lg225(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(tmp_path / "cache"))
    project = _project(tmp_path, GOOD.replace(", float k)", ")").replace("k * ", ""))
    out = _compiled(project)
    assert out.splitlines()[0] == (
        "scale.cu:2: error[LG225]: entry `scale_rows` of `scale` must take 3 parameters (`x`, `y`, `k`), got 2")


def test_a_global_entry_or_none_is_lg224(tmp_path: Path) -> None:
    out = run_layoutgen("layoutgen check spec.py", _project(tmp_path, GOOD.replace("__device__", "__global__")))
    assert out.splitlines()[0] == ("scale.cu:2: error[LG224]: entry `scale_rows` of kernel `scale` must be a "
                                   "`__device__` function, got a `__global__` one")
    out = run_layoutgen("layoutgen check spec.py", _project(tmp_path / "other", GOOD.replace("scale_rows", "other")))
    assert out.splitlines()[0] == "spec.py:5: error[LG224]: source `scale.cu` of kernel `scale` defines no function `scale_rows`"


def test_an_entry_named_like_a_parameter_is_lg208(tmp_path: Path) -> None:
    project = _project(tmp_path, GOOD)
    (project / "spec.py").write_text(SPEC.replace('entry="scale_rows"', 'entry="k"'))
    out = run_layoutgen("layoutgen check spec.py", project)
    assert out.splitlines()[0] == (
        "spec.py:5: error[LG208]: the entry of kernel `scale` must not be named like one of its parameters, shape "
        "symbols or the grid's names (B, F, k, row, x, y), got `k`")


GCC = shutil.which("gcc")


@pytest.mark.skipif(GCC is None, reason="gcc is not on the PATH")
def test_the_facts_header_is_c89_and_static_asserts_the_vsn_layouts(tmp_path: Path) -> None:
    facts = GENERATED / "own_kernel_facts.h"
    unit = tmp_path / "c89.c"
    unit.write_text(f'#include "{facts}"\nint lg_width = LG_own_kernel__Window__snap__WIDTH;\n')
    c89 = subprocess.run([str(GCC), "-std=c89", "-pedantic-errors", "-fsyntax-only", str(unit)],
                         capture_output=True, text=True)
    assert c89.returncode == 0, c89.stderr
    host = tmp_path / "host.c"
    host.write_text('#include "own_kernel_facts.h"\n'
                    "_Static_assert(LG_own_kernel__Window__ROW_STRIDE == 56, \"Window rows\");\n"
                    "_Static_assert(LG_own_kernel__Window__snap__WIDTH == 40, \"snap width\");\n"
                    "_Static_assert(LG_own_kernel__Window__snap__ROW_STRIDE == 56, \"snap rows are 56 apart\");\n"
                    "_Static_assert(LG_own_kernel__Window__context__BYTE_OFFSET == 160, \"context at byte 160\");\n"
                    "_Static_assert(LG_own_kernel__Window__context__session__OFFSET == 47, \"session\");\n"
                    "_Static_assert(LG_own_kernel__Weights__DIM0 == 40, \"W rows\");\n"
                    "_Static_assert(LG_own_kernel__Features__ROW_BYTES == 160, \"Features rows\");\n")
    done = subprocess.run([str(GCC), "-std=c11", "-pedantic-errors", "-fsyntax-only", "-I", str(GENERATED), str(host)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    wrong = tmp_path / "wrong.c"
    wrong.write_text('#include "own_kernel_facts.h"\n'
                     "_Static_assert(LG_own_kernel__Window__snap__ROW_STRIDE == 40, \"the seed bug's stride\");\n")
    done = subprocess.run([str(GCC), "-std=c11", "-fsyntax-only", "-I", str(GENERATED), str(wrong)],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "the seed bug's stride" in done.stderr


class _Device:
    """What `Window.check` reads of a device array: `__cuda_array_interface__` (byte strides)."""

    def __init__(self, shape: tuple[int, ...], strides: tuple[int, ...] | None = None) -> None:
        self.__cuda_array_interface__: dict[str, Any] = {
            "version": 3, "shape": shape, "typestr": "<f4", "data": (0x7F00_0000_0000, False), "strides": strides}
        self.device = SimpleNamespace(id=0)


def test_window_check_raises_the_launchers_lg601_for_a_slice() -> None:
    import importlib

    from layoutgen.runtime.errors import LaunchError

    own = importlib.import_module("generated.own_kernel")
    own.Window.check(_Device((4, 8, 56)))  # the whole array fits
    with pytest.raises(LaunchError) as caught:
        own.Window.check(_Device((4, 8, 40), strides=(8 * 56 * 4, 56 * 4, 4)))  # window[:, :, :40]
    assert caught.value.diagnostic.code == "LG601"
    assert str(caught.value.diagnostic.message) == (
        "`Window.check.data` (Window, layout Window [B, K, 56] f32) got an array of shape [4, 8, 40], strides "
        "(448, 56, 1) (elements), f32 on device 0")
