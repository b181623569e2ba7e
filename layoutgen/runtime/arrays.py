"""Reading a device array's pointer, shape, strides and dtype without converting it.

Converting a torch tensor with ``cupy.asarray`` costs tens of microseconds a
call; reading its attributes costs about one. So each kind of array is read
directly: CuPy's own attributes, torch's ``data_ptr``/``stride``, a JAX
array's ``unsafe_buffer_pointer()``, the ``__cuda_array_interface__`` of
anything else (Numba, ...), and the DLPack capsule of a producer that offers
only ``__dlpack__`` (:mod:`.dlpack`). Strides come back in elements, whatever
the library reports. :data:`FRAMEWORKS` has one row per array framework (what
identifies its arrays and streams, its reads, its rules as callables the
launch path calls); the full read here, the fast readers (:mod:`.readers`),
the stream readers and the stream of a launch given none (:mod:`.driver`) and
the written-array rules (:mod:`.validate`) all take a type's framework from it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from .array_base import UNREADABLE as UNREADABLE
from .array_base import ArrayInfo as ArrayInfo
from .array_base import ArrayKindError as ArrayKindError
from .array_base import dtype_text as dtype_text
from .array_base import element_strides as _elements
from .array_base import interface_info as interface_info
from .array_base import non_native as non_native
from .array_base import numpy_dtype as _dtype
from .array_base import packed_strides as packed_strides
from .array_base import unreadable as unreadable
from .dlpack import dlpack_info
from .torch_streams import TorchCurrentStream, torch_stream
from .torch_writes import TorchWrites

_TORCH_DTYPES = {
    "torch.float32": "float32", "torch.float64": "float64", "torch.float16": "float16",
    "torch.bfloat16": "bfloat16", "torch.int32": "int32", "torch.int64": "int64", "torch.int16": "int16",
    "torch.int8": "int8", "torch.uint8": "uint8", "torch.uint16": "uint16", "torch.uint32": "uint32",
    "torch.uint64": "uint64", "torch.bool": "bool",
}


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


def torch_refusals(t: Any, signature: tuple[Any, ...]) -> None:
    """What refuses a :func:`torch_reader` read (LG608): torch's lazy negation and conjugation are bits on the
    tensor, not in its memory, so a kernel reading ``data_ptr()`` would see the values un-negated
    (un-conjugated); and a tensor on no CUDA device. Only a complex tensor is asked anything more (its
    conjugate bit, for the message): whatever it answers, it is refused."""
    dtype, device, neg = signature[3:6]
    if neg:
        raise ArrayKindError("a torch tensor with its negative bit set (`torch._neg_view`, or the imaginary part of "
                             "a conjugate view) would be read without the negation",
                             hint="materialise it once: `t.resolve_neg()`")
    if getattr(dtype, "is_complex", False) and t.is_conj():
        raise ArrayKindError("a torch tensor with its conjugate bit set (`t.conj()`) would be read unconjugated",
                             hint="materialise it once: `t.resolve_conj()`")
    if getattr(device, "type", None) not in TORCH_DEVICE_TYPES:
        raise ArrayKindError(f"a torch tensor on {device} is not on a CUDA device")


def torch_info(t: Any, signature: tuple[Any, ...], ptr: int) -> ArrayInfo:
    """The ArrayInfo of a :func:`torch_reader` read that :func:`torch_refusals` passed."""
    _, shape, stride, dtype, device, _ = signature
    name = _TORCH_NAMES.get(dtype)
    if name is None:
        text = str(dtype)
        name = _TORCH_NAMES[dtype] = _TORCH_DTYPES.get(text, text)
    return ArrayInfo(ptr, tuple(shape), tuple(stride), name, device.index or 0, False)


_TORCH_NAMES: dict[Any, str] = {}  # torch dtype -> numpy name; ``str(dtype)`` once per dtype


def torch_dtype_name(dtype: Any) -> str:
    """A torch dtype's numpy name ("float32"), as :func:`array_info` reads a tensor's (its text where none)."""
    text = str(dtype)
    return _TORCH_DTYPES.get(text, text)


#: The signature of a JAX array whose buffer could not be read: ``(type, _NO_BUFFER, why)``, refused.
_NO_BUFFER = "no buffer"


def jax_reader(a: Any) -> tuple[tuple[Any, ...], int]:
    """A ``jax.Array``'s read: its type, shape, dtype, sharding (its device and memory kind) and device layout
    (jaxlib's ``_pjrt_layout``, hashable; None where jaxlib has none), and its pointer (JAX arrays have no
    strides: their layout says how they lie, and are never written). It never raises: a read that fails (a
    deleted array, one sharded over several devices, a tracer) is a signature :func:`jax_refusals` refuses,
    as the launch path calls readers outside its refusals."""
    try:
        ptr = a.unsafe_buffer_pointer()
        return (type(a), a.shape, a.dtype, a.sharding, getattr(a, "_pjrt_layout", None)), ptr
    except Exception as exc:  # noqa: BLE001 - jaxlib raises RuntimeError and its own errors; named in the refusal
        return (type(a), _NO_BUFFER, f"{type(exc).__name__}: {exc}"), 0


def jax_refusals(a: Any, signature: tuple[Any, ...]) -> None:
    """What refuses a :func:`jax_reader` read (LG608): no buffer, memory that is not the device's (a
    ``pinned_host`` array), a device that is no CUDA GPU."""
    if signature[1] is _NO_BUFFER:
        raise ArrayKindError(f"a jax array whose buffer cannot be read ({signature[2]})")
    sharding = signature[3]
    memory = getattr(sharding, "memory_kind", None)
    if memory not in (None, "device"):
        raise ArrayKindError(f"a jax array in `{memory}` memory is not in device memory",
                             hint="`jax.device_put` it to the device's own memory")
    devices = list(sharding.device_set)
    if len(devices) != 1:
        raise ArrayKindError(f"a jax array on {len(devices)} devices is not one device's array")
    device = devices[0]
    if device.platform not in ("gpu", "cuda"):
        raise ArrayKindError(f"a jax array on {device.platform} device {device.id} is not on a CUDA device")
    order = _major_to_minor(signature[4])
    if order is not None and order != tuple(range(len(signature[1]))):  # as jaxlib's __cuda_array_interface__
        raise ArrayKindError(f"a jax array whose device layout is {order} (major to minor) is not row-major: it "
                             f"would be read as if it were", hint="give it the default layout (`jnp.array(a)`)")


def _major_to_minor(layout: Any) -> tuple[int, ...] | None:
    """A jaxlib ``PjRtLayout``'s dimensions, major to minor; None where it says none."""
    try:
        return tuple(layout._xla_layout().minor_to_major())[::-1]
    except Exception:  # noqa: BLE001 - None, or a jaxlib whose layout has no XLA layout: the default layout
        return None


def jax_info(a: Any, signature: tuple[Any, ...], ptr: int) -> ArrayInfo:
    """The ArrayInfo of a :func:`jax_reader` read that :func:`jax_refusals` passed: packed, read-only."""
    _, shape, dtype, sharding, _ = signature
    shape = tuple(shape)
    return ArrayInfo(ptr, shape, packed_strides(shape), _dtype(dtype)[0], next(iter(sharding.device_set)).id, True)


def _from_cupy(a: Any) -> ArrayInfo:
    return CUPY.read(a, *cupy_reader(a))


def _from_torch(t: Any) -> ArrayInfo:
    return TORCH.read(t, *torch_reader(t))


def _from_jax(a: Any) -> ArrayInfo:
    """A ``jax.Array`` through its fast read; another object of jax's that has an interface through that."""
    return JAX.read(a, *jax_reader(a)) if JAX.array_types(type(a)) else _from_interface(a)


def _from_interface(a: Any) -> ArrayInfo:
    cai = a.__cuda_array_interface__
    ptr, readonly = cai["data"]
    if cai.get("mask") is not None:
        raise ArrayKindError(f"a masked {type(a).__name__} (its __cuda_array_interface__ has a mask) is not supported")
    return interface_info(cai["shape"], cai["typestr"], cai.get("strides"), ptr, readonly, _interface_device(a))


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


def _is_jax_array(kind: type) -> bool:
    """``jax.Array`` or a subclass (jaxlib's ``ArrayImpl``), wherever it is defined."""
    jax = sys.modules.get("jax")  # an array exists only once jax is imported
    return jax is not None and issubclass(kind, jax.Array)


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
    """torch's streams, and its current stream as a launch given none reads it (``torch_streams``)."""
    if kind is TorchCurrentStream:
        return True
    torch = sys.modules.get("torch")
    return torch is not None and issubclass(kind, torch.cuda.Stream)


def _speaks_dlpack(kind: type, a: Any) -> bool:
    """An object with ``__dlpack__`` and ``__dlpack_device__``, and no host array (numpy's arrays speak DLPack
    too: they keep the host array's refusal)."""
    return (hasattr(a, "__dlpack__") and hasattr(a, "__dlpack_device__") and not isinstance(a, np.ndarray)
            and not hasattr(a, "__array_interface__"))


def cupy_stream_handle(stream: Any, kernel: str) -> Any:
    return stream.ptr


def torch_stream_handle(stream: Any, kernel: str) -> Any:
    return stream.cuda_stream


class Written(Protocol):
    """A framework's rule for the arrays a kernel writes (``Framework.written(indices, who)``, built once per
    plan; ``who(kernel, param)`` names a parameter in its messages): ``check`` before the launch (raises
    LaunchError), ``record`` after it; ``in_c``: the compiled path applies the same rule itself (else a plan
    with it stays on the Python path)."""

    indices: tuple[int, ...]
    in_c: bool

    def check(self, kernel: str, params: Sequence[Any], arrays: Sequence[Any]) -> None: ...

    def record(self, arrays: Sequence[Any]) -> None: ...


Reader = Callable[[Any], tuple[tuple[Any, ...], int]]
Info = Callable[[Any, tuple[Any, ...], int], ArrayInfo]


@dataclass(frozen=True)
class Framework:
    """One array framework: what identifies its arrays and streams, how they are read, what a launch of its
    arrays needs. :data:`FRAMEWORKS` holds one per framework; the first row that owns a type reads it. The
    launch path calls a row's callables and never names a framework."""

    name: str
    #: Its array types, subclasses included wherever they are defined: these are its arrays before any row's
    #: ``owns`` is asked, and those its fast reader reads and its ``written`` rule applies to.
    array_types: Callable[[type], bool]
    #: Whether objects of another type (``a``, one of them, where there is one) are its arrays all the same
    #: (its module's objects, an interface's producers).
    owns: Callable[[type, Any], bool]
    #: The full read of one array: pointer, shape, element strides, dtype, device, read-only.
    info: Callable[[Any], ArrayInfo]
    #: The read that keys a launcher's plans (``(signature, pointer)``) of its ``array_types``, and the
    #: ArrayInfo of that same read (runtime/readers.py); None: its arrays are validated on every call.
    fast_reader: Reader | None
    fast_info: Info | None
    #: What refuses a fast read (raises ArrayKindError: LG608), before ``fast_info``: torch's negative and
    #: conjugate bits and devices, a JAX array with no device buffer. :attr:`read` is the two in turn.
    refuse: Callable[[Any, tuple[Any, ...]], None] | None
    #: How the compiled path reads its arrays itself (runtime/fastlaunch/): "fields" (cupy.c, the struct's
    #: fields), "dlpack" (torch.c: the C++ reader or DLPack's exchange API); None: through ``fast_reader``.
    c_read: str | None
    #: Its stream types, and how a stream's CUstream is read (runtime/driver.py's stream_handle).
    owns_stream: Callable[[type], bool]
    stream_handle: Callable[[Any, str], Any] | None
    #: The rule for its arrays that a kernel writes (:class:`Written`, built per plan from the written
    #: parameters' indices and what names a parameter): torch's autograd and inference checks before, version
    #: counters after.
    written: Callable[[tuple[int, ...], Callable[[str, Any], str]], Written] | None
    #: The stream a launch over its arrays given ``stream=None`` runs on, on a device (``current_stream(device)``:
    #: a stream object its ``stream_handle`` or the CUDA stream protocol reads): torch's current stream, as DLPack
    #: asks of a library reading a framework's arrays. None: the launch's default, CuPy's current stream
    #: (runtime/driver.py's launch_stream asks the rows of a launch's arrays; LG616 where two differ).
    current_stream: Callable[[int], Any] | None = None
    #: ``refuse`` then ``fast_info``: what a launch validates a fast read with (readers.INFOS).
    read: Info = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        refuse, info = self.refuse, self.fast_info
        if info is None or refuse is None:
            read: Any = info
        else:
            def read(a: Any, signature: tuple[Any, ...], ptr: int) -> ArrayInfo:
                refuse(a, signature)
                return info(a, signature, ptr)
        object.__setattr__(self, "read", read)


def _never(kind: type) -> bool:
    return False


CUPY = Framework(
    "cupy", _is_cupy_array, lambda kind, a: _in_module(kind, "cupy"), _from_cupy, cupy_reader, cupy_info, None,
    "fields", _is_cupy_stream, cupy_stream_handle, None)
TORCH = Framework(
    "torch", is_torch_tensor, lambda kind, a: _in_module(kind, "torch"), _from_torch, torch_reader, torch_info,
    torch_refusals, "dlpack", _is_torch_stream, torch_stream_handle, TorchWrites, torch_stream)
#: jax.Array (read-only: LG607 when written); another jax object with an interface is read through that.
JAX = Framework(
    "jax", _is_jax_array, lambda kind, a: (_in_module(kind, "jax") or _in_module(kind, "jaxlib"))
    and hasattr(a, "__cuda_array_interface__"), _from_jax, jax_reader, jax_info, jax_refusals, None, _never, None,
    None)
#: Any other producer of ``__cuda_array_interface__`` (Numba, cuda.core, ...): validated on every call.
INTERFACE = Framework(
    "cuda_array_interface", _never, lambda kind, a: hasattr(a, "__cuda_array_interface__"), _from_interface, None,
    None, None, None, _never, None, None)
#: Any other DLPack producer on a CUDA device (after the interface: that stays the first choice where both
#: exist), read through its capsule (runtime/dlpack.py): validated on every call.
DLPACK = Framework("dlpack", _never, _speaks_dlpack, dlpack_info, None, None, None, None, _never, None, None)
#: The array frameworks, in the order their ``owns`` is asked. Adding one: docs/architecture.md, "a framework".
FRAMEWORKS: tuple[Framework, ...] = (CUPY, TORCH, JAX, INTERFACE, DLPACK)


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
