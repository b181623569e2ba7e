"""Generated launchers: validate every argument against its layout, then launch.

A generated module builds one :class:`KernelLauncher` per kernel binding from
plain data (:class:`LayoutSpec`, :class:`ParamSpec`). Calling it reads each
array's pointer, shape, strides and dtype (:mod:`.arrays`), checks them
against the layout, binds the symbolic dims consistently across arguments,
and launches on the current CuPy stream or the one passed. Nothing is
compiled until the first launch; the cubin comes from the on-disk cache.
"""

from __future__ import annotations

import functools
import operator
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..schema.dims import shape_text
from ..schema.diagnostics import Diagnostic, LayoutgenError
from ..schema.dtypes import DTYPES
from .arrays import ArrayInfo, ArrayKindError, array_info, dtype_text, packed_strides
from .cache import CubinCache
from .driver import Launch, make_launch


class LaunchError(LayoutgenError, ValueError):
    """A launch was refused and the kernel did not run (LG6xx).

    LG601..LG608 and LG610: an argument does not match its layout, found
    before the launch; LG609: the CUDA driver refused the launch itself;
    LG613: a program run got one array for two buffers. The debug build's
    reports (LG611, LG612) are subclasses, raised after the launch.
    """


def _error(code: str, message: str, hint: str | None = None) -> LaunchError:
    return LaunchError(Diagnostic(code, message, None, hint))


#: layoutgen dtype -> the dtype names (numpy's, as :func:`.arrays.array_info` reads them) of the arrays
#: it accepts. bf16: "bfloat16" is torch.bfloat16, ml_dtypes' bfloat16 (CuPy, NumPy) and a ``<V2``
#: typestr (JAX); "uint16" is bf16 bits held as raw 16-bit words (``<u2``), which is also what
#: ``Layout.empty`` allocates, CuPy having no bf16 type. Every other 2-byte type (f16, i16) is refused.
ACCEPTED_DTYPES: dict[str, frozenset[str]] = {
    **{d.name: frozenset({d.numpy_name or d.storage}) for d in DTYPES.values()},
    "bf16": frozenset({"bfloat16", "uint16"}),
}


@dataclass(frozen=True)
class LayoutSpec:
    """A layout as the runtime checks it: leading dims (names or sizes), width, dtype."""

    name: str
    dims: tuple[str | int, ...]
    width: int
    dtype: str  # layoutgen's name: "f32", "bf16"
    itemsize: int
    unit: str | None = None  # the symbol one column counts (rows of `q: [32, D]` fields: "D"); None: 1

    def __post_init__(self) -> None:
        if self.dtype not in ACCEPTED_DTYPES:
            raise ValueError(f"`dtype` must be one of {', '.join(ACCEPTED_DTYPES)}, got {self.dtype!r}")

    @property
    def shape_text(self) -> str:
        width = self.width if self.unit is None else f"{self.unit}*{self.width}" if self.width > 1 else self.unit
        return shape_text((*self.dims, width))

    @property
    def symbols(self) -> tuple[str, ...]:
        """The symbols an array of this layout binds: its symbolic dims, then the row's unit."""
        named = tuple(d for d in self.dims if isinstance(d, str))
        return named if self.unit is None else (*named, self.unit)

    def shape_of(self, bound: dict[str, int]) -> tuple[int, ...]:
        """The shape in elements of an array of this layout, given the sizes of its symbols."""
        width = self.width * (1 if self.unit is None else bound[self.unit])
        return (*(d if isinstance(d, int) else bound[d] for d in self.dims), width)

    def bind_width(self, last: int, bound: dict[str, int]) -> int:
        """The row width in elements; binds ``unit`` from the last axis (``last``) unless bound already."""
        if self.unit is None:
            return self.width
        return self.width * bound.setdefault(self.unit, max(last // self.width, 1))

    @property
    def numpy(self) -> str:
        """The numpy dtype new arrays of this layout are allocated with (bf16: "uint16" words)."""
        d = DTYPES[self.dtype]
        return d.numpy_name or d.storage

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
    cols: tuple[int, int] | None = None  # the field's columns (in the layout's unit); debug builds scan written ones
    rows: tuple[int, int, int] | None = None  # debug builds: (axis, start, stop) of a named range the view covers

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
    per_row_symbols: tuple[str, ...] = ()  # symbols per_row is multiplied by (Grid.elements over [H, D] fields)
    grid_dims: tuple[str | int, ...] | None = None  # the grid view's leading dims where it narrows a named axis
    debug: bool = False  # the debug build: check for an out-of-field access and scan outputs after each launch


def _describe(info: ArrayInfo) -> str:
    shape = "[" + ", ".join(map(str, info.shape)) + "]"
    return f"shape {shape}, strides {info.strides} (elements), {dtype_text(info.dtype)} on device {info.device}"


def _who(kernel: str, p: ParamSpec) -> str:
    lay = p.layout
    return f"`{kernel}.{p.name}` ({p.view}, layout {lay.name} {lay.shape_text} {lay.dtype})"


def _overlapping_axis(shape: tuple[int, ...], strides: tuple[int, ...]) -> int | None:
    """An axis whose stride surely makes elements share memory: 0, or shorter than the dense block inside it.

    Only sure cases: strides that interleave without a dense inner block may
    or may not overlap, and are refused as not packed (LG604) instead.
    """
    block, dense = 1, True  # elements of the block the axes seen so far cover, innermost first by |stride|
    for axis in sorted((a for a in range(len(shape)) if shape[a] > 1), key=lambda a: abs(strides[a])):
        stride = abs(strides[axis])
        if stride == 0 or (dense and stride < block):
            return axis
        dense = dense and stride == block
        block = stride * shape[axis]
    return None


def check_param(kernel: str, p: ParamSpec, info: ArrayInfo, bound: dict[str, int], device: int) -> None:
    """Raise :class:`LaunchError` when ``info`` does not fit ``p``; bind its symbols into ``bound``.

    The happy path formats no text: messages are built only once a check fails.
    """
    lay = p.layout
    shape = info.shape
    dims = lay.dims
    unit = None if lay.unit is None else bound.get(lay.unit)  # the row's unit, bound by an earlier argument
    if unit is not None and len(shape) == len(dims) + 1 and shape[-1] != lay.width * unit:
        raise _error("LG603", f"{_who(kernel, p)} last axis is {shape[-1]}, but `{lay.unit}` = {unit} from an "
                     f"earlier argument makes its rows {lay.width * unit} elements; got {_describe(info)}",
                     hint=f"every `{lay.unit}` of one launch must agree")
    if len(shape) != len(dims) + 1 or shape[-1] != lay.bind_width(shape[-1], bound):
        raise _error("LG601", f"{_who(kernel, p)} got an array of {_describe(info)}",
                     hint=f"pass the whole {lay.name} array, shape {lay.shape_text}, not a slice of it")
    if info.dtype not in ACCEPTED_DTYPES[lay.dtype]:
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
            overlap = _overlapping_axis(shape, strides) if p.writes else None
            if overlap is not None:
                raise _error("LG610", f"{_who(kernel, p)} is written by the kernel but axis {overlap} of the array "
                             f"has stride {strides[overlap]}, so several of its elements are one memory location; "
                             f"got {_describe(info)}",
                             hint="pass an array of its own (e.g. `.copy()`), not a broadcast or overlapping view")
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
    cache_dir: str | None = None  # the cubin cache, relative to ``folder`` (``~`` expanded); None: the default
    _functions: dict[tuple[int, str], Any] = field(default_factory=dict, repr=False)
    _modules: dict[tuple[int, str], Any] = field(default_factory=dict, repr=False)  # for the debug build's fault
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
                passed[key] = tuple((s, bound[s]) for s in p.layout.symbols)  # what check_param bound
            pointers.append(info.ptr)
        return pointers, bound

    def grid(self, bound: dict[str, int]) -> int:
        """Threads the launch needs: rows (or elements, or vectors) of the grid's parameter."""
        p = self.spec.params[self.spec.grid_param]
        rows = 1
        for d in p.layout.dims if self.spec.grid_dims is None else self.spec.grid_dims:
            rows *= d if isinstance(d, int) else bound[d]
        for s in self.spec.per_row_symbols:
            rows *= bound[s]
        return rows * self.spec.per_row

    def function(self, device: int, arch: str) -> Launch:
        """The loaded kernel for ``device`` (compiled or taken from the cache on first use)."""
        key = (device, arch)
        fn = self._functions.get(key)
        if fn is None:
            with self._lock:
                fn = self._functions.get(key)
                if fn is None:
                    module = self._modules[key] = _load(self.folder, self.header, self.spec, arch, self.cache())
                    kernel = module.get_function(self.spec.name)
                    fn = self._functions[key] = make_launch(kernel, len(self.spec.params) + len(self.spec.symbols),
                                                                     self.spec.name)
        return fn

    def cache(self) -> CubinCache:
        """The cubin cache: ``cache_dir`` under ``folder`` where set, else ``CubinCache.default()``."""
        if self.cache_dir is None:
            return CubinCache.default()
        return CubinCache(self.folder / Path(self.cache_dir).expanduser())

    def _plan(self, arrays: tuple[Any, ...], device: int) -> tuple[_Plan, list[int]]:
        """Validate every argument (raises LaunchError): the launch, and this call's pointers."""
        pointers, bound = self.bind(arrays, device)
        threads = self.grid(bound)
        block = self.spec.block
        masks = tuple(p.align - 1 for p in self.spec.params)
        plan = _Plan(device, (threads + block - 1) // block, block, tuple(bound[s] for s in self.spec.symbols), masks,
                     self.function(device, _arch(device)), functools.reduce(operator.or_, masks, 0))
        return plan, pointers

    def __call__(self, *arrays: Any, stream: Any = None) -> None:
        """Check every array against its layout, then launch; raises LaunchError before any launch."""
        device = _device()
        # The hot path, written flat because it runs on every launch: arrays whose
        # (type, shape, strides, dtype, device) all passed before need only their
        # pointers read and their alignment checked.
        key: list[Any] | None = [device]
        pointers: list[int] = []
        cupy_array = _CUPY_NDARRAY
        bits = 0  # every pointer or-ed together: alignment is checked at once when nothing is misaligned
        for a in arrays:
            kind = type(a)
            if kind is cupy_array:
                data = a.data
                ptr = data.ptr
                key += (a.shape, a.strides, a.dtype, data.device_id)  # type: ignore[operator]
                pointers.append(ptr)
                bits |= ptr
                continue
            reader = _FAST_READERS.get(kind)
            if reader is None:  # a kind of array without a fast reader: validate it every call
                key = None
                break
            signature, ptr = reader(a)
            key.append(signature)  # type: ignore[union-attr]
            pointers.append(ptr)
            bits |= ptr
        plan = None if key is None else self._plans.get(tuple(key))
        if plan is None:
            plan, pointers = self._plan(arrays, device)
            if key is not None:
                if len(self._plans) >= 256:
                    self._plans.clear()
                self._plans[tuple(key)] = plan
        elif bits & plan.any_mask:  # some pointer is off the widest alignment: check each against its own
            for ptr, mask in zip(pointers, plan.masks):
                if ptr & mask:
                    self.bind(arrays, device)  # raises LG606 naming the parameter
        if plan.blocks:
            if self.spec.debug:
                self.checked_launch(device, plan.launch, plan.blocks, plan.block, pointers, plan.symbols, stream)
            else:
                pointers.extend(plan.symbols)
                plan.launch(plan.blocks, plan.block, pointers, stream)

    def checked_launch(self, device: int, launch: Launch, blocks: int, block: int, pointers: Sequence[int],
                       symbols: Sequence[int], stream: Any) -> None:
        """Debug build: launch between a cleared fault record and the checks of what the launch did.

        The record is cleared first so that a fault left by a graph replay is not
        blamed on this launch; afterwards KernelFault reports an access outside a
        field and NonFiniteOutput a NaN or Inf written (see :mod:`.debug`).
        """
        from .debug import check_fault, clear_fault, scan_outputs

        module = self._modules[(device, _arch(device))]
        clear_fault(module, stream)
        launch(blocks, block, [*pointers, *symbols], stream)
        check_fault(self.spec, module, stream)
        scan_outputs(self.spec, pointers, dict(zip(self.spec.symbols, symbols)))


@dataclass(frozen=True)
class _Plan:
    """A validated launch: everything but the pointers, which change from call to call."""

    device: int
    blocks: int
    block: int
    symbols: tuple[int, ...]
    masks: tuple[int, ...]  # alignment - 1 of each parameter
    launch: Launch  # the loaded kernel on this plan's device
    any_mask: int  # the masks or-ed: a pointer with none of these bits set is aligned for every parameter


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


def _load(folder: Path, header: str, spec: KernelSpec, arch: str, cache: CubinCache) -> Any:
    """Compile (or fetch from the cache) and load one kernel's module."""
    import cupy

    from .nvrtc import CompileRequest

    source = (folder / spec.source).read_text(encoding="utf-8")
    headers = ((header, (folder / header).read_text(encoding="utf-8")),)
    request = CompileRequest(source=source, name=f"{folder.name}/{spec.source}", headers=headers, arch=arch)
    cache.get_or_compile(request)
    cubin_path, _ = cache.paths(request.key())
    return cupy.RawModule(path=str(cubin_path))
