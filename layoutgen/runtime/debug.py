"""The debug build's reports: an access outside its field, a barrier some threads never reach, and NaN or Inf
written to a field.

A debug build's accessors record the first out-of-field access of a launch
in the module's ``lg_fault`` global (and end the offending thread before it
touches memory), as its checked barriers record the first barrier some threads
of a block never reach; :func:`check_fault` reads and clears it after the launch.
:func:`scan_outputs` then looks at every field the kernel wrote and names the
first that holds a NaN or an Inf, with the index; where every input was finite,
a NaN is named as the CPU run of ``check --execute`` names it: after a read of a
shared tile's row that its copy left out (``lg_unheld``), that read, at its line
(LG655's words); else the memory nothing wrote (LG654's). Both synchronize: the
debug build trades speed for knowing which kernel went wrong. The words of each
finding are one function here, which the CPU run's findings use too.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from ..schema.diagnostics import Diagnostic, Site
from ..schema.words import plural
from .errors import LaunchError
from .plan import KernelSpec, ParamSpec

if TYPE_CHECKING:
    from .driver import Launch

#: Set to 0 to skip the NaN/Inf scan of a debug build (the bounds checks stay).
SCAN_ENV = "LAYOUTGEN_DEBUG_SCAN"

#: The device global the debug header defines (lg::Fault, layoutgen/include/lg/fault.cuh): the words of :class:`FaultRecord`
#: (8 bytes each, in its order), then the file's name (:data:`FAULT_FILE_BYTES`) and, for a pointer taken from a shared
#: tile, the tile's (:data:`TILE_BYTES`).
FAULT_SYMBOL = "lg_fault"
FAULT_FILE_BYTES = 256
TILE_BYTES = 128


class FaultRecord(NamedTuple):
    """The words of the debug header's ``lg::Fault``, in the struct's order: the one description of its layout
    (the launcher reads it, and tests build records from it)."""

    hit: int  # 0 until an access falls outside its field
    param: int  # the parameter's index; a shared tile's is -1 - its index
    row: int
    col: int
    rows: int  # a checked pointer's: the field's row (a shared tile's pointer: the rows the tile holds)
    width: int
    block: int
    thread: int
    access: int  # -1: an accessor's check; 0 read, 1 write, 2 either: a checked pointer's; -2, -3: a barrier's
    line: int  # the user's line (0: not known), in the file's name after the words
    offset: int  # a checked pointer's footprint: the field's first column (a shared tile's pointer: its capacity)
    row_stride: int  # and its rows' stride (a shared tile's pitch)


_FAULT_FIELDS = len(FaultRecord._fields)

#: The device global of the first read of a launch past the rows a shared tile holds (lg::Unheld, lg/fault.cuh): the
#: words of :class:`UnheldRecord`, then the file's name (:data:`FAULT_FILE_BYTES`) and the tile's (:data:`TILE_BYTES`).
UNHELD_SYMBOL = "lg_unheld"


class UnheldRecord(NamedTuple):
    """The words of the debug header's ``lg::Unheld``, in the struct's order."""

    hit: int  # 0 until a read of a row past those the tile holds
    tile: int  # which shared array of the kernel
    row: int
    col: int
    held: int  # the rows the tile's last copy counted
    capacity: int
    block: int
    thread: int
    line: int  # the user's line of the read (0: not known), in the file's name after the words


_UNHELD_FIELDS = len(UnheldRecord._fields)
#: What a checked pointer's access was (the record's `access`): a read, a write, a reference handed out.
_VERBS = {0: "read", 1: "wrote", 2: "accessed"}
#: The record's `access` for a barrier's fault (lg/debug_barrier.cuh), as :func:`barrier_fault` names its kinds: a
#: thread returned while others wait, a thread reached another barrier than the threads waiting at one.
BARRIER_KINDS = {-2: "barrier-exit", -3: "divergent"}


class KernelFault(LaunchError):
    """A debug-build kernel indexed outside one of its fields (LG611)."""


class BarrierFault(KernelFault):
    """A debug-build kernel left threads of a block at a barrier that some of its threads never reach (LG642)."""


class NonFiniteOutput(LaunchError):
    """A debug-build kernel wrote NaN or Inf into one of its output fields (LG612)."""


def _synchronize(stream: Any) -> None:
    import cupy

    from .driver import stream_handle

    cupy.cuda.runtime.streamSynchronize(stream_handle(stream))


def _fault_record(module: Any) -> Any:
    import cupy

    return cupy.ndarray((_FAULT_FIELDS + (FAULT_FILE_BYTES + TILE_BYTES) // 8,), cupy.int64,
                        memptr=module.get_global(FAULT_SYMBOL))


def _unheld_record(module: Any) -> Any:
    import cupy

    return cupy.ndarray((_UNHELD_FIELDS + (FAULT_FILE_BYTES + TILE_BYTES) // 8,), cupy.int64,
                        memptr=module.get_global(UNHELD_SYMBOL))


def clear_fault(module: Any, stream: Any) -> None:
    """Zero the module's fault records (``lg_fault``, ``lg_unheld``) on ``stream``, ahead of a launch."""
    import cupy

    from .driver import stream_handle

    for record in (_fault_record(module), _unheld_record(module)):
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
    text = words[_FAULT_FIELDS:].tobytes()
    file = text[:FAULT_FILE_BYTES].split(b"\0", 1)[0].decode("utf-8", "replace")
    record.fill(0)
    site = Site(file, line) if file and line > 0 else None
    if access in BARRIER_KINDS:  # a barrier's check (lg::syncthreads_checked)
        raise BarrierFault(barrier_fault("LG642", spec.name, BARRIER_KINDS[access], "__syncthreads()", (block, thread),
                                         site))
    if access >= 0 and param < 0:  # a pointer taken from a shared tile: `rows` the rows it holds, `offset` its capacity
        tile = text[FAULT_FILE_BYTES:].split(b"\0", 1)[0].decode("utf-8", "replace")
        name, _, view = tile.split(".", 1)[-1].partition(" ")  # `kernel.xs (a tile of x)`
        raise KernelFault(tile_fault("LG611", spec.name, f"shared `{name}` {view}", _VERBS.get(access, "accessed"), row,
                                     col, width, row_stride, (block, thread), site, held=rows, capacity=offset))
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
    scan_outputs(spec, pointers, dict(zip(spec.symbols, values[len(spec.scalars):])), module)


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


def tile_fault(code: str, kernel: str, tile: str, verb: str, row: int | None, col: int, width: int, pitch: int,
               where: tuple[object, object], site: Site | None = None, held: int | None = None,
               capacity: int | None = None) -> Diagnostic:
    """An access of shared ``tile`` (as messages name it: shared `xs` (a tile of x)) outside its footprint, at its row
    ``row`` and column ``col`` (``row`` None: a plain shared array, one row, at its element ``col``): past its ``width``
    columns (into its ``pitch``'s padding), or, where ``held`` is given and the column is inside, outside the ``held``
    rows it holds of its ``capacity``; ``verb`` "read", "wrote" or "accessed", ``where`` the block and thread. The CPU
    run's AddressSanitizer finding over the shared buffer (LG650) and the debug build's checked pointer taken from
    the tile on the GPU (LG611) say the same."""
    if held is None or not 0 <= col < width:
        outside = f"outside its {width} columns (pitch {pitch})"
        hint = ("index a shared tile below its width, and its rows through the tile's accessors: the pitch is the "
                "tile's, not the field's width")
    else:
        outside = f"outside the {plural(held, 'row')} it holds (capacity {capacity})"
        hint = ("loop over the rows a tile holds (`tile_rows`, `t.rows`: the count its copy was given), not over its "
                "capacity: a short last tile holds fewer")
    place = f"element {col}" if row is None else f"row {row}, column {col}"
    return Diagnostic(code, f"`{kernel}` {verb} {tile} at {place}, {outside}, in block {where[0]}, thread {where[1]}",
                      site, hint=hint)


def barrier_fault(code: str, kernel: str, kind: str, barrier: str, where: tuple[object, object],
                  site: Site | None = None) -> Diagnostic:
    """A barrier that some threads of a block (or lanes of a warp) never reach: the CPU run's finding (LG652, from its
    host runtime's barriers) and the debug build's on the GPU (LG642, lg/debug_barrier.cuh) say the same.

    ``kind``: "barrier" (``where``'s thread reached ``barrier`` after others of its block or warp returned),
    "barrier-exit" (it returned while others wait there) or "divergent" (it reached another call of ``barrier``
    than the threads waiting at one); ``where`` the block and thread."""
    group = "warp" if "warp" in barrier else "block"
    text = {"barrier": f"reached {barrier} after other threads of its {group} returned",
            "barrier-exit": f"returned while other threads wait at {barrier}",
            "divergent": f"reached another {barrier} than the threads waiting at one"}[kind]
    return Diagnostic(code, f"`{kernel}`: block {where[0]}, thread {where[1]} {text}: a barrier that some threads "
                      "never reach", site, hint="every thread of the block (or lane of the warp) must reach each "
                      "barrier: move it out of the branch, and return only after the last one")


def unheld_fault(code: str, kernel: str, tile: str, tile_row: object, tile_col: object, held: int, capacity: object,
                 where: tuple[object, object], out: str, row: int, col: int, site: Site | None = None) -> Diagnostic:
    """A NaN in an output after a read of shared ``tile``'s row ``tile_row`` past the ``held`` rows its copy counted (a
    short last tile), at the read's line: the CPU run's LG655 and the debug build's LG612 on the GPU say the same.
    ``tile`` and ``out`` as messages name them (shared `xs` (a tile of x), `y` (Packed)); ``row`` and ``col`` the
    output field's."""
    message = (f"`{kernel}` read {tile} at row {tile_row}, column {tile_col}, past the {plural(held, 'row')} it holds "
               f"(capacity {capacity}), in block {where[0]}, thread {where[1]}: the NaN it read reached {out} at row "
               f"{row}, column {col}")
    return Diagnostic(code, message, site, hint="loop over the rows a tile holds (`tile_rows`, `t.rows`: the count "
                      "its copy was given), not over its capacity: a short last tile holds fewer")


def nan_fault(code: str, kernel: str, out: str, row: int, col: int, site: Site | None = None) -> Diagnostic:
    """A NaN in output ``out`` (as messages name it: `y` (Packed)) at its field's ``row`` and ``col`` although every
    input was finite: the CPU run's LG654 and the debug build's LG612 on the GPU say the same."""
    return Diagnostic(code, f"`{kernel}` wrote NaN to {out} at row {row}, column {col} although every input was "
                      "finite: it computed with memory nothing wrote", site, hint="a read past the rows a tile holds "
                      "(a short last tile), or of an output element before it is written")


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


def _field_of(p: ParamSpec, pointer: int, symbols: dict[str, int]) -> tuple[Any, list[slice]] | None:
    """The field of ``p`` in the array at ``pointer`` (a CuPy view) and its window in the whole array; None where
    its elements are not floating point (nothing to scan) or its columns were not given."""
    import cupy
    import numpy as np

    layout = p.layout
    if p.cols is None or not (layout.dtype == "bf16" or np.dtype(layout.numpy).kind in "fc"):
        return None
    unit = 1 if layout.unit is None else symbols[layout.unit]  # columns count `unit` elements each
    shape = layout.shape_of(symbols)
    memory = cupy.cuda.UnownedMemory(pointer, int(np.prod(shape)) * layout.itemsize, owner=None)
    whole = cupy.ndarray(shape, layout.numpy, memptr=cupy.cuda.MemoryPointer(memory, 0))
    window: list[slice] = [slice(None)] * len(shape)
    window[-1] = slice(p.cols[0] * unit, p.cols[1] * unit)
    if p.rows is not None:  # a named range: only those entries of that axis are the view's
        window[p.rows[0]] = slice(p.rows[1], p.rows[2])
    return whole[tuple(window)], window


def _non_finite(p: ParamSpec, field: Any) -> Any:
    """Where ``field`` (of ``p``) holds NaN or Inf (bf16, stored as uint16 words: every exponent bit set)."""
    import cupy

    return (field & 0x7F80) == 0x7F80 if p.layout.dtype == "bf16" else ~cupy.isfinite(field)


def _inputs_finite(spec: KernelSpec, pointers: Sequence[int], symbols: dict[str, int]) -> bool:
    """Whether every field the kernel only reads holds finite values (read after the launch, which wrote none of
    them), and it reads no field it also writes (whose values before the launch are gone)."""
    for p, pointer in zip(spec.params, pointers):
        if p.access == "inout":
            return False
        if p.access == "in" and (found := _field_of(p, pointer, symbols)) is not None:
            if bool(_non_finite(p, found[0]).any()):
                return False
    return True


def _unheld_read(module: Any) -> tuple[UnheldRecord, str, str] | None:
    """The first read of the launch past the rows a shared tile holds (its record, file and tile), if there was one."""
    words = _unheld_record(module).get()
    record = UnheldRecord(*(int(v) for v in words[:_UNHELD_FIELDS]))
    if not record.hit:
        return None
    text = words[_UNHELD_FIELDS:].tobytes()
    file = text[:FAULT_FILE_BYTES].split(b"\0", 1)[0].decode("utf-8", "replace")
    tile = text[FAULT_FILE_BYTES:].split(b"\0", 1)[0].decode("utf-8", "replace")
    return record, file, tile


def _non_finite_output(spec: KernelSpec, p: ParamSpec, at: tuple[int, ...], index: tuple[int, ...],
                       field_shape: tuple[int, ...], what: str, inputs_finite: bool,
                       unheld: tuple[UnheldRecord, str, str] | None) -> Diagnostic:
    """The report of ``what`` (NaN, Inf, -Inf) written to ``p`` at ``at`` of its array (``index`` of its field). A NaN
    from finite inputs is the CPU run's: after ``unheld`` (a read past the rows a tile holds) LG655's words, else
    LG654's; any other value (or one an input may have carried) is named by its index in the array."""
    if what == "NaN" and inputs_finite:
        import numpy as np

        row = int(np.ravel_multi_index(index[:-1], field_shape[:-1])) if len(index) > 1 else 0
        out = f"`{p.name}` ({p.view})"
        if unheld is None:
            return nan_fault("LG612", spec.name, out, row, index[-1])
        record, file, tile = unheld
        name, _, view = tile.split(".", 1)[-1].partition(" ")  # `kernel.xs (a tile of x)`
        site = Site(file, record.line) if file and record.line > 0 else None
        return unheld_fault("LG612", spec.name, f"shared `{name}` {view}", record.row, record.col, record.held,
                            record.capacity, (record.block, record.thread), out, row, index[-1], site)
    return Diagnostic(
        "LG612", f"`{spec.name}` wrote {what} to `{p.name}` ({p.view}) at index "
        f"[{', '.join(map(str, at))}] of the {p.layout.name} array",
        hint="the kernel that produced it is this one; check its inputs (scanned only where written) and "
        "its arithmetic",
    )


def scan_outputs(spec: KernelSpec, pointers: Sequence[int], symbols: dict[str, int], module: Any = None) -> None:
    """Raise :class:`NonFiniteOutput` naming the first written field that holds NaN or Inf: in the words of the CPU
    run's LG655 or LG654 where every input was finite (``module``: the launch's, whose unheld read it reads)."""
    if os.environ.get(SCAN_ENV, "1") == "0":
        return
    import cupy

    for p, pointer in zip(spec.params, pointers):
        if not p.writes or (found := _field_of(p, pointer, symbols)) is None:
            continue
        field, window = found
        bad = _non_finite(p, field)
        if not bool(bad.any()):
            continue
        index = tuple(int(i) for i in cupy.argwhere(bad)[0].get())
        at = tuple(i + (s.start or 0) for i, s in zip(index, window))
        if p.layout.dtype == "bf16":
            bits = int(field[index].get())
            what = "NaN" if bits & 0x7F else ("-Inf" if bits & 0x8000 else "Inf")
        else:
            value = float(field[index].get())
            what = "NaN" if value != value else ("Inf" if value > 0 else "-Inf")
        finite = what == "NaN" and _inputs_finite(spec, pointers, symbols)
        unheld = _unheld_read(module) if finite and module is not None else None
        raise NonFiniteOutput(_non_finite_output(spec, p, at, index, tuple(field.shape), what, finite, unheld))
