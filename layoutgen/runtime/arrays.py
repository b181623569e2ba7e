"""Reading a device array's pointer, shape, strides and dtype without converting it.

Converting a torch tensor with ``cupy.asarray`` costs tens of microseconds a
call; reading its attributes costs about one. So each kind of array is read
directly: CuPy's own attributes, torch's ``data_ptr``/``stride``, and the
``__cuda_array_interface__`` of anything else (JAX, Numba, ...). Strides come
back in elements, whatever the library reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


class ArrayKindError(TypeError):
    """The object is not a CUDA device array layoutgen can read."""


@dataclass(frozen=True)
class ArrayInfo:
    """What a launcher needs of one argument."""

    ptr: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]  # elements
    dtype: str  # numpy dtype name: "float32"
    device: int
    readonly: bool


_TORCH_DTYPES = {
    "torch.float32": "float32", "torch.float64": "float64", "torch.float16": "float16",
    "torch.bfloat16": "bfloat16", "torch.int32": "int32", "torch.int64": "int64", "torch.int16": "int16",
    "torch.int8": "int8", "torch.uint8": "uint8", "torch.uint16": "uint16", "torch.uint32": "uint32",
    "torch.uint64": "uint64",
}


def _from_cupy(a: Any) -> ArrayInfo:
    itemsize = a.itemsize
    return ArrayInfo(
        a.data.ptr, a.shape, tuple(s // itemsize for s in a.strides), a.dtype.name, a.device.id, False
    )


def _from_torch(t: Any) -> ArrayInfo:
    if not t.is_cuda:
        raise ArrayKindError(f"a torch tensor on {t.device} is not on a CUDA device")
    dtype = _TORCH_DTYPES.get(str(t.dtype), str(t.dtype))
    return ArrayInfo(t.data_ptr(), tuple(t.shape), tuple(t.stride()), dtype, t.device.index or 0, False)


def _from_interface(a: Any) -> ArrayInfo:
    cai = a.__cuda_array_interface__
    ptr, readonly = cai["data"]
    shape = tuple(cai["shape"])
    dtype = np.dtype(cai["typestr"]) if not cai["typestr"].endswith("V2") else None
    name = dtype.name if dtype is not None else "bfloat16"
    itemsize = dtype.itemsize if dtype is not None else 2
    if cai.get("strides") is None:  # C-contiguous
        strides, step = [], 1
        for size in reversed(shape):
            strides.append(step)
            step *= size
        elements = tuple(reversed(strides))
    else:
        elements = tuple(s // itemsize for s in cai["strides"])
    device = _interface_device(a)
    return ArrayInfo(int(ptr or 0), shape, elements, name, device, bool(readonly))


def _interface_device(a: Any) -> int:
    devices = getattr(a, "devices", None)  # jax.Array
    if callable(devices):
        return int(next(iter(devices())).id)
    device = getattr(a, "device", None)
    return int(getattr(device, "id", 0) or 0)


def array_info(a: Any) -> ArrayInfo:
    """Pointer, shape, element strides, dtype, device and writability of ``a``.

    Raises :class:`ArrayKindError` for host arrays and objects that are not arrays.
    """
    module = type(a).__module__
    if module.startswith("cupy"):
        return _from_cupy(a)
    if module.startswith("torch"):
        return _from_torch(a)
    if hasattr(a, "__cuda_array_interface__"):
        try:
            return _from_interface(a)
        except (AttributeError, KeyError, TypeError) as exc:
            raise ArrayKindError(f"{type(a).__name__} has an unreadable __cuda_array_interface__: {exc}") from exc
    if isinstance(a, np.ndarray) or hasattr(a, "__array_interface__"):
        raise ArrayKindError(f"a host array ({type(a).__module__}.{type(a).__name__}) is not on a CUDA device")
    raise ArrayKindError(f"{type(a).__module__}.{type(a).__name__} is not a CUDA array")
