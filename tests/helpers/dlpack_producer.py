"""A DLPack producer for the tests, without a GPU: real capsules built with ctypes, and a count of releases.

:class:`DLPackOnly` offers ``__dlpack__`` and ``__dlpack_device__`` and nothing else of an array's. Each export
makes a ``DLManagedTensor`` (or, where the consumer asks for ``max_version=(1, 0)``, a
``DLManagedTensorVersioned`` whose flags carry ``readonly``) in a capsule named as the protocol says. The
tensor's memory is kept in :data:`LIVE` until its deleter runs, which appends its address to
:data:`DELETED`; the capsule's destructor, as producers write it, releases a tensor no consumer took (a
capsule whose name is unchanged). A consumer that renames the capsule and calls the deleter itself leaves
:data:`LIVE` empty, once per export.
"""

from __future__ import annotations

import ctypes
from typing import Any

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32), ("dtype", DLDataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
# prototypes of the test's own: ctypes.pythonapi's function objects are shared with the code under test
_new_capsule = ctypes.PYFUNCTYPE(ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DESTRUCTOR)(
    ("PyCapsule_New", ctypes.pythonapi))
_capsule_name = ctypes.PYFUNCTYPE(ctypes.c_char_p, ctypes.c_void_p)(("PyCapsule_GetName", ctypes.pythonapi))
_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))

LIVE: dict[int, Any] = {}  # a managed tensor's address -> what keeps its memory alive until its deleter runs
DELETED: list[int] = []  # the addresses whose deleter ran, in order


@DELETER
def _deleter(address: int) -> None:
    DELETED.append(address)
    LIVE.pop(address)


@_CAPSULE_DESTRUCTOR
def _destructor(capsule: int) -> None:
    """As producers write it: a capsule no consumer took (its name unchanged) releases its tensor."""
    name = _capsule_name(capsule)
    if name in (b"dltensor", b"dltensor_versioned"):
        _deleter(_capsule_pointer(capsule, name))


DTYPE_CODES = {"float32": (2, 32), "float16": (2, 16), "bfloat16": (4, 16), "int32": (0, 32), "uint8": (1, 8),
               "bool": (6, 8), "complex64": (5, 64), "float8": (2, 8)}


class DLPackOnly:
    """A producer with ``__dlpack__`` and ``__dlpack_device__`` and nothing else of an array's."""

    def __init__(self, shape: tuple[int, ...], ptr: int, dtype: str = "float32", device: tuple[int, int] = (2, 0),
                 strides: tuple[int, ...] | None = None, versioned: bool = True, readonly: bool = False,
                 lanes: int = 1, byte_offset: int = 0, version: tuple[int, int] = (1, 0)) -> None:
        self.shape, self.ptr, self.dtype, self.device, self.strides = shape, ptr, dtype, device, strides
        self.versioned, self.readonly, self.lanes, self.byte_offset = versioned, readonly, lanes, byte_offset
        self.version = version
        self.exported = 0

    def __dlpack_device__(self) -> tuple[int, int]:
        return self.device

    def __dlpack__(self, *, stream: Any = None, max_version: tuple[int, int] | None = None) -> Any:
        self.exported += 1
        shape = (ctypes.c_int64 * len(self.shape))(*self.shape)
        strides = None if self.strides is None else (ctypes.c_int64 * len(self.strides))(*self.strides)
        code, bits = DTYPE_CODES[self.dtype]
        tensor = DLTensor(self.ptr - self.byte_offset, DLDevice(*self.device), len(self.shape),
                          DLDataType(code, bits, self.lanes), shape,
                          ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64)) if strides is not None else None,
                          self.byte_offset)
        versioned = self.versioned and max_version is not None and max_version >= (1, 0)
        if versioned:
            managed: Any = DLManagedTensorVersioned(DLPackVersion(*self.version), None, _deleter,
                                                    int(self.readonly), tensor)
        else:
            managed = DLManagedTensor(tensor, None, _deleter)
        address = ctypes.addressof(managed)
        LIVE[address] = (managed, shape, strides)
        return _new_capsule(address, b"dltensor_versioned" if versioned else b"dltensor", _destructor)
