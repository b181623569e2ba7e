"""The launcher's hot path: arrays whose layout already passed skip revalidation, safely.

CuPy and torch arrays get a fast reader (type, shape, strides, dtype, device
and the pointer); here a fake array type is given one, and the GPU launch is
recorded instead of run.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.fake_device import Recorded
from tests.launch_paths import launch_path  # noqa: F401  (the fixture: every test through both launch paths)

import generated.vsn as vsn
from layoutgen.runtime import launch
from layoutgen.runtime.arrays import ArrayInfo, interface_info
from layoutgen.runtime.launch import KernelLauncher, KernelSpec, LaunchError, LayoutSpec, ParamSpec
from layoutgen.runtime.readers import INFOS
from tests.helpers.launch import FWD, counted_launcher

pytestmark = pytest.mark.usefixtures("launch_path")

B, K = 4, 8
BASE = 0x7F00_0000_0000


class Fast:
    """A device array with a fast reader, like a CuPy array."""

    def __init__(self, shape: tuple[int, ...], ptr: int, typestr: str = "<f4") -> None:
        strides, step = [], 4
        for size in reversed(shape):
            strides.append(step)
            step *= size
        self.shape = shape
        self.__cuda_array_interface__ = {
            "version": 3, "shape": shape, "typestr": typestr, "data": (ptr, False), "strides": tuple(reversed(strides)),
        }

    @property
    def ptr(self) -> int:
        return int(self.__cuda_array_interface__["data"][0])


def _read(a: Fast) -> tuple[tuple[Any, ...], int]:
    cai = a.__cuda_array_interface__
    return (Fast, cai["shape"], cai["strides"], cai["typestr"], 0), a.ptr


def _info(a: Fast, signature: tuple[Any, ...], ptr: int) -> ArrayInfo:
    _, shape, strides, typestr, device = signature
    return interface_info(shape, typestr, strides, ptr, False, device)


INFOS[_read] = _info  # what a read of _read says, validated as read


@pytest.fixture
def fwd(monkeypatch: pytest.MonkeyPatch) -> tuple[KernelLauncher, list[tuple[Any, ...]], list[int]]:
    """A fresh fwd launcher with the GPU faked; returns it, the launches, and a count of full binds."""
    import cupy

    k, launched, binds = counted_launcher(monkeypatch)
    monkeypatch.setitem(launch._FAST_READERS, Fast, _read)
    return k, launched, binds


def args(nb: int = B, offset: int = 0, **shapes: tuple[int, ...]) -> list[Fast]:
    wanted = {"x": (nb, K, 56), "W": (40, 40), "b": (40,), "gates": (nb, K, 40), "y": (nb, K, 40)}
    wanted.update(shapes)
    return [Fast(shape, BASE + i * 0x100000 + offset) for i, shape in enumerate(wanted.values())]


def test_a_repeated_layout_is_validated_once_and_launched_every_time(fwd) -> None:  # type: ignore[no-untyped-def]
    k, launched, binds = fwd
    k(*args())
    k(*args(offset=0x40000))  # new buffers, same layouts
    assert len(binds) == 1 and len(launched) == 2
    blocks, block, values, _ = launched[1]
    assert (blocks, block) == ((B * K + 127) // 128, 128)
    assert tuple(values) == tuple(BASE + i * 0x100000 + 0x40000 for i in range(5)) + (B, K)


def test_a_new_shape_is_validated_again(fwd) -> None:  # type: ignore[no-untyped-def]
    k, launched, binds = fwd
    k(*args())
    k(*args(nb=B + 1))
    assert len(binds) == 2 and tuple(launched[1][2][-2:]) == (B + 1, K)


def test_a_misaligned_pointer_is_refused_on_the_hot_path(fwd) -> None:  # type: ignore[no-untyped-def]
    k, launched, _ = fwd
    k(*args())
    with pytest.raises(LaunchError) as info:
        k(*args(offset=2))
    assert info.value.code == "LG606" and "variable_selection_fwd.x" in str(info.value)
    assert len(launched) == 1


def test_a_bad_layout_is_refused_every_time_and_never_cached(fwd) -> None:  # type: ignore[no-untyped-def]
    k, launched, _ = fwd
    for _ in range(2):
        with pytest.raises(LaunchError) as info:
            k(*args(x=(B, K, 40)))  # the motivating bug: packed features where a Window belongs
        assert info.value.code == "LG601"
    assert launched == [] and not k._plans


def test_an_empty_batch_launches_nothing(fwd) -> None:  # type: ignore[no-untyped-def]
    k, launched, binds = fwd
    k(*args(nb=0))
    assert launched == [] and len(binds) == 1


def test_outputs_that_share_memory_are_refused_on_the_hot_path(fwd) -> None:  # type: ignore[no-untyped-def]
    k, launched, binds = fwd
    good = args()
    for _ in range(2):  # the second call finds the same pointers disjoint already
        k(*good)
    for y_at in (good[3].ptr, good[3].ptr + 160):  # y over gates; y one row into gates
        shifted = args()
        shifted[4] = Fast((B, K, 40), y_at)
        with pytest.raises(LaunchError) as info:
            k(*shifted)
        assert info.value.code == "LG614" and "`variable_selection_fwd.gates`" in str(info.value)
    assert len(launched) == 2 and len(binds) == 1  # one plan: refused on the hot path


def test_disjoint_fields_of_one_array_stay_accepted_on_the_hot_path(fwd) -> None:  # type: ignore[no-untyped-def]
    _, launched, _ = fwd
    row = LayoutSpec("Row", ("N",), 8, "f32", 4)
    spec = KernelSpec("pair", "pair.cu", (ParamSpec("lo", "inout", row, "Row.lo", 4, cols=(0, 4)),
                                          ParamSpec("hi", "inout", row, "Row.hi", 4, cols=(4, 8))),
                      symbols=("N",), grid_param=0, per_row=1, block=64)
    k = KernelLauncher(spec, FWD.folder, "vsn.cuh")
    k.function = lambda device, arch: Recorded(lambda *a: launched.append(a))  # type: ignore[method-assign]
    for ptr in (BASE, BASE + 0x1000, BASE):
        k(Fast((5, 8), ptr), Fast((5, 8), ptr))
    with pytest.raises(LaunchError) as info:
        k(Fast((5, 8), BASE), Fast((5, 8), BASE + 16))  # not one array: hi's columns meet lo's of the next row
    assert info.value.code == "LG614" and len(launched) == 3
