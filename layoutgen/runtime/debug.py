"""The debug build's reports: an access outside its field, and NaN or Inf written to a field.

A debug build's accessors record the first out-of-field access of a launch
in the module's ``lg_fault`` global (and end the offending thread before it
touches memory); :func:`check_fault` reads and clears it after the launch.
:func:`scan_outputs` then looks at every field the kernel wrote and names the
first that holds a NaN or an Inf, with the index. Both synchronize: the debug
build trades speed for knowing which kernel went wrong.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..schema.diagnostics import Diagnostic, Site
from ..schema.words import plural
from .errors import LaunchError
from .plan import KernelSpec

if TYPE_CHECKING:
    from .driver import Launch

#: Set to 0 to skip the NaN/Inf scan of a debug build (the bounds checks stay).
SCAN_ENV = "LAYOUTGEN_DEBUG_SCAN"

#: The device global the debug header defines (lg::Fault, layoutgen/include/lg/fault.cuh): the words of :class:`FaultRecord`
#: (8 bytes each, in its order), then the file's name (:data:`FAULT_FILE_BYTES`).
FAULT_SYMBOL = "lg_fault"
FAULT_FILE_BYTES = 256


class FaultRecord(NamedTuple):
    """The words of the debug header's ``lg::Fault``, in the struct's order: the one description of its layout
    (the launcher reads it, and tests build records from it)."""

    hit: int  # 0 until an access falls outside its field
    param: int  # the parameter's index; a shared tile's is -1 - its index
    row: int
    col: int
    rows: int
    width: int
    block: int
    thread: int
    access: int  # -1: an accessor's check; 0 read, 1 write, 2 either: a checked pointer's
    line: int  # the user's line (0: not known), in the file's name after the words
    offset: int  # a checked pointer's footprint: the field's first column
    row_stride: int  # and its rows' stride


_FAULT_FIELDS = len(FaultRecord._fields)
#: What a checked pointer's access was (the record's `access`): a read, a write, a reference handed out.
_VERBS = {0: "read", 1: "wrote", 2: "accessed"}


class KernelFault(LaunchError):
    """A debug-build kernel indexed outside one of its fields (LG611)."""


class NonFiniteOutput(LaunchError):
    """A debug-build kernel wrote NaN or Inf into one of its output fields (LG612)."""


def _synchronize(stream: Any) -> None:
    import cupy

    from .driver import stream_handle

    cupy.cuda.runtime.streamSynchronize(stream_handle(stream))


def _fault_record(module: Any) -> Any:
    import cupy

    return cupy.ndarray((_FAULT_FIELDS + FAULT_FILE_BYTES // 8,), cupy.int64, memptr=module.get_global(FAULT_SYMBOL))


def clear_fault(module: Any, stream: Any) -> None:
    """Zero the module's fault record on ``stream``, ahead of a launch."""
    import cupy

    from .driver import stream_handle

    record = _fault_record(module)
    cupy.cuda.runtime.memsetAsync(record.data.ptr, 0, record.nbytes, stream_handle(stream))


def check_fault(spec: KernelSpec, module: Any, stream: Any) -> None:
    """Raise :class:`KernelFault` when the launch just made on ``stream`` left a fault; clear it."""
    _synchronize(stream)
    record = _fault_record(module)
    words = record.get()
    hit, param, row, col, rows, width, block, thread, access, line, offset, row_stride = FaultRecord(
        *(int(v) for v in words[:_FAULT_FIELDS]))
    if not hit:
        return
    file = words[_FAULT_FIELDS:].tobytes().split(b"\0", 1)[0].decode("utf-8", "replace")
    record.fill(0)
    site = Site(file, line) if file and line > 0 else None
    if access >= 0:  # a checked pointer's access (lg::out_of_footprint)
        p = spec.params[param]
        raise KernelFault(footprint_fault("LG611", spec.name, p.name, p.view, _VERBS.get(access, "accessed"), row, col,
                                          rows, offset, width, row_stride, (block, thread), site))
    raise KernelFault(field_fault("LG611", spec.name, [(p.name, p.view) for p in spec.params],
                                  [a.name for a in spec.shared], param, row, col, rows, width, (block, thread), site))


def checked_launch(spec: KernelSpec, module: Any, launch: Launch, blocks: int, block: int, pointers: Sequence[int],
                   values: Sequence[int], stream: Any) -> None:
    """A debug build's launch between a cleared fault record and the checks of what the launch did.

    ``values`` are what the launch passes after the pointers: the scalars' values, then the symbols. The
    record is cleared first so that a fault left by a graph replay is not blamed on this launch; afterwards
    KernelFault reports an access outside a field and NonFiniteOutput a NaN or Inf written.
    """
    clear_fault(module, stream)
    launch(blocks, block, [*pointers, *values], stream)
    check_fault(spec, module, stream)
    scan_outputs(spec, pointers, dict(zip(spec.symbols, values[len(spec.scalars):])))


def footprint_fault(code: str, kernel: str, name: str, view: str, verb: str, row: int, col: int, field_row: int,
                    offset: int, width: int, row_stride: int, where: tuple[int, int] | None,
                    site: Site | None = None) -> Diagnostic:
    """An access outside a parameter's footprint: row ``row``, column ``col`` of its array (``field_row``: the
    field's row, negative where the row is not the field's), ``verb`` "read", "wrote" or "accessed". The CPU
    run's AddressSanitizer finding and its checked pointers (LG650) and the debug build's checked pointers on
    the GPU (LG611) say the same. ``offset``, ``width`` and ``row_stride`` are the field's, in elements."""
    place = (f"row {field_row}, column {col}" if field_row >= 0
             else f"array row {row}, column {col}, in a row that is not the field's")
    at = f", in block {where[0]}, thread {where[1]}" if where is not None else ""
    return Diagnostic(
        code, f"`{kernel}` {verb} `{name}` ({view}) at {place}, outside the field's columns {offset}..{offset + width} "
        f"(rows {row_stride} elements apart){at}", site,
        hint=f"rows of `{view}` are {row_stride} elements apart and hold {width} columns from column {offset}: take "
        "every stride and width from the view",
    )


def field_fault(code: str, kernel: str, params: Sequence[tuple[str, str]], shared: Sequence[str], param: int,
                row: int, col: int, rows: int, width: int, where: tuple[int, int] | None = None,
                site: Site | None = None) -> Diagnostic:
    """The report of a view's or tile's check (``out_of_field`` of the views header): the debug build's on the
    GPU (LG611) and the CPU run's of ``check --execute`` (LG651) say the same, from the same record.

    ``params`` are the kernel's (name, view) and ``shared`` its shared arrays' names, as ``param`` counts them
    (a shared tile's is -1 - its index); ``where`` the block and thread that met it, where known."""
    at = f", in block {where[0]}, thread {where[1]}" if where is not None else ""
    stopped = f"{at}; the thread stopped before the access"
    if param < 0:  # a shared tile's access (lg::SharedTile): -1 - its index among the kernel's shared arrays
        tile = shared[-1 - param]
        if width < 0:  # stage(i) of a ring with i < 0 (`col`; `rows` its stages)
            return Diagnostic(
                code, f"`{kernel}` asked shared tile `{tile}` for stage {col}, but a stage must not be negative "
                f"(the ring of {plural(rows, 'stage')} wraps at its end itself){stopped}", site,
                hint="give stage(i) the position of a tile among the tiles of its warp or block: tile.index, "
                "tiles.nth(i).index",
            )
        return Diagnostic(
            code, f"`{kernel}` indexed shared tile `{tile}` at row {row}, column {col}, outside the tile "
            f"({plural(rows, 'row')}, {plural(width, 'column')}){stopped}", site,
            hint="index a tile with rows below its capacity and columns below its width, and copy at most its "
            "capacity of rows in or out",
        )
    name, view = params[param]
    if width < 0:  # one index of an accessor out of its extent (see lg_index in the debug header)
        return Diagnostic(
            code, f"`{kernel}` indexed `{name}` ({view}) with {col} as index {row} of its accessor, "
            f"outside 0..{rows}{stopped}", site,
            hint="each index of `x(i0, ..., c)` must stay below its own extent: a flattened index that still lands "
            "in the field would read the neighbouring row or head",
        )
    return Diagnostic(
        code, f"`{kernel}` indexed `{name}` ({view}) at row {row}, column {col}, outside the field "
        f"({plural(rows, 'row')}, {plural(width, 'column')}){stopped}", site,
        hint="index the field with rows below rows() and columns below width; the generated view's constants "
        "come from the layout",
    )


def scan_outputs(spec: KernelSpec, pointers: Sequence[int], symbols: dict[str, int]) -> None:
    """Raise :class:`NonFiniteOutput` naming the first written field that holds NaN or Inf."""
    if os.environ.get(SCAN_ENV, "1") == "0":
        return
    import cupy
    import numpy as np

    for p, pointer in zip(spec.params, pointers):
        layout = p.layout
        bf16 = layout.dtype == "bf16"  # stored as uint16 words: NaN and Inf have every exponent bit set
        if not p.writes or p.cols is None or not (bf16 or np.dtype(layout.numpy).kind in "fc"):
            continue
        unit = 1 if layout.unit is None else symbols[layout.unit]  # columns count `unit` elements each
        shape = layout.shape_of(symbols)
        size = int(np.prod(shape)) * layout.itemsize
        memory = cupy.cuda.UnownedMemory(pointer, size, owner=None)
        whole = cupy.ndarray(shape, layout.numpy, memptr=cupy.cuda.MemoryPointer(memory, 0))
        window: list[slice] = [slice(None)] * len(shape)
        window[-1] = slice(p.cols[0] * unit, p.cols[1] * unit)
        if p.rows is not None:  # a named range: only those entries of that axis are the view's
            window[p.rows[0]] = slice(p.rows[1], p.rows[2])
        field = whole[tuple(window)]
        bad = (field & 0x7F80) == 0x7F80 if bf16 else ~cupy.isfinite(field)
        if not bool(bad.any()):
            continue
        index = tuple(int(i) for i in cupy.argwhere(bad)[0].get())
        at = tuple(i + (s.start or 0) for i, s in zip(index, window))
        if bf16:
            bits = int(field[index].get())
            what = "NaN" if bits & 0x7F else ("-Inf" if bits & 0x8000 else "Inf")
        else:
            value = float(field[index].get())
            what = "NaN" if value != value else ("Inf" if value > 0 else "-Inf")
        raise NonFiniteOutput(Diagnostic(
            "LG612", f"`{spec.name}` wrote {what} to `{p.name}` ({p.view}) at index "
            f"[{', '.join(map(str, at))}] of the {layout.name} array",
            hint="the kernel that produced it is this one; check its inputs (scanned only where written) and "
            "its arithmetic",
        ))
