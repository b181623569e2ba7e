"""Generated launchers: validate every argument against its layout, then launch.

A generated module builds one :class:`KernelLauncher` per kernel binding from
plain data (:class:`LayoutSpec`, :class:`ParamSpec`). Calling it reads each
array's pointer, shape, strides and dtype (:mod:`.arrays`), checks them
against the layout, binds the symbolic dims consistently across arguments,
and launches on the current CuPy stream or the one passed. Nothing is
compiled until the first launch; the cubin comes from the on-disk cache.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..schema.dims import shape_text
from ..schema.diagnostics import Diagnostic, LayoutgenError
from .arrays import ArrayInfo, ArrayKindError, array_info, packed_strides
from .driver import Launch, make_launch


class LaunchError(LayoutgenError, ValueError):
    """An argument does not match its layout; nothing was launched (LG6xx)."""


def _error(code: str, message: str, hint: str | None = None) -> LaunchError:
    return LaunchError(Diagnostic(code, message, None, hint))


@dataclass(frozen=True)
class LayoutSpec:
    """A layout as the runtime checks it: leading dims (names or sizes), width, dtype."""

    name: str
    dims: tuple[str | int, ...]
    width: int
    dtype: str  # numpy name
    itemsize: int

    @property
    def shape_text(self) -> str:
        return shape_text((*self.dims, self.width))

    def strides(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The packed element strides of an array of this layout with ``shape``."""
        return packed_strides(shape)


@dataclass(frozen=True)
class ParamSpec:
    """One kernel parameter: its name, access, layout, the view it reads and the alignment it needs."""

    name: str
    access: str  # "in" / "out" / "inout"
    layout: LayoutSpec
    view: str  # "Window.snap"
    align: int  # bytes the base pointer must be aligned to

    @property
    def writes(self) -> bool:
        return self.access != "in"


@dataclass(frozen=True)
class KernelSpec:
    """A generated kernel: its file, function name, parameters and grid."""

    name: str
    source: str  # file name in the module folder
    params: tuple[ParamSpec, ...]
    symbols: tuple[str, ...]  # layout symbols passed after the pointers, in order
    grid_param: int  # index of the parameter the grid follows
    per_row: int  # threads per row of the grid's parameter (1, its width, or its vectors)
    block: int


def _describe(info: ArrayInfo) -> str:
    shape = "[" + ", ".join(map(str, info.shape)) + "]"
    return f"shape {shape}, strides {info.strides} (elements), {info.dtype} on device {info.device}"


def _who(kernel: str, p: ParamSpec) -> str:
    lay = p.layout
    return f"`{kernel}.{p.name}` ({p.view}, layout {lay.name} {lay.shape_text} {lay.dtype})"


def check_param(kernel: str, p: ParamSpec, info: ArrayInfo, bound: dict[str, int], device: int) -> None:
    """Raise :class:`LaunchError` when ``info`` does not fit ``p``; bind its symbols into ``bound``.

    The happy path formats no text: messages are built only once a check fails.
    """
    lay = p.layout
    shape = info.shape
    dims = lay.dims
    if len(shape) != len(dims) + 1 or shape[-1] != lay.width:
        raise _error("LG601", f"{_who(kernel, p)} got an array of {_describe(info)}",
                     hint=f"pass the whole {lay.name} array, shape {lay.shape_text}, not a slice of it")
    if info.dtype != lay.dtype:
        raise _error("LG602", f"{_who(kernel, p)} needs {lay.dtype} elements, got {_describe(info)}")
    for axis, dim in enumerate(dims):
        size = shape[axis]
        if isinstance(dim, int):
            if size != dim:
                raise _error("LG601", f"{_who(kernel, p)} axis {axis} must be {dim}, got {_describe(info)}")
        elif bound.setdefault(dim, size) != size:
            raise _error("LG603", f"{_who(kernel, p)} axis {axis} is `{dim}` = {size}, but `{dim}` = "
                         f"{bound[dim]} from an earlier argument; got {_describe(info)}",
                         hint=f"every `{dim}` of one launch must agree")
    strides = info.strides
    step = 1
    for axis in range(len(shape) - 1, -1, -1):  # packed: row-major, size-1 axes may have any stride
        size = shape[axis]
        if size > 1 and strides[axis] != step:
            expected = lay.strides(shape)
            raise _error("LG604", f"{_who(kernel, p)} needs packed strides {expected} (elements), got "
                         f"{_describe(info)}", hint="pass a contiguous array (e.g. `.copy()` / `.contiguous()`); "
                         "a transposed or sliced array would be read as if it were packed")
        step *= size
    if info.device != device:
        raise _error("LG605", f"{_who(kernel, p)} is on device {info.device} but the launch is on device {device}; "
                     f"got {_describe(info)}")
    if info.ptr % p.align:
        raise _error("LG606", f"{_who(kernel, p)} needs its base pointer aligned to {p.align} bytes, got "
                     f"0x{info.ptr:x}; {_describe(info)}")
    if info.readonly and p.access != "in":
        raise _error("LG607", f"{_who(kernel, p)} is written by the kernel but the array is read-only (e.g. a JAX "
                     f"buffer); got {_describe(info)}", hint="pass a writable array, such as a CuPy or torch one")


@dataclass(eq=False)
class KernelLauncher:
    """Validates arguments and launches one generated kernel; compiles on first use."""

    spec: KernelSpec
    folder: Path  # the generated module's folder
    header: str  # the views header's file name
    _functions: dict[tuple[int, str], Any] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # (parameter index, shape, strides, dtype) that passed check_param -> the symbols that shape binds.
    # Rank, width, static dims, dtype and packing depend on nothing else, so a hit skips those checks;
    # symbols, device, alignment and writability are checked on every call.
    _passed: dict[tuple[Any, ...], tuple[tuple[str, int], ...]] = field(default_factory=dict, repr=False)
    # (device, then each array's type, shape, strides, dtype, device) -> the launch it validated to.
    _plans: dict[tuple[Any, ...], _Plan] = field(default_factory=dict, repr=False)

    def bind(self, arrays: tuple[Any, ...], device: int) -> tuple[list[int], dict[str, int]]:
        """Every argument checked; the pointers and the bound symbols."""
        spec = self.spec
        params = spec.params
        if len(arrays) != len(params):
            raise _error("LG601", f"`{spec.name}` takes {len(params)} arrays, got {len(arrays)}")
        bound: dict[str, int] = {}
        pointers = []
        passed = self._passed
        for i, a in enumerate(arrays):
            p = params[i]
            try:
                info = array_info(a)
            except ArrayKindError as exc:
                raise _error("LG608", f"{_who(spec.name, p)}: {exc}",
                             hint="pass a device array: CuPy, torch (CUDA) or JAX") from None
            key = (i, info.shape, info.strides, info.dtype)
            symbols = passed.get(key)
            if (symbols is not None and info.device == device and not info.ptr % p.align
                    and (not info.readonly or p.access == "in")):
                for name, size in symbols:
                    if bound.setdefault(name, size) != size:
                        break  # a conflict: check_param below raises LG603
                else:
                    pointers.append(info.ptr)
                    continue
            check_param(spec.name, p, info, bound, device)  # the full check; raises on any mismatch
            if symbols is None:
                if len(passed) >= 256:  # many distinct shapes: start over rather than grow
                    passed.clear()
                passed[key] = tuple((d, n) for d, n in zip(p.layout.dims, info.shape) if isinstance(d, str))
            pointers.append(info.ptr)
        return pointers, bound

    def grid(self, arrays: tuple[Any, ...], bound: dict[str, int]) -> int:
        """Threads the launch needs: rows (or elements, or vectors) of the grid's parameter."""
        p = self.spec.params[self.spec.grid_param]
        rows = 1
        for d in p.layout.dims:
            rows *= d if isinstance(d, int) else bound[d]
        return rows * self.spec.per_row

    def function(self, device: int, arch: str) -> Launch:
        """The loaded kernel for ``device`` (compiled or taken from the cache on first use)."""
        key = (device, arch)
        fn = self._functions.get(key)
        if fn is None:
            with self._lock:
                fn = self._functions.get(key)
                if fn is None:
                    kernel = _load(self.folder, self.header, self.spec, arch)
                    fn = self._functions[key] = make_launch(kernel, len(self.spec.params) + len(self.spec.symbols))
        return fn

    def _plan(self, arrays: tuple[Any, ...], device: int) -> tuple[_Plan, list[int]]:
        """Validate every argument (raises LaunchError): the launch, and this call's pointers."""
        pointers, bound = self.bind(arrays, device)
        threads = self.grid(arrays, bound)
        block = self.spec.block
        masks = tuple(p.align - 1 for p in self.spec.params)
        plan = _Plan(device, (threads + block - 1) // block, block, tuple(bound[s] for s in self.spec.symbols), masks)
        return plan, pointers

    def __call__(self, *arrays: Any, stream: Any = None) -> None:
        """Check every array against its layout, then launch; raises LaunchError before any launch."""
        device = _device()
        # The hot path, written flat because it runs on every launch: arrays whose
        # (type, shape, strides, dtype, device) all passed before need only their
        # pointers read and their alignment checked.
        key: list[Any] | None = [device]
        pointers: list[int] = []
        for a in arrays:
            kind = type(a)
            if kind is _CUPY_NDARRAY:
                data = a.data
                key += (a.shape, a.strides, a.dtype, data.device_id)  # type: ignore[operator]
                pointers.append(data.ptr)
                continue
            reader = _FAST_READERS.get(kind)
            if reader is None:  # a kind of array without a fast reader: validate it every call
                key = None
                break
            signature, ptr = reader(a)
            key.append(signature)  # type: ignore[union-attr]
            pointers.append(ptr)
        plan = None if key is None else self._plans.get(tuple(key))
        if plan is None:
            plan, pointers = self._plan(arrays, device)
            if key is not None:
                if len(self._plans) >= 256:
                    self._plans.clear()
                self._plans[tuple(key)] = plan
        else:
            for ptr, mask in zip(pointers, plan.masks):
                if ptr & mask:
                    self.bind(arrays, device)  # raises LG606 naming the parameter
        if plan.blocks:
            pointers += plan.symbols
            self.function(device, _arch(device))(plan.blocks, plan.block, pointers, stream)


@dataclass(frozen=True)
class _Plan:
    """A validated launch: everything but the pointers, which change from call to call."""

    device: int
    blocks: int
    block: int
    symbols: tuple[int, ...]
    masks: tuple[int, ...]  # alignment - 1 of each parameter


def _cupy_reader(a: Any) -> tuple[tuple[Any, ...], int]:
    data = a.data
    return (type(a), a.shape, a.strides, a.dtype, data.device_id), data.ptr


def _torch_reader(t: Any) -> tuple[tuple[Any, ...], int]:
    return (type(t), t.shape, t.stride(), t.dtype, t.device), t.data_ptr()


class _Readers(dict[type, Any]):
    """Fast readers by array type: CuPy subclasses and torch tensors, found on first sight."""

    def get(self, kind: type, default: Any = None) -> Any:
        try:
            return self[kind]
        except KeyError:
            return default

    def __missing__(self, kind: type) -> Any:
        module = kind.__module__
        reader: Any = None
        if module.startswith("cupy"):
            import cupy

            reader = _cupy_reader if issubclass(kind, cupy.ndarray) else None
        elif module.startswith("torch") and kind.__name__ in ("Tensor", "Parameter"):
            reader = _torch_reader
        if reader is None:
            raise KeyError(kind)
        self[kind] = reader
        return reader


_FAST_READERS = _Readers()
_CUPY_NDARRAY: Any = None  # cupy.ndarray once CuPy is imported: read inline on the hot path
_GET_DEVICE: Any = None


def _device() -> int:
    """The current CUDA device (CuPy's), importing CuPy on first use."""
    global _CUPY_NDARRAY, _GET_DEVICE
    if _GET_DEVICE is None:
        import cupy

        _CUPY_NDARRAY, _GET_DEVICE = cupy.ndarray, cupy.cuda.runtime.getDevice
    return int(_GET_DEVICE())


_ARCHS: dict[int, str] = {}


def _arch(device: int) -> str:
    arch = _ARCHS.get(device)
    if arch is None:
        import cupy

        arch = _ARCHS[device] = f"sm_{cupy.cuda.Device(device).compute_capability}"
    return arch


def _load(folder: Path, header: str, spec: KernelSpec, arch: str) -> Any:
    """Compile (or fetch from the cache) and load one kernel."""
    import cupy

    from .cache import CubinCache
    from .nvrtc import CompileRequest

    source = (folder / spec.source).read_text(encoding="utf-8")
    headers = ((header, (folder / header).read_text(encoding="utf-8")),)
    request = CompileRequest(source=source, name=f"{folder.name}/{spec.source}", headers=headers, arch=arch)
    cache = CubinCache.default()
    cache.get_or_compile(request)
    cubin_path, _ = cache.paths(request.key())
    module = cupy.RawModule(path=str(cubin_path))
    return module.get_function(spec.name)
