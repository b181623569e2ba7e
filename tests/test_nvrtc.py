"""NVRTC compile to cubin, without a GPU: real compiles, real logs."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from layoutgen.runtime.device_library import LIBRARY_INCLUDE

import layoutgen
from layoutgen.runtime import nvrtc as rt
from layoutgen.runtime import paths
from layoutgen.runtime.nvrtc import (
    CompileError,
    CompileRequest,
    KernelResources,
    NvrtcUnavailableError,
    compile_cubin,
    nvrtc_version,
    parse_errors,
    parse_resources,
)
from layoutgen.schema.diagnostics import Site

SCALE = r"""
extern "C" __global__ void scale(const float* x, float* y, int n) {
    __shared__ float tile[4];
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    tile[threadIdx.x & 3] = i < n ? x[i] : 0.0f;
    __syncthreads();
    if (i < n) y[i] = 2.0f * tile[(threadIdx.x + 1) & 3];
}
"""

HALF = r"""
#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void convert(const __half* x, __nv_bfloat16* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = __float2bfloat16(__half2float(x[i]) * 0.5f);
}
"""

# 48 live floats under a 24-register cap: ptxas must spill. `helper` is a
# non-inlined device function whose "Function properties" come after the kernel.
SPILL = r"""
__device__ __noinline__ float helper(const float* a, int j) { return a[j] * 3.0f; }
extern "C" __global__ void spill(float* y, int n) {
    float acc[48];
    #pragma unroll
    for (int i = 0; i < 48; i++) acc[i] = y[i * n + threadIdx.x];
    #pragma unroll
    for (int r = 0; r < 8; r++) {
        #pragma unroll
        for (int i = 0; i < 48; i++) acc[i] = acc[i] * acc[(i + r + 1) % 48] + 1.0f;
    }
    float s = 0.0f;
    #pragma unroll
    for (int i = 0; i < 48; i++) s += acc[i] * i;
    y[threadIdx.x] = s + helper(y, n);
}
"""

# A real ptxas -v log (NVRTC 13.5, sm_90), kept verbatim.
CAPTURED_LOG = """\
ptxas info    : Overriding maximum register limit 256 for 'spill' with  24 of maxrregcount option
ptxas info    : 4 bytes gmem
ptxas info    : Compiling entry function '_Z4cppkPfd' for 'sm_90'
ptxas info    : Function properties for _Z4cppkPfd
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers
ptxas info    : Compile time = 29.741 ms
ptxas info    : Compiling entry function 'spill' for 'sm_90'
ptxas info    : Function properties for spill
ptxas         .     704 bytes stack frame, 1312 bytes spill stores, 1396 bytes spill loads
ptxas info    : Used 24 registers, used 0 barriers, 704 bytes cumulative stack size
ptxas info    : Compile time = 159.745 ms
ptxas info    : Function properties for _Z6helperPfi
ptxas         .     8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'k' for 'sm_90'
ptxas info    : Function properties for k
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, used 1 barriers, 16 bytes smem
ptxas info    : Compile time = 3.097 ms
"""


def elf_sm(cubin: bytes) -> int:
    """The SM a CUDA ELF was built for (e_flags bits 8..15), after checking the header."""
    assert cubin[:4] == b"\x7fELF"
    assert struct.unpack_from("<H", cubin, 18)[0] == 190  # EM_CUDA
    flags: int = struct.unpack_from("<I", cubin, 48)[0]
    return (flags >> 8) & 0xFF


# -- compiling ---------------------------------------------------------------


def test_small_kernel_compiles_to_an_sm90_cubin() -> None:
    result = compile_cubin(CompileRequest(SCALE, "generated/scale.cu"))
    assert result.cubin.startswith(b"\x7fELF")
    assert elf_sm(result.cubin) == 90
    assert b"scale" in result.cubin
    assert result.origin == "compiled"
    assert result.resources == ()  # no report asked


def test_the_requested_arch_is_the_one_built() -> None:
    result = compile_cubin(CompileRequest(SCALE, "generated/scale.cu", arch="sm_80"))
    assert elf_sm(result.cubin) == 80


def test_fp16_and_bf16_headers_are_found() -> None:
    assert any((d / "cuda_fp16.h").is_file() for d in paths.cuda_include_dirs())
    result = compile_cubin(CompileRequest(HALF, "generated/convert.cu"))
    assert elf_sm(result.cubin) == 90


def test_request_headers_are_included_by_name() -> None:
    src = '#include "views.cuh"\nextern "C" __global__ void k(float* y) { y[threadIdx.x] = WIDTH; }\n'
    req = CompileRequest(src, "generated/k.cu", headers=(("views.cuh", "constexpr int WIDTH = 56;\n"),))
    assert compile_cubin(req).cubin.startswith(b"\x7fELF")


def test_report_parses_registers_and_shared_memory() -> None:
    result = compile_cubin(CompileRequest(SCALE, "generated/scale.cu", report=True))
    (res,) = result.resources
    assert res.kernel == "scale"
    assert res.registers > 0
    assert res.shared_bytes == 16
    assert (res.spill_stores, res.spill_loads, res.stack_frame) == (0, 0, 0)
    assert "ptxas info    : Used" in result.log


def test_report_parses_spills_and_skips_device_functions() -> None:
    req = CompileRequest(SPILL, "generated/spill.cu", options=("--maxrregcount=24",), report=True)
    result = compile_cubin(req)
    (res,) = result.resources  # `helper` is not a kernel
    assert res.kernel == "spill"
    assert res.registers == 24
    assert res.spill_stores > 0 and res.spill_loads > 0 and res.stack_frame > 0
    (diag,) = result.report(Site("examples/spill.cu.j2", 3))
    assert diag.code == "LG505"
    assert str(diag).startswith("examples/spill.cu.j2:3: note[LG505]: `spill`: 24 registers, ")
    assert diag.hint is not None and "spills registers" in diag.hint


def test_parse_resources_on_a_captured_log() -> None:
    assert parse_resources(CAPTURED_LOG) == (
        KernelResources("_Z4cppkPfd", 8, 0, 0, 0, 0),
        KernelResources("spill", 24, 1312, 1396, 704, 0),
        KernelResources("k", 10, 0, 0, 0, 16),
    )
    assert parse_resources("") == ()


def test_std_option_replaces_the_default() -> None:
    src = SCALE + "#if __cplusplus < 202002L\n#error not C++20\n#endif\n"
    req = CompileRequest(src, "generated/scale.cu", options=("--std=c++20",))
    assert "--std=c++17" not in req.nvrtc_options()
    assert "warning" not in compile_cubin(req).log


def test_nvrtc_version() -> None:
    major, minor = nvrtc_version()
    assert (major, minor) >= (12, 0)


# -- errors ------------------------------------------------------------------


def test_line_directives_map_every_error_to_the_template() -> None:
    src = (
        'extern "C" __global__ void ok(float* y) { y[0] = 1.0f; }\n'
        '#line 7 "tpl/foo.cu.j2"\n'
        "__device__ int g() { return 1 }\n"
        "__device__ int h() { retrun 2; }\n"
    )
    with pytest.raises(CompileError) as info:
        compile_cubin(CompileRequest(src, "generated/foo.cu"))
    err = info.value
    # Each keeps the source line and its caret; the warning after them, and what it says, is left out.
    assert [(d.code, d.site, d.message) for d in err.diagnostics] == [
        ("LG501", Site("tpl/foo.cu.j2", 7), 'expected a ";"\n'
                                            "    __device__ int g() { return 1 }\n"
                                            "                                  ^"),
        ("LG501", Site("tpl/foo.cu.j2", 8), 'identifier "retrun" is undefined\n'
                                            "    __device__ int h() { retrun 2; }\n"
                                            "                         ^"),
        ("LG501", Site("tpl/foo.cu.j2", 8), 'expected a ";"\n'
                                            "    __device__ int h() { retrun 2; }\n"
                                            "                                ^"),
    ]
    assert err.diagnostic == err.diagnostics[0]
    assert err.code == "LG501" and err.site == Site("tpl/foo.cu.j2", 7)
    assert str(err).splitlines()[::3] == [
        'tpl/foo.cu.j2:7: error[LG501]: expected a ";"',
        'tpl/foo.cu.j2:8: error[LG501]: identifier "retrun" is undefined',
        'tpl/foo.cu.j2:8: error[LG501]: expected a ";"',
    ]
    assert "3 errors detected" in err.log  # the full log, warnings included
    assert "warning" in err.log


def test_errors_without_line_directives_name_the_request() -> None:
    with pytest.raises(CompileError) as info:
        compile_cubin(CompileRequest("__global__ void k() { nope(); }\n", "generated/k.cu"))
    (diag,) = info.value.diagnostics
    assert diag.site == Site("generated/k.cu", 1)
    assert diag.message == ('identifier "nope" is undefined\n'
                            "    __global__ void k() { nope(); }\n"
                            "                          ^")


def test_errors_in_a_header_point_at_its_template() -> None:
    header = '#line 3 "layoutgen/templates/views.cuh.j2"\nconstexpr int A = 1;\nconstexpr int B = ;\n'
    req = CompileRequest('#include "views.cuh"\n', "generated/k.cu", headers=(("views.cuh", header),))
    with pytest.raises(CompileError) as info:
        compile_cubin(req)
    assert [d.site for d in info.value.diagnostics] == [Site("layoutgen/templates/views.cuh.j2", 4)]


def test_rejected_option_is_an_error_without_a_site() -> None:
    with pytest.raises(CompileError) as info:
        compile_cubin(CompileRequest(SCALE, "generated/scale.cu", options=("--bogus",)))
    (diag,) = info.value.diagnostics
    assert diag.site is None
    assert diag.message == "nvrtc: unrecognized option --bogus found"


def test_missing_header_has_a_hint() -> None:
    with pytest.raises(CompileError) as info:
        compile_cubin(CompileRequest("#include <no_such_header.h>\n", "generated/k.cu"))
    (diag,) = info.value.diagnostics
    assert diag.site == Site("generated/k.cu", 1)
    assert diag.message == ('cannot open source file "no_such_header.h"\n'
                            "    #include <no_such_header.h>\n"
                            "                               ^")
    assert diag.hint is not None and paths.CUDA_INCLUDE_ENV in diag.hint


def test_ptxas_errors_are_reported() -> None:
    src = 'extern "C" __global__ void big(float* y) { __shared__ float s[20000]; s[threadIdx.x] = 1; y[0] = s[1]; }'
    with pytest.raises(CompileError) as info:
        compile_cubin(CompileRequest(src, "generated/big.cu"))
    (diag,) = info.value.diagnostics
    assert diag.message == "ptxas: Entry function 'big' uses too much shared data (0x13880 bytes, 0xc000 max)"


def test_parse_errors_skips_warnings_and_excerpts() -> None:
    log = (
        'a/b (1).cu.j2(12): warning #177-D: variable "x" was declared but never referenced\n'
        "  int x;\n      ^\n\n"
        "a/b (1).cu.j2(13): error: expected an expression\n"
        "At end of source: error: expected a \";\"\n"
    )
    assert [(d.site, d.message) for d in parse_errors(log)] == [
        (Site("a/b (1).cu.j2", 13), "expected an expression"),
        (None, 'expected a ";" (at the end of a source)'),
    ]


def test_parse_log_keeps_each_errors_lines_and_nothing_of_warnings_or_ptxas_info() -> None:
    from layoutgen.runtime.nvrtc import LogError, parse_log

    log = (
        "views.cuh(80): error: static assertion failed with \"narrow\"\n"
        "      static_assert(N <= 4, \"narrow\");\n"
        "      ^\n"
        "          detected during:\n"
        "            instantiation of \"f<8>\" at line 12 of views.cuh\n"
        "            instantiation of \"g<8>\" at line 4 of k.cu.j2\n"
        "k.cu.j2(5): warning #177-D: variable \"x\" was declared but never referenced\n"
        "      int x;\n"
        "ptxas error   : Entry function 'k' uses too much shared data (0x13880 bytes, 0xc000 max)\n"
        "ptxas info    : Used 10 registers\n"
    )
    assert parse_log(log) == (
        LogError(Site("views.cuh", 80), 'static assertion failed with "narrow"', (
            '      static_assert(N <= 4, "narrow");', "      ^", "          detected during:",
            '            instantiation of "f<8>" at line 12 of views.cuh',
            '            instantiation of "g<8>" at line 4 of k.cu.j2',
        )),
        LogError(None, "ptxas: Entry function 'k' uses too much shared data (0x13880 bytes, 0xc000 max)"),
    )
    first = parse_log(log)[0]
    assert first.instantiated_at == (Site("views.cuh", 12), Site("k.cu.j2", 4))  # the user's call last
    assert first.text({"views.cuh": "generated/s/views.cuh"}, "in generated/s/views.cuh:80").splitlines()[::4] == [
        'static assertion failed with "narrow" (in generated/s/views.cuh:80)',
        '              instantiation of "f<8>" at line 12 of generated/s/views.cuh',
    ]


def test_program_is_destroyed_on_every_path(monkeypatch: pytest.MonkeyPatch) -> None:
    from cupy.cuda import nvrtc as lib

    created: list[int] = []
    destroyed: list[int] = []
    real_create, real_destroy = lib.createProgram, lib.destroyProgram

    def create(*args: object) -> int:
        created.append(real_create(*args))
        return created[-1]

    def destroy(prog: int) -> None:
        destroyed.append(prog)
        real_destroy(prog)

    monkeypatch.setattr(lib, "createProgram", create)
    monkeypatch.setattr(lib, "destroyProgram", destroy)
    compile_cubin(CompileRequest(SCALE, "generated/ok.cu"))
    bad = [
        CompileRequest("int x = ;", "generated/bad.cu"),  # compile error
        CompileRequest(SCALE, "b.cu", options=("--bogus",)),  # rejected option
        CompileRequest(SCALE, "b.cu", options=("-dlto",)),  # compiles, but to LTO-IR: no cubin
    ]
    for req in bad:
        with pytest.raises(CompileError):
            compile_cubin(req)
    assert len(created) == 4 and destroyed == created


def test_missing_cupy_gives_an_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy.cuda", None)
    with pytest.raises(NvrtcUnavailableError) as info:
        compile_cubin(CompileRequest(SCALE, "generated/scale.cu"))
    assert isinstance(info.value, CompileError) and info.value.code == "LG501"
    assert str(info.value).startswith("error[LG501]: NVRTC is not available: ")
    assert info.value.hint == ("install layoutgen[cuda13] (CuPy, NVRTC and the CUDA headers for a CUDA 13 driver) or "
                               "layoutgen[cuda12] (the same for a CUDA 12 driver)")


def test_importing_the_runtime_does_not_import_cupy() -> None:
    code = "import sys, layoutgen.runtime; assert 'cupy' not in sys.modules, 'cupy imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


# -- requests and keys ------------------------------------------------------


def test_request_validation() -> None:
    with pytest.raises(ValueError, match=r"`arch` must be a real architecture such as 'sm_90' \(a cubin\), got 'compute_90'"):
        CompileRequest(SCALE, "k.cu", arch="compute_90")
    with pytest.raises(ValueError, match="`options` must not set the architecture, got '-arch=sm_80'; use `arch`"):
        CompileRequest(SCALE, "k.cu", options=("-arch=sm_80",))
    with pytest.raises(ValueError, match="header names must be unique, got 'a.cuh' twice"):
        CompileRequest(SCALE, "k.cu", headers=(("a.cuh", "x"), ("a.cuh", "y")))
    req = CompileRequest(SCALE, "k.cu", headers=(("b.cuh", "2"), ("a.cuh", "1")))
    assert req.headers == (("a.cuh", "1"), ("b.cuh", "2"))
    assert CompileRequest(SCALE, "k.cu", arch="sm_90a").arch == "sm_90a"


def test_key_changes_with_every_input() -> None:
    base = CompileRequest(SCALE, "k.cu", headers=(("a.cuh", "int a;"),), options=("-lineinfo",))
    variants = [
        CompileRequest(SCALE + " ", "k.cu", headers=(("a.cuh", "int a;"),), options=("-lineinfo",)),
        CompileRequest(SCALE, "k.cu", headers=(("a.cuh", "int b;"),), options=("-lineinfo",)),
        CompileRequest(SCALE, "k.cu", headers=(("b.cuh", "int a;"),), options=("-lineinfo",)),
        CompileRequest(SCALE, "k.cu", headers=(("a.cuh", "int a;"), ("c.cuh", "")), options=("-lineinfo",)),
        CompileRequest(SCALE, "k.cu", headers=(("a.cuh", "int a;"),), options=()),
        CompileRequest(SCALE, "k.cu", headers=(("a.cuh", "int a;"),), options=("-lineinfo",), arch="sm_80"),
    ]
    keys = {base.key()} | {v.key() for v in variants}
    assert len(keys) == 1 + len(variants)
    same = CompileRequest(SCALE, "k.cu", headers=(("a.cuh", "int a;"),), options=("-lineinfo",))
    assert same.key() == base.key() and len(base.key()) == 64
    # `report` decides what the result carries, not the cubin: it is no part of the key.
    reported = CompileRequest(SCALE, "k.cu", headers=(("a.cuh", "int a;"),), options=("-lineinfo",), report=True)
    assert reported.key() == base.key() and reported.nvrtc_options() == base.nvrtc_options()


def test_key_covers_versions_and_include_folders(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    req = CompileRequest(SCALE, "k.cu")
    key = req.key()
    with monkeypatch.context() as m:
        m.setattr(layoutgen.version, "__version__", "999.0")
        assert req.key() != key
    with monkeypatch.context() as m:
        m.setattr(rt, "nvrtc_version", lambda: (99, 0))
        assert req.key() != key
    with monkeypatch.context() as m:
        m.setenv(paths.CUDA_INCLUDE_ENV, str(tmp_path))
        assert req.key() != key
    assert req.key() == key


# -- include folders -----------------------------------------------------------


def test_include_override_is_used_as_given(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    monkeypatch.setenv(paths.CUDA_INCLUDE_ENV, os.pathsep.join([str(a), "", str(b), str(a)]))
    assert paths.cuda_include_dirs() == (a, b)
    assert CompileRequest(SCALE, "k.cu").nvrtc_options() == (
        "-arch=sm_90", "--std=c++17", f"-I{LIBRARY_INCLUDE}", f"-I{a}", f"-I{b}", "--ptxas-options=-v")


def test_include_search_order(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(paths.CUDA_INCLUDE_ENV, raising=False)
    monkeypatch.delenv("CUDA_HOME", raising=False)
    toolkit = tmp_path / "cuda-13.9"
    (toolkit / "include" / "cccl").mkdir(parents=True)
    (tmp_path / "cuda").symlink_to(toolkit)
    monkeypatch.setenv("CUDA_PATH", str(toolkit))
    monkeypatch.setattr(paths, "DEFAULT_TOOLKIT", tmp_path / "cuda")  # same folder by another name
    wheel = paths.wheel_include_dirs()
    assert paths.cuda_include_dirs() == (*wheel, toolkit / "include", toolkit / "include" / "cccl")
    if wheel:  # the nvidia-cuda-runtime wheel is installed here
        assert wheel[0].parts[-3:] == ("nvidia", "cu13", "include")
        assert (wheel[0] / "cuda_fp16.h").is_file()
