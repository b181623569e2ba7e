"""Launching a loaded kernel: through NVIDIA's ``cuda.bindings`` or through CuPy.

Every parameter of a generated kernel is 8 bytes (a pointer or a ``long
long``), so a launch is an array of 8-byte values. :class:`PackedLaunch`
keeps that array and the ``void**`` that points into it alive for the
kernel's lifetime and calls ``cuLaunchKernel`` with the array's address: no
per-call conversion of arguments. :class:`CupyLaunch` is the fallback when
``cuda.bindings`` is not installed (or ``LAYOUTGEN_LAUNCH=cupy``). Calling
the driver library through ctypes instead was measured slower on an H200
(5.5 µs against 5.0 µs for the bare launch; 14.7 µs against 8.9 µs for a
whole launcher call), so it is not offered.
"""

from __future__ import annotations

import ctypes
import os
import threading
import warnings
from typing import Any, Protocol

from ..schema.diagnostics import Diagnostic
from .errors import LaunchError

#: Set to "cupy" to launch through CuPy even where cuda.bindings is installed.
LAUNCH_ENV = "LAYOUTGEN_LAUNCH"


class Launch(Protocol):
    """Launches one kernel: ``blocks`` blocks of ``block`` threads, 8-byte ``values``, on ``stream``."""

    def __call__(self, blocks: int, block: int, values: list[int], stream: Any) -> None: ...


_CURRENT_STREAM: Any = None


def stream_handle(stream: Any) -> int:
    """The CUstream of a CuPy stream, a torch stream, an int, or None (the current CuPy stream)."""
    global _CURRENT_STREAM
    if stream is None:
        if _CURRENT_STREAM is None:
            import cupy

            _CURRENT_STREAM = cupy.cuda.get_current_stream
        return int(_CURRENT_STREAM().ptr)
    if isinstance(stream, int):
        return stream
    for attr in ("ptr", "cuda_stream"):  # CuPy, torch
        handle = getattr(stream, attr, None)
        if isinstance(handle, int):
            return handle
    raise TypeError(f"`stream` must be a CuPy or torch stream or a CUstream handle, got {stream!r}")


def cupy_stream(stream: Any) -> Any:
    """``stream`` as a CuPy stream: the current one for None, wrapped when it is a torch stream or a handle."""
    import cupy

    if stream is None:
        return cupy.cuda.get_current_stream()
    if type(stream).__module__.startswith("cupy"):
        return stream
    if hasattr(stream, "__cuda_stream__"):
        return cupy.cuda.Stream.from_external(stream)
    with warnings.catch_warnings():  # CuPy 14 deprecates ExternalStream; a bare handle has no other wrapper
        warnings.simplefilter("ignore", DeprecationWarning)
        return cupy.cuda.ExternalStream(stream_handle(stream))


class PackedLaunch:
    """``cuLaunchKernel`` with a parameter buffer packed once and refreshed in place."""

    def __init__(self, function: int, n_values: int, name: str = "") -> None:
        from cuda.bindings import driver

        self._name = name
        self._launch = driver.cuLaunchKernel
        self._success = driver.CUresult.CUDA_SUCCESS
        self._function = driver.CUfunction(function)
        self._values = (ctypes.c_uint64 * n_values)()
        base = ctypes.addressof(self._values)
        self._slots = (ctypes.c_void_p * n_values)(*(base + 8 * i for i in range(n_values)))
        self._address = ctypes.addressof(self._slots)
        self._streams: dict[int, Any] = {}
        self._stream_type = driver.CUstream
        # The buffer is shared: filling it and launching must not interleave between threads.
        self._lock = threading.Lock()

    def __call__(self, blocks: int, block: int, values: list[int], stream: Any) -> None:
        handle = stream_handle(stream)
        cu_stream = self._streams.get(handle)
        if cu_stream is None:
            if len(self._streams) >= 64:  # streams come and go (a graph capture makes one): keep a few
                self._streams.clear()
            cu_stream = self._streams[handle] = self._stream_type(handle)
        with self._lock:
            self._values[:] = values  # type: ignore[assignment]
            (err,) = self._launch(self._function, blocks, 1, 1, block, 1, 1, 0, cu_stream, self._address, 0)
        if err != self._success:
            raise _refused(self._name, repr(err))


def _refused(kernel: str, reason: str) -> Exception:
    """LG609 as a LaunchError, like every other refused launch."""
    return LaunchError(Diagnostic(
        "LG609", f"cuLaunchKernel of `{kernel}` failed: {reason}",
        hint="the driver also reports here an error that an earlier kernel left on the device: run with "
        "CUDA_LAUNCH_BLOCKING=1, or the debug build, to find the kernel that made it",
    ))


class CupyLaunch:
    """A launch through CuPy's ``Function`` (numpy scalars for every value)."""

    def __init__(self, function: Any, name: str = "") -> None:
        import cupy
        import numpy as np

        self._name = name
        self._function = function
        self._cupy = cupy
        self._u64 = np.uint64
        self._driver_error = cupy.cuda.driver.CUDADriverError

    def __call__(self, blocks: int, block: int, values: list[int], stream: Any) -> None:
        stream = cupy_stream(stream)
        try:
            self._function((blocks,), (block,), tuple(map(self._u64, values)), stream=stream)
        except self._driver_error as exc:
            raise _refused(self._name, str(exc)) from exc


def make_launch(kernel: Any, n_values: int, name: str = "") -> Launch:
    """The fastest launch available for a CuPy ``RawKernel`` (``name`` is the kernel's, for messages)."""
    if os.environ.get(LAUNCH_ENV, "") != "cupy":
        try:
            return PackedLaunch(int(kernel.kernel.ptr), n_values, name)
        except ImportError:
            pass
    return CupyLaunch(kernel, name)
