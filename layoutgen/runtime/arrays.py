"""Reading a device array's pointer, shape, strides and dtype without converting it.

Converting a torch tensor with ``cupy.asarray`` costs tens of microseconds a
call; reading its attributes costs about one. So each kind of array is read
directly: CuPy's own attributes, torch's ``data_ptr``/``stride``, and the
``__cuda_array_interface__`` of anything else (JAX, Numba, ...). Strides come
back in elements, whatever the library reports. :data:`FRAMEWORKS` has one
row per array framework (what identifies its arrays and streams, its reads,
its rules); the full read here, the fast readers (:mod:`.readers`) and the
stream readers (:mod:`.driver`) all take a type's framework from it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..schema.dtypes import DTYPES


class ArrayKindError(TypeError):
    """The object is not a CUDA device array layoutgen can read (or reads wrongly); ``hint`` says what to do."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(slots=True)  # not frozen: a frozen dataclass costs ~1 us more to build, on every launch
class ArrayInfo:
    """What a launcher needs of one argument (treat it as read-only)."""

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
    "torch.uint64": "uint64", "torch.bool": "bool",
}


#: numpy's dtype names -> layoutgen's, so that messages say "f32" as the rest of layoutgen does.
_LG_NAMES: dict[str, str] = {
    **{d.numpy_name: d.name for d in DTYPES.values() if d.numpy_name}, "bfloat16": "bf16",
}


def dtype_text(numpy_name: str) -> str:
    """An array's dtype as layoutgen spells it ("f32"); numpy's name where layoutgen has none."""
    return _LG_NAMES.get(numpy_name, numpy_name)


# numpy dtype (CuPy), torch dtype or typestr -> (numpy name, itemsize). ``dtype.name`` is
# computed in Python by numpy (~3 us); a dict look-up is ~0.1 us.
_DTYPES: dict[Any, tuple[str, int]] = {}

_FOREIGN_ORDER = ">" if sys.byteorder == "little" else "<"  # the byte order a typestr may name that is not ours


def non_native(name: str) -> bool:
    """Whether a dtype name from :func:`array_info` is one in the other byte order (``">f4"``)."""
    return name[:1] in ("<", ">")  # numpy's names ("float32") never start so; such an array is named by its typestr


def _dtype(key: Any) -> tuple[str, int]:
    known = _DTYPES.get(key)
    if known is None:
        if isinstance(key, str) and key.endswith("V2"):  # bfloat16 as JAX exports it (numpy has no order for V)
            known = (key if key.startswith(_FOREIGN_ORDER) else "bfloat16", 2)
        else:
            dtype = np.dtype(key)
            # ">f4" is float32 to numpy's `.name`, but its bytes are reversed: a kernel would read garbage.
            known = (dtype.str if dtype.byteorder not in "=|" else dtype.name, dtype.itemsize)
        _DTYPES[key] = known
    return known


def _elements(byte_strides: Any, itemsize: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Byte strides as element strides; refused where a stride is not a whole number of elements."""
    elements = tuple([s // itemsize for s in byte_strides])
    for s in byte_strides:  # a plain loop: any() over a generator costs twice as much
        if s % itemsize:
            raise ArrayKindError(
                f"byte strides {tuple(byte_strides)} of a shape {list(shape)} array are not whole multiples of "
                f"its {itemsize}-byte elements"
            )
    if len(elements) != len(shape):
        raise ArrayKindError(f"strides {tuple(byte_strides)} do not match shape {list(shape)}")
    return elements


# -- the fast readers and what their reads say ----------------------------------------------------------
#
# A fast reader reads an array once into its signature (its type first, then everything a plan's checks
# depend on but the pointer) and its pointer: what a launcher keys its plans on. Its ``*_info`` turns that
# same read into the ArrayInfo the checks run on, so that a plan is keyed on exactly what was validated.


def cupy_reader(a: Any) -> tuple[tuple[Any, ...], int]:
    data = a.data
    return (type(a), a.shape, a.strides, a.dtype, data.device_id), data.ptr


def cupy_info(a: Any, signature: tuple[Any, ...], ptr: int) -> ArrayInfo:
    """The ArrayInfo of a :func:`cupy_reader` read (``a`` is not read again)."""
    _, shape, strides, dtype, device = signature
    name, itemsize = _dtype(dtype)
    return ArrayInfo(ptr, shape, _elements(strides, itemsize, shape), name, device, False)


def torch_reader(t: Any) -> tuple[tuple[Any, ...], int]:
    # is_neg(): a negative view reads like its base but must be refused (LG608). The conjugate bit needs no
    # place here: only complex tensors have it, and they never pass (LG602), so they are never cached.
    return (type(t), t.shape, t.stride(), t.dtype, t.device, t.is_neg()), t.data_ptr()


#: The torch device types whose tensors are device arrays (the tests, without a GPU, add "cpu").
TORCH_DEVICE_TYPES = frozenset({"cuda"})


def torch_info(t: Any, signature: tuple[Any, ...], ptr: int) -> ArrayInfo:
    """The ArrayInfo of a :func:`torch_reader` read. Only a complex tensor is asked anything more (its
    conjugate bit, for the message): whatever it answers, it is refused."""
    _, shape, stride, dtype, device, neg = signature
    # torch's lazy negation and conjugation are bits on the tensor, not in its memory: a kernel reading
    # data_ptr() would see the values un-negated (un-conjugated).
    if neg:
        raise ArrayKindError("a torch tensor with its negative bit set (`torch._neg_view`, or the imaginary part of "
                             "a conjugate view) would be read without the negation",
                             hint="materialise it once: `t.resolve_neg()`")
    if getattr(dtype, "is_complex", False) and t.is_conj():
        raise ArrayKindError("a torch tensor with its conjugate bit set (`t.conj()`) would be read unconjugated",
                             hint="materialise it once: `t.resolve_conj()`")
    if getattr(device, "type", None) not in TORCH_DEVICE_TYPES:
        raise ArrayKindError(f"a torch tensor on {device} is not on a CUDA device")
    name = _TORCH_NAMES.get(dtype)
    if name is None:
        text = str(dtype)
        name = _TORCH_NAMES[dtype] = _TORCH_DTYPES.get(text, text)
    return ArrayInfo(ptr, tuple(shape), tuple(stride), name, device.index or 0, False)


def _from_cupy(a: Any) -> ArrayInfo:
    return cupy_info(a, *cupy_reader(a))


def _from_torch(t: Any) -> ArrayInfo:
    return torch_info(t, *torch_reader(t))


_TORCH_NAMES: dict[Any, str] = {}  # torch dtype -> numpy name; ``str(dtype)`` once per dtype


def torch_dtype_name(dtype: Any) -> str:
    """A torch dtype's numpy name ("float32"), as :func:`array_info` reads a tensor's (its text where none)."""
    text = str(dtype)
    return _TORCH_DTYPES.get(text, text)


def _from_interface(a: Any) -> ArrayInfo:
    cai = a.__cuda_array_interface__
    ptr, readonly = cai["data"]
    if cai.get("mask") is not None:
        raise ArrayKindError(f"a masked {type(a).__name__} (its __cuda_array_interface__ has a mask) is not supported")
    return interface_info(cai["shape"], cai["typestr"], cai.get("strides"), ptr, readonly, _interface_device(a))


def interface_info(shape: Any, typestr: str, byte_strides: Any, ptr: Any, readonly: Any, device: int) -> ArrayInfo:
    """The ArrayInfo of one read of a ``__cuda_array_interface__`` (byte strides, None where packed). The
    pointer is kept as given (``None``: 0, an empty array's): a launch refuses one that is no address (LG633,
    LG634)."""
    shape = tuple(shape)
    name, itemsize = _dtype(typestr)
    elements = packed_strides(shape) if byte_strides is None else _elements(byte_strides, itemsize, shape)
    if ptr is None:
        ptr = 0
    elif isinstance(ptr, bool) or not isinstance(ptr, (int, np.integer)):  # a float, a string: no address
        raise ArrayKindError(f"the data pointer of a __cuda_array_interface__ must be an int, got {ptr!r}")
    return ArrayInfo(int(ptr), shape, elements, name, device, bool(readonly))


def packed_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major element strides of a packed array of ``shape``."""
    out, step = [], 1
    for size in reversed(shape):
        out.append(step)
        step *= size
    return tuple(reversed(out))


def _interface_device(a: Any) -> int:
    devices = getattr(a, "devices", None)  # jax.Array
    if callable(devices):
        return int(next(iter(devices())).id)
    device = getattr(a, "device", None)
    return int(getattr(device, "id", 0) or 0)


_READERS: dict[type, Callable[[Any], ArrayInfo]] = {}  # array type -> its reader, found once per type


def is_torch_tensor(kind: type) -> bool:
    """Whether ``kind`` is torch's tensor or a subclass (``Parameter``, a user's): read as torch, never through
    ``__cuda_array_interface__``, which says nothing of the negative bit."""
    torch = sys.modules.get("torch")  # a tensor exists only once torch is imported
    return torch is not None and issubclass(kind, torch.Tensor)


def _in_module(kind: type, package: str) -> bool:
    module = kind.__module__
    return module == package or module.startswith(package + ".")


def _is_cupy_array(kind: type) -> bool:
    """CuPy's ndarray or a subclass, wherever it is defined (cupyx's sparse matrices are no arrays)."""
    cupy = sys.modules.get("cupy")  # an array exists only once cupy is imported
    return cupy is not None and issubclass(kind, cupy.ndarray)


def _is_cupy_stream(kind: type) -> bool:
    cupy = sys.modules.get("cupy")
    return cupy is not None and issubclass(kind, (cupy.cuda.Stream, cupy.cuda.ExternalStream))


def _is_torch_stream(kind: type) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and issubclass(kind, torch.cuda.Stream)


def cupy_stream_handle(stream: Any, kernel: str) -> Any:
    return stream.ptr


def torch_stream_handle(stream: Any, kernel: str) -> Any:
    return stream.cuda_stream


@dataclass(frozen=True)
class Framework:
    """One array framework: what identifies its arrays and streams, how they are read, what a launch of its
    arrays needs. :data:`FRAMEWORKS` holds one per framework; the first row that owns a type reads it."""

    name: str
    #: Its array types, subclasses included wherever they are defined: these are its arrays before any row's
    #: ``owns`` is asked, and those its fast reader reads.
    array_types: Callable[[type], bool]
    #: Whether objects of another type (``a``, one of them, where there is one) are its arrays all the same
    #: (its module's objects, an interface's producers).
    owns: Callable[[type, Any], bool]
    #: The full read of one array: pointer, shape, element strides, dtype, device, read-only.
    info: Callable[[Any], ArrayInfo]
    #: The read that keys a launcher's plans (``(signature, pointer)``) of its ``array_types``, and the
    #: ArrayInfo of that same read (runtime/readers.py); None: its arrays are validated on every call.
    fast_reader: Callable[[Any], tuple[tuple[Any, ...], int]] | None
    fast_info: Callable[[Any, tuple[Any, ...], int], ArrayInfo] | None
    #: How the compiled path reads its arrays itself (runtime/fastlaunch/): "fields" (cupy.c, the struct's
    #: fields), "dlpack" (torch.c: the C++ reader or DLPack's exchange API); None: through ``fast_reader``.
    c_read: str | None
    #: Its stream types, and how a stream's CUstream is read (runtime/driver.py's stream_handle).
    owns_stream: Callable[[type], bool]
    stream_handle: Callable[[Any, str], Any] | None
    #: What a launch of its arrays needs besides the read, and where each rule lives.
    rules: tuple[str, ...]


def _never(kind: type) -> bool:
    return False


CUPY = Framework(
    "cupy", _is_cupy_array, lambda kind, a: _in_module(kind, "cupy"), _from_cupy, cupy_reader, cupy_info, "fields",
    _is_cupy_stream, cupy_stream_handle,
    ("the current stream for None: CuPy's (driver.stream_handle; fastlaunch/streams.c, get_stream_ptr)",))
TORCH = Framework(
    "torch", is_torch_tensor, lambda kind, a: _in_module(kind, "torch"), _from_torch, torch_reader, torch_info,
    "dlpack", _is_torch_stream, torch_stream_handle,
    ("neg and conjugate bits refused (torch_info, LG608)",
     "written tensors: autograd (LG618) and inference tensors (LG635) checked, version counters bumped "
     "(validate.TorchWrites; fastlaunch/torch.c)",
     "the current stream for None: torch's (driver.launch_stream; fastlaunch/streams.c, current_work_stream)"))
JAX = Framework(
    "jax", _never, lambda kind, a: (_in_module(kind, "jax") or _in_module(kind, "jaxlib"))
    and hasattr(a, "__cuda_array_interface__"), _from_interface, None, None, None, _never, None,
    ("read-only arrays: never written (LG607); the device from `devices()`",))
#: Any other producer of ``__cuda_array_interface__`` (Numba, cuda.core, ...): validated on every call.
INTERFACE = Framework(
    "cuda_array_interface", _never, lambda kind, a: hasattr(a, "__cuda_array_interface__"), _from_interface, None,
    None, None, _never, None, ("read-only arrays: never written (LG607)",))
#: The array frameworks, in the order their ``owns`` is asked. Adding one: docs/architecture.md, "a framework".
FRAMEWORKS: tuple[Framework, ...] = (CUPY, TORCH, JAX, INTERFACE)


def framework_of(kind: type, a: Any = None) -> Framework | None:
    """The framework whose arrays ``kind``'s objects are (``a``: one of them, where there is one), or None: the
    one whose array types it is, else the first that owns it (a module's name is asked only then)."""
    return (next((f for f in FRAMEWORKS if f.array_types(kind)), None)
            or next((f for f in FRAMEWORKS if f.owns(kind, a)), None))


def _reader(kind: type, a: Any) -> Callable[[Any], ArrayInfo]:
    module = kind.__module__
    framework = framework_of(kind, a)
    if framework is not None:
        reader = framework.info
    elif isinstance(a, np.ndarray) or hasattr(a, "__array_interface__"):
        shape, dtype = getattr(a, "shape", "?"), getattr(a, "dtype", "?")
        raise ArrayKindError(
            f"a host array ({module}.{kind.__name__}, shape {list(shape) if isinstance(shape, tuple) else shape}, "
            f"{dtype_text(str(dtype))}) is not on a CUDA device"
        )
    else:
        raise ArrayKindError(f"{module}.{kind.__name__} is not a CUDA array")
    _READERS[kind] = reader
    return reader


def array_info(a: Any) -> ArrayInfo:
    """Pointer, shape, element strides, dtype, device and writability of ``a``.

    Raises :class:`ArrayKindError` for host arrays and objects that are not arrays.
    """
    kind = type(a)
    reader = _READERS.get(kind)
    if reader is None:
        reader = _reader(kind, a)
    try:
        return reader(a)
    except ArrayKindError:
        raise
    except UNREADABLE as exc:  # torch.Size, a bad interface...
        raise unreadable(a, exc) from exc


#: What a read of an object that is no readable array raises (ArrayKindError, a TypeError, is re-raised first).
UNREADABLE = (AttributeError, KeyError, TypeError, ValueError, IndexError)


def unreadable(a: Any, exc: Exception) -> ArrayKindError:
    """The ArrayKindError for ``a``, whose read raised ``exc`` (one of :data:`UNREADABLE`)."""
    kind = type(a)
    return ArrayKindError(f"{kind.__module__}.{kind.__name__} is not a readable CUDA array ({exc!r})")
