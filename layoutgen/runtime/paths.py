"""Every path the runtime uses, and the environment variables that override them.

One place to look (FlashInfer's ``jit/env.py`` does the same):

========================  ==================================================
``LAYOUTGEN_CACHE_DIR``   root of layoutgen's on-disk cache; default
                          ``$XDG_CACHE_HOME/layoutgen``, else
                          ``~/.cache/layoutgen``
``LAYOUTGEN_CUDA_INCLUDE``  CUDA header folders for NVRTC, separated by
                          :data:`os.pathsep`; replaces the search below
``CUDA_PATH``,            toolkits whose ``include`` folder is searched
``CUDA_HOME``             after the ``nvidia-cuda-runtime`` wheel's
``LAYOUTGEN_NO_JIT``      ``1``: launchers load only the cubins that
                          ``layoutgen build`` shipped with the generated
                          package and refuse (LG626) to compile one at run
                          time; unset, empty or ``0``: they may compile
``LAYOUTGEN_PYTHON_LAUNCH``  ``1``: launchers built from then on take the
                          Python launch path; unset, empty or ``0``: the
                          compiled one (``runtime/fastlaunch/``) where it
                          is built; see :func:`python_launch_forced`
``LAYOUTGEN_TORCH_READER``  ``0``: the compiled path reads torch tensors
                          through DLPack's exchange API; unset, empty or
                          ``1``: through the C++ reader built against the
                          installed torch (:mod:`.torch_cxx_reader`) where it
                          builds; see :func:`torch_reader_off`
========================  ==================================================

Which NVRTC runs is not a path: it is the one CuPy loads (``cupy-cuda12x``
loads NVRTC 12, ``cupy-cuda13x`` NVRTC 13). The CUDA headers given to it are
those of its own major version (:func:`cuda_include_dirs`).

Everything is computed when called, not at import, so a changed environment
(or a test's ``monkeypatch.setenv``) takes effect at once.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
from pathlib import Path

#: Environment variable naming the cache root.
CACHE_DIR_ENV = "LAYOUTGEN_CACHE_DIR"
#: Environment variable listing CUDA include folders (``os.pathsep``-separated).
CUDA_INCLUDE_ENV = "LAYOUTGEN_CUDA_INCLUDE"
#: Toolkit roots tried after the wheel, in this order; the last is a fixed path.
TOOLKIT_ENVS = ("CUDA_PATH", "CUDA_HOME")
DEFAULT_TOOLKIT = Path("/usr/local/cuda")
#: Sub-folders of the ``nvidia`` namespace package that hold CUDA headers: ``nvidia-cuda-runtime`` 13.x
#: installs them under ``nvidia/cu13/include``, ``nvidia-cuda-runtime-cu12`` under ``nvidia/cuda_runtime/include``.
#: Which one NVRTC gets is decided by the version the headers declare, not by this order.
WHEEL_INCLUDE_SUBDIRS = ("cu13/include", "cuda_runtime/include")
#: Environment variable that forbids launchers to compile at run time (``1``); see :func:`jit_forbidden`.
NO_JIT_ENV = "LAYOUTGEN_NO_JIT"
#: The folder of a generated package that holds the cubins of ``layoutgen build``, and its manifest.
#: Environment variable that makes launchers take the Python launch path (``1``); see :func:`python_launch_forced`.
PYTHON_LAUNCH_ENV = "LAYOUTGEN_PYTHON_LAUNCH"
#: Environment variable turning the C++ torch reader off (``0``).
TORCH_READER_ENV = "LAYOUTGEN_TORCH_READER"
PREBUILT_DIR = "cubins"
PREBUILT_MANIFEST = "manifest.json"
# `#define CUDART_VERSION 12090` in cuda_runtime_api.h: the CUDA version of a folder of headers.
_CUDART_VERSION = re.compile(rb"^#define\s+CUDART_VERSION\s+(\d+)", re.M)


def cache_dir() -> Path:
    """The root of layoutgen's on-disk cache (not created here).

    ``$LAYOUTGEN_CACHE_DIR`` if set, else ``$XDG_CACHE_HOME/layoutgen``, else
    ``~/.cache/layoutgen``. Raises nothing (``~`` falls back to the working
    directory's ``.cache`` when no home can be found).
    """
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "layoutgen"
    try:
        home = Path.home()
    except RuntimeError:  # no HOME and no passwd entry
        home = Path.cwd()
    return home / ".cache" / "layoutgen"


def cubin_cache_dir() -> Path:
    """Where :class:`~layoutgen.runtime.cache.CubinCache` keeps cubins: ``cache_dir()/cubin``."""
    return cache_dir() / "cubin"


def wheel_include_dirs() -> list[Path]:
    """CUDA header folders installed by the ``nvidia-cuda-runtime`` wheel.

    Found through the ``nvidia`` namespace package's search locations (in
    ``sys.path`` order), never a hard-coded ``site-packages``. Empty when the
    wheel is not installed. Raises nothing.
    """
    try:
        spec = importlib.util.find_spec("nvidia")
    except (ImportError, ValueError):
        return []
    if spec is None or spec.submodule_search_locations is None:
        return []
    found: list[Path] = []
    for location in spec.submodule_search_locations:
        for sub in WHEEL_INCLUDE_SUBDIRS:
            candidate = Path(location) / sub
            if (candidate / "cuda_runtime.h").is_file():
                found.append(candidate)
    return found


def toolkit_include_dirs() -> list[Path]:
    """``include`` folders of installed CUDA toolkits that exist.

    ``$CUDA_PATH/include``, ``$CUDA_HOME/include``, then
    ``/usr/local/cuda/include``. Raises nothing.
    """
    roots = [Path(os.environ[name]) for name in TOOLKIT_ENVS if os.environ.get(name)]
    roots.append(DEFAULT_TOOLKIT)
    return [root / "include" for root in roots if (root / "include").is_dir()]


def cuda_include_dirs(nvrtc_major: int | None = None) -> tuple[Path, ...]:
    """The folders NVRTC searches for CUDA headers (``cuda_fp16.h`` …), in order.

    ``$LAYOUTGEN_CUDA_INCLUDE`` (``os.pathsep``-separated), when set, is used
    as given and replaces the search. Otherwise: the ``nvidia-cuda-runtime``
    wheels' folders first (they match the ``nvidia-cuda-nvrtc`` wheels), then
    the toolkits of :func:`toolkit_include_dirs`. With ``nvrtc_major`` (the
    NVRTC that will compile), a folder whose headers declare another CUDA
    major version (:func:`header_major`) is left out: CUDA 13's headers are
    not CUDA 12's, and an NVRTC given the other major's headers fails or,
    worse, compiles against declarations its runtime does not have. Each folder is followed by
    its ``cccl`` sub-folder where one exists (CUDA 13 keeps ``<cuda/std/…>``,
    CUB and Thrust there; nvcc adds it implicitly, NVRTC does not). Folders
    that resolve to the same place (``/usr/local/cuda`` → ``cuda-13.0``)
    appear once, at their first position. Raises nothing; an empty tuple
    means no headers were found.
    """
    override = os.environ.get(CUDA_INCLUDE_ENV)
    if override:
        dirs = [Path(p).expanduser() for p in override.split(os.pathsep) if p]
    else:
        dirs = []
        for base in wheel_include_dirs() + toolkit_include_dirs():
            if nvrtc_major is not None and header_major(base) not in (None, nvrtc_major):
                continue
            dirs.append(base)
            if (base / "cccl").is_dir():
                dirs.append(base / "cccl")
    return _dedup(dirs)


def _dedup(dirs: list[Path]) -> tuple[Path, ...]:
    seen: set[str] = set()
    out: list[Path] = []
    for d in dirs:
        d = Path(os.path.abspath(d))
        real = os.path.realpath(d)
        if real not in seen:
            seen.add(real)
            out.append(d)
    return tuple(out)


def header_major(folder: Path) -> int | None:
    """The CUDA major version the headers in ``folder`` declare (``CUDART_VERSION`` of its
    ``cuda_runtime_api.h``: 12090 is 12), or None where that file or the line is not there. Raises nothing."""
    path = folder / "cuda_runtime_api.h"
    try:
        stat = path.stat()
    except OSError:
        return None
    return _declared_major(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _declared_major(path: str, mtime_ns: int, size: int) -> int | None:
    """:func:`header_major` of one file as it is now (the key holds its time and size: an edit reads it again)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(1 << 16)  # the define is near the top (line 139 in 12.9 and 13.5)
    except OSError:
        return None
    m = _CUDART_VERSION.search(head)
    return int(m[1]) // 1000 if m else None


def jit_forbidden() -> bool:
    """True when ``$LAYOUTGEN_NO_JIT`` forbids compiling at run time: set to anything but ``""`` or ``"0"``
    (``1`` is the documented value). Raises nothing."""
    return os.environ.get(NO_JIT_ENV, "").strip() not in ("", "0")


def prebuilt_dir(module_folder: Path) -> Path:
    """Where ``layoutgen build`` puts the cubins of the generated package in ``module_folder``. Raises nothing."""
    return module_folder / PREBUILT_DIR


def python_launch_forced() -> bool:
    """True when launchers built now take the Python launch path whether or not the compiled one is built:
    ``$LAYOUTGEN_PYTHON_LAUNCH`` set to anything but ``"0"`` or empty. Read when a launcher is built (a
    generated module's, when the module is imported)."""
    return os.environ.get(PYTHON_LAUNCH_ENV, "").strip() not in ("", "0")


def torch_reader_off() -> bool:
    """True when the compiled path reads torch tensors through DLPack's exchange API, not the C++ reader:
    ``$LAYOUTGEN_TORCH_READER`` set to ``"0"``. Read once a process, when torch's first plan is taught."""
    return os.environ.get(TORCH_READER_ENV, "").strip() == "0"
