"""What every array framework's read produces, and the pieces the reads share.

An :class:`ArrayInfo` is one argument as a launch sees it (pointer, shape,
element strides, numpy dtype name, device, read-only); an
:class:`ArrayKindError` is an object no read can take. The framework
table (:mod:`.arrays`) and the reads of its rows (there, and :mod:`.dlpack`)
build on these; they import nothing of the table, so a row's read may live in
a module of its own.
"""

from __future__ import annotations

import sys
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
    """Whether a dtype name from ``array_info`` is one in the other byte order (``">f4"``)."""
    return name[:1] in ("<", ">")  # numpy's names ("float32") never start so; such an array is named by its typestr


def numpy_dtype(key: Any) -> tuple[str, int]:
    """The numpy name and itemsize of a numpy dtype or typestr (a byte-swapped one named by its typestr)."""
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


def element_strides(byte_strides: Any, itemsize: int, shape: tuple[int, ...]) -> tuple[int, ...]:
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


def packed_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Row-major element strides of a packed array of ``shape``."""
    out, step = [], 1
    for size in reversed(shape):
        out.append(step)
        step *= size
    return tuple(reversed(out))


def interface_info(shape: Any, typestr: str, byte_strides: Any, ptr: Any, readonly: Any, device: int) -> ArrayInfo:
    """The ArrayInfo of one read of a ``__cuda_array_interface__`` (byte strides, None where packed). The
    pointer is kept as given (``None``: 0, an empty array's): a launch refuses one that is no address (LG633,
    LG634)."""
    shape = tuple(shape)
    name, itemsize = numpy_dtype(typestr)
    elements = packed_strides(shape) if byte_strides is None else element_strides(byte_strides, itemsize, shape)
    if ptr is None:
        ptr = 0
    elif isinstance(ptr, bool) or not isinstance(ptr, (int, np.integer)):  # a float, a string: no address
        raise ArrayKindError(f"the data pointer of a __cuda_array_interface__ must be an int, got {ptr!r}")
    return ArrayInfo(int(ptr), shape, elements, name, device, bool(readonly))


def type_name(kind: type) -> str:
    """``module.Name`` of a type, as refusals name an array's."""
    return f"{kind.__module__}.{kind.__name__}"


#: What a read of an object that is no readable array raises (ArrayKindError, a TypeError, is re-raised first).
UNREADABLE = (AttributeError, KeyError, TypeError, ValueError, IndexError)


def unreadable(a: Any, exc: Exception) -> ArrayKindError:
    """The ArrayKindError for ``a``, whose read raised ``exc`` (one of :data:`UNREADABLE`)."""
    return ArrayKindError(f"{type_name(type(a))} is not a readable CUDA array ({exc!r})")
