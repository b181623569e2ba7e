"""Layout types for mypy: ``Array[Window]`` is not an ``Array[Features]``.

CuPy ships no type information, so layoutgen types arrays with a thin generic
wrapper whose parameter is a phantom layout class generated for each layout.
Launchers accept either a typed ``Array[...]`` of their layout or any device
array (CuPy, torch, JAX: anything with ``__dlpack_device__``); passing an
``Array`` of another layout is a type error. At run time the wrapper costs
one attribute read.
"""

from __future__ import annotations

from typing import Any, ClassVar, Generic, Protocol, TypeVar

import numpy as np

from ..schema.dims import shape_text
from .arrays import ArrayKindError, array_info
from .errors import LaunchError, launch_error
from .plan import LayoutSpec, ParamSpec
from .validate import check_param


class DeviceArray(Protocol):
    """Any array that speaks DLPack: CuPy, torch and JAX arrays."""

    def __dlpack_device__(self) -> Any: ...


class LayoutTag:
    """Base of the generated layout classes (phantom types; never instantiated)."""

    spec: ClassVar[LayoutSpec]

    @classmethod
    def empty(cls: type[L], /, *shape: int, **unit: int) -> Array[L]:
        """A new uninitialised CuPy array of this layout; ``shape`` gives the leading dims.

        A row whose columns count a symbol takes its size by name: ``QKV.empty(B, S, D=128)``.
        """
        spec = cls.spec
        if spec.unit is not None and set(unit) != {spec.unit} or spec.unit is None and unit:
            wanted = f"`{spec.unit}=...`" if spec.unit else "no sizes by name"
            raise launch_error("LG601", f"`{cls.__name__}.empty` takes {wanted} for layout {spec.name} {spec.shape_text}, "
                         f"got {sorted(unit)}")
        if len(shape) != len(spec.dims) or any(isinstance(d, int) and n != d for d, n in zip(spec.dims, shape)):
            leading = shape_text(spec.dims)
            raise launch_error("LG601", f"`{cls.__name__}.empty` takes the leading dims {leading} of layout {spec.name} "
                         f"{spec.shape_text}, got {list(shape)}")
        import cupy

        width = spec.width * (unit[spec.unit] if spec.unit is not None else 1)
        return Array(cupy.empty((*shape, width), dtype=spec.numpy))

    @classmethod
    def check(cls, data: Any, *, writable: bool = False, align: int | None = None, device: int | None = None) -> None:
        """Raise the launcher's LG6xx error where ``data`` does not fit this layout; for arrays handed to
        kernels layoutgen does not launch (a C++ or Rust host, a torch extension, a hand-written launch).

        The checks are the launcher's own (:func:`layoutgen.runtime.validate.check_param`): shape, dtype,
        packed strides, device, and with ``writable=True`` that the array may be written (LG607 for a
        read-only JAX input); ``align`` the bytes its pointer must be aligned to (LG606), one element's if None;
        ``device`` the device the foreign launch runs on (LG605), the array's own if None.
        """
        param = ParamSpec("data", "inout" if writable else "in", cls.spec, cls.spec.name,
                          cls.spec.itemsize if align is None else align)
        try:
            info = array_info(data)
        except ArrayKindError as exc:
            raise launch_error("LG608", f"`{cls.__name__}.check`: {exc}",
                               hint=exc.hint or "check a device array: CuPy, torch (CUDA) or JAX") from None
        check_param(f"{cls.__name__}.check", param, info, {}, info.device if device is None else device)

    @classmethod
    def wrap(cls: type[L], data: Any) -> Array[L]:
        """``data`` checked against this layout (shape, dtype, packed strides) and typed."""
        # "in": wrapping a read-only (JAX) input is fine; a launch still refuses it as an output.
        param = ParamSpec("data", "in", cls.spec, cls.spec.name, cls.spec.itemsize)
        try:
            info = array_info(data)
        except ArrayKindError as exc:
            raise launch_error("LG608", f"`{cls.__name__}.wrap`: {exc}",
                               hint=exc.hint or "wrap a device array: CuPy, torch (CUDA) or JAX") from None
        check_param(f"{cls.__name__}.wrap", param, info, {}, info.device)
        return Array(data)


L = TypeVar("L", bound=LayoutTag)


class Array(Generic[L]):
    """A device array typed by its layout. ``.data`` is the array itself."""

    __slots__ = ("data",)

    def __init__(self, data: Any) -> None:
        self.data = data

    def __repr__(self) -> str:
        return f"Array({self.data!r})"


def unwrap(a: Any) -> Any:
    """The device array inside an :class:`Array`, or ``a`` itself."""
    return a.data if type(a) is Array else a


# What a launcher's scalar arguments are typed as: the Python and NumPy scalars each kind takes. mypy counts a
# bool as an int and an int as a float; the launcher does not (LG620), so those are caught when it runs.
#: An f32 or f64 scalar.
FloatScalar = float | np.floating[Any] | np.integer[Any]
#: An integer scalar (i8..i64, u8..u64).
IntScalar = int | np.integer[Any]
#: A bool scalar.
BoolScalar = bool | np.bool_


__all__ = ["Array", "BoolScalar", "DeviceArray", "FloatScalar", "IntScalar", "LaunchError", "LayoutTag", "unwrap"]
