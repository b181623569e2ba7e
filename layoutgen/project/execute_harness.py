"""The host program of one kernel for ``layoutgen check --execute``: its C++ text and how it is built.

The program includes the host runtime and the sanitizer layoutgen ships (``layoutgen/include/lg/host/``),
then the kernel's file of the debug build (its views check each index, reporting through the sanitizer),
and runs the kernel's grid over arrays the sanitizer allocates, fills and poisons from the footprints.
It is built with AddressSanitizer, -O1 and line tables (a finding's address is read back to the user's
line through the ``#line`` directives of the generated file), and cached by the hash of everything that
goes into it, which holds no path of this checkout: the same program serves every checkout of a project.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..codegen.pymodule import PyKernel
from .footprints import Footprint

#: The headers layoutgen ships for the host (``#include "lg/host/runtime.h"``).
INCLUDE_ROOT = Path(__file__).resolve().parent.parent / "include"
#: The host's stand-ins for CUDA's own headers (``cuda_fp16.h``, ``cuda_bf16.h``), first on the include path.
CUDA_STAND_INS = INCLUDE_ROOT / "lg" / "host" / "cuda"
#: Compilers tried in this order where ``CXX`` names none.
COMPILERS = ("g++", "clang++")
#: How the host program is built: C++20, AddressSanitizer that goes on after a report (every bad line of a
#: kernel in one run), line tables for the findings' lines, -O1 (fast to build, and fast enough for the small
#: sizes of the run), a fixed address (addr2line reads the findings'). The files' names in the line tables are
#: mapped apart from these (:func:`~.execute_findings.prefix_maps`).
FLAGS = ("-std=c++20", "-O1", "-g1", "-fsanitize=address", "-fsanitize-recover=address", "-fno-omit-frame-pointer",
         "-no-pie", "-pthread", "-w", "-Wno-unknown-pragmas")
_ACCESS = {"in": 0, "out": 1, "inout": 2, "shared": 3}
#: The value each kind of scalar gets on the CPU run: finite, non-zero, small (an existing kernel's too).
SCALAR_VALUES = {"float": "0.5", "int": "1", "uint": "1", "bool": "true"}


def find_compiler() -> str | None:
    """The host C++ compiler: ``CXX`` where set, else the first of :data:`COMPILERS` on the path."""
    named = os.environ.get("CXX")
    if named:
        return shutil.which(named)
    for name in COMPILERS:
        found = shutil.which(name)
        if found:
            return found
    return None


@dataclass(frozen=True)
class HostProgram:
    """One kernel's host program: what it runs and the C++ that runs it."""

    kernel: str
    source: str  # the kernel's generated file name (`variable_selection_fwd.cu`)
    footprints: tuple[Footprint, ...]  # parameters first, in order, then the shared arrays
    params: int  # how many of the footprints are parameters
    blocks: int
    threads: int
    shared_bytes: int
    text: str


def _literal(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


def host_program(kernel: PyKernel, source: str, params: Sequence[Footprint], shared: Sequence[Footprint],
                 shared_bytes: int, sizes: dict[str, int], blocks: int, seed: int = 1,
                 call: str | None = None) -> HostProgram:
    """The C++ of the host program of ``kernel``, whose generated file is ``source``; ``call``: the kernel's call
    where its signature is not the generated one (an existing kernel's, :mod:`.execute_existing`)."""
    every = [*params, *shared]
    rows = []
    for f in every:
        axis = f.axis or (0, 0, 0, 1)
        rows.append(f"    {{{_literal(f.name)}, {_literal(f.what)}, {_ACCESS[f.access]}, {f.itemsize}, '{f.kind}', "
                    f"{f.layout_rows}LL, {f.row_stride}LL, {f.offset}LL, {f.width}LL, "
                    f"{axis[0]}LL, {axis[1]}LL, {axis[2]}LL, {axis[3]}LL, {f.shared_start}LL}},")
    by_name = {p.name: p for p in kernel.params}
    args = [f"reinterpret_cast<{'const ' if by_name[f.name].access == 'in' else ''}{f.c_type}*>"
            f"(lg_regions[{n}].base)" for n, f in enumerate(params)]
    args += [f"static_cast<{s.c_type}>({SCALAR_VALUES[s.kind]})" for s in kernel.scalars]
    args += [f"{sizes[s]}LL" for s in kernel.symbols]
    text = (
        f"// The host program of kernel `{kernel.name}` for `layoutgen check --execute`.\n"
        '#include "lg/host/runtime.h"\n'
        '#include "lg/host/sanitizer.h"\n'
        f'#include "{source}"\n\n'
        "static lg_san::Region lg_regions[] = {\n" + "\n".join(rows) + "\n};\n\n"
        "int main() {\n"
        f"    static lg_san::Launch launch{{{_literal(kernel.name)}, lg_regions, {len(every)}, {shared_bytes}LL, {seed}u}};\n"
        "    lg_san::prepare(launch);\n"
        f"    lg_host::run({blocks}u, {kernel.block}u, [] {{ {call or kernel.name + '(' + ', '.join(args) + ')'}; }}, lg_san::reset_shared);\n"
        "    return lg_san::finish(launch);\n"
        "}\n"
    )
    return HostProgram(kernel.name, source, tuple(every), len(params), blocks, kernel.block, shared_bytes, text)


def headers_digest(folders: Sequence[Path]) -> str:
    """A hash of every file under the device library layoutgen ships (the host runtime and sanitizer, and the
    headers the debug build's files include: lg/checked.cuh...) and the project's header folders."""
    h = hashlib.sha256()
    for folder in (INCLUDE_ROOT / "lg", *folders):
        if not folder.is_dir():
            continue
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            h.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()


def compiler_version(compiler: str) -> str:
    run = subprocess.run([compiler, "--version"], capture_output=True, text=True, timeout=60)
    return run.stdout.splitlines()[0] if run.stdout else compiler


def build_key(program: HostProgram, files: dict[str, str], compiler: str, version: str, headers: str) -> str:
    """The cache key of a host program: its text, the generated files it includes, the compiler and flags."""
    h = hashlib.sha256()
    for part in (program.text, compiler, version, " ".join(FLAGS), headers,
                 *(f"{name}\0{text}" for name, text in sorted(files.items()))):
        h.update(part.encode() + b"\0")
    return h.hexdigest()


def compile_program(compiler: str, source: Path, executable: Path, include: Sequence[Path], root: Path,
                    maps: Sequence[str] = ()) -> str | None:
    """Build ``source`` into ``executable`` in the project ``root`` (the generated files' ``#line`` names are
    relative to it), ``maps`` naming its files apart from where they lie; the compiler's errors where it fails,
    else None."""
    command = [compiler, *FLAGS, *maps, "-I", str(CUDA_STAND_INS), "-I", str(INCLUDE_ROOT), "-I", str(source.parent),
               *(f"-I{folder}" for folder in include), str(source), "-o", str(executable)]
    run = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=root)
    return None if run.returncode == 0 else run.stderr
