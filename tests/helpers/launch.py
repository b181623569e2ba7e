"""Fake device arrays and the generated VSN launchers that the launch tests call, without a GPU.

``Dev`` exposes ``__cuda_array_interface__`` v3 and nothing else, so ``KernelLauncher.bind`` reads and checks it
as it would a CuPy array; each is placed at its own address above ``BASE`` (256-byte aligned, like every CUDA
allocation). ``fwd_args`` are good arguments of ``variable_selection_fwd``, of which a test replaces some.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import generated.vsn as vsn
from layoutgen.runtime import launch
from layoutgen.runtime import program as runtime_program
from layoutgen.runtime.arrays import ArrayInfo, interface_info
from layoutgen.runtime.launch import KernelLauncher
from layoutgen.runtime.readers import INFOS
from tests.fake_device import Recorded, fake_device

B, K = 4, 8
BASE = 0x7F00_0000_0000  # 256-byte aligned, like every CUDA allocation


def launcher_of(module: Any, kernel: str) -> KernelLauncher:
    """A generated module's launcher of ``kernel``, whatever private name the module gives it."""
    (found,) = [v for v in vars(module).values() if isinstance(v, KernelLauncher) and v.spec.name == kernel]
    return found


def runner_of(module: Any, program: str) -> Any:
    """A generated module's runner of ``program``."""
    from layoutgen.runtime.program import ProgramRunner

    (found,) = [v for v in vars(module).values() if isinstance(v, ProgramRunner) and v.spec.name == program]
    return found


FWD = launcher_of(vsn, "variable_selection_fwd")
BWD = launcher_of(vsn, "variable_selection_bwd")
ITEMSIZE = {"<f4": 4, "<f8": 8, "<f2": 2, "<i4": 4, "<V2": 2, "<u2": 2, "<i2": 2}
#: layoutgen's names of the typestrs, as messages spell them.
NAMES = {"<f4": "f32", "<f8": "f64", "<f2": "f16", "<i4": "i32", "<V2": "bf16", "<u2": "u16", "<i2": "i16"}


class Dev:
    """A fake device array: ``__cuda_array_interface__`` v3, byte strides or None (packed)."""

    def __init__(self, shape: tuple[int, ...], typestr: str = "<f4", ptr: int = BASE,
                 strides: tuple[int, ...] | None = None, readonly: bool = False, device: int = 0) -> None:
        self.__cuda_array_interface__: dict[str, Any] = {"version": 3, "shape": shape, "typestr": typestr,
                                                         "data": (ptr, readonly), "strides": strides}
        self.device = SimpleNamespace(id=device)

    def described(self) -> str:
        """What an error message must say about this array (computed here, not by the code under test)."""
        cai = self.__cuda_array_interface__
        shape, strides, size = cai["shape"], cai["strides"], ITEMSIZE[cai["typestr"]]
        elements = tuple(np.empty(shape, np.uint8).strides) if strides is None else tuple(s // size for s in strides)
        return f"shape [{', '.join(map(str, shape))}], strides {elements} (elements), {NAMES[cai['typestr']]}"


class ProtocolStream:
    """A stream through the CUDA stream protocol: ``__cuda_stream__()`` is (0, its CUstream)."""

    def __init__(self, handle: int) -> None:
        self.handle = handle

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.handle)


def packed(shape: tuple[int, ...], itemsize: int = 4) -> tuple[int, ...]:
    """Packed byte strides of ``shape``."""
    return tuple(s * itemsize for s in np.empty(shape, np.uint8).strides)


def fwd_args(nb: int = B, nk: int = K, /, **replace: Any) -> tuple[Any, ...]:
    """Good arguments of variable_selection_fwd (x, W, b, gates, y), each at its own address; ``replace`` some."""
    args: dict[str, Any] = {
        "x": Dev((nb, nk, 56), ptr=BASE),
        "W": Dev((40, 40), ptr=BASE + 0x100000),
        "b": Dev((40,), ptr=BASE + 0x200000),
        "gates": Dev((nb, nk, 40), ptr=BASE + 0x300000),
        "y": Dev((nb, nk, 40), ptr=BASE + 0x400000),
    }
    assert set(replace) <= set(args)
    args.update(replace)
    return tuple(args.values())


# -- the VSN training step's program ----------------------------------------------------------------------

#: The shapes of `vsn_step`'s buffers.
SHAPES = {
    "raw": (B, K, 40), "stats": (40, 2), "window": (B, K, 56), "ctx": (B, 16), "W": (40, 40), "b": (40,),
    "gates": (B, K, 40), "y": (B, K, 40), "target": (B, K, 40), "grad_y": (B, K, 40), "grad_W": (40, 40),
    "grad_b": (40,), "grad_x": (B, K, 40),
}
LR = 0.05


def buffers(**replace: Any) -> dict[str, Any]:
    """Good buffers of `vsn_step`, each at its own 1 MiB-apart address; ``replace`` some."""
    out: dict[str, Any] = {name: Dev(shape, ptr=BASE + i * 0x100000) for i, (name, shape) in enumerate(SHAPES.items())}
    out.update(replace)
    return out


# -- launches recorded, and the compiled path's reader of the fake arrays -------------------------------------


@pytest.fixture
def launched(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, list[int]]]:
    """A device 0 that launches nothing: each launch any launcher would make, recorded."""
    made: list[tuple[str, int, list[int]]] = []

    def function(self: KernelLauncher, device: int, arch: str) -> Any:
        return Recorded(lambda blocks, block, values, stream: made.append((self.spec.name, blocks, list(values))))

    monkeypatch.setattr(KernelLauncher, "function", function)
    fake_device(monkeypatch)
    for launcher in vars(vsn).values():  # plans cached by earlier tests hold their launch functions
        if isinstance(launcher, KernelLauncher):
            monkeypatch.setattr(launcher, "_plans", {})
    for module in (launch, runtime_program):
        monkeypatch.setattr(module, "find_device", lambda: 0)
        monkeypatch.setattr(module, "device_arch", lambda device: "sm_90")
    return made


def dev_reader(a: Dev) -> tuple[tuple[Any, ...], int]:
    """A fast reader for the fake arrays: everything the Python path's checks read but the pointer."""
    cai = a.__cuda_array_interface__
    return (Dev, cai["shape"], cai["strides"], cai["typestr"], cai["data"][1], a.device.id), cai["data"][0]


def dev_info(a: Any, signature: tuple[Any, ...], ptr: Any) -> ArrayInfo:
    """What a read of ``dev_reader`` says, as ``array_info`` would say it of that read (``a`` is not read)."""
    _, shape, strides, typestr, readonly, device_id = signature
    return interface_info(shape, typestr, strides, ptr, readonly, device_id)


INFOS[dev_reader] = dev_info  # a launch validates the read it keys on


def counted_launcher(monkeypatch: pytest.MonkeyPatch) -> tuple[KernelLauncher, list[tuple[Any, ...]], list[int]]:
    """A fresh variable_selection_fwd launcher with the GPU faked (an sm_90 device 0, launches recorded): it, its
    launches, and a count of its full binds (a plan made from a validated read)."""
    k = KernelLauncher(FWD.spec, FWD.folder, "vsn.cuh")
    launched: list[tuple[Any, ...]] = []
    binds: list[int] = []
    real_bind = k.bind

    def counting_bind(arrays: tuple[Any, ...], device: int, *read: Any) -> Any:
        binds.append(1)
        return real_bind(arrays, device, *read)

    monkeypatch.setattr(k, "bind", counting_bind)
    monkeypatch.setattr(k, "function", lambda device, arch: Recorded(lambda *a: launched.append(a)))
    fake_device(monkeypatch)
    monkeypatch.setattr(launch, "find_device", lambda: 0)
    monkeypatch.setattr(launch, "device_arch", lambda device: "sm_90")
    return k, launched, binds
