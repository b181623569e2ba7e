"""Generated kernels built for the CPU with the host C++ compiler, against the host runtime layoutgen ships.

Both builders include ``lg/host/runtime.h``, the runtime of ``layoutgen check --execute`` (CUDA's built-ins,
each block's threads as host threads with barriers that know which threads have returned, the warp's
collectives and mma emulated), so the tests exercise the very runtime users get. :func:`host_kernel` calls the
kernel function once per thread, one after another, in the calling thread: cheap for the many threads of a
kernel without barriers. :func:`cooperative` runs each block's threads as host threads (``lg_host::run``).
Either way the very same generated sources run here, so every index their accessors compute is checked on a
machine without a GPU.
"""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from layoutgen.project.execute_harness import CUDA_STAND_INS, INCLUDE_ROOT

REPO = Path(__file__).resolve().parents[2]
COMPILER = shutil.which("g++") or shutil.which("c++")
#: layoutgen's device library (`#include <lg/lg.cuh>` in every generated views header) and its host runtime.
LIBRARY = INCLUDE_ROOT
#: Marks a module or test that builds kernels for the host.
needs_compiler = pytest.mark.skipif(COMPILER is None, reason="no host C++ compiler (g++) here")

#: What every test program starts with: the shipped runtime, and the one thing it leaves to its includer. The
#: runtime reports a barrier some threads never reach (or two barriers reached at once) through
#: lg_host_violation, which `check --execute` takes from lg/host/sanitizer.h; that header needs AddressSanitizer,
#: which these builds do not use, so a violation here says what it was and aborts (the old shims hung instead).
PRELUDE = (
    '#include "lg/host/runtime.h"\n'
    "[[noreturn]] void lg_host_violation(const char* kind, const char* what, const void*) {\n"
    '    std::fprintf(stderr, "lg_host_violation: %s at %s, block %u thread %u\\n", kind, what, blockIdx.x,\n'
    "                 threadIdx.x);\n"
    "    std::abort();\n"
    "}\n"
)


def build_shared(source: Path, library: Path, standard: str, includes: tuple[Path, ...], *extra: str,
                 symbol: str = "host_launch") -> Any:
    """``source`` built into the shared library ``library`` with warnings as errors (the CUDA stand-ins and the
    device library on the include path after ``includes``); its function ``symbol``, returning a long long."""
    run = subprocess.run(
        [str(COMPILER), f"-std={standard}", "-shared", "-fPIC", "-Wall", "-Werror", "-Wno-unused-variable",
         "-Wno-unknown-pragmas", *extra, *(f"-I{folder}" for folder in includes), "-I", str(CUDA_STAND_INS),
         "-I", str(LIBRARY), str(source), "-o", str(library)],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    fn = getattr(ctypes.CDLL(str(library)), symbol)
    fn.restype = ctypes.c_longlong
    return fn


def host_kernel(kernel: str, tmp: Path, folder: Path, signature: tuple[str, str, str]) -> Any:
    """``folder/<function>.cu`` compiled for the host: ``fn(*pointers, *sizes, threads, block)``. ``signature``
    is (the generated kernel's name, its C++ parameter list, the arguments passed on); ``kernel`` names the
    files built in ``tmp``. The kernel must not meet a barrier: its threads run one after another."""
    function, params, args = signature
    source = tmp / f"{kernel}_host.cpp"
    source.write_text(
        PRELUDE
        + f'#include "{function}.cu"\n'
        f'extern "C" void host_launch({params}, long long threads, int block) {{\n'
        "    blockDim.x = block;\n"
        "    gridDim.x = static_cast<unsigned>((threads + block - 1) / block);\n"
        "    for (long long t = 0; t < threads; ++t) {\n"
        "        blockIdx.x = static_cast<unsigned>(t / block);\n"
        "        threadIdx.x = static_cast<unsigned>(t % block);\n"
        f"        {function}({args});\n"
        "    }\n"
        "}\n",
        encoding="utf-8",
    )
    return build_shared(source, tmp / f"{kernel}.so", "c++17", (folder,), "-O1")


def _ptr(a: np.ndarray[Any, Any]) -> ctypes.c_void_p:
    assert a.flags.c_contiguous
    return ctypes.c_void_p(a.ctypes.data)


def host_launch(fn: Any, arrays: list[np.ndarray[Any, Any]], sizes: list[int], threads: int, block: int) -> None:
    """Run ``fn`` (from :func:`host_kernel`) on ``arrays``, then the launch's sizes, in ``threads`` threads."""
    fn(*[_ptr(a) for a in arrays], *[ctypes.c_longlong(n) for n in sizes], ctypes.c_longlong(threads),
       ctypes.c_int(block))


def written_flat(tmp_path_factory: pytest.TempPathFactory, name: str, files: Mapping[str, str]) -> Path:
    """A new folder holding ``files`` (rendered paths -> text) side by side, for :func:`cooperative` to build
    kernels from: a kernel file includes its views header by its bare name."""
    tmp = tmp_path_factory.mktemp(name)
    for path, text in files.items():
        (tmp / Path(path).name).write_text(text, encoding="utf-8")
    return tmp


def cooperative(tmp: Path, source: Path, function: str, params: str, shared: str = "",
                include: tuple[Path, ...] = ()) -> Any:
    """``source``'s kernel ``function`` built for the host: ``fn(*pointers, B, K, grid, block)``.

    ``shared`` names the kernel's dynamic shared buffer where it is not ``lg_shared`` (the runtime's);
    ``include`` are further header folders (a project's ``[tool.layoutgen] include``)."""
    args = ", ".join(p.rsplit(" ", 1)[-1].lstrip("*") for p in params.split(", "))
    harness = tmp / f"{function}_host.cpp"
    harness.write_text(
        PRELUDE
        + (f"alignas(16) unsigned char {shared}[256 * 1024];\n" if shared else "")
        + f'#include "{source.name}"\n'
        f'extern "C" void host_launch({params}, int grid, int block) {{\n'
        f"    lg_host::run(grid, block, [&] {{ {function}({args}); }}, [](unsigned) {{}});\n"
        "}\n",
        encoding="utf-8",
    )
    return build_shared(harness, tmp / f"{function}.so", "c++20", (source.parent, *include), "-O2", "-pthread")


# The fault functions of the debug build (lg/fault.cuh on the GPU, lg/host/sanitizer.h in the CPU run),
# recording the first fault and counting them (tests/test_checked_pointers_host.py, tests/test_debug_headers.py).
RECORDED_FAULTS = """#include "lg/host/runtime.h"
[[noreturn]] void lg_host_violation(const char*, const char*, const void*) { std::abort(); }
#define LG_DEBUG_DEFINED
#include <lg/site.cuh>
namespace lg {
inline long long lg_test_hit[8], lg_test_hits;
inline void out_of_field(const char*, int param, long long row, long long col, long long, long long,
                         const char* = nullptr, int = 0) {
    if (lg_test_hits++ == 0) { lg_test_hit[0] = param; lg_test_hit[1] = row; lg_test_hit[2] = col; lg_test_hit[5] = -1; }
}
inline void out_of_footprint(const char*, int param, long long row, long long col, long long field_row, long long,
                             long long width, long long, int access, const char*, int line) {
    if (lg_test_hits++ == 0) {
        const long long words[] = {param, row, col, field_row, width, access, line};
        for (int n = 0; n < 7; ++n) lg_test_hit[n] = words[n];
    }
}
inline void unheld_read(const char*, int, long long, long long, long long, long long, const char*, int) {}
}  // namespace lg
"""
