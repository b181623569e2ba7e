"""Generated launchers: validate every argument against its layout, then launch.

A generated module builds one :class:`KernelLauncher` per kernel binding from
plain data (:mod:`.plan`). Calling it reads each array's pointer, shape,
strides and dtype (:mod:`.arrays`), checks them against the layout
(:mod:`.validate`), binds the symbolic dims consistently across arguments,
and launches (:mod:`.driver`) on the current CuPy stream or the one passed.
Nothing is compiled until the first launch; the cubin comes from the on-disk
cache. The debug build's checks around a launch are in :mod:`.debug`.
"""

from __future__ import annotations

import functools
import operator
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .arrays import ArrayKindError, array_info
from .cache import CubinCache
from .debug import check_fault, clear_fault, scan_outputs
from .driver import Launch, make_launch
from .errors import LaunchError, launch_error
from .plan import KernelSpec, LayoutSpec, ParamSpec
from .validate import check_param, who

# Generated modules import the plan types from here.
__all__ = ["KernelLauncher", "KernelSpec", "LaunchError", "LayoutSpec", "ParamSpec", "current_device", "device_arch"]


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
            raise launch_error("LG601", f"`{spec.name}` takes {len(params)} arrays, got {len(arrays)}")
        bound: dict[str, int] = {}
        pointers = []
        passed = self._passed
        for i, a in enumerate(arrays):
            p = params[i]
            try:
                info = array_info(a)
            except ArrayKindError as exc:
                raise launch_error("LG608", f"{who(spec.name, p)}: {exc}",
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
                     self.function(device, device_arch(device)), functools.reduce(operator.or_, masks, 0))
        return plan, pointers

    def __call__(self, *arrays: Any, stream: Any = None) -> None:
        """Check every array against its layout, then launch; raises LaunchError before any launch."""
        device = current_device()
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
        module = self._modules[(device, device_arch(device))]
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


def current_device() -> int:
    """The current CUDA device (CuPy's), importing CuPy on first use."""
    global _CUPY_NDARRAY, _GET_DEVICE
    if _GET_DEVICE is None:
        import cupy

        _CUPY_NDARRAY, _GET_DEVICE = cupy.ndarray, cupy.cuda.runtime.getDevice
    return int(_GET_DEVICE())


_ARCHS: dict[int, str] = {}


def device_arch(device: int) -> str:
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
