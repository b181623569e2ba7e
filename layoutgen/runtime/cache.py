"""A content-addressed on-disk cache of cubins, safe across processes.

An entry for key ``k`` (:meth:`CompileRequest.key`) is two files in
``<dir>/<k[:2]>/``: ``k.cubin`` and the sidecar ``k.json`` (NVRTC's log, the
parsed resources, the cubin's sha256 and size, the request's name and arch).
``k.lock`` is the entry's lock file; it stays.

- Writes are atomic: each file goes to a temporary file in the same folder,
  is fsynced and ``os.replace``\\d into place, the cubin first and the
  sidecar last, so a sidecar never names a missing or partial cubin.
- Reads check the cubin's size and sha256 against the sidecar. An entry that
  fails (corrupted or truncated cubin, unreadable sidecar, one half missing)
  is removed and rebuilt, never returned.
- Compiling takes a per-key ``fcntl.flock`` and looks in the cache again
  inside the lock, so processes that race on one kernel compile it once.
  Every removal and write happens under that lock. Where ``fcntl`` does not
  exist (Windows) there is no lock: racing processes may compile twice, but
  atomic writes still keep every entry whole.
- The cache is private, because a cubin in it runs as the user who loads
  it: folders are created 0700 and files 0600, and a folder that another
  user owns or that its group or others can write is refused (LG512), as is
  a symbolic link where an entry or a lock file should be (nothing in the
  cache is opened through a link). A cubin is read once, checked against
  its sidecar, and those bytes are what :meth:`CubinCache.load` returns, so
  what runs is what was checked. A file where a folder should be, or a
  folder where a file should be, is LG513; so is any other I/O error.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, Literal, TypeVar

from .cachefiles import (
    ELSEWHERE, CacheError, cache_error, checked_entry_folder, checked_root, locked, open_file, read_file,
    write_atomic,
)
from ..schema.diagnostics import display_path
from .nvrtc import CompileRequest, CompileResult, KernelResources, compile_cubin, nvrtc_version
from .paths import cache_dir, cubin_cache_dir

__all__ = ["CacheError", "CubinCache"]

_FORMAT = 1
_State = Literal["ok", "absent", "partial", "corrupt"]
_RESOURCE_FIELDS = tuple(f.name for f in dataclasses.fields(KernelResources))
_MAX_SIDECAR = 16 << 20  # bytes; layoutgen's sidecars are a few KiB: anything larger is damage
_T = TypeVar("_T")


def _io_errors(method: Callable[..., _T]) -> Callable[..., _T]:
    """Report an OSError of a public method as LG513, naming the file, instead of a traceback."""

    @functools.wraps(method)
    def wrapper(self: CubinCache, *args: Any, **kwargs: Any) -> _T:
        try:
            return method(self, *args, **kwargs)
        except CacheError:
            raise
        except OSError as exc:
            where = f" (`{display_path(os.fsdecode(exc.filename))}`)" if exc.filename else ""
            raise cache_error("LG513", f"the compile cache `{display_path(str(self.directory))}` cannot be used: "
                              f"{exc.strerror or exc}{where}", f"{ELSEWHERE} that you can write") from exc

    return wrapper


class CubinCache:
    """Cubins on disk under ``directory``, keyed by :meth:`CompileRequest.key`.

    The counters count this object's calls: ``hits`` (entries returned),
    ``misses`` (no valid entry found), ``compiles`` (NVRTC runs) and
    ``evicted`` (broken entries removed). Methods raise ``OSError`` when the
    folder cannot be created, read or written, and :class:`CacheError`
    (an ``OSError`` too) when it is not safe to use (LG512) or is in the way
    (LG513).
    """

    def __init__(self, directory: Path | str, *, within: Path | None = None) -> None:
        self.directory = Path(directory)
        # The cache folder ``directory`` lies in (``LAYOUTGEN_CACHE_DIR``), checked as well: whoever can write it
        # can move ``directory`` aside and put a folder of their own there. None: ``directory`` is the top.
        self.within = within
        self.hits = 0
        self.misses = 0
        self.compiles = 0
        self.evicted = 0

    @classmethod
    def default(cls) -> CubinCache:
        """The cache at :func:`~layoutgen.runtime.paths.cubin_cache_dir`. Raises nothing."""
        return cls(cubin_cache_dir(), within=cache_dir())

    def __repr__(self) -> str:
        return (
            f"CubinCache({str(self.directory)!r}, hits={self.hits}, misses={self.misses}, "
            f"compiles={self.compiles}, evicted={self.evicted})"
        )

    def paths(self, key: str) -> tuple[Path, Path]:
        """The cubin and sidecar paths of the entry for ``key``. Raises nothing."""
        folder = self.directory / key[:2]
        return folder / f"{key}.cubin", folder / f"{key}.json"

    @_io_errors
    def lookup(self, req: CompileRequest) -> CompileResult | None:
        """The cached result for ``req`` (``origin="cache"``), or None.

        A broken entry is removed (under the entry's lock) and None returned.
        Raises :class:`~layoutgen.runtime.nvrtc.NvrtcUnavailableError` (from
        the key) and ``OSError``.
        """
        key = req.key()
        state, result = self._read(key)
        if state == "absent":
            self.misses += 1
            return None
        if state != "ok":  # maybe mid-write by another process: decide under the lock
            with self._locked(key):
                result = self._lookup_locked(key)
        if result is None:
            self.misses += 1
            return None
        self.hits += 1
        return _as_asked(req, result)

    @_io_errors
    def store(self, req: CompileRequest, result: CompileResult) -> None:
        """Write ``result`` as the entry for ``req``, atomically, under the entry's lock.

        Raises :class:`~layoutgen.runtime.nvrtc.NvrtcUnavailableError` (from
        the key) and ``OSError``.
        """
        key = req.key()
        with self._locked(key):
            self._store_locked(key, req, result)

    @_io_errors
    def get_or_compile(self, req: CompileRequest) -> CompileResult:
        """The cached result for ``req``, or compile, store and return it.

        ``origin`` on the result says which. Only one process compiles a
        given key at a time; the others wait and then read its entry. A
        cubin whose project headers changed during the compile is returned
        but not stored.
        Raises :class:`~layoutgen.runtime.nvrtc.CompileError` (errors are not
        cached), :class:`~layoutgen.runtime.nvrtc.NvrtcUnavailableError`,
        :class:`~layoutgen.runtime.nvrtc.HeaderFolderError` (LG514, from the
        key) and ``OSError``.
        """
        key = req.key()
        _, result = self._read(key)
        if result is None:
            with self._locked(key):
                result = self._lookup_locked(key)
                if result is None:
                    self.misses += 1
                    self.compiles += 1
                    # The entry always keeps the resources, whether or not this request reports them.
                    compiled = compile_cubin(dataclasses.replace(req, report=True))
                    # A project header edited while NVRTC read the folders: the cubin may be of the new text
                    # or of a mix, so it is not the old key's; it is used, never stored.
                    if not req.include_dirs or req.key() == key:
                        self._store_locked(key, req, compiled)
                    return _as_asked(req, compiled)
        self.hits += 1
        return _as_asked(req, result)

    def load(self, req: CompileRequest) -> bytes:
        """The cubin for ``req``: exactly the bytes checked against the sidecar, or just compiled.

        Load these (``cupy.cuda.function.Module().load(data)``), never the
        entry's path: the file could change between the check and a second
        read. Raises what :meth:`get_or_compile` raises.
        """
        return self.get_or_compile(req).cubin

    def _entry_folder(self, key: str, *, create: bool) -> Path | None:
        """The checked folder of ``key``'s entry (made when ``create``), or None if it is absent."""
        folder = self.directory / key[:2]
        if self._checked_top(create=create) and checked_entry_folder(folder, create=create):
            return folder
        return None

    def _checked_top(self, *, create: bool) -> bool:
        """Check the cache's own folder (made when ``create``), and the one it lies in where that is layoutgen's
        (never a link between them); False where either is absent."""
        if self.within is None:
            return checked_root(self.directory, create=create)
        return checked_root(self.within, create=create) and checked_entry_folder(self.directory, create=create)

    # -- inside the lock --------------------------------------------------

    @contextlib.contextmanager
    def _locked(self, key: str) -> Iterator[None]:
        folder = self.directory / key[:2]
        self._checked_top(create=True)
        checked_entry_folder(folder, create=True)
        with locked(folder / f"{key}.lock", stale=f"{key}.*.tmp"):
            yield

    def _lookup_locked(self, key: str) -> CompileResult | None:
        state, result = self._read(key)
        if state in ("partial", "corrupt"):
            for path in self.paths(key):
                path.unlink(missing_ok=True)
            self.evicted += 1
        return result

    def _store_locked(self, key: str, req: CompileRequest, result: CompileResult) -> None:
        cubin_path, meta_path = self.paths(key)
        major, minor = nvrtc_version()
        meta = {
            "format": _FORMAT,
            "key": key,
            "name": req.name,
            "arch": req.arch,
            "nvrtc": f"{major}.{minor}",
            "cubin_sha256": hashlib.sha256(result.cubin).hexdigest(),
            "cubin_size": len(result.cubin),
            "log": result.log,
            "resources": [dataclasses.asdict(r) for r in result.resources],
        }
        text = json.dumps(meta, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
        write_atomic(cubin_path, result.cubin)
        write_atomic(meta_path, text.encode("utf-8"))
        _fsync_dir(cubin_path.parent)

    # -- reading ------------------------------------------------------------

    def _read(self, key: str) -> tuple[_State, CompileResult | None]:
        """Read an entry without locking or removing anything; each file once, never through a link."""
        if self._entry_folder(key, create=False) is None:
            return "absent", None
        cubin_path, meta_path = self.paths(key)
        meta_bytes = read_file(meta_path, _MAX_SIDECAR + 1)  # sidecar first: it is written last
        if meta_bytes is None:
            return ("partial" if os.path.lexists(cubin_path) else "absent"), None
        cubin = read_file(cubin_path)
        if cubin is None or len(meta_bytes) > _MAX_SIDECAR:
            return "corrupt", None
        try:
            return "ok", _decode(key, meta_bytes, cubin)
        except (ValueError, TypeError, KeyError, RecursionError):  # json raises RecursionError for deep nesting
            return "corrupt", None


def _as_asked(req: CompileRequest, result: CompileResult) -> CompileResult:
    """``result`` with its resources only where ``req`` asks for them (``report``)."""
    return result if req.report or not result.resources else dataclasses.replace(result, resources=())


def _decode(key: str, meta_bytes: bytes, cubin: bytes) -> CompileResult:
    """A result from a sidecar and a cubin; ValueError/TypeError/KeyError if they disagree."""
    meta: Any = json.loads(meta_bytes.decode("utf-8"))
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT or meta.get("key") != key:
        raise ValueError("sidecar of another format or key")
    if meta["cubin_size"] != len(cubin) or meta["cubin_sha256"] != hashlib.sha256(cubin).hexdigest():
        raise ValueError("cubin does not match its sidecar")
    log = meta["log"]
    if not isinstance(log, str):
        raise TypeError("log must be a string")
    resources = []
    for entry in meta["resources"]:
        if sorted(entry) != sorted(_RESOURCE_FIELDS) or not isinstance(entry["kernel"], str):
            raise ValueError("bad resources entry")
        numbers = [entry[f] for f in _RESOURCE_FIELDS[1:]]
        if not all(type(n) is int for n in numbers):
            raise TypeError("resource sizes must be integers")
        resources.append(KernelResources(entry["kernel"], *numbers))
    return CompileResult(cubin, log, tuple(resources), origin="cache")


def _fsync_dir(folder: Path) -> None:
    """Make the renames durable; a no-op where folders cannot be opened (Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
