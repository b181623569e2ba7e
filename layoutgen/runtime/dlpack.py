"""The generic DLPack row's read: any object with ``__dlpack__`` and ``__dlpack_device__`` on a CUDA device.

The producer's capsule holds a ``DLManagedTensor`` (named ``"dltensor"``) or,
where it speaks DLPack 1.0 and is asked for it (``max_version=(1, 0)``), a
``DLManagedTensorVersioned`` (``"dltensor_versioned"``), whose flags say
whether the memory is read-only. The read takes the pointer (``data`` plus
``byte_offset``), shape, strides (in elements; NULL: packed), dtype and
device out of it with ctypes, then consumes the capsule as the protocol
asks of a consumer: it renames it ``"used_dltensor[_versioned]"`` (so the
producer's capsule destructor leaves the tensor alone) and calls the
tensor's ``deleter`` once, refused or not; the array's memory stays the
producer's (the launch reads its pointer, as it reads a
``__cuda_array_interface__``'s). Only ``kDLCUDA`` (2) memory is read: host,
pinned-host and managed memory are refused, as are dtypes layoutgen has no
name for and vector lanes. ``__dlpack_device__`` is asked first, so nothing
is exported from an array on another device.
"""

from __future__ import annotations

import ctypes
from typing import Any

from .array_base import ArrayInfo, ArrayKindError, packed_strides, type_name

#: ``DLDeviceType``: the one read (kDLCUDA), and the names of others for messages.
KDLCUDA = 2
_DEVICE_NAMES = {1: "kDLCPU", 2: "kDLCUDA", 3: "kDLCUDAHost", 4: "kDLOpenCL", 7: "kDLVulkan", 8: "kDLMetal",
                 10: "kDLROCM", 11: "kDLROCMHost", 13: "kDLCUDAManaged", 14: "kDLOneAPI"}
_CODE_NAMES = {0: "kDLInt", 1: "kDLUInt", 2: "kDLFloat", 3: "kDLOpaqueHandle", 4: "kDLBfloat", 5: "kDLComplex",
               6: "kDLBool"}
#: (DLDataTypeCode, bits) -> numpy's name, for the element types layoutgen reads.
_DTYPES = {(0, 8): "int8", (0, 16): "int16", (0, 32): "int32", (0, 64): "int64",
           (1, 8): "uint8", (1, 16): "uint16", (1, 32): "uint32", (1, 64): "uint64",
           (2, 16): "float16", (2, 32): "float32", (2, 64): "float64", (4, 16): "bfloat16", (6, 8): "bool"}
#: ``DLPACK_FLAG_BITMASK_READ_ONLY`` of a versioned tensor's flags.
_READ_ONLY = 1


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32), ("dtype", _DataType),
                ("shape", ctypes.POINTER(ctypes.c_int64)), ("strides", ctypes.POINTER(ctypes.c_int64)),
                ("byte_offset", ctypes.c_uint64)]


_DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # void (*deleter)(DLManagedTensor[Versioned] *self)


class _Managed(ctypes.Structure):  # DLManagedTensor
    _fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class _ManagedVersioned(ctypes.Structure):  # DLManagedTensorVersioned (DLPack 1.0)
    _fields_ = [("version", _Version), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", _Tensor)]


# Python's capsule API with prototypes of our own: ctypes.pythonapi's function objects are shared by every
# user in the process, and another may set their argtypes otherwise.
_is_valid = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_IsValid", ctypes.pythonapi))
_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))
_set_name = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.py_object, ctypes.c_char_p)(("PyCapsule_SetName", ctypes.pythonapi))

# The capsules' names, and the names a consumed capsule takes. PyCapsule_SetName keeps the pointer it is
# given, not a copy: these bytes live as long as the module, so a renamed capsule's name never dangles.
_NAMES = {b"dltensor_versioned": (b"used_dltensor_versioned", _ManagedVersioned),
          b"dltensor": (b"used_dltensor", _Managed)}


def dlpack_info(a: Any) -> ArrayInfo:
    """``a`` read through its DLPack capsule (see the module's docstring). Raises :class:`ArrayKindError`."""
    device_type, _ = a.__dlpack_device__()
    device_type = getattr(device_type, "value", device_type)  # JAX's is a DLDeviceType enum
    if device_type != KDLCUDA:
        raise ArrayKindError(f"{type_name(type(a))} on DLPack device type {device_type} "
                             f"({_DEVICE_NAMES.get(device_type, 'unknown')}) is not on a CUDA device")
    try:
        try:
            capsule = a.__dlpack__(max_version=(1, 0))
        except TypeError:  # a producer from before DLPack 1.0 takes no max_version
            capsule = a.__dlpack__()
    except BufferError as exc:  # the protocol's refusal to export
        raise ArrayKindError(f"{type_name(type(a))}.__dlpack__() refused to export it ({exc})") from exc
    for name, (used, struct) in _NAMES.items():
        if _is_valid(capsule, name):
            break
    else:
        raise ArrayKindError(f"{type_name(type(a))}.__dlpack__() returned {capsule!r}, not a DLPack capsule "
                             f"(\"dltensor\" or \"dltensor_versioned\")")
    address = _pointer(capsule, name)
    managed = struct.from_address(address)
    try:
        version = getattr(managed, "version", None)
        if version is not None and version.major != 1:  # another major version may lay the struct out otherwise
            raise ArrayKindError(f"{type_name(type(a))} exported a DLPack {version.major}.{version.minor} tensor: "
                                 f"layoutgen reads DLPack 1")
        return _read(a, managed.dl_tensor, bool(getattr(managed, "flags", 0) & _READ_ONLY))
    finally:  # consumed: the producer's destructor skips a renamed capsule; its tensor is released here, once
        _set_name(capsule, used)
        if managed.deleter:
            _DELETER(managed.deleter)(address)


def _read(a: Any, tensor: _Tensor, readonly: bool) -> ArrayInfo:
    dtype = tensor.dtype
    if dtype.lanes != 1:
        raise ArrayKindError(f"{type_name(type(a))} has DLPack dtype lanes {dtype.lanes}: vector elements are not "
                             f"read (lanes must be 1)")
    name = _DTYPES.get((dtype.code, dtype.bits))
    if name is None:
        raise ArrayKindError(f"{type_name(type(a))} has DLPack dtype code {dtype.code} "
                             f"({_CODE_NAMES.get(dtype.code, 'unknown')}), {dtype.bits} bits, which layoutgen does "
                             f"not read")
    if tensor.device.device_type != KDLCUDA:  # the capsule disagrees with __dlpack_device__
        raise ArrayKindError(f"{type_name(type(a))} exported a DLPack tensor on device type "
                             f"{tensor.device.device_type}, not on a CUDA device")
    ndim = tensor.ndim
    shape = tuple(tensor.shape[i] for i in range(ndim))
    strides = packed_strides(shape) if not tensor.strides else tuple(tensor.strides[i] for i in range(ndim))
    return ArrayInfo((tensor.data or 0) + tensor.byte_offset, shape, strides, name, tensor.device.device_id,
                     readonly)
