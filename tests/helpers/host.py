"""Generated kernels built for the CPU with the host C++ compiler, CUDA's built-ins emulated by tests/host/.

Two shims: ``cuda_shim.h`` runs one function call per thread (:func:`host_kernel`), enough for kernels without
barriers; ``cuda_block_shim.h`` runs each block's threads as host threads with real barriers and emulates the
warp's collectives (:func:`cooperative`). Either way the very same generated sources run here, so every index
their accessors compute is checked on a machine without a GPU.
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

REPO = Path(__file__).resolve().parents[2]
COMPILER = shutil.which("g++") or shutil.which("c++")
#: layoutgen's device library (`#include <lg/lg.cuh>` in every generated views header).
LIBRARY = REPO / "layoutgen" / "include"
#: Marks a module or test that builds kernels for the host.
needs_compiler = pytest.mark.skipif(COMPILER is None, reason="no host C++ compiler (g++) here")


def host_kernel(kernel: str, tmp: Path, folder: Path, signature: tuple[str, str, str]) -> Any:
    """``folder/<function>.cu`` compiled for the host: ``fn(*pointers, *sizes, threads, block)``. ``signature``
    is (the generated kernel's name, its C++ parameter list, the arguments passed on); ``kernel`` names the
    files built in ``tmp``."""
    function, params, args = signature
    source = tmp / f"{kernel}_host.cpp"
    source.write_text(
        '#include "cuda_shim.h"\n'
        f'#include "{function}.cu"\n'
        f'extern "C" void host_launch({params}, long long threads, int block) {{\n'
        "    blockDim.x = block;\n"
        "    for (long long t = 0; t < threads; ++t) {\n"
        "        blockIdx.x = static_cast<unsigned>(t / block);\n"
        "        threadIdx.x = static_cast<unsigned>(t % block);\n"
        f"        {function}({args});\n"
        "    }\n"
        "}\n",
        encoding="utf-8",
    )
    library = tmp / f"{kernel}.so"
    run = subprocess.run(
        [str(COMPILER), "-std=c++17", "-O1", "-shared", "-fPIC", "-Wall", "-Werror", "-Wno-unused-variable",
         "-Wno-unknown-pragmas", "-I", str(folder), "-I", str(REPO / "tests" / "host"), "-I", str(LIBRARY), str(source), "-o",
         str(library)],
        capture_output=True, text=True,
    )
    assert run.returncode == 0, run.stderr
    return ctypes.CDLL(str(library)).host_launch


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

    ``shared`` names the kernel's dynamic shared buffer where it is not ``lg_shared`` (the shim's);
    ``include`` are further header folders (a project's ``[tool.layoutgen] include``)."""
    args = ", ".join(p.rsplit(" ", 1)[-1].lstrip("*") for p in params.split(", "))
    harness = tmp / f"{function}_host.cpp"
    harness.write_text(
        '#include "cuda_block_shim.h"\n'
        + (f"alignas(16) unsigned char {shared}[256 * 1024];\n" if shared else "")
        + f'#include "{source.name}"\n'
        f'extern "C" void host_launch({params}, int grid, int block) {{\n'
        f"    lg_host_run(grid, block, [&] {{ {function}({args}); }});\n"
        "}\n",
        encoding="utf-8",
    )
    library = tmp / f"{function}.so"
    run = subprocess.run(
        [str(COMPILER), "-std=c++20", "-O2", "-shared", "-fPIC", "-pthread", "-Wall", "-Werror",
         "-Wno-unused-variable", "-Wno-unknown-pragmas", "-I", str(source.parent), "-I", str(REPO / "tests" / "host"),
         *(f"-I{folder}" for folder in include), "-I", str(LIBRARY), str(harness), "-o", str(library)],
        capture_output=True, text=True, timeout=300,
    )
    assert run.returncode == 0, run.stderr
    return ctypes.CDLL(str(library)).host_launch
