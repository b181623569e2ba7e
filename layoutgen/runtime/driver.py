"""Launching a loaded kernel: the device, the stream, and the call through ``cuda.bindings`` or CuPy.

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
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ..schema.diagnostics import Diagnostic
from . import arrays as _table
from .arrays import Framework, framework_of
from .errors import LaunchError
from .typed import Array, unwrap

#: Set to "cupy" to launch through CuPy even where cuda.bindings is installed.
LAUNCH_ENV = "LAYOUTGEN_LAUNCH"


class Launch(Protocol):
    """Launches one kernel: ``blocks`` blocks of ``block`` threads, 8-byte ``values``, on ``stream``, with
    ``shared`` bytes of dynamic shared memory (:mod:`.occupancy` sizes it, and raises the kernel's limit)."""

    @property
    def handle(self) -> int:
        """The kernel's CUfunction: what occupancy and attribute calls take."""
        ...

    def __call__(self, blocks: int, block: int, values: list[int], stream: Any, shared: int = 0) -> None: ...


_GET_DEVICE: Any = None
_NO_DEVICE: Any = None  # CuPy's CUDARuntimeError: what getDevice raises without a driver or a GPU


def import_cupy() -> Any:
    """CuPy, which every launch needs (the device, streams, the loaded kernels); LG636 where it is not installed,
    naming the extra that installs it."""
    try:
        import cupy
    except ModuleNotFoundError as exc:
        if exc.name != "cupy":  # CuPy is there but broken: its own error says what is missing
            raise
        raise LaunchError(Diagnostic(
            "LG636", "a launch needs CuPy (the device, its streams, the loaded kernels), which is not installed here",
            hint="install layoutgen with the extra of your CUDA driver's major version: "
            "`pip install 'layoutgen[cuda13]'` (CUDA 13) or `pip install 'layoutgen[cuda12]'` (CUDA 12); "
            "`nvidia-smi` shows the driver's CUDA version")) from None
    return cupy


def find_device() -> int | None:
    """The current CUDA device (CuPy's), or None when CuPy finds none (no driver, no GPU). LG636 without CuPy."""
    global _GET_DEVICE, _NO_DEVICE
    if _GET_DEVICE is None:
        cupy = import_cupy()

        _NO_DEVICE, _GET_DEVICE = cupy.cuda.runtime.CUDARuntimeError, cupy.cuda.runtime.getDevice
    try:
        return int(_GET_DEVICE())
    except _NO_DEVICE:
        return None


def current_device(what: str = "the launch") -> int:
    """The current CUDA device (CuPy's); LG615 naming ``what`` when there is none."""
    device = find_device()
    if device is None:
        raise no_device_error(what)
    return device


def no_device_error(what: str) -> LaunchError:
    """LG615 with what CuPy says of the missing device; raised once every argument has been checked."""
    find_device()  # CuPy imported, its error type known
    try:
        _GET_DEVICE()
        reason = "a device appeared only after the launch had begun"
    except _NO_DEVICE as exc:
        reason = f"CuPy reports {exc}"
    return LaunchError(Diagnostic(
        "LG615", f"{what} cannot run: no CUDA device was found ({reason}); every argument was checked and fits",
        hint="run it on a machine with an NVIDIA GPU and its driver (`nvidia-smi` lists them); "
        "`layoutgen check --compile` compiles the kernels without one",
    ))


_ARCHS: dict[int, str] = {}


def device_arch(device: int) -> str:
    """``sm_90`` for a compute capability 9.0 device; asked of CuPy once per device."""
    arch = _ARCHS.get(device)
    if arch is None:
        import cupy

        arch = _ARCHS[device] = f"sm_{cupy.cuda.Device(device).compute_capability}"
    return arch


_CURRENT_STREAM: Any = None
_MAX_HANDLE = 2**64  # a CUstream is a pointer

#: What a stream argument may be, in words, for LG616.
STREAM_KINDS = ("a CuPy stream, a torch stream, an object with `__cuda_stream__`, or None (the current stream of "
                "the arrays' library)")


def stream_handle(stream: Any, kernel: str = "") -> int:
    """The CUstream of ``stream``: a stream object (CuPy's, torch's, anything with the CUDA stream protocol
    ``__cuda_stream__``) or None, the current CuPy stream. Anything else is LG616 (``kernel`` names the launch).

    A bare integer is refused: nothing can check that it is a live stream of
    this device, and the driver crashes the process on one that is not.
    """
    global _CURRENT_STREAM
    if stream is None:
        if _CURRENT_STREAM is None:
            import cupy

            _CURRENT_STREAM = cupy.cuda.get_current_stream
        return int(_CURRENT_STREAM().ptr)
    kind = type(stream)
    read = _STREAM_READERS.get(kind)
    if read is None:
        read = _STREAM_READERS[kind] = _stream_reader(kind)
    handle = read(stream, kernel)
    if type(handle) is not int or not 0 <= handle < _MAX_HANDLE:
        raise _bad_stream(kernel, stream, f"its handle is {handle!r}, not a CUstream")
    return handle


# -- the stream of a launch given none: its arrays' rows' current streams ---------------------------------------

_TABLE: tuple[Framework, ...] = ()  # the table _SOLE and _ROWS were found in (a test may add a row)
_SOLE: Callable[[int], Any] | None = None  # its one row's current_stream, where one row alone has one
_ROWS: dict[type, Framework | None] = {}  # array type -> its row where that row has its own current stream
_UNKNOWN: Any = object()  # a type not yet in _ROWS


def _found_in_table() -> Callable[[int], Any] | None:
    """:data:`_SOLE`, and :data:`_ROWS` emptied, where ``arrays.FRAMEWORKS`` is not the table they were found in."""
    global _TABLE, _SOLE
    table = _table.FRAMEWORKS
    if table is not _TABLE:
        _ROWS.clear()
        own = [f.current_stream for f in table if f.current_stream is not None]
        _SOLE = own[0] if len(own) == 1 else None
        _TABLE = table
    return _SOLE


def _stream_row(a: Any) -> Framework | None:
    """The row of array ``a`` (a typed Array unwrapped) where it has its own current stream; found once per type
    (:func:`_found_in_table` called first)."""
    a = unwrap(a)
    kind = type(a)
    try:
        return _ROWS[kind]
    except KeyError:
        row = framework_of(kind, a)
        found = _ROWS[kind] = row if row is not None and row.current_stream is not None else None
        return found


def stream_rows(arrays: Sequence[Any]) -> list[Framework]:
    """The rows with a current stream of their own that ``arrays`` (typed Arrays unwrapped) come from, in the
    arrays' order, each once."""
    _found_in_table()
    rows: list[Framework] = []
    for a in arrays:
        row = _stream_row(a)
        if row is not None and row not in rows:
            rows.append(row)
    return rows


def own_streams(arrays: Sequence[Any]) -> int:
    """How many of ``arrays`` (typed Arrays unwrapped) come from a framework with a current stream of its own
    (its row's ``current_stream``): a launch over none of them given no stream runs on CuPy's current one.
    A program run asks on every call: one dict lookup an array."""
    _found_in_table()
    rows = _ROWS
    count = 0
    for a in arrays:
        kind = type(a)
        row = rows.get(kind, _UNKNOWN) if kind is not Array else _UNKNOWN
        if row is _UNKNOWN:
            row = _stream_row(a)
        count += row is not None
    return count


def launch_stream(stream: Any, arrays: Sequence[Any], own: int, kernel: str, device: int) -> Any:
    """What a launch over ``arrays`` (``own`` of them from frameworks with their own current stream,
    :func:`own_streams`) on ``device`` runs on: ``stream`` where one is given; for None, the current stream
    of the framework the arrays come from (their row's ``current_stream``).

    Over arrays of one such framework alone that is its current stream (torch's: as DLPack's exchange API
    asks of a library that reads a framework's tensors, so the kernel is ordered after the work that made its
    inputs). Over none it is the current CuPy stream (None, read at the launch). Over arrays of several
    libraries, their current streams must be one stream (then that one; None where CuPy's is among them), else
    LG616 naming two that differ: the launch would race with one library's work, and only the caller knows which.
    """
    if stream is not None or not own:
        return stream
    if own == len(arrays):  # the common case: one row alone has a current stream, so all are its arrays
        sole = _SOLE if _table.FRAMEWORKS is _TABLE else _found_in_table()
        if sole is not None:
            return sole(device)
    named = stream_rows(arrays)
    currents = [row.current_stream(device) for row in named]  # type: ignore[misc]
    if own == len(arrays) and len(named) == 1:
        return currents[0]
    handles = [(row.name, stream_handle(current, kernel), current) for row, current in zip(named, currents)]
    if own < len(arrays):
        handles.append(("", stream_handle(None, kernel), None))  # the other arrays': CuPy's current stream
    differ = next(((a, b) for a, b in zip(handles, handles[1:]) if a[1] != b[1]), None)
    if differ is None:
        return None if own < len(arrays) else currents[0]
    (first, first_handle, current), (second, second_handle, _) = differ
    spelled = getattr(current, "spelled", None)  # how a user names that stream (torch's: torch_streams)
    return_to = f"`stream={spelled}`" if spelled else f"{first}'s current stream"
    raise LaunchError(Diagnostic(
        "LG616", f"{f'`{kernel}`: ' if kernel else ''}`stream` is None, but the arrays come from {first} and from "
        f"{second or 'another library'}, whose current streams differ: {first}'s is 0x{first_handle:x}, "
        f"{second or 'CuPy'}'s 0x{second_handle:x}",
        hint=f"pass the stream to launch on ({return_to}, or the {second or 'CuPy'} stream): a launch on either may "
        "race with the other library's work",
    ))


def check_stream(stream: Any, kernel: str) -> None:
    """LG616 unless ``stream`` is a stream object or None; touches no device (None is resolved at the launch)."""
    if stream is not None:
        stream_handle(stream, kernel)


def _protocol_handle(stream: Any, kernel: str) -> Any:
    """The handle of the CUDA stream protocol: ``__cuda_stream__()`` returns ``(0, handle)``."""
    got = stream.__cuda_stream__()
    if not (type(got) is tuple and len(got) == 2 and type(got[0]) is int and got[0] == 0):
        raise _bad_stream(kernel, stream, f"its `__cuda_stream__()` returned {got!r}, not (0, handle)")
    return got[1]


def _not_a_stream(stream: Any, kernel: str) -> Any:
    raise _bad_stream(kernel, stream, None)


def _stream_reader(kind: type) -> Callable[[Any, str], Any]:
    """How to read the handle of a stream of type ``kind``: its framework's (arrays.FRAMEWORKS, also before the
    protocol: torch's current stream speaks both), else the CUDA stream protocol's; found once per type."""
    for framework in _table.FRAMEWORKS:
        if framework.stream_handle is not None and framework.owns_stream(kind):
            return framework.stream_handle
    if callable(getattr(kind, "__cuda_stream__", None)):  # the protocol: cuda.core, cuda.bindings, others
        return _protocol_handle
    return _not_a_stream


_STREAM_READERS: dict[type, Callable[[Any, str], Any]] = {}


def _bad_stream(kernel: str, stream: Any, why: str | None) -> LaunchError:
    text = repr(stream)
    if len(text) > 60:
        text = text[:57] + "..."
    kind = type(stream)
    name = kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
    what = f"got {text} ({name})"
    return LaunchError(Diagnostic(
        "LG616", f"{f'`{kernel}`: ' if kernel else ''}`stream` must be {STREAM_KINDS}, {what}"
        + (f"; {why}" if why else ""),
        hint="pass the stream object itself (`cupy.cuda.Stream()`, `torch.cuda.current_stream()`): a raw handle "
        "cannot be checked, and a wrong one crashes the process",
    ))


def cupy_stream(stream: Any, kernel: str = "") -> Any:
    """``stream`` as a CuPy stream: the current one for None, wrapped when it is a torch stream (LG616 else)."""
    import cupy

    if stream is None:
        return cupy.cuda.get_current_stream()
    if isinstance(stream, (cupy.cuda.Stream, cupy.cuda.ExternalStream)):
        return stream
    handle = stream_handle(stream, kernel)  # checks it
    if hasattr(stream, "__cuda_stream__"):
        return cupy.cuda.Stream.from_external(stream)
    # CuPy 14 deprecates ExternalStream; a torch stream from before the protocol has no other wrapper
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return cupy.cuda.ExternalStream(handle)


class PackedLaunch:
    """``cuLaunchKernel`` with a parameter buffer packed once and refreshed in place."""

    def __init__(self, function: int, n_values: int, name: str = "") -> None:
        from cuda.bindings import driver

        self._name = name
        self.handle = function
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

    def __call__(self, blocks: int, block: int, values: list[int], stream: Any, shared: int = 0) -> None:
        handle = stream_handle(stream, self._name)
        cu_stream = self._streams.get(handle)
        if cu_stream is None:
            if len(self._streams) >= 64:  # streams come and go (a graph capture makes one): keep a few
                self._streams.clear()
            cu_stream = self._streams[handle] = self._stream_type(handle)
        with self._lock:
            self._values[:] = values  # type: ignore[assignment]
            (err,) = self._launch(self._function, blocks, 1, 1, block, 1, 1, shared, cu_stream, self._address, 0)
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

    @property
    def handle(self) -> int:
        return int(self._function.kernel.ptr)  # a RawKernel's (or a LoadedKernel's) CUfunction

    def __call__(self, blocks: int, block: int, values: list[int], stream: Any, shared: int = 0) -> None:
        stream = cupy_stream(stream, self._name)
        try:
            self._function((blocks,), (block,), tuple(map(self._u64, values)), shared_mem=shared, stream=stream)
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
