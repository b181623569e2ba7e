"""Registers of the VSN kernels, generated and by hand, as a given NVRTC library compiles them: no GPU needed.

    .venv/bin/python benchmarks/roofline/registers_with.py /path/to/libnvrtc.so.13 [...]

bench_roofline.py prints the registers of the kernels the GPU machine loaded, compiled by the NVRTC found
there (13.0 on the H200 of 2026-12-01), which need not be the one installed here (13.5): register
allocation differs between NVRTC releases by a few registers either way. This script compiles the same
sources with the same options as bench_roofline.py (layoutgen's CompileRequest) through each library given,
loaded by path with ctypes, so the GPU machine's counts can be seen and compared on any machine: unpack that
release's nvidia-cuda-nvrtc wheel and pass its lib/libnvrtc.so.13 (its folder must also be on
LD_LIBRARY_PATH, for libnvrtc-builtins). Prints a table (registers, and the bytes of spill stores + loads where
there are any); no assertion.
"""

from __future__ import annotations

import ctypes
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from layoutgen.runtime.nvrtc import CompileRequest, parse_resources  # noqa: E402

KERNELS = ("fwd", "bwd")


class Nvrtc:
    """One NVRTC library, loaded by path: compile a request, return its kernels' registers from the log."""

    def __init__(self, path: str) -> None:
        self.lib = ctypes.CDLL(path)
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
        self.version = f"{major.value}.{minor.value}"

    def registers(self, request: CompileRequest) -> str:
        lib, program = self.lib, ctypes.c_void_p()
        names = [name.encode() for name, _ in request.headers]
        texts = [text.encode() for _, text in request.headers]
        count = len(request.headers)
        status = lib.nvrtcCreateProgram(ctypes.byref(program), request.source.encode(), request.name.encode(), count,
                                        (ctypes.c_char_p * max(count, 1))(*texts),
                                        (ctypes.c_char_p * max(count, 1))(*names))
        if status:
            return f"nvrtcCreateProgram: {status}"
        try:
            options = [o.encode() for o in request.nvrtc_options()]
            status = lib.nvrtcCompileProgram(program, len(options), (ctypes.c_char_p * len(options))(*options))
            size = ctypes.c_size_t()
            lib.nvrtcGetProgramLogSize(program, ctypes.byref(size))
            log = ctypes.create_string_buffer(size.value)
            lib.nvrtcGetProgramLog(program, log)
            text = log.value.decode(errors="replace")
            if status:
                return f"failed ({status}): {text.strip()[-300:]}"
            kernels = parse_resources(text)
            if not kernels:
                return "no count in the log"
            return ", ".join(f"{r.registers}" + (f" (spills {r.spill_stores}+{r.spill_loads} B)"
                                                if r.spill_stores or r.spill_loads else "") for r in kernels)
        finally:
            lib.nvrtcDestroyProgram(ctypes.byref(program))


def requests() -> list[tuple[str, CompileRequest]]:
    """What bench_roofline.py compiles: each generated kernel with its views header, each hand kernel alone."""
    include = (str(ROOT / "examples" / "vsn" / "include"),)
    folder = ROOT / "generated" / "vsn"
    header = (("vsn.cuh", (folder / "vsn.cuh").read_text()),)
    made = []
    for kernel in KERNELS:
        name = f"variable_selection_{kernel}"
        made.append((f"{name} generated", CompileRequest(source=(folder / f"{name}.cu").read_text(),
                                                           name=f"vsn/{name}.cu", headers=header, arch="sm_90",
                                                           include_dirs=include)))
        hand = ROOT / "benchmarks" / "roofline" / f"vsn_{kernel}_hand.cu"
        made.append((f"{name} by hand", CompileRequest(source=hand.read_text(), name=hand.name, arch="sm_90",
                                                         include_dirs=include)))
    return made


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__)
        return 2
    compilers = [Nvrtc(path) for path in paths]
    print(f"{'kernel':<36}" + "".join(f"{'NVRTC ' + c.version:>26}" for c in compilers))
    for label, request in requests():
        print(f"{label:<36}" + "".join(f"{c.registers(request):>26}" for c in compilers))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
