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
========================  ==================================================

Everything is computed when called, not at import, so a changed environment
(or a test's ``monkeypatch.setenv``) takes effect at once.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

#: Environment variable naming the cache root.
CACHE_DIR_ENV = "LAYOUTGEN_CACHE_DIR"
#: Environment variable listing CUDA include folders (``os.pathsep``-separated).
CUDA_INCLUDE_ENV = "LAYOUTGEN_CUDA_INCLUDE"
#: Toolkit roots tried after the wheel, in this order; the last is a fixed path.
TOOLKIT_ENVS = ("CUDA_PATH", "CUDA_HOME")
DEFAULT_TOOLKIT = Path("/usr/local/cuda")
#: Sub-folders of the ``nvidia`` namespace package that hold CUDA headers:
#: ``nvidia-cuda-runtime`` 13.x installs them under ``nvidia/cu13/include``.
WHEEL_INCLUDE_SUBDIRS = ("cu13/include",)


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


def cuda_include_dirs() -> tuple[Path, ...]:
    """The folders NVRTC searches for CUDA headers (``cuda_fp16.h`` …), in order.

    ``$LAYOUTGEN_CUDA_INCLUDE`` (``os.pathsep``-separated), when set, is used
    as given and replaces the search. Otherwise: the ``nvidia-cuda-runtime``
    wheel's folder first (it matches the ``nvidia-cuda-nvrtc`` wheel), then
    the toolkits of :func:`toolkit_include_dirs`. Each folder is followed by
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
