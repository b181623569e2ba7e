"""array_info reads CuPy, torch and ``__cuda_array_interface__`` arrays without a GPU.

Fakes stand in for the real libraries: a class whose ``__module__`` is "cupy" or
"torch" is read the way those libraries' arrays are, anything else through its
``__cuda_array_interface__``. Strides always come back in elements.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from layoutgen.runtime.arrays import ArrayInfo, ArrayKindError, array_info, non_native


class FakeCAI:
    """An object exposing ``__cuda_array_interface__`` version 3 (strides in bytes, or None when packed)."""

    def __init__(self, shape: tuple[int, ...], typestr: str = "<f4", ptr: int | None = 0x7F00_0000_0000,
                 strides: tuple[int, ...] | None = None, readonly: bool = False, device: int | None = None,
                 **extra: Any) -> None:
        self.__cuda_array_interface__: dict[str, Any] = {"version": 3, "shape": shape, "typestr": typestr,
                                         "data": (ptr, readonly), "strides": strides, **extra}
        if device is not None:
            self.device = SimpleNamespace(id=device)


class FakeJax(FakeCAI):
    """Like a jax.Array: the device comes from ``devices()``."""

    def __init__(self, shape: tuple[int, ...], device: int, **kw: Any) -> None:
        super().__init__(shape, readonly=True, **kw)
        self._device = device

    def devices(self) -> set[JaxDevice]:
        return {JaxDevice(self._device)}


@dataclass(frozen=True)
class JaxDevice:
    id: int


class FakeCupy:
    """Reads like a cupy.ndarray: byte strides, a numpy dtype, ``data.ptr`` and ``data.device_id``."""

    __module__ = "cupy"

    def __init__(self, shape: tuple[int, ...], dtype: str = "float32", strides: tuple[int, ...] | None = None,
                 ptr: int = 0x7F00_0000_0000, device: int = 0) -> None:
        self.dtype = np.dtype(dtype)
        self.shape = shape
        self.strides = strides if strides is not None else np.empty(shape, self.dtype).strides
        self.data = SimpleNamespace(ptr=ptr, device_id=device)


class FakeTorchDtype:
    def __init__(self, name: str) -> None:
        self.name = name
        self.is_complex = name.startswith("complex")

    def __str__(self) -> str:
        return f"torch.{self.name}"


class FakeTorch:
    """Reads like a torch.Tensor: ``data_ptr()``, ``stride()`` in elements, ``is_cuda``, ``device.index``."""

    __module__ = "torch"

    def __init__(self, shape: tuple[int, ...], dtype: str = "float32", stride: tuple[int, ...] | None = None,
                 ptr: int = 0x7F00_0000_0000, device: int | None = 0, neg: bool = False, conj: bool = False) -> None:
        self._neg, self._conj = neg, conj
        self.shape = shape  # a torch.Size is a tuple
        self._stride = stride if stride is not None else tuple(s // 1 for s in _packed(shape))
        self.dtype = FakeTorchDtype(dtype)
        self._ptr = ptr
        self.is_cuda = device is not None
        self.device = SimpleNamespace(type="cuda" if device is not None else "cpu", index=device)

    def data_ptr(self) -> int:
        return self._ptr

    def stride(self) -> tuple[int, ...]:
        return self._stride

    def is_neg(self) -> bool:
        return self._neg

    def is_conj(self) -> bool:
        return self._conj


def _packed(shape: tuple[int, ...]) -> tuple[int, ...]:
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= n
    return tuple(reversed(out))


# __cuda_array_interface__ -------------------------------------------------------------------------


@pytest.mark.parametrize("shape", [(), (5,), (40, 40), (2, 3, 4), (4, 8, 56), (3, 1, 7)])
def test_interface_without_strides_is_c_contiguous(shape: tuple[int, ...]) -> None:
    info = array_info(FakeCAI(shape))
    assert info.shape == shape
    assert info.strides == _packed(shape)
    assert info.strides == tuple(s // 4 for s in np.empty(shape, np.float32).strides)


def test_interface_reads_every_field() -> None:
    info = array_info(FakeCAI((4, 8, 56), ptr=0x1000, device=1))
    assert info == ArrayInfo(0x1000, (4, 8, 56), (448, 56, 1), "float32", 1, False)


def test_interface_byte_strides_become_element_strides() -> None:
    transposed = array_info(FakeCAI((56, 8), strides=(4, 56 * 4)))  # a [8, 56] array transposed
    assert transposed.strides == (1, 56)
    sliced = array_info(FakeCAI((4, 8, 40), strides=(8 * 56 * 4, 56 * 4, 4)))  # [..., :40] of a Window
    assert sliced.strides == (448, 56, 1)
    doubles = array_info(FakeCAI((3, 5), typestr="<f8", strides=(5 * 8, 8)))
    assert (doubles.dtype, doubles.strides) == ("float64", (5, 1))
    broadcast = array_info(FakeCAI((4, 40), strides=(0, 4)))
    assert broadcast.strides == (0, 1)


@pytest.mark.parametrize(("typestr", "name"), [
    ("<f4", "float32"), ("<f8", "float64"), ("<f2", "float16"), ("<i4", "int32"), ("<i8", "int64"),
    ("|u1", "uint8"), ("|i1", "int8"), ("|b1", "bool"), ("<V2", "bfloat16"),
])
def test_interface_dtypes(typestr: str, name: str) -> None:
    assert array_info(FakeCAI((2,), typestr=typestr)).dtype == name
    assert array_info(FakeCAI((2,), typestr=typestr)).dtype == name  # the cached look-up agrees


@pytest.mark.parametrize(("typestr", "name"), [(">f4", ">f4"), (">f8", ">f8"), (">i4", ">i4"), (">u2", ">u2"),
                                           (">V2", ">V2"), ("<u2", "uint16"), ("=f4", "float32")])
def test_interface_dtypes_in_the_other_byte_order_keep_their_typestr(typestr: str, name: str) -> None:
    # numpy names `>f4` "float32": accepted as f32, a kernel would read every element byte-swapped
    for _ in range(2):  # the cached look-up agrees
        assert array_info(FakeCAI((2,), typestr=typestr)).dtype == name
    assert non_native(name) == typestr.startswith(">")


def test_cupy_dtype_objects_in_the_other_byte_order_keep_their_typestr() -> None:
    assert array_info(FakeCupy((2, 3), dtype=">f4")).dtype == ">f4"
    assert array_info(FakeCupy((2, 3), dtype="<f4")).dtype == "float32"


def test_interface_readonly_and_null_pointer() -> None:
    assert array_info(FakeCAI((3,), readonly=True)).readonly is True
    assert array_info(FakeCAI((3,), readonly=False)).readonly is False
    assert array_info(FakeCAI((0, 40), ptr=None)).ptr == 0  # empty arrays may have no pointer


def test_interface_device() -> None:
    assert array_info(FakeCAI((3,))).device == 0  # nothing says otherwise
    assert array_info(FakeCAI((3,), device=2)).device == 2
    jax_like = array_info(FakeJax((3,), device=3))
    assert (jax_like.device, jax_like.readonly) == (3, True)


def test_interface_strides_not_a_whole_number_of_elements_are_refused() -> None:
    # a [40, 40] float32 view of a [40, 162]-byte buffer: 162 // 4 == 40 would pass as packed
    with pytest.raises(ArrayKindError, match=r"byte strides \(162, 4\).*not whole multiples.*4-byte"):
        array_info(FakeCAI((40, 40), strides=(162, 4)))


def test_interface_strides_of_another_rank_are_refused() -> None:
    with pytest.raises(ArrayKindError, match="do not match shape"):
        array_info(FakeCAI((4, 40), strides=(4,)))


def test_masked_interface_is_refused() -> None:
    with pytest.raises(ArrayKindError, match="mask"):
        array_info(FakeCAI((3,), mask=FakeCAI((3,), typestr="|b1")))


@pytest.mark.parametrize("broken", [
    {"shape": (3,), "typestr": "<f4"},  # no data
    {"shape": (3,), "data": (0, False)},  # no typestr
    {"shape": (3,), "typestr": "not a dtype", "data": (0, False)},
    {"shape": 3, "typestr": "<f4", "data": (0, False)},  # shape not a tuple
])
def test_unreadable_interface_is_refused(broken: dict[str, Any]) -> None:
    class Broken:
        __cuda_array_interface__ = broken

    with pytest.raises(ArrayKindError, match="Broken"):
        array_info(Broken())


# CuPy ---------------------------------------------------------------------------------------------


def test_cupy_byte_strides_become_element_strides() -> None:
    info = array_info(FakeCupy((4, 8, 56), ptr=0x2000, device=1))
    assert info == ArrayInfo(0x2000, (4, 8, 56), (448, 56, 1), "float32", 1, False)
    transposed = array_info(FakeCupy((56, 8), strides=(4, 224)))
    assert transposed.strides == (1, 56)
    doubles = array_info(FakeCupy((3, 5), dtype="float64"))
    assert (doubles.dtype, doubles.strides) == ("float64", (5, 1))
    halves = array_info(FakeCupy((6,), dtype="float16", strides=(4,)))  # every other element
    assert (halves.dtype, halves.strides) == ("float16", (2,))


def test_cupy_strides_not_a_whole_number_of_elements_are_refused() -> None:
    with pytest.raises(ArrayKindError, match="not whole multiples"):
        array_info(FakeCupy((40, 40), strides=(162, 4)))


def test_real_cupy_arrays_are_read_as_cupy() -> None:
    cupy = pytest.importorskip("cupy")
    assert cupy.ndarray.__module__ == "cupy"  # what array_info keys on


def test_cupyx_objects_are_not_cupy_arrays() -> None:
    class CsrMatrix:  # cupyx.scipy.sparse matrices: no data.ptr, no strides
        pass

    CsrMatrix.__module__ = "cupyx.scipy.sparse._csr"
    with pytest.raises(ArrayKindError, match=r"cupyx\.scipy\.sparse\._csr\.CsrMatrix is not a CUDA array"):
        array_info(CsrMatrix())


# torch --------------------------------------------------------------------------------------------


def test_torch_strides_are_already_elements() -> None:
    info = array_info(FakeTorch((4, 8, 56), ptr=0x3000, device=1))
    assert info == ArrayInfo(0x3000, (4, 8, 56), (448, 56, 1), "float32", 1, False)
    transposed = array_info(FakeTorch((56, 8), stride=(1, 56)))
    assert transposed.strides == (1, 56)


@pytest.mark.parametrize(("torch_name", "name"), [
    ("float32", "float32"), ("float16", "float16"), ("bfloat16", "bfloat16"), ("float64", "float64"),
    ("int32", "int32"), ("uint8", "uint8"),
])
def test_torch_dtypes(torch_name: str, name: str) -> None:
    assert array_info(FakeTorch((2,), dtype=torch_name)).dtype == name


def test_torch_unknown_dtype_keeps_its_torch_name() -> None:
    assert array_info(FakeTorch((2,), dtype="complex64")).dtype == "torch.complex64"  # matches no layout


@pytest.mark.parametrize(("bits", "message", "hint"), [
    ({"neg": True}, "a torch tensor with its negative bit set (`torch._neg_view`, or the imaginary part of a conjugate "
     "view) would be read without the negation", "materialise it once: `t.resolve_neg()`"),
    ({"conj": True, "dtype": "complex64"}, "a torch tensor with its conjugate bit set (`t.conj()`) would be read unconjugated",
     "materialise it once: `t.resolve_conj()`"),
])
def test_torch_lazy_negation_and_conjugation_are_refused(bits: dict[str, bool], message: str, hint: str) -> None:
    # the bits live on the tensor, not in its memory: data_ptr() reads the values without them
    with pytest.raises(ArrayKindError) as info:
        array_info(FakeTorch((2, 3), **bits))
    assert str(info.value) == message and info.value.hint == hint


def test_torch_cpu_tensor_is_refused() -> None:
    with pytest.raises(ArrayKindError, match="torch tensor on .*cpu.* not on a CUDA device"):
        array_info(FakeTorch((2,), device=None))


def test_torch_non_tensor_is_refused() -> None:
    class Size(tuple[int, ...]):  # torch.Size: from module torch, but no data
        pass

    Size.__module__ = "torch"
    with pytest.raises(ArrayKindError, match=r"torch\.Size is not a readable CUDA array"):
        array_info(Size((2, 3)))


# not device arrays --------------------------------------------------------------------------------


def test_numpy_arrays_are_refused_as_host_arrays() -> None:
    with pytest.raises(ArrayKindError, match=r"host array \(numpy\.ndarray, shape \[4, 8, 56\], f32\)"):
        array_info(np.zeros((4, 8, 56), np.float32))


def test_objects_with_only_an_array_interface_are_host_arrays() -> None:
    class HostOnly:
        __array_interface__ = {"shape": (3,), "typestr": "<f4", "data": (0, False), "version": 3}

    with pytest.raises(ArrayKindError, match="host array"):
        array_info(HostOnly())


@pytest.mark.parametrize("thing", [None, 3, 2.5, "x", [1.0, 2.0], (4, 8), {"shape": (3,)}])
def test_non_arrays_are_refused(thing: object) -> None:
    with pytest.raises(ArrayKindError, match="is not a CUDA array"):
        array_info(thing)


def test_the_reader_of_a_type_is_found_once_and_reused() -> None:
    from layoutgen.runtime import arrays

    class Once(FakeCAI):
        pass

    array_info(Once((3,)))
    assert arrays._READERS[Once] is arrays._from_interface
    array_info(Once((4,)))  # a second instance: the same reader
    # a refused type is not cached: a host array type stays refused each time, with its own message
    with pytest.raises(ArrayKindError):
        array_info(np.zeros(2))
    assert np.ndarray not in arrays._READERS
