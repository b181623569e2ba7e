"""A cubin loaded from the bytes the cache verified, never from its file again.

``cupy.RawModule`` takes a path or source only, and reads the file itself:
between the cache's check of an entry and that read the file could change.
:class:`LoadedCubin` loads the verified bytes (``cuModuleLoadData`` through
CuPy's ``Module``) and offers the two calls the runtime makes of a module:
``get_function`` (for :func:`.driver.make_launch`) and ``get_global`` (the
debug build's fault record).
"""

from __future__ import annotations

from typing import Any


class LoadedCubin:
    """A loaded module of one cubin, on the current device."""

    def __init__(self, cubin: bytes) -> None:
        from cupy.cuda.function import Module

        self._module = Module()
        self._module.load(cubin)

    def get_function(self, name: str) -> LoadedKernel:
        return LoadedKernel(self._module.get_function(name))

    def get_global(self, name: str) -> Any:
        """A CuPy memory pointer to the module's global ``name`` (kept alive by this module)."""
        import cupy
        from cupy.cuda.memory import MemoryPointer, UnownedMemory

        ptr = self._module.get_global_var(name)
        return MemoryPointer(UnownedMemory(ptr, 0, self._module, cupy.cuda.runtime.getDevice()), 0)


class LoadedKernel:
    """A kernel of a :class:`LoadedCubin`, shaped like a ``cupy.RawKernel`` where the runtime reads it:
    callable as ``(grid, block, args, stream=...)``, and its driver function at ``.kernel.ptr``."""

    def __init__(self, function: Any) -> None:
        self.kernel = function

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        self.kernel(*args, **kwargs)
