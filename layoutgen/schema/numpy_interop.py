"""NumPy structured dtypes of rows (a field's strided view is :meth:`View.of`)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .record import Region

if TYPE_CHECKING:
    import numpy as np

    from .view import LayoutLike


def _region_dtype(region: Region, base: np.dtype[Any], start: int) -> np.dtype[Any]:
    import numpy as np  # only when asked: importing the schema stays cheap

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


def structured_dtype(layout: LayoutLike) -> np.dtype[Any] | None:
    """A structured dtype of one row; None for element types numpy lacks (bf16)."""
    if layout.dtype.numpy_name is None or not layout.column_unit.is_static:
        return None
    import numpy as np

    base = np.dtype(layout.dtype.numpy_name)
    if not layout.record.children:
        return np.dtype((base, (layout.width,)))
    return _region_dtype(layout.record, base, 0)
