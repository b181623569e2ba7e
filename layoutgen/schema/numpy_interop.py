"""NumPy views of fields and structured dtypes of rows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .diagnostics import caller_site, layout_error
from .record import Region

if TYPE_CHECKING:
    from .layout import Layout
    from .view import View


def field_of(view: View, array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """``array[..., start:stop]`` (narrowed on the named axis, split into the field's shape)
    after checking that ``array`` has the view's layout."""
    layout = view.layout
    site = caller_site()
    shape = tuple(getattr(array, "shape", ()))
    unit = shape[-1] // layout.width if shape else 0
    if len(shape) != len(layout.shape) or shape[-1] != layout.width * unit or (
        layout.column_unit.is_static and unit != 1
    ) or unit < 1:
        raise layout_error(
            "LG110",
            f"an array of `{layout.name}` must have shape [{', '.join(map(str, layout.shape))}], got {list(shape)}",
            site,
        )
    bound: dict[str, tuple[int, int]] = {}  # symbol -> (its first axis, its size there)
    if not layout.column_unit.is_static:
        bound[layout.column_unit.symbols[0]] = (len(shape) - 1, unit)
    for axis, (dim, size) in enumerate(zip(layout.dims, shape)):
        if dim.size is not None and dim.size != size:
            raise layout_error(
                "LG110", f"axis {axis} of an array of `{layout.name}` must be {dim.size}, got {size}", site
            )
        if dim.size is None and str(dim.name) in bound and bound[str(dim.name)][1] != size:
            first, first_size = bound[str(dim.name)]
            raise layout_error(
                "LG110",
                f"axis {axis} of an array of `{layout.name}` must be `{dim.name}` = {first_size} "
                f"(axis {first}), got {size}",
                site,
            )
        if dim.size is None:
            bound.setdefault(str(dim.name), (axis, size))
    # numpy has no bf16: its storage type (uint16) or ml_dtypes' "bfloat16" stand in.
    accepted = {layout.dtype.numpy_name or "bfloat16", layout.dtype.storage}
    dtype = getattr(array, "dtype", None)
    if str(dtype) not in accepted:
        raise layout_error(
            "LG110", f"an array of `{layout.name}` must have dtype {layout.dtype}, got {dtype}", site
        )
    index: list[slice] = [slice(None)] * len(layout.dims)
    if view.axis_rows is not None:
        axis, start, stop = view.axis_rows
        index[axis] = slice(start, stop)
    field = array[(*index, slice(view.offset * unit, (view.offset + view.width) * unit))]
    if not view.region.shape:
        return field
    sizes = {name: size for name, (_, size) in bound.items()}
    inner = tuple(d.size if d.size is not None else sizes[str(d.name)] for d in view.region.shape)
    return field.reshape((*field.shape[:-1], *inner))  # a view: the last axis is packed


def _region_dtype(region: Region, base: np.dtype[Any], start: int) -> np.dtype[Any]:
    names, formats, offsets = [], [], []
    for child in region.children:
        if child.kind == "pad":
            continue
        names.append(child.name)
        offsets.append((child.start - start) * base.itemsize)
        if child.kind == "group":
            formats.append(_region_dtype(child, base, child.start))
        elif child.shape:
            formats.append(np.dtype((base, tuple(d.size for d in child.shape))))
        elif child.width == 1:
            formats.append(base)
        else:
            formats.append(np.dtype((base, (child.width,))))
    return np.dtype(
        {"names": names, "formats": formats, "offsets": offsets, "itemsize": region.width * base.itemsize}
    )


def structured_dtype(layout: Layout) -> np.dtype[Any] | None:
    """A structured dtype of one row; None for element types numpy lacks (bf16)."""
    if layout.dtype.numpy_name is None or not layout.column_unit.is_static:
        return None
    base = np.dtype(layout.dtype.numpy_name)
    if not layout.record.children:
        return np.dtype((base, (layout.width,)))
    return _region_dtype(layout.record, base, 0)
