"""Generated launchers: validate every argument against its layout, then launch.

A generated module builds one :class:`KernelLauncher` per kernel binding from
plain data (:mod:`.plan`). Calling it reads each array's pointer, shape,
strides and dtype (:mod:`.arrays`), checks them against the layout
(:mod:`.validate`), binds the symbolic dims consistently across arguments,
checks that no written argument shares memory with another, that the grid
fits a CUDA grid, the autograd state of written torch tensors and the
stream, and only then looks for the device and launches (:mod:`.driver`) on
the stream passed or, for None, the current stream of the arrays' library
(:func:`.driver.launch_stream`: their framework row's, else CuPy's).
Nothing is compiled until the first launch; the cubin is the one ``layoutgen build`` shipped in the
package's ``cubins/`` where one fits the device (:mod:`.prebuilt`), else it
comes from the on-disk cache or NVRTC. The debug build's checks around a
launch are in :mod:`.debug`, what a validation found and the plan kept for it in
:mod:`.launch_plan`. A generated launcher function calls the
launcher's ``entry``: the compiled path (:mod:`.fastpath`) where it is
active, which hands every call it does not launch to the Python path here.
Where the compiled path is active the module's name of that function is the
compiled path itself (:meth:`KernelLauncher.public`), so that a call by
position runs no Python frame before the C one.

A kernel's scalars are given after its arrays; each value is checked first
(:func:`.validate.check_scalar`: its kind, its C type's range, NaN and Inf
where declared finite) and passed, after the pointers and before the
symbols, as an 8-byte value whose first bytes are the value as its C type:
the driver copies the parameter's own size from there.
"""

from __future__ import annotations

import functools
import operator
import sys
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar, cast

from ..schema.words import plural
from . import fastpath
from .arrays import ArrayKindError
from .cache import CubinCache
from .debug import checked_launch
from .driver import (Launch, check_stream, current_device, device_arch, find_device, launch_stream, make_launch,
                     no_device_error, own_streams)
from .errors import LaunchError, launch_error
from .launch_plan import MAX_GRID_BLOCKS, grid_blocks
from .launch_plan import Checked as _Checked
from .launch_plan import Plan as _Plan
from .nvrtc import CompileRequest
from .occupancy import forget_function, size_launch
from .plan import BlockRule, KernelSpec, LayoutSpec, ParamSpec, RawArg, ScalarSpec, SharedArray
from .raw_launch import check_values, raw_launch
from .readers import FAST_READERS as _FAST_READERS
from .readers import cupy_reader as _cupy_reader  # noqa: F401  (named here by the tests, as before)
from .readers import info_of, read_once
from .readers import torch_reader as _torch_reader  # noqa: F401
from .stamps import check as files_of_one_run  # LG640: a kernel or header of another run of `generate`
from .typed import Array
from .validate import ADDRESSES, Writes, check_param, check_scalar, kernel_extents, overlap_error, who

# Generated modules import the plan types from here.
__all__ = [
    "MAX_GRID_BLOCKS", "BlockRule", "KernelLauncher", "KernelSpec", "LaunchError", "LayoutSpec", "ParamSpec",
    "RawArg", "ScalarSpec", "SharedArray", "current_device", "device_arch", "find_device", "launch_path",
]
launch_path = fastpath.launch_path  # "compiled" or "python": the path launchers built now take
_Function = TypeVar("_Function", bound=Any)



@dataclass(eq=False)
class KernelLauncher:
    """Validates arguments and launches one generated kernel; compiles on first use."""

    spec: KernelSpec
    folder: Path  # the generated module's folder
    header: str  # the views header's file name
    cache_dir: str | None = None  # the cubin cache, relative to ``folder`` (``~`` expanded); None: the default
    include_dirs: tuple[str, ...] = ()  # the project's header folders (`include`), relative to ``folder``
    _functions: dict[tuple[int, str], Any] = field(default_factory=dict, repr=False)
    _modules: dict[tuple[int, str], Any] = field(default_factory=dict, repr=False)  # for the debug build's fault
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    # (parameter index, shape, strides, dtype) that passed check_param -> the symbols that shape binds.
    # Rank, width, static dims, dtype and packing depend on nothing else, so a hit skips those checks;
    # symbols, device, alignment and writability are checked on every call.
    _passed: dict[tuple[Any, ...], tuple[tuple[str, int], ...]] = field(default_factory=dict, repr=False)
    # (device, then each array's type, shape, strides, dtype, device) -> the launch it validated to.
    _plans: dict[tuple[Any, ...], _Plan] = field(default_factory=dict, repr=False)
    # The last plan and pointers found not to overlap (one tuple: threads swap it whole).
    _disjoint: tuple[_Plan | None, list[int]] = field(default=(None, []), repr=False)
    # The compiled hot path (.fastpath), taught each plan the Python path validates; None: the Python path only.
    _fast: Any = field(init=False, default=None, repr=False)
    # What the generated launcher function calls with the user's arguments: the compiled path (which hands
    # what it does not launch to the Python path), or the Python path itself.
    entry: Any = field(init=False, default=None, repr=False)
    # The generated launcher function the module named (public), or None.
    signature: Any = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        self._fast = fastpath.compiled_path(self.spec, self._python_path, self._scalar_check)
        self.entry = self._python_path if self._fast is None else self._fast

    def public(self, signature: _Function) -> _Function:
        """What a generated module names its launcher function ``signature`` (its decorator): ``signature``
        on the Python path, the compiled path standing in its name on the compiled one (fastpath.stand_in)."""
        self.signature = signature
        return cast(_Function, fastpath.stand_in(self._fast, self.spec, signature))

    def fresh(self) -> KernelLauncher:
        """A launcher of the same kernel, header, cache and include folders with nothing compiled, planned or
        taught; its launch path is chosen anew from the environment (``LAYOUTGEN_PYTHON_LAUNCH``)."""
        return KernelLauncher(self.spec, self.folder, self.header, self.cache_dir, self.include_dirs)

    def bind(self, arrays: tuple[Any, ...], device: int | None, reads: Sequence[tuple[Any, int]] = (),
             signatures: list[Any] | None = None) -> tuple[list[int], dict[str, int]]:
        """Every argument checked against its parameter; the pointers and the bound symbols.

        ``device`` None (no device found) checks everything but the device.
        Each array is read once: ``reads`` holds the launch's own read
        (signature, pointer) of the first arrays, which is checked as it was
        read; the others are read here. ``signatures``, where given, gets the
        signature of each read checked (None for a kind checked on every
        call): a plan is kept under exactly what was checked.
        """
        spec = self.spec
        params = spec.params
        if len(arrays) != len(params):
            raise launch_error("LG601", f"`{spec.name}` takes {plural(len(params), 'array')}, got {len(arrays)}")
        bound: dict[str, int] = {}
        pointers = []
        passed = self._passed
        n_read = len(reads)
        for i, a in enumerate(arrays):
            p = params[i]
            try:
                info = None
                if i < n_read:  # read by the launch already: checked as read
                    signature, ptr = reads[i]
                    info = info_of(a, signature, ptr)
                if info is None:
                    signature, info = read_once(a)
            except ArrayKindError as exc:
                raise launch_error("LG608", f"{who(spec.name, p)}: {exc}",
                                   hint=exc.hint or "pass a device array: CuPy, torch (CUDA) or JAX") from None
            if signatures is not None:
                signatures.append(signature)
            key = (i, info.shape, info.strides, info.dtype)
            symbols = passed.get(key)
            if (symbols is not None and info.device == device and not info.ptr % p.align
                    and 0 < info.ptr < ADDRESSES and (not info.readonly or p.access == "in")):
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

    def blocks(self, bound: dict[str, int]) -> int:
        """Blocks the launch needs (a persistent grid's: one per tile, at most); LG617 when that is more than a
        CUDA grid has (nothing is launched)."""
        return grid_blocks(self.spec, self.grid(bound), bound)

    def check(self, arrays: tuple[Any, ...], device: int | None, stream: Any = None,
              reads: Sequence[tuple[Any, int]] = (), signatures: list[Any] | None = None) -> tuple[_Checked, list[int]]:
        """Every check of a launch, none of which needs a GPU: what was checked, and this call's pointers.

        In order: each array against its parameter (LG601..LG608, LG610,
        LG633, LG634), the grid (LG617), memory shared by a written argument
        (LG614), the written arrays' frameworks' rules (torch's LG635, LG618)
        and the stream (LG616). ``reads`` and ``signatures`` are :meth:`bind`'s.
        """
        spec = self.spec
        pointers, bound = self.bind(arrays, device, reads, signatures)
        blocks = self.blocks(bound)
        check_values(spec, bound)  # an existing kernel's carried integers: each must fit its C type (LG641)
        extents = kernel_extents(spec.params, bound, spec.may_alias)
        overlap = extents.first_overlap(pointers)
        if overlap is not None:
            raise self._overlap(overlap, pointers, bound)
        written = Writes.of(spec.params, arrays)  # the rules of the written arrays' frameworks
        if written is not None:
            written.check(spec.name, spec.params, arrays)
        check_stream(stream, spec.name)
        masks = tuple(p.align - 1 for p in spec.params)
        checked = _Checked(blocks, spec.block, tuple(bound[s] for s in spec.symbols), masks,
                           functools.reduce(operator.or_, masks, 0), extents.pairs, written, bound,
                           own_streams(arrays))
        return checked, pointers

    def _overlap(self, pair: tuple[int, int], pointers: list[int], bound: dict[str, int]) -> LaunchError:
        i, j = pair
        params = self.spec.params
        return overlap_error(self.spec.name, params[i], params[j], (pointers[i], pointers[j]), bound)

    def function(self, device: int, arch: str) -> Launch:
        """The loaded kernel for ``device`` (compiled or taken from the cache on first use)."""
        key = (device, arch)
        fn = self._functions.get(key)
        if fn is None:
            with self._lock:
                fn = self._functions.get(key)
                if fn is None:
                    module = self._modules[key] = _load(self.compile_request(arch), self.cache(), self.folder,
                                                        self.spec.source)
                    spec = self.spec
                    kernel = module.get_function(spec.function or spec.name)
                    n_values = len(spec.raw) or len(spec.params) + len(spec.scalars) + len(spec.symbols)
                    fn = raw_launch(make_launch(kernel, n_values, spec.name), spec)  # an existing kernel's order
                    forget_function(device, fn.handle)
                    self._functions[key] = fn
        return fn

    def compile_request(self, arch: str) -> CompileRequest:
        """What NVRTC compiles for ``arch``: the kernel's file, its views header (both read now) and the
        project's header folders, found relative to this module's folder (LG514 from the key where one is not
        there)."""
        folder = self.folder
        source = (folder / self.spec.source).read_text(encoding="utf-8")
        headers = ((self.header, (folder / self.header).read_text(encoding="utf-8")),)
        files_of_one_run(self.spec.name, folder, ((self.spec.source, source), *headers))
        return CompileRequest(source=source, name=f"{folder.name}/{self.spec.source}", headers=headers, arch=arch,
                              include_dirs=tuple(str(folder / d) for d in self.include_dirs))

    def cache(self) -> CubinCache:
        """The cubin cache: ``cache_dir`` under ``folder`` where set, else ``CubinCache.default()``."""
        if self.cache_dir is None:
            return CubinCache.default()
        return CubinCache(self.folder / Path(self.cache_dir).expanduser())

    def _plan(self, arrays: tuple[Any, ...], device: int | None, stream: Any,
              reads: Sequence[tuple[Any, int]]) -> tuple[_Plan, list[int], tuple[Any, ...] | None]:
        """Validate every argument (raises LaunchError), each as the launch read it (``reads``, :meth:`bind`'s):
        the launch, this call's pointers, and the key of what was validated (None where an array's kind is
        validated on every call)."""
        global _CUPY_NDARRAY
        signatures: list[Any] = []
        checked, pointers = self.check(arrays, device, stream, reads, signatures)
        if device is None:  # every argument fits: only now say that there is nothing to launch on
            raise no_device_error(f"`{self.spec.name}`")
        if _CUPY_NDARRAY is None:  # a CuPy array exists only once CuPy is imported; until then none is read inline
            _CUPY_NDARRAY = getattr(sys.modules.get("cupy"), "ndarray", None)
        launch, blocks = size_launch(self.spec, self.function(device, device_arch(device)), device,
                                     checked.blocks, checked.bound)  # shared memory, resident blocks: LG624, LG625
        plan = _Plan(device, replace(checked, blocks=blocks) if blocks != checked.blocks else checked, launch)
        return plan, pointers, None if None in signatures else (device, *signatures)

    def scalar_values(self, arguments: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[int]]:
        """The arrays among ``arguments`` (one per array parameter, first) and the 8-byte launch values of the
        scalars after them: LG601 for a wrong count, LG620..LG622 for a value its scalar cannot take."""
        spec = self.spec
        n = len(spec.params)
        if len(arguments) != n + len(spec.scalars):
            raise launch_error(
                "LG601", f"`{spec.name}` takes {plural(n, 'array')} ({', '.join(p.name for p in spec.params)}), "
                f"then {plural(len(spec.scalars), 'scalar')} ({', '.join(s.name for s in spec.scalars) or 'none'}), "
                f"got {plural(len(arguments), 'argument')}")
        return arguments[:n], [check_scalar(spec.name, s, v) for s, v in zip(spec.scalars, arguments[n:])]

    def _scalar_check(self, index: int, value: Any) -> int:
        """Scalar ``index``'s launch value of ``value`` (LG620..LG622): what the compiled path asks of a value
        it does not take as it is."""
        return check_scalar(self.spec.name, self.spec.scalars[index], value)

    def __call__(self, *arguments: Any, stream: Any = None) -> None:
        """Check every array (an :class:`~.typed.Array` or a device array) against its layout and every
        scalar's value (given after the arrays), then launch; raises LaunchError before any launch."""
        self.entry(*arguments, stream=stream)

    def _python_path(self, *arguments: Any, stream: Any = None) -> None:
        """The Python launch path: what :meth:`__call__` runs where the compiled path is off or hands over."""
        for a in arguments:  # typed Arrays unwrapped (typed.unwrap), as the compiled path unwraps them
            if type(a) is Array:
                n = len(self.spec.params)
                arguments = (*(x.data if type(x) is Array else x for x in arguments[:n]), *arguments[n:])
                break
        device = find_device()  # None without a GPU: the arguments are still checked first
        scalars = self.spec.scalars
        arrays, values = self.scalar_values(arguments) if scalars else (arguments, None)
        fast = self._fast  # the compiled path handed the call over (or could not read it): taught below
        # The hot path, written flat because it runs on every launch: arrays whose
        # (type, shape, strides, dtype, device) all passed before need only their
        # pointers read, their alignment checked and, where one is written, their
        # extents compared; written arrays their frameworks' rules (torch's autograd). Each
        # array is read once: a new key is validated as this read found it, so a
        # plan is kept under exactly what was checked.
        key: list[Any] = [device]
        pointers: list[int] = []
        cupy_array = _CUPY_NDARRAY
        bits = 0  # every pointer or-ed together: alignment is checked at once when nothing is misaligned
        complete = True  # every array was read by a fast reader
        for a in arrays:
            kind = type(a)
            if kind is cupy_array:  # cupy_reader, inline
                data = a.data
                ptr = data.ptr
                key.append((kind, a.shape, a.strides, a.dtype, data.device_id))
                pointers.append(ptr)
                bits |= ptr
                continue
            reader = _FAST_READERS.get(kind)
            if reader is None:  # a kind of array without a fast reader: validate it every call
                complete = False
                break
            signature, ptr = reader(a)
            key.append(signature)
            pointers.append(ptr)
            bits |= ptr
        plan = self._plans.get(tuple(key)) if complete else None
        # a pointer off the widest alignment, null, or no 64-bit address: this read is checked in full below
        # (LG606, LG634, LG633 naming the parameter, or a launch where an empty array has no pointer)
        if plan is not None and (bits & plan.checked.any_mask or not 0 < bits < ADDRESSES or 0 in pointers):
            plan = None
        if plan is None:
            plan, pointers, validated = self._plan(arrays, device, stream, list(zip(key[1:], pointers)))
            if validated is not None:
                if len(self._plans) >= 256:
                    self._plans.clear()
                self._plans[validated] = plan
            checked = plan.checked
        else:
            validated = tuple(key)
            checked = plan.checked
            last = self._disjoint
            if checked.pairs and (last[0] is not plan or last[1] != pointers):  # buffers are mostly reused
                for i, j, size_i, size_j, same_start in checked.pairs:  # Extents.first_overlap, inlined
                    offset = pointers[j] - pointers[i]
                    if -size_j < offset < size_i and not (same_start and offset == 0):
                        raise self._overlap((i, j), pointers, checked.bound)
                self._disjoint = (plan, pointers[:])
            if checked.written is not None:
                checked.written.check(self.spec.name, self.spec.params, arrays)
        if fast is not None and validated is not None:  # the compiled path missed it: teach it what was checked
            fastpath.learn(fast, plan, arrays, validated[1:], pointers)
        if not checked.blocks:
            return
        if stream is None and checked.torch_arrays:  # the arrays' framework's current stream (LG616 where two differ)
            stream = launch_stream(None, arrays, checked.torch_arrays, self.spec.name, plan.device)
        if self.spec.debug:
            try:
                self.checked_launch(plan.device, plan.launch, checked.blocks, checked.block, pointers,
                                    [*(values or ()), *checked.symbols], stream)
            finally:  # a fault is reported after the kernel wrote: autograd hears of the write either way
                if checked.written is not None:
                    checked.written.record(arrays)
            return
        if values:
            pointers.extend(values)
        pointers.extend(checked.symbols)
        plan.launch(checked.blocks, checked.block, pointers, stream)
        if checked.written is not None:  # the frameworks' record of the write (torch's version counters)
            checked.written.record(arrays)

    def checked_launch(self, device: int, launch: Launch, blocks: int, block: int, pointers: Sequence[int],
                       values: Sequence[int], stream: Any) -> None:
        """Debug build: the launch between a cleared fault record and the checks of what it did
        (:func:`.debug.checked_launch`); ``values`` are what it passes after the pointers: the scalars' values,
        then the symbols."""
        checked_launch(self.spec, self._modules[(device, device_arch(device))], launch, blocks, block, pointers,
                       values, stream)


_CUPY_NDARRAY: Any = None  # cupy.ndarray once a launch was planned: read inline on the hot path


def _load(request: CompileRequest, cache: CubinCache, folder: Path, source: str) -> Any:
    """Load one kernel's module: the shipped cubin that fits the device, else compiled (or fetched from the
    cache); either way the bytes that were verified. LG626 where none fits and compiling is forbidden."""
    from .cubin_module import LoadedCubin
    from .prebuilt import load_module

    return load_module(folder, Path(source).stem, request, lambda: cache.load(request), LoadedCubin)
