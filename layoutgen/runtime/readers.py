"""The fast readers of a launcher's hot path: what keys a validated plan, read from each kind of array.

A reader returns an array's signature (its type, shape, strides, dtype and
device: everything a plan's checks depend on but the pointer) and its
pointer. The Python path keys its plans on the signatures; the compiled path
(:mod:`.fastpath`) reads the same values at C level and confirms, on arrays
these readers read, that its reads agree. Kinds without a reader
(``__cuda_array_interface__`` arrays) are validated on every call.
"""

from __future__ import annotations

from typing import Any

from .arrays import is_torch_tensor


def cupy_reader(a: Any) -> tuple[tuple[Any, ...], int]:
    data = a.data
    return (type(a), a.shape, a.strides, a.dtype, data.device_id), data.ptr


def torch_reader(t: Any) -> tuple[tuple[Any, ...], int]:
    # is_neg(): a negative view reads like its base but must be refused (LG608). The conjugate bit needs no
    # place here: only complex tensors have it, and they never pass (LG602), so they are never cached.
    return (type(t), t.shape, t.stride(), t.dtype, t.device, t.is_neg()), t.data_ptr()


class Readers(dict[type, Any]):
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

            reader = cupy_reader if issubclass(kind, cupy.ndarray) else None
        elif is_torch_tensor(kind):
            reader = torch_reader
        if reader is None:
            raise KeyError(kind)
        self[kind] = reader
        return reader


#: The readers every launcher reads with (tests add ones for their fake arrays).
FAST_READERS = Readers()
