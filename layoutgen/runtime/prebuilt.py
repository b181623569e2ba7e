"""Cubins built ahead of time (``layoutgen build``), shipped in the generated package and loaded by launchers.

A generated package's ``cubins/`` folder holds ``<kernel>.<arch>.cubin`` for
every kernel and arch it was built for, and ``manifest.json``: the layoutgen
and NVRTC versions, the digest of the device library's headers the cubins were
compiled against (``lg/*.cuh``, :func:`~layoutgen.runtime.device_library.library_digest`),
the archs, and per kernel the digest of the source it was built from
(:func:`source_digest`: the kernel file and the views header as generated), the
digest of the project's header folders, and each cubin's size and sha256. The
manifest is written last, so it never names a missing cubin.

A launcher takes the cubin of its kernel for the device (:func:`load_module`)
when everything that decides the cubin is what it would compile now:

- the manifest was written by this version of layoutgen, against the device
  library this layoutgen ships (the generated sources name only the library's
  version: headers edited in a checkout, or another build of that version,
  compile into other cubins);
- it has a cubin that runs on the device's arch (:func:`pick_arch`);
- the driver's CUDA major is at least that of the NVRTC that built it;
- it lists the kernel, built from the same source, and against the same
  project headers where their folders are there to compare (a deployed
  package need not ship them: they are compiled into the cubin);
- the cubin's bytes match the manifest.

Otherwise the kernel compiles with NVRTC as without a build, and a one-line
note (LG627, a :class:`PrebuiltFallback` warning) says why, once per reason.
Under ``LAYOUTGEN_NO_JIT=1`` the launch is refused instead (LG626). A package
without ``cubins/`` compiles at first launch, silently, as it always did.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from .. import version
from ..schema.diagnostics import Diagnostic, display_path
from .device_library import library_digest
from .errors import launch_error
from .nvrtc import CompileRequest
from .paths import NO_JIT_ENV, PREBUILT_MANIFEST, jit_forbidden, prebuilt_dir
from .project_headers import project_header_digest

__all__ = [
    "FORMAT", "BuiltCubin", "BuiltKernel", "Manifest", "PrebuiltFallback", "arch_order", "cubin_name", "load_module",
    "misfit", "pick_arch", "read_manifest", "sorted_archs", "source_digest",
]

FORMAT = 2  # 2: the device library's digest (a manifest of 1 has none to compare, and is not read)
_ARCH = re.compile(r"sm_(?P<number>\d{2,3})(?P<suffix>[af]?)")
_T = TypeVar("_T")


class PrebuiltFallback(UserWarning):
    """A launcher compiles with NVRTC although its package ships cubins: none fits (LG627, a note)."""


def arch_order(arch: str) -> tuple[int, int, str]:
    """(major, minor, suffix) of ``sm_XY[a|f]``: sm_86 is (8, 6, ""), sm_100a (10, 0, "a"). ValueError otherwise."""
    m = _ARCH.fullmatch(arch)
    if m is None:
        raise ValueError(f"`arch` must be a real architecture such as 'sm_90', got {arch!r}")
    number = int(m["number"])
    return number // 10, number % 10, m["suffix"]


def sorted_archs(archs: Iterable[str]) -> tuple[str, ...]:
    """``archs`` once each, in the order of the GPUs (sm_89 before sm_100). ValueError for one that is no arch."""
    return tuple(sorted(set(archs), key=arch_order))


def pick_arch(built: Iterable[str], device: str) -> str | None:
    """The built arch whose cubin runs on a ``device`` arch, or None.

    CUDA's binary compatibility: a cubin for ``sm_XY`` runs on ``sm_XZ`` for Z >= Y (sm_80 on an sm_86),
    one for ``sm_XYa`` only on ``sm_XY``, one for ``sm_XYf`` on ``sm_XZ`` for Z >= Y. The device's own arch
    comes first, then its ``a`` and ``f`` forms, then the nearest lower minor. Raises ValueError for a
    ``device`` that is no arch.
    """
    major, minor, _ = arch_order(device)
    plain = f"sm_{major}{minor}"
    candidates = set(built)
    for exact in (plain, f"{plain}a", f"{plain}f"):
        if exact in candidates:
            return exact
    lower = [a for a in candidates if _ARCH.fullmatch(a) and (order := arch_order(a))[0] == major
             and order[1] < minor and order[2] != "a"]
    return max(lower, key=arch_order) if lower else None


def cubin_name(kernel: str, arch: str) -> str:
    """The file name of ``kernel``'s cubin for ``arch``: ``<kernel>.<arch>.cubin``."""
    return f"{kernel}.{arch}.cubin"


def source_digest(request: CompileRequest) -> str:
    """sha256 (hex) of what a kernel's cubin is built from, on any machine: its source, its headers and its
    options. Not the CUDA or project header folders' paths (they differ between machines: the project
    headers' contents are compared apart) and not the file name NVRTC reports errors under. Raises nothing."""
    payload = {"source": request.source, "headers": [list(h) for h in request.headers],
               "options": list(request.options)}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class BuiltCubin:
    """One cubin of a manifest: its arch, its file in ``cubins/``, and its bytes' sha256 and size."""

    arch: str
    file: str
    sha256: str
    size: int


@dataclass(frozen=True)
class BuiltKernel:
    """One kernel of a manifest: the digests it was built from, and its cubins (sorted by arch)."""

    name: str
    source_sha256: str
    project_headers: str | None  # digest of the `include` folders, None where the project names none
    cubins: tuple[BuiltCubin, ...]

    def cubin(self, arch: str) -> BuiltCubin | None:
        return next((c for c in self.cubins if c.arch == arch), None)


@dataclass(frozen=True)
class Manifest:
    """``cubins/manifest.json``: what ``layoutgen build`` wrote, with which versions, for which archs."""

    layoutgen: str
    nvrtc: str  # "13.5"
    archs: tuple[str, ...]
    kernels: tuple[BuiltKernel, ...]
    # The device library's digest (runtime/device_library.py) the cubins were compiled against: a build compiles
    # against the library of the layoutgen running it, so that is the default.
    library: str = field(default_factory=library_digest)

    def kernel(self, name: str) -> BuiltKernel | None:
        return next((k for k in self.kernels if k.name == name), None)

    def to_json(self) -> str:
        """The manifest's text: sorted keys, no time stamps, so a build of the same sources is the same file."""
        data = {
            "format": FORMAT, "layoutgen": self.layoutgen, "nvrtc": self.nvrtc, "library": self.library,
            "archs": list(self.archs),
            "kernels": {k.name: {"source_sha256": k.source_sha256, "project_headers": k.project_headers,
                                 "cubins": {c.arch: {"file": c.file, "sha256": c.sha256, "size": c.size}
                                            for c in k.cubins}}
                        for k in self.kernels},
        }
        return json.dumps(data, indent=1, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        """Parse a manifest. Raises ValueError (naming what is wrong) for any other text."""
        try:
            data: Any = json.loads(text)
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise ValueError(f"it is not a manifest of format {FORMAT}")
            kernels = []
            for name, entry in sorted(data["kernels"].items()):
                cubins = tuple(BuiltCubin(str(arch), str(c["file"]), str(c["sha256"]), int(c["size"]))
                               for arch, c in sorted(entry["cubins"].items()))
                headers = entry["project_headers"]
                kernels.append(BuiltKernel(str(name), str(entry["source_sha256"]),
                                           None if headers is None else str(headers), cubins))
            return cls(str(data["layoutgen"]), str(data["nvrtc"]), tuple(str(a) for a in data["archs"]),
                       tuple(kernels), str(data["library"]))
        except (KeyError, TypeError, AttributeError, RecursionError) as exc:
            raise ValueError(f"it lacks or misspells an entry ({type(exc).__name__}: {exc})") from None


def read_manifest(folder: Path) -> Manifest | None:
    """The manifest in ``folder`` (a ``cubins/``), None where there is none. Raises ValueError with the reason
    for one that cannot be read or parsed."""
    path = folder / PREBUILT_MANIFEST
    try:
        text = path.read_bytes().decode("utf-8")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"`{display_path(str(path))}` cannot be read: {exc}") from None
    try:
        return Manifest.from_json(text)
    except ValueError as exc:
        raise ValueError(f"`{display_path(str(path))}` cannot be read: {exc}") from None


def _shown(folder: Path) -> str:
    return f"`{display_path(str(folder))}/`"


def misfit(manifest: Manifest, folder: Path, kernel: str, request: CompileRequest, arch: str) -> str | bytes:
    """The cubin of ``kernel`` for ``arch`` from ``folder`` (exactly that arch: see :func:`pick_arch` for a
    device's), checked against ``request`` and the manifest; or why it does not fit, as a phrase that
    names the kernel, or not where the reason holds for every kernel of the folder. Raises nothing."""
    if manifest.layoutgen != version.__version__:
        return (f"the cubins in {_shown(folder)} were built by layoutgen {manifest.layoutgen}, and this is "
                f"layoutgen {version.__version__}")
    if manifest.library != library_digest():
        return (f"the cubins in {_shown(folder)} were built against another device library (`lg/*.cuh`) than this "
                "layoutgen's")
    entry = manifest.kernel(kernel)
    if entry is None:
        return f"{_shown(folder)} has no cubins of `{kernel}`"
    if entry.source_sha256 != source_digest(request):
        files = " or ".join(f"`{name}`" for name in (request.name.rpartition("/")[2], *(h for h, _ in request.headers)))
        return f"the cubins of `{kernel}` in {_shown(folder)} were built from another {files} than the generated ones"
    if entry.project_headers is not None and all(os.path.isdir(d) for d in request.include_dirs):
        if project_header_digest(request.include_dirs) != entry.project_headers:
            return f"the cubins of `{kernel}` in {_shown(folder)} were built against other project headers"
    built = entry.cubin(arch)
    if built is None:
        return f"{_shown(folder)} has no cubin of `{kernel}` for {arch}"
    path = folder / built.file
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"`{display_path(str(path))}` cannot be read: {exc.strerror or exc}"
    if len(data) != built.size or hashlib.sha256(data).hexdigest() != built.sha256:
        return f"`{display_path(str(path))}` is not the cubin its manifest names (size or sha256 differ)"
    return data


def driver_major() -> int | None:
    """The CUDA major version of the installed driver (13 for 13.0), or None where CuPy cannot say."""
    try:
        import cupy

        return int(cupy.cuda.runtime.driverGetVersion()) // 1000
    except (ImportError, RuntimeError, AttributeError):
        return None


def _find(module_folder: Path, kernel: str, request: CompileRequest) -> tuple[bytes | None, str | None, str]:
    """(the cubin, None) where one fits; (None, why not) where it does not; (None, None) where the package ships
    no cubins at all. The third item is the arch of the cubin (or the device's)."""
    folder = prebuilt_dir(module_folder)
    try:
        manifest = read_manifest(folder)
    except ValueError as exc:
        return None, str(exc), request.arch
    if manifest is None:
        return None, None, request.arch
    arch = pick_arch(manifest.archs, request.arch)
    if arch is None:
        built = ", ".join(manifest.archs) or "no arch"
        return None, f"{_shown(folder)} has no cubin that runs on {request.arch} (built for {built})", request.arch
    nvrtc_major = int(manifest.nvrtc.split(".")[0])
    driver = driver_major()
    if driver is not None and driver < nvrtc_major:
        return None, (f"the cubins in {_shown(folder)} were built by NVRTC {manifest.nvrtc}, and the driver runs "
                      f"CUDA {driver} (a CUDA {driver} driver loads the cubins of NVRTC {driver}: build them with "
                      f"layoutgen[cuda{driver}])"), arch
    found = misfit(manifest, folder, kernel, request, arch)
    return (found, None, arch) if isinstance(found, bytes) else (None, found, arch)


_NOTED: set[str] = set()  # the notes said in this process: each reason once


def load_module(module_folder: Path, kernel: str, request: CompileRequest, compiled: Callable[[], bytes],
                load: Callable[[bytes], _T]) -> _T:
    """``load`` of the shipped cubin of ``kernel`` that fits ``request`` (its arch is the device's), else of
    ``compiled()`` (NVRTC, through the cache), saying why once (LG627).

    Raises LaunchError (LG626) where no cubin fits and ``LAYOUTGEN_NO_JIT`` forbids compiling, and what
    ``compiled`` and ``load`` raise.
    """
    cubin, reason, arch = _find(module_folder, kernel, request)
    if cubin is not None:
        try:
            return load(cubin)
        except _driver_errors() as exc:  # e.g. a cubin of a newer NVRTC minor than an old driver knows
            where = _shown(prebuilt_dir(module_folder))
            reason = f"the driver refused the cubin of `{kernel}` for {arch} in {where}: {exc}"
    if jit_forbidden():
        why = reason or f"{_shown(prebuilt_dir(module_folder))} is not there (`layoutgen build` was not run)"
        raise launch_error(
            "LG626", f"`{kernel}` has no prebuilt cubin for {request.arch}: {why}; `{NO_JIT_ENV}="
            f"{os.environ.get(NO_JIT_ENV, '')}` forbids compiling it at run time",
            hint=f"run `layoutgen build --arch {request.arch}` and ship the generated package's `cubins/` with it, "
            f"or unset {NO_JIT_ENV} to let the launcher compile with NVRTC")
    if reason is not None and reason not in _NOTED:
        _NOTED.add(reason)
        warnings.warn(str(Diagnostic("LG627", f"{reason}; compiling with NVRTC instead")), PrebuiltFallback,
                      stacklevel=2)
    return load(compiled())


def _driver_errors() -> tuple[type[Exception], ...]:
    """What CuPy raises when the driver refuses a module (none where CuPy is not there to raise it)."""
    try:
        from cupy.cuda import driver
    except ImportError:
        return ()
    return (driver.CUDADriverError,)
