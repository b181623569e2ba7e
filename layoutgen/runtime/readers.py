"""The fast readers of a launcher's hot path: what keys a validated plan, read from each kind of array.

A reader returns an array's signature (its type first, then its shape,
strides, dtype and device: everything a plan's checks depend on but the
pointer) and its pointer, from one read of the array. Its entry in
:data:`INFOS` turns that same read into the :class:`~.arrays.ArrayInfo` the
checks run on: a launch that finds no plan validates the read it keyed on,
never a second read, so a plan is kept under exactly what was checked (an
array that another thread changes between two reads, or a torch function
mode that answers two reads differently, cannot key one and pass the
other). The Python path keys its plans on the signatures; the compiled path
(:mod:`.fastpath`) reads the same values at C level and is taught each plan
with the validated read. Kinds without a reader, or with a reader but no
entry in :data:`INFOS`, are validated on every call
(``__cuda_array_interface__`` arrays, DLPack producers).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .arrays import (FRAMEWORKS, UNREADABLE, ArrayInfo, ArrayKindError, array_info, cupy_reader, framework_of,
                     unreadable)
from .arrays import jax_reader as jax_reader
from .arrays import torch_reader as torch_reader

__all__ = ["FAST_READERS", "INFOS", "Readers", "cupy_reader", "jax_reader", "read_once", "torch_reader"]

#: A reader's read -> the ArrayInfo it says: ``info(array, signature, pointer)`` (the array only for what
#: refuses it anyway): each framework's with a fast reader (arrays.FRAMEWORKS: its ``read``, the row's
#: refusals then its ``fast_info``; a row found by :class:`Readers` adds its own). The tests add theirs, for
#: their fake arrays.
INFOS: dict[Any, Callable[[Any, tuple[Any, ...], int], ArrayInfo]] = {
    f.fast_reader: f.read for f in FRAMEWORKS if f.fast_reader is not None and f.fast_info is not None}


class Readers(dict[type, Any]):
    """Fast readers by array type: those of the frameworks that have one (CuPy's arrays, torch's tensors and
    JAX's arrays, subclasses included), found on first sight."""

    def get(self, kind: type, default: Any = None) -> Any:
        try:
            return self[kind]
        except KeyError:
            return default

    def __missing__(self, kind: type) -> Any:
        framework = framework_of(kind)
        if framework is None or framework.fast_reader is None or not framework.array_types(kind):
            raise KeyError(kind)
        if framework.fast_info is not None:  # a row added to the table after this module was imported
            INFOS.setdefault(framework.fast_reader, framework.read)
        self[kind] = framework.fast_reader
        return framework.fast_reader


#: The readers every launcher reads with (tests add ones for their fake arrays).
FAST_READERS = Readers()


def read_once(a: Any) -> tuple[tuple[Any, ...] | None, ArrayInfo]:
    """``a`` read once: its signature (None where its kind has no fast reader with an :data:`INFOS` entry: it is
    validated on every call) and the ArrayInfo of that same read. Raises :class:`ArrayKindError`."""
    reader = FAST_READERS.get(type(a))
    info = None if reader is None else INFOS.get(reader)
    if info is None:
        return None, array_info(a)
    try:
        signature, ptr = reader(a)
        return signature, info(a, signature, ptr)
    except ArrayKindError:
        raise
    except UNREADABLE as exc:  # as array_info words them
        raise unreadable(a, exc) from exc


def info_of(a: Any, signature: tuple[Any, ...], ptr: int) -> ArrayInfo | None:
    """The ArrayInfo of a read a launch already made (``signature`` and ``ptr``, from the reader of its type,
    which the signature names first), or None where that reader has no :data:`INFOS` entry. Raises
    :class:`ArrayKindError`."""
    reader = FAST_READERS.get(signature[0]) if type(signature) is tuple and signature else None
    info = None if reader is None else INFOS.get(reader)
    if info is None:
        return None
    try:
        return info(a, signature, ptr)
    except ArrayKindError:
        raise
    except UNREADABLE as exc:  # as array_info words them
        raise unreadable(a, exc) from exc
