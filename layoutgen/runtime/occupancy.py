"""What a launch needs of the device beyond its arguments: dynamic shared memory and resident blocks.

A kernel with shared arrays (``Kernel(..., shared=[...])``) needs their bytes, computed from the
bound symbols (:func:`.plan.shared_offsets`), as its launch's dynamic shared memory. CUDA gives a
kernel at most 48 KiB of it until the kernel opts in to more
(``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES``), and never more than the device's opt-in limit
(``cudaDevAttrMaxSharedMemoryPerBlockOptin``) less the shared memory the body declares itself.
:func:`reserve_shared` refuses a size over that limit (LG624) before anything runs and raises the
kernel's attribute once per function where it needs more. A persistent grid starts as many blocks
as stay resident: :func:`resident_blocks`, the occupancy of the compiled function for its block and
shared memory (``cuOccupancyMaxActiveBlocksPerMultiprocessor``) times the multiprocessors (LG625
where not one block fits).

Both launch paths (CuPy's and ``cuda.bindings``') launch the same ``CUfunction``, so these calls go
through CuPy's driver bindings on its handle for either. Device facts are cached per device, a
function's per (device, function), an occupancy per (device, function, block, shared bytes): a
launcher asks once, then launches from its plan.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..schema.diagnostics import Diagnostic
from .driver import Launch
from .errors import LaunchError
from .plan import KernelSpec, shared_offsets

#: Dynamic shared memory a kernel may have before it opts in to more.
DEFAULT_DYNAMIC_SHARED = 48 * 1024


@dataclass(frozen=True)
class DeviceLimits:
    """What a device allows a block: shared memory once opted in, and its multiprocessors."""

    shared_opt_in: int
    multiprocessors: int


_DEVICES: dict[int, DeviceLimits] = {}
_STATIC: dict[tuple[int, int], int] = {}  # (device, function) -> shared bytes the body declares
_ALLOWED: dict[tuple[int, int], int] = {}  # (device, function) -> its max dynamic shared memory, as set
_RESIDENT: dict[tuple[int, int, int, int], int] = {}  # (device, function, block, shared) -> blocks per SM
_LOCK = threading.Lock()  # raising a function's attribute: one thread at a time


def forget_function(device: int, function: int) -> None:
    """Forget what was asked of the driver about ``function`` on ``device``: called when a module is loaded
    and hands out this handle. The driver reuses a CUfunction handle once the module that had it is unloaded
    (a launcher collected), and an earlier function's raised shared-memory limit or occupancy at the same
    handle is not the new one's: its limit would never be raised, and its occupancy read as 0 (LG625)."""
    with _LOCK:
        _STATIC.pop((device, function), None)
        _ALLOWED.pop((device, function), None)
        for key in [k for k in _RESIDENT if k[:2] == (device, function)]:
            del _RESIDENT[key]


def device_limits(device: int) -> DeviceLimits:
    """The device's opt-in shared memory per block and its multiprocessors; asked of CuPy once per device."""
    limits = _DEVICES.get(device)
    if limits is None:
        import cupy

        runtime = cupy.cuda.runtime
        limits = _DEVICES[device] = DeviceLimits(
            runtime.deviceGetAttribute(runtime.cudaDevAttrMaxSharedMemoryPerBlockOptin, device),
            runtime.deviceGetAttribute(runtime.cudaDevAttrMultiProcessorCount, device),
        )
    return limits


def static_shared(device: int, function: int) -> int:
    """Shared memory the compiled function declares itself (``__shared__`` arrays of its body)."""
    key = (device, function)
    size = _STATIC.get(key)
    if size is None:
        import cupy

        driver = cupy.cuda.driver
        size = _STATIC[key] = driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, function)
    return size


def _allow(device: int, function: int, nbytes: int) -> None:
    """Raise the function's dynamic shared memory limit to ``nbytes`` where it is lower (once per size)."""
    import cupy

    driver = cupy.cuda.driver
    key = (device, function)
    with _LOCK:
        allowed = _ALLOWED.get(key)
        if allowed is None:
            allowed = driver.funcGetAttribute(driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, function)
        if nbytes > allowed:
            driver.funcSetAttribute(function, driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, nbytes)
            allowed = nbytes
        _ALLOWED[key] = allowed


def shared_text(spec: KernelSpec, bound: Mapping[str, int]) -> str:
    """The shared arrays as a message names them: ```stage` 65536 bytes at byte 0; `K` = 16384``."""
    starts, _ = shared_offsets(spec.shared, dict(bound))
    arrays = ", ".join(f"`{a.name}` {a.nbytes(dict(bound))} bytes at byte {start}"
                       for a, start in zip(spec.shared, starts))
    named = sorted({d for a in spec.shared for d in a.dims if isinstance(d, str)})
    return arrays + "".join(f"; `{s}` = {bound[s]}" for s in named)


def reserve_shared(spec: KernelSpec, bound: Mapping[str, int], device: int, function: int, nbytes: int) -> None:
    """LG624 when ``nbytes`` of dynamic shared memory (and what the body declares) is more than ``device``
    allows a block; else the function is allowed ``nbytes`` (raised past 48 KiB where needed)."""
    limit = device_limits(device).shared_opt_in
    declared = static_shared(device, function)
    if nbytes + declared > limit:
        body = f" and {declared} bytes its body declares" if declared else ""
        raise LaunchError(Diagnostic(
            "LG624", f"`{spec.name}` needs {nbytes} bytes of dynamic shared memory ({shared_text(spec, bound)})"
            f"{body}, but device {device} allows a block at most {limit} bytes",
            hint="launch it on smaller sizes (the arrays are sized by the symbols shown), or declare smaller "
            "arrays: fewer rows a tile",
        ))
    if nbytes > DEFAULT_DYNAMIC_SHARED - declared:
        _allow(device, function, nbytes)


def resident_blocks(spec: KernelSpec, device: int, function: int, shared: int) -> int:
    """The blocks of ``spec``'s persistent grid the device keeps resident at once: ``blocks_per_sm`` (or the
    occupancy of the compiled function for its block and ``shared`` bytes) times the multiprocessors.

    LG625 where not one block of the function fits on a multiprocessor: a persistent grid would start none.
    """
    rule = spec.count
    per_sm = rule.blocks_per_sm if rule is not None else 0
    if not per_sm:
        key = (device, function, spec.block, shared)
        per_sm = _RESIDENT.get(key, -1)
        if per_sm < 0:
            import cupy

            per_sm = _RESIDENT[key] = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(
                function, spec.block, shared)
    if per_sm < 1:
        raise LaunchError(Diagnostic(
            "LG625", f"`{spec.name}` is a persistent grid, but device {device} keeps no block of it resident: "
            f"the occupancy of its {spec.block} threads a block with {shared} bytes of dynamic shared memory is 0",
            hint="use a smaller block or less shared memory; `layoutgen check --compile --report` shows the "
            "kernel's registers",
        ))
    return per_sm * device_limits(device).multiprocessors


class SharedMemoryLaunch:
    """A launch with its dynamic shared memory fixed: what a plan, a program run and a captured graph call."""

    def __init__(self, launch: Launch, shared: int) -> None:
        self._launch = launch
        self.shared = shared
        self.handle = launch.handle

    def __call__(self, blocks: int, block: int, values: list[int], stream: Any, shared: int = 0) -> None:
        self._launch(blocks, block, values, stream, self.shared)


def size_launch(spec: KernelSpec, launch: Launch, device: int, blocks: int,
                bound: Mapping[str, int]) -> tuple[Launch, int]:
    """``launch`` with this launch's dynamic shared memory, and its blocks: for a persistent grid, at most as
    many as stay resident. What a plan, a program run and a captured graph launch; LG624, LG625 before any."""
    _, shared = shared_offsets(spec.shared, dict(bound))
    persistent = spec.count is not None and spec.count.kind == "persistent"
    if not blocks or not (shared or persistent):
        return launch, blocks
    function = launch.handle
    if shared:
        reserve_shared(spec, bound, device, function, shared)
        launch = SharedMemoryLaunch(launch, shared)
    if persistent:
        blocks = min(blocks, resident_blocks(spec, device, function, shared))
    return launch, blocks
