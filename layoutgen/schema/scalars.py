"""Scalar kernel parameters: which dtypes they take, which values fit one, and the bytes a launch passes.

One set of rules for every place a scalar's value is given: a constant in a
program's ``Launch`` (checked at declaration), a launcher's argument and a
program run's value (checked at launch). :func:`pack_scalar` either returns
the 8-byte parameter slot of the value, whose first ``dtype.size`` bytes in
memory are the value as its C type (what ``cuLaunchKernel`` copies for a
by-value parameter of that size), or raises :class:`ScalarValueError` with
the code and the words for what is wrong; each caller names the parameter.

The rules are exact: a ``bool`` is not taken for a number (it is a Python
``int``), a float is never taken for an integer, an integer outside its C
type's range and a float outside its finite range are refused, not wrapped
or rounded to infinity, and NaN or Inf are refused where the scalar says
``finite``. NumPy is never imported here: a NumPy scalar exists only once
NumPy is, so its types are looked up in ``sys.modules``.
"""

from __future__ import annotations

import math
import struct
import sys
from typing import Any

from .dtypes import DTYPES, DType

#: The dtypes a scalar may have: every dtype but the 16-bit floats, by short name.
SCALAR_DTYPES: dict[str, DType] = {n: d for n, d in DTYPES.items() if n not in ("f16", "bf16")}

#: The struct format of each scalar dtype, in native byte order (the device's: CUDA hosts are little-endian).
_FORMATS = {"f64": "=d", "f32": "=f", "i64": "=q", "i32": "=i", "i16": "=h", "i8": "=b",
            "u64": "=Q", "u32": "=I", "u16": "=H", "u8": "=B", "bool": "=?"}
_PAD = b"\0" * 8

#: What each kind of scalar takes, in words.
_WANTED = {
    "float": "a real number (a Python int or float, or a NumPy integer or floating scalar)",
    "int": "an integer (a Python int or a NumPy integer scalar)",
    "uint": "an integer (a Python int or a NumPy integer scalar)",
    "bool": "True or False (a Python or NumPy bool)",
}


def integer_range(dtype: DType) -> tuple[int, int]:
    """The smallest and the largest value of an integer dtype."""
    bits = 8 * dtype.size
    return (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if dtype.kind == "int" else (0, 2**bits - 1)


def largest_finite(dtype: DType) -> float:
    """The largest finite value of a float dtype (f32: 3.4028234663852886e+38)."""
    return sys.float_info.max if dtype.size == 8 else float(struct.unpack("=f", struct.pack("=I", 0x7F7FFFFF))[0])


class ScalarValueError(ValueError):
    """A value that a scalar parameter cannot take: ``code`` (LG620..LG622), ``problem`` and ``hint``.

    ``problem`` reads after the parameter's name: "must be ..., got ...".
    """

    def __init__(self, code: str, problem: str, hint: str) -> None:
        super().__init__(problem)
        self.code = code
        self.problem = problem
        self.hint = hint


def describe_value(value: object) -> str:
    """``0.01 (float)``, ``nan (numpy.float32)``, ``'0.01' (str)``: a value and its type, for messages."""
    kind = type(value)
    builtin = kind.__module__ == "builtins"
    name = kind.__qualname__ if builtin else f"{kind.__module__}.{kind.__qualname__}"
    shape = None if builtin else _array_shape(value)
    if shape is not None:  # an array: never read its values (a device array's would need a copy)
        return f"an array of shape [{', '.join(map(str, shape))}] ({name})"
    text = repr(value) if builtin else str(value)
    return f"{text[:57] + '...' if len(text) > 60 else text} ({name})"


def _array_shape(value: object) -> tuple[object, ...] | None:
    """The shape of an array (NumPy's, CuPy's, torch's, anything with ``__cuda_array_interface__``), else None."""
    if _is_numpy_scalar(value):  # has a shape, (), but is a scalar
        return None
    shape = getattr(value, "shape", None)
    if shape is None:
        interface = getattr(value, "__cuda_array_interface__", None)
        shape = interface.get("shape") if isinstance(interface, dict) else None
    return tuple(shape) if isinstance(shape, (tuple, list)) else None  # torch.Size is a tuple


def _is_numpy_scalar(value: object) -> bool:
    numpy = sys.modules.get("numpy")  # a NumPy scalar exists only once NumPy is imported
    return numpy is not None and isinstance(value, numpy.generic)


def _wrong_type(dtype: DType, value: object) -> ScalarValueError:
    """LG620 for a value of the wrong kind, with the conversion that says what the caller means."""
    kind = dtype.kind
    numpy = sys.modules.get("numpy")
    if _bool(value):
        hint = f"pass a number (`{'float' if kind == 'float' else 'int'}(flag)`) where one is meant: a bool is no " \
               "number here, although Python counts it as an int"
    elif kind == "bool" and _real(value):
        hint = "pass `bool(x)` (or `x != 0`) where a truth value is meant"
    elif kind != "float" and (isinstance(value, float) or (numpy is not None and isinstance(value, numpy.floating))):
        hint = "convert it where that is meant (`int(x)` truncates, `round(x)` rounds): a float is never taken " \
               "for an integer"
    elif isinstance(value, str):  # read from a configuration file or a command line, say
        hint = {"float": "parse it first (`float(text)`): a string is never converted",
                "bool": "parse it first (`text == \"true\"`, say): `bool(text)` is True for any non-empty string",
                }.get(kind, "parse it first (`int(text)`): a string is never converted")
    elif _array_shape(value) is not None:
        hint = "pass a Python or NumPy scalar: `a.item()` copies an array's one value (from the device, for a " \
               "device array)"
    else:
        hint = "pass a Python or NumPy scalar of that kind"
    return ScalarValueError("LG620", f"must be {_WANTED[kind]}, got {describe_value(value)}", hint)


def _slot(packed: bytes) -> int:
    """The 8-byte parameter slot whose first bytes in memory are ``packed``."""
    return int.from_bytes(packed + _PAD[len(packed):], sys.byteorder)


def pack_scalar(dtype: DType, finite: bool, value: Any) -> int:
    """The parameter slot of ``value`` as a scalar of ``dtype``; :class:`ScalarValueError` when it cannot be one.

    ``finite``: NaN and Inf are refused (LG622). The value's type must be of
    the dtype's kind (LG620); it must fit the C type (LG621).
    """
    kind = dtype.kind
    fmt = _FORMATS[dtype.name]
    kind_of_value = type(value)
    if kind == "float":
        if kind_of_value is not float and kind_of_value is not int and not _real(value):
            raise _wrong_type(dtype, value)
        try:
            number = float(value)
        except OverflowError:  # an int past every double
            raise _out_of_float_range(dtype, value) from None
        if finite and not math.isfinite(number):
            raise ScalarValueError(
                "LG622", f"must be finite, got {describe_value(value)}",
                "the parameter is declared finite=True: a NaN or Inf here would spread through everything the "
                "kernel writes; look at where the value came from (a NaN loss, a division by zero)")
        try:
            return _slot(struct.pack(fmt, number))
        except OverflowError:  # finite, but past the type's largest value: it would become Inf
            raise _out_of_float_range(dtype, value) from None
    if kind == "bool":
        if kind_of_value is not bool and not _bool(value):
            raise _wrong_type(dtype, value)
        return _slot(struct.pack(fmt, bool(value)))
    if kind_of_value is not int and not _integer(value):
        raise _wrong_type(dtype, value)
    number = int(value)
    low, high = integer_range(dtype)
    if not low <= number <= high:
        wider = "" if dtype.size == 8 else ", or declare the scalar with a wider dtype"
        wrap = f" (where wrapping is meant, say so: `x % 2**{8 * dtype.size}`)" if dtype.kind == "uint" else ""
        raise ScalarValueError(
            "LG621", f"must be an integer from {low} to {high}, got {describe_value(value)}",
            f"pass a value that `{dtype.c_type}` holds{wider}: layoutgen never wraps an integer around{wrap}")
    return _slot(struct.pack(fmt, number))


def _out_of_float_range(dtype: DType, value: object) -> ScalarValueError:
    return ScalarValueError(
        "LG621", f"must be within ±{largest_finite(dtype)!r}, the largest finite {dtype.name}, got "
        f"{describe_value(value)}, which {dtype.name} would hold as Inf",
        "declare the scalar f64, or scale the value" if dtype.size < 8 else "scale the value")


def _real(value: object) -> bool:
    """A NumPy integer or floating scalar (a Python float subclass passes too); never a bool."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, (numpy.integer, numpy.floating))


def _integer(value: object) -> bool:
    """A NumPy integer scalar or an int subclass; never a bool."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.integer)


def _bool(value: object) -> bool:
    """A Python or NumPy bool."""
    if isinstance(value, bool):
        return True
    numpy = sys.modules.get("numpy")
    return numpy is not None and isinstance(value, numpy.bool_)


def scalar_type_text(dtype: DType, finite: bool) -> str:
    """``scalar f32, finite``: how messages describe a scalar parameter's declaration."""
    return f"scalar {dtype.name}" + (", finite" if finite else "")
