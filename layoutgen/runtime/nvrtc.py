"""Compile CUDA C++ to a cubin with NVRTC, through CuPy's low-level bindings.

Always a **cubin** for an explicit ``sm_XX``, never PTX: a cubin from a newer
NVRTC loads on an older driver, PTX does not (see DESIGN.md, "Runtime").
``cupy.cuda.nvrtc`` needs no GPU, so this runs in CI; CuPy is imported only
when something is compiled, so importing this module is cheap and works
without CuPy. The NVRTC is whichever CuPy loads: ``layoutgen[cuda12]``
installs ``cupy-cuda12x`` with NVRTC 12 (cubins for CUDA 12 drivers),
``layoutgen[cuda13]`` ``cupy-cuda13x`` with NVRTC 13; the CUDA headers it
is given are those of the same major version.

Default options are ``-arch=<arch>``, ``--std=c++17`` (left out when the
request's options choose a standard), ``-I`` for each of the request's
project header folders (``include`` of ``[tool.layoutgen]``), then for the
device library's folder (:mod:`~layoutgen.runtime.device_library`), then for
each folder of :func:`~layoutgen.runtime.paths.cuda_include_dirs`.
``-default-device`` is deliberately *not* a default: generated code marks
every device function ``__device__``, so it compiles unchanged with nvcc
too; a request that wants it can pass it in ``options``.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from .. import version
from ..schema.diagnostics import Diagnostic, LayoutgenError, Site
from . import paths
from .device_library import LIBRARY_INCLUDE, library_digest
from .elf import whole_cubin
from .nvrtc_log import LogError, parse_errors, parse_log
from .project_headers import HeaderFolderError, project_header_digest

__all__ = [
    "CompileError", "CompileRequest", "CompileResult", "HeaderFolderError", "KernelResources", "LogError",
    "NvrtcUnavailableError", "check_arch", "compile_cubin", "nvrtc_version", "parse_errors", "parse_log",
    "parse_resources", "project_header_digest", "supported_archs",
]

_ARCH = re.compile(r"sm_\d{2,3}[af]?")
_ARCH_OPTIONS = ("-arch", "--gpu-architecture")
_STD_OPTIONS = ("-std", "--std")
_INSTALL_HINT = ("install layoutgen[cuda13] (CuPy, NVRTC and the CUDA headers for a CUDA 13 driver) or layoutgen[cuda12] "
                 "(the same for a CUDA 12 driver)")


@dataclass(frozen=True)
class CompileRequest:
    """One NVRTC compilation: a rendered source, its headers, an arch, options.

    ``name`` is the file name NVRTC reports for the main source (errors in
    lines after a ``#line`` directive name that directive's file instead).
    ``headers`` maps include names to their text; it is stored sorted by name.
    ``report`` asks for the registers and spills in the result. It takes no
    part in the options or the key: every compile runs ptxas with ``-v``, so
    a cached cubin serves requests with and without it. ``include_dirs`` are
    the project's header folders (made absolute here), searched in order
    before the CUDA headers; every file under them is part of the key
    (:func:`project_header_digest`). Construction raises
    ``ValueError`` for an arch that is not a real ``sm_XX`` (a ``compute_XX``
    would mean PTX), for an ``-arch`` in ``options`` or for a header name
    given twice.
    """

    source: str
    name: str
    headers: tuple[tuple[str, str], ...] = ()
    arch: str = "sm_90"
    options: tuple[str, ...] = ()
    report: bool = False
    include_dirs: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not _ARCH.fullmatch(self.arch):
            raise ValueError(f"`arch` must be a real architecture such as 'sm_90' (a cubin), got {self.arch!r}")
        for opt in self.options:
            if opt.startswith(_ARCH_OPTIONS):
                raise ValueError(f"`options` must not set the architecture, got {opt!r}; use `arch`")
        headers = tuple(sorted(self.headers))
        names = [n for n, _ in headers]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"header names must be unique, got {', '.join(map(repr, dupes))} twice")
        object.__setattr__(self, "headers", headers)
        object.__setattr__(self, "options", tuple(self.options))
        # Absolute and without `..`: the launcher (`generated/vsn/../../cuda/include`) and `check --compile`
        # (`<root>/cuda/include`) then give NVRTC the same options, so they share cache entries.
        object.__setattr__(self, "include_dirs", tuple(os.path.abspath(os.fspath(d)) for d in self.include_dirs))

    def nvrtc_options(self) -> tuple[str, ...]:
        """The full option list given to NVRTC: defaults, ``-I`` folders, ``options``.

        Raises nothing.
        """
        opts = [f"-arch={self.arch}"]
        if not any(o.startswith(_STD_OPTIONS) for o in self.options):
            opts.append("--std=c++17")
        opts += [f"-I{d}" for d in self.include_dirs]  # first, as nvcc searches -I before the system's
        opts.append(f"-I{LIBRARY_INCLUDE}")  # layoutgen's device library: `#include <lg/lg.cuh>`
        opts += [f"-I{d}" for d in paths.cuda_include_dirs(_loaded_major())]  # the headers of this NVRTC's major
        opts += self.options
        opts.append("--ptxas-options=-v")  # always: the resources cost nothing and keep the key report-free
        return tuple(opts)

    def key(self) -> str:
        """The cache key: sha256 (hex) of everything that decides the cubin.

        Source, every header, the full option list (so the include folders
        too), every file under the project header folders, the device
        library's headers (``lg/*.cuh``), the arch, the NVRTC version and
        layoutgen's version. Reads those files on every
        call, so a header edited since the last call gives another key. Raises
        :class:`NvrtcUnavailableError` when NVRTC cannot be loaded and
        :class:`HeaderFolderError` (LG514) for a header folder that is not there.
        """

        major, minor = nvrtc_version()
        payload = {
            "source": self.source,
            "headers": [list(h) for h in self.headers],
            "project_headers": project_header_digest(self.include_dirs),
            "library": library_digest(),  # the device library's headers (runtime/device_library.py)
            "options": list(self.nvrtc_options()),
            "arch": self.arch,
            "nvrtc": f"{major}.{minor}",
            "layoutgen": version.__version__,
        }
        blob = json.dumps(payload, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode("ascii")).hexdigest()


@dataclass(frozen=True)
class KernelResources:
    """What ptxas reported for one entry function (``--ptxas-options=-v``).

    ``kernel`` is the symbol name (mangled unless the kernel is
    ``extern "C"``); sizes are in bytes.
    """

    kernel: str
    registers: int
    spill_stores: int
    spill_loads: int
    stack_frame: int
    shared_bytes: int

    def __str__(self) -> str:
        return (
            f"`{self.kernel}`: {self.registers} registers, {self.spill_stores} bytes spill stores, "
            f"{self.spill_loads} bytes spill loads, {self.stack_frame} bytes stack, "
            f"{self.shared_bytes} bytes static shared memory"
        )


@dataclass(frozen=True)
class CompileResult:
    """A cubin, NVRTC's log and the resources parsed from it.

    ``origin`` says whether it was just compiled or read from a cache; it
    takes no part in equality.
    """

    cubin: bytes
    log: str
    resources: tuple[KernelResources, ...] = ()
    origin: Literal["compiled", "cache"] = field(default="compiled", compare=False)

    def report(self, site: Site | None = None) -> tuple[Diagnostic, ...]:
        """One LG505 diagnostic per kernel (registers, spills), at ``site``.

        Empty unless the request had ``report=True``. Raises nothing.
        """
        out = []
        for r in self.resources:
            hint = None
            if r.spill_stores or r.spill_loads:
                hint = "the kernel spills registers to local memory; lower per-thread state or raise the register limit"
            out.append(Diagnostic("LG505", str(r), site, hint))
        return tuple(out)


class CompileError(LayoutgenError):
    """NVRTC rejected a source (LG501); one diagnostic per error in its log.

    ``diagnostics`` holds all of them (``diagnostic`` is the first), each at
    the file and line NVRTC named, which ``#line`` directives point back at
    the user's template. ``log`` is NVRTC's full log. Constructing one
    raises ``ValueError`` when ``diagnostics`` is empty.
    """

    def __init__(self, diagnostics: tuple[Diagnostic, ...], log: str) -> None:
        if not diagnostics:
            raise ValueError("a CompileError needs at least one diagnostic")
        super().__init__(diagnostics[0])
        self.diagnostics = diagnostics
        self.log = log
        self.args = ("\n".join(str(d) for d in diagnostics),)


class NvrtcUnavailableError(CompileError):
    """CuPy or NVRTC cannot be loaded, so nothing can be compiled."""


def _load_nvrtc() -> Any:
    """CuPy's NVRTC module. Raises :class:`NvrtcUnavailableError`."""
    try:
        from cupy.cuda import nvrtc

        nvrtc.getVersion()  # loads libnvrtc: fails here, not mid-compile
    except (ImportError, OSError, RuntimeError, AttributeError) as exc:
        diag = Diagnostic("LG501", f"NVRTC is not available: {exc}", None, _INSTALL_HINT)
        raise NvrtcUnavailableError((diag,), "") from exc
    return nvrtc


@functools.cache
def nvrtc_version() -> tuple[int, int]:
    """NVRTC's (major, minor) version. Raises :class:`NvrtcUnavailableError`."""
    major, minor = _load_nvrtc().getVersion()
    return int(major), int(minor)


def _loaded_major() -> int | None:
    """NVRTC's major version where it can be loaded, else None (then no header folder is left out for its
    version: nothing can compile anyway, and the options still name the folders)."""
    try:
        return nvrtc_version()[0]
    except NvrtcUnavailableError:
        return None


@functools.cache
def supported_archs() -> tuple[int, ...] | None:
    """The ``sm_XX`` numbers this NVRTC compiles for, ascending (``nvrtcGetSupportedArchs``), or None where
    CuPy's bindings do not expose the call (NVRTC then says so itself, when it rejects an arch).

    Raises :class:`NvrtcUnavailableError`.
    """
    query = getattr(_load_nvrtc(), "getSupportedArchs", None)
    return None if query is None else tuple(sorted(int(n) for n in query()))


def check_arch(arch: str) -> None:
    """Raise :class:`CompileError` (LG501, naming ``arch`` and every arch NVRTC supports) unless NVRTC
    compiles for ``arch``; :class:`NvrtcUnavailableError` when NVRTC cannot be loaded.

    The arch is one setting for every kernel: checked once before anything compiles, its error is one
    diagnostic, not one per kernel. ``sm_90a`` counts as ``sm_90``. Raises ``ValueError`` for a string
    that is no ``sm_XX`` at all, as :class:`CompileRequest` does.
    """
    if not _ARCH.fullmatch(arch):
        raise ValueError(f"`arch` must be a real architecture such as 'sm_90' (a cubin), got {arch!r}")
    supported = supported_archs()
    number = int(re.sub(r"\D", "", arch))
    if supported is None or number in supported:
        return
    major, minor = nvrtc_version()
    listed = ", ".join(f"sm_{n}" for n in supported)
    diag = Diagnostic(
        "LG501", f"`arch` must be an architecture NVRTC {major}.{minor} compiles for ({listed}), got `{arch}`",
        hint="pass another --arch, or set `arch` in [tool.layoutgen]; other versions of nvidia-cuda-nvrtc compile "
        "for other GPUs",
    )
    raise CompileError((diag,), "")


def compile_cubin(req: CompileRequest) -> CompileResult:
    """Compile ``req`` to a cubin for ``req.arch``; needs no GPU.

    Raises :class:`CompileError` with one LG501 diagnostic per error NVRTC or
    ptxas reported (rejected options included), and
    :class:`NvrtcUnavailableError` when CuPy or NVRTC cannot be loaded. The
    NVRTC program is destroyed on every path. An arch NVRTC does not compile for is refused before
    anything else (:func:`check_arch`).
    """
    nvrtc = _load_nvrtc()
    check_arch(req.arch)
    names = [n.encode() for n, _ in req.headers]
    texts = [s.encode() for _, s in req.headers]
    try:
        prog = nvrtc.createProgram(req.source, req.name, texts, names)
    except nvrtc.NVRTCError as exc:
        diag = Diagnostic("LG501", f"NVRTC could not create a program for `{req.name}`: {exc}")
        raise CompileError((diag,), "") from exc
    try:
        try:
            nvrtc.compileProgram(prog, list(req.nvrtc_options()))
        except nvrtc.NVRTCError as exc:
            log = _clean(nvrtc.getProgramLog(prog))
            raise CompileError(_failure_diagnostics(req.name, log, exc), log) from exc
        log = _clean(nvrtc.getProgramLog(prog))
        try:
            cubin = whole_cubin(bytes(nvrtc.getCUBIN(prog)))  # CuPy's binding drops the last byte
        except (nvrtc.NVRTCError, RuntimeError) as exc:  # e.g. options that ask for LTO-IR
            diag = Diagnostic("LG501", f"NVRTC compiled `{req.name}` but gave no cubin: {exc}")
            raise CompileError((diag,), log) from exc
    finally:
        nvrtc.destroyProgram(prog)
    return CompileResult(cubin, log, parse_resources(log) if req.report else ())


def _clean(log: Any) -> str:
    """NVRTC's log as text: no NUL terminator, no trailing blank lines."""
    text = log.decode("utf-8", "replace") if isinstance(log, bytes) else str(log)
    text = text.replace("\x00", "").rstrip()
    return text + "\n" if text else ""


def _failure_diagnostics(name: str, log: str, exc: Exception) -> tuple[Diagnostic, ...]:
    diags = parse_errors(log)
    if diags:
        return diags
    first = next((ln.strip() for ln in log.splitlines() if ln.strip()), "no log")
    return (Diagnostic("LG501", f"NVRTC failed to compile `{name}` ({exc}): {first}"),)


_ENTRY = re.compile(r"Compiling entry function '(?P<name>[^']+)'")
_PROPS = re.compile(r"Function properties for (?P<name>\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")


def parse_resources(log: str) -> tuple[KernelResources, ...]:
    """Per-kernel registers, spills, stack and shared memory from a ptxas ``-v`` log.

    Only entry functions (kernels) are reported, in the order ptxas compiled
    them; the stack and spill lines of non-inlined device functions are
    skipped. Raises nothing; a log without ptxas lines gives ``()``.
    """
    entries: dict[str, dict[str, int]] = {}
    frames: dict[str, tuple[int, int, int]] = {}
    current: str | None = None  # the entry whose "Used N registers" comes next
    props: str | None = None  # the function the next stack-frame line is for
    for line in log.splitlines():
        if not line.startswith("ptxas"):
            continue
        if m := _ENTRY.search(line):
            current = m["name"]
            entries.setdefault(current, {"registers": 0, "shared_bytes": 0})
        elif m := _PROPS.search(line):
            props = m["name"]
        elif (m := _FRAME.search(line)) and props is not None:
            frames[props] = (int(m[1]), int(m[2]), int(m[3]))
            props = None
        elif (m := _USED.search(line)) and current is not None:
            smem = _SMEM.search(line)
            entries[current] = {"registers": int(m[1]), "shared_bytes": int(smem[1]) if smem else 0}
            current = None
    out = []
    for name, used in entries.items():
        stack, stores, loads = frames.get(name, (0, 0, 0))
        out.append(KernelResources(name, used["registers"], stores, loads, stack, used["shared_bytes"]))
    return tuple(out)
