"""The checks of a launch's arguments: each array against its parameter, and the arrays against each other.

:func:`check_param` is the one place that decides whether an array fits
(:func:`check_scalar`, whether a value fits a scalar parameter); the
launcher's fast path only skips checks whose outcome a cached key decides.
:class:`Extents` decides whether arguments share memory (launchers: LG614,
program runners: LG613); :class:`Writes` applies the rules of written
arrays' frameworks (``arrays.FRAMEWORKS``). Messages are built only once a
check fails.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from ..schema.scalars import SCALAR_DTYPES, ScalarValueError, pack_scalar
from . import arrays as arrays_table
from .arrays import ArrayInfo, Framework, Written, dtype_text, non_native
from .errors import LaunchError, launch_error
from .plan import ACCEPTED_DTYPES, LayoutSpec, ParamSpec, ScalarSpec
from .torch_writes import version_bump as version_bump  # torch_cxx_reader's, as before


#: One past the last device address: a pointer is 64 bits.
ADDRESSES = 2**64


def _describe(info: ArrayInfo) -> str:
    shape = "[" + ", ".join(map(str, info.shape)) + "]"
    return f"shape {shape}, strides {info.strides} (elements), {dtype_text(info.dtype)} on device {info.device}"


def who(kernel: str, p: ParamSpec) -> str:
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


def check_param(kernel: str, p: ParamSpec, info: ArrayInfo, bound: dict[str, int], device: int | None) -> None:
    """Raise :class:`LaunchError` when ``info`` does not fit ``p``; bind its symbols into ``bound``.

    ``device`` is the launch's; None skips the device check (CuPy found no
    device: every other check still runs first). The happy path formats no
    text: messages are built only once a check fails.
    """
    lay = p.layout
    shape = info.shape
    dims = lay.dims
    unit = None if lay.unit is None else bound.get(lay.unit)  # the row's unit, bound by an earlier argument
    if unit is not None and len(shape) == len(dims) + 1 and shape[-1] != lay.width * unit:
        raise launch_error("LG603", f"{who(kernel, p)} last axis is {shape[-1]}, but `{lay.unit}` = {unit} from an "
                     f"earlier argument makes its rows {lay.width * unit} elements; got {_describe(info)}",
                     hint=f"every `{lay.unit}` of one launch must agree")
    if len(shape) != len(dims) + 1 or shape[-1] != lay.bind_width(shape[-1], bound):
        raise launch_error("LG601", f"{who(kernel, p)} got an array of {_describe(info)}",
                     hint=f"pass the whole {lay.name} array, shape {lay.shape_text}, not a slice of it")
    if info.dtype not in ACCEPTED_DTYPES[lay.dtype]:
        raise launch_error("LG602", f"{who(kernel, p)} needs {lay.dtype} elements, got {_describe(info)}",
                           hint=_byte_order_hint(info.dtype))
    for axis, dim in enumerate(dims):
        size = shape[axis]
        if isinstance(dim, int):
            if size != dim:
                raise launch_error("LG601", f"{who(kernel, p)} axis {axis} must be {dim}, got {_describe(info)}")
        elif bound.setdefault(dim, size) != size:
            raise launch_error("LG603", f"{who(kernel, p)} axis {axis} is `{dim}` = {size}, but `{dim}` = "
                         f"{bound[dim]} from an earlier argument; got {_describe(info)}",
                         hint=f"every `{dim}` of one launch must agree")
    strides = info.strides
    step = 1
    for axis in range(len(shape) - 1, -1, -1):  # packed: row-major, size-1 axes may have any stride
        size = shape[axis]
        if size > 1 and strides[axis] != step:
            overlap = _overlapping_axis(shape, strides) if p.writes else None
            if overlap is not None:
                raise launch_error("LG610", f"{who(kernel, p)} is written by the kernel but axis {overlap} of the array "
                             f"has stride {strides[overlap]}, so several of its elements are one memory location; "
                             f"got {_describe(info)}",
                             hint="pass an array of its own (e.g. `.copy()`), not a broadcast or overlapping view")
            expected = lay.strides(shape)
            raise launch_error("LG604", f"{who(kernel, p)} needs packed strides {expected} (elements), got "
                         f"{_describe(info)}", hint="pass a contiguous array (e.g. `.copy()` / `.contiguous()`); "
                         "a transposed or sliced array would be read as if it were packed")
        step *= size
    if device is not None and info.device != device:  # None: no device was found (LG615, once all is checked)
        raise launch_error("LG605", f"{who(kernel, p)} is on device {info.device} but the launch is on device {device}; "
                     f"got {_describe(info)}")
    ptr = info.ptr
    if not 0 <= ptr < ADDRESSES:  # a __cuda_array_interface__ may say anything: never cut to 64 bits
        raise launch_error("LG633", f"{who(kernel, p)} got the data pointer {ptr} ({ptr:#x}), which is no device address (a "
                           f"pointer is 0 to 2**64 - 1); got {_describe(info)}",
                           hint="the array's `__cuda_array_interface__` is wrong: fix the library that made it")
    elements = 1
    for size in shape:
        elements *= size
    if not ptr and elements:
        raise launch_error("LG634", f"{who(kernel, p)} got a null data pointer for {elements} "
                           f"elements: the array has no memory; got {_describe(info)}",
                           hint="pass an array with memory of its own (torch's `_efficientzerotensor` has none: "
                           "`torch.zeros(t.shape, dtype=t.dtype, device=t.device)` has)")
    if info.ptr % p.align:
        raise launch_error("LG606", f"{who(kernel, p)} needs its base pointer aligned to {p.align} bytes, got "
                     f"0x{info.ptr:x}; {_describe(info)}")
    if info.readonly and p.access != "in":
        raise launch_error("LG607", f"{who(kernel, p)} is written by the kernel but the array is read-only (e.g. a JAX "
                     f"buffer); got {_describe(info)}", hint="pass a writable array, such as a CuPy or torch one")


def check_scalar(owner: str, s: ScalarSpec, value: Any) -> int:
    """The 8-byte launch value of ``value`` for scalar ``s`` of kernel (or program) ``owner``.

    LaunchError LG620 for a value of another kind (a bool for a number, a
    float for an integer, a string, an array), LG621 for one outside the C
    type's range, LG622 for NaN or Inf where ``s`` is finite. The rules are
    :func:`layoutgen.schema.scalars.pack_scalar`'s, which a program's
    constants were checked by at declaration.
    """
    try:
        return pack_scalar(SCALAR_DTYPES[s.dtype], s.finite, value)
    except ScalarValueError as exc:
        raise launch_error(exc.code, f"`{owner}.{s.name}` ({s.described}) {exc.problem}", hint=exc.hint) from None


def _byte_order_hint(dtype: str) -> str | None:
    if not non_native(dtype):
        return None
    theirs, ours = ("big", "little") if dtype.startswith(">") else ("little", "big")
    return (f"the array's elements are {theirs}-endian (`{dtype}`) and this machine's are {ours}-endian: a kernel "
            f"would read each one byte-swapped; convert it once (NumPy: `a.astype(a.dtype.newbyteorder('='))`)")


# -- arguments that share memory --------------------------------------------------------------------

#: One pair of arguments to compare: their indices, their sizes in bytes, and whether they may start at one
#: address (two views of one array that cover different elements).
_Pair = tuple[int, int, int, int, bool]


@dataclass(frozen=True)
class Extents:
    """Which arguments of a launch must not share memory, for one set of shapes.

    Every argument that passed :func:`check_param` is a packed array of its
    layout, so its bytes are ``[pointer, pointer + size)`` with a size that
    follows from the shapes alone. An :class:`Extents` is built once per set
    of shapes (a launcher keeps it in its cached plan); per call,
    :meth:`first_overlap` compares two integers per pair.
    """

    pairs: tuple[_Pair, ...]

    def first_overlap(self, pointers: Sequence[int]) -> tuple[int, int] | None:
        """The first pair (by index) whose bytes meet at these pointers, or None."""
        for i, j, size_i, size_j, same_start in self.pairs:
            offset = pointers[j] - pointers[i]
            if -size_j < offset < size_i and not (same_start and offset == 0):
                return i, j
        return None


def byte_size(layout: LayoutSpec, bound: dict[str, int]) -> int:
    """Bytes of a packed array of ``layout`` with these symbols."""
    return layout.itemsize * math.prod(layout.shape_of(bound))


def kernel_extents(params: Sequence[ParamSpec], bound: dict[str, int],
                   may_alias: Sequence[tuple[str, str]] = ()) -> Extents:
    """The pairs of a kernel's arguments that must not overlap: one of the two is written (and the kernel
    does not declare the pair in ``may_alias``). Its pointers are ``__restrict__``: the compiler may keep a
    value read through one in a register while the kernel writes the same bytes through the other."""
    sizes = [byte_size(p.layout, bound) for p in params]
    allowed = {frozenset(pair) for pair in may_alias}
    pairs = [
        (i, j, sizes[i], sizes[j], _views_disjoint(params[i], params[j], bound))
        for i, j in combinations(range(len(params)), 2)
        if (params[i].writes or params[j].writes) and sizes[i] and sizes[j]
        and frozenset((params[i].name, params[j].name)) not in allowed
    ]
    return Extents(tuple(pairs))


def buffer_extents(layouts: Sequence[LayoutSpec], bound: dict[str, int]) -> Extents:
    """Every pair of a program's buffers: its dataflow checks counted each buffer as memory of its own."""
    sizes = [byte_size(lay, bound) for lay in layouts]
    pairs = [(i, j, sizes[i], sizes[j], False) for i, j in combinations(range(len(layouts)), 2)
             if sizes[i] and sizes[j]]
    return Extents(tuple(pairs))


def _box(p: ParamSpec, shape: tuple[int, ...], bound: dict[str, int]) -> list[tuple[int, int]]:
    """The index ranges, one per axis of the array, of the elements ``p``'s view covers."""
    box = [(0, n) for n in shape]
    if p.cols is not None:
        unit = 1 if p.layout.unit is None else bound[p.layout.unit]
        box[-1] = (p.cols[0] * unit, p.cols[1] * unit)
    if p.rows is not None:
        axis, start, stop = p.rows
        box[axis] = (start, stop)
    return box


def _views_disjoint(p: ParamSpec, q: ParamSpec, bound: dict[str, int]) -> bool:
    """Whether ``p`` and ``q`` given one array (one pointer, one shape) reach different elements of it.

    Only where the plan says where both views lie: without ``cols`` a view
    counts as the whole array, and two fields of one array as overlapping.
    """
    if p.cols is None or q.cols is None or p.layout.itemsize != q.layout.itemsize:
        return False
    shape = p.layout.shape_of(bound)
    if shape != q.layout.shape_of(bound):
        return False
    return any(a_stop <= b_start or b_stop <= a_start
               for (a_start, a_stop), (b_start, b_stop) in zip(_box(p, shape, bound), _box(q, shape, bound)))


def overlap_error(kernel: str, p: ParamSpec, q: ParamSpec, pointers: tuple[int, int],
                  bound: dict[str, int]) -> LaunchError:
    """LG614: ``p`` and ``q`` (``q`` after ``p``) got memory that overlaps, and one of them is written."""
    spans = [f"0x{ptr:x}..0x{ptr + byte_size(x.layout, bound):x}" for x, ptr in zip((p, q), pointers)]
    written = "both" if p.writes and q.writes else f"`{(p if p.writes else q).name}`"
    hint = "give a written parameter an array of its own (e.g. `.copy()`); arrays that are only read may be shared"
    if pointers[0] == pointers[1] and (p.cols is None or q.cols is None) and p.layout == q.layout and p.view != q.view:
        hint += ("; this generated module does not record where its views lie in a row, so two fields of one "
                 "array count as overlapping: regenerate it with this version of layoutgen")
    return launch_error(
        "LG614", f"{who(kernel, p)} and {who(kernel, q)} share memory (bytes {spans[0]} and {spans[1]}), and the "
        f"kernel writes {written}: its pointers are `__restrict__`, so it may read stale or half-written values",
        hint=hint,
    )


# -- arrays written in place: their frameworks' rules ---------------------------------------------------


class Writes:
    """The written parameters of a launch, each under its framework's rule (``arrays.Framework.written``:
    torch's autograd and inference checks before, version counters after).

    :meth:`of` builds it once per plan (the arrays' types are part of its
    key), so a launch whose outputs belong to no framework with a rule pays
    one truth test, and where they are one framework's, ``check`` and
    ``record`` are that rule's own (no call between). The rules are asked of
    the table: nothing here names a framework.
    """

    __slots__ = ("indices", "rules", "in_c", "check", "record")

    check: Callable[[str, Sequence[ParamSpec], Sequence[Any]], None]
    """Each rule's refusals (LaunchError: torch's LG635, LG618), before the launch: ``check(kernel, params,
    arrays)``."""
    record: Callable[[Sequence[Any]], None]
    """Each rule's record of the write (torch's version counters), after the launch: ``record(arrays)``."""

    def __init__(self, rules: tuple[Written, ...]) -> None:
        self.rules = rules
        self.indices = tuple(sorted(i for rule in rules for i in rule.indices))
        #: every rule is applied by the compiled path too (a plan with one that is not stays on the Python path)
        self.in_c = all(rule.in_c for rule in rules)
        if len(rules) == 1:
            self.check, self.record = rules[0].check, rules[0].record
        else:
            self.check, self.record = self._check_each, self._record_each

    @staticmethod
    def of(params: Sequence[ParamSpec], arrays: Sequence[Any]) -> Writes | None:
        """The rules of the written parameters' frameworks, or None when none of them has one."""
        ruled = [f for f in arrays_table.FRAMEWORKS if f.written is not None]
        groups: list[tuple[Framework, list[int]]] = []
        for i, (p, a) in enumerate(zip(params, arrays)):
            if not p.writes:
                continue
            kind = type(a)
            framework = next((f for f in ruled if f.array_types(kind)), None)
            if framework is None:
                continue
            group = next((g for f, g in groups if f is framework), None)
            if group is None:
                groups.append((framework, [i]))
            else:
                group.append(i)
        rules = tuple(f.written(tuple(indices), who) for f, indices in groups if f.written is not None)
        return Writes(rules) if rules else None

    def _check_each(self, kernel: str, params: Sequence[ParamSpec], arrays: Sequence[Any]) -> None:
        for rule in self.rules:
            rule.check(kernel, params, arrays)

    def _record_each(self, arrays: Sequence[Any]) -> None:
        for rule in self.rules:
            rule.record(arrays)


#: The name launch_plan.py and program.py know :class:`Writes` by (it held torch's rule alone before).
TorchWrites = Writes
