"""The checks of one array against its parameter: shape, dims, dtype, packing, device, alignment.

:func:`check_param` is the one place that decides whether an array fits; the
launcher's fast path only skips checks whose outcome a cached key decides.
Messages are built only once a check fails.
"""

from __future__ import annotations

from .arrays import ArrayInfo, dtype_text
from .errors import launch_error
from .plan import ACCEPTED_DTYPES, ParamSpec


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


def check_param(kernel: str, p: ParamSpec, info: ArrayInfo, bound: dict[str, int], device: int) -> None:
    """Raise :class:`LaunchError` when ``info`` does not fit ``p``; bind its symbols into ``bound``.

    The happy path formats no text: messages are built only once a check fails.
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
        raise launch_error("LG602", f"{who(kernel, p)} needs {lay.dtype} elements, got {_describe(info)}")
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
    if info.device != device:
        raise launch_error("LG605", f"{who(kernel, p)} is on device {info.device} but the launch is on device {device}; "
                     f"got {_describe(info)}")
    if info.ptr % p.align:
        raise launch_error("LG606", f"{who(kernel, p)} needs its base pointer aligned to {p.align} bytes, got "
                     f"0x{info.ptr:x}; {_describe(info)}")
    if info.readonly and p.access != "in":
        raise launch_error("LG607", f"{who(kernel, p)} is written by the kernel but the array is read-only (e.g. a JAX "
                     f"buffer); got {_describe(info)}", hint="pass a writable array, such as a CuPy or torch one")
