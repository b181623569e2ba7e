"""The compiled launch path beside the Python path, without a GPU: the fixtures its tests share.

Importing this module installs the test build of the extension (``tests/launch_paths.py`` does, on import),
so ``EXT`` is the build with ``set_hook``, and every launcher a test builds afterwards takes it. The fixtures
(``device``, ``hooked``, ``compiled_unless_a_test_says_otherwise``, ``cpu_is_cuda``) work where a test module
imports them by name; ``compiled_unless_a_test_says_otherwise`` is autouse, so importing it applies it to every
test of that module.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

# first: the test build must be in place before EXT is read and before any launcher is built
from tests.launch_paths import COMPILED, HANDLES, current_device, replay, take_path

from layoutgen.runtime import arrays, driver, fastpath, launch, torch_cxx_reader
from layoutgen.runtime.fastpath import use_torch
from layoutgen.runtime.launch import KernelLauncher, KernelSpec, LaunchError
from layoutgen.runtime.paths import PYTHON_LAUNCH_ENV
from tests.fake_device import Recorded, fake_device
from tests.helpers.launch import BASE, FWD, B, Dev, K, dev_reader

EXT, WHY = fastpath.extension()
#: Where ``fwd_args`` and ``fwd_cupy`` place each argument of variable_selection_fwd.
ADDRESS = {"x": BASE, "W": BASE + 0x100000, "b": BASE + 0x200000, "gates": BASE + 0x300000, "y": BASE + 0x400000}


# -- a fake device, launches recorded, the driver's launch replayed -------------------------------------------


@pytest.fixture
def device(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """A fake device 0 (``device["id"]`` changes the launch's); the fake arrays get a fast reader."""
    current = {"id": 0}
    monkeypatch.setattr(launch, "find_device", lambda: current["id"])
    monkeypatch.setattr(launch, "device_arch", lambda d: "sm_90")
    monkeypatch.setitem(launch._FAST_READERS, Dev, dev_reader)
    fake_device(monkeypatch)
    yield current


@pytest.fixture
def hooked() -> Iterator[None]:
    """The compiled path's cuLaunchKernel replaced by the replaying hook (tests.launch_paths)."""
    assert EXT is not None, WHY
    EXT.set_hook(replay, current_device)
    COMPILED.clear()
    HANDLES.clear()
    yield
    EXT.set_hook(None)
    COMPILED.clear()
    HANDLES.clear()


@pytest.fixture(autouse=True)
def compiled_unless_a_test_says_otherwise(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests compare the two paths themselves: a forced Python path (``LAYOUTGEN_PYTHON_LAUNCH=1`` in
    the environment of the whole run) is set by each where it means it."""
    monkeypatch.setenv(PYTHON_LAUNCH_ENV, "0")


def launcher(spec: KernelSpec, launched: list[tuple[Any, ...]]) -> KernelLauncher:
    """A fresh launcher of ``spec`` (on the path chosen now) whose launches are appended to ``launched``."""
    k = KernelLauncher(spec, FWD.folder, FWD.header)
    k.function = lambda d, arch: Recorded(lambda *a: launched.append(a))  # type: ignore[method-assign]
    return k


def outcome(call: Callable[[], None]) -> tuple[str, str] | None:
    """The code and message of the LaunchError ``call`` raises, or None where it raises none."""
    try:
        call()
    except LaunchError as exc:
        return exc.code, str(exc)
    return None


def both_paths(monkeypatch: pytest.MonkeyPatch, spec: KernelSpec, run: Callable[[KernelLauncher], Any],
               streams: bool = False) -> dict[str, tuple[Any, list[tuple[Any, ...]], KernelLauncher]]:
    """``run`` on a fresh launcher of ``spec`` on each path: what it returned, the launches made (blocks, block,
    values, and where ``streams``, the CUstream it was made on: None for the current CuPy stream, read at the
    launch), the launcher."""
    results = {}
    for path in ("python", "compiled"):
        take_path(monkeypatch, path)
        launched: list[tuple[Any, ...]] = []
        k = launcher(spec, launched)
        assert (k._fast is None) == (path == "python")
        COMPILED.clear()
        HANDLES.clear()
        got = run(k)
        results[path] = (got, [(blocks, block, list(values))
                               + ((None if stream is None else driver.stream_handle(stream),) if streams else ())
                               for blocks, block, values, stream in launched], k)
    return results


# -- real CuPy arrays and torch tensors, on no device ---------------------------------------------------------


def cupy_array(shape: tuple[int, ...], dtype: str = "float32", ptr: int = BASE, device: int = 0) -> Any:
    """A real cupy.ndarray at ``ptr`` on ``device`` (nothing allocated: only its fields are read)."""
    import cupy
    from cupy.cuda import memory

    size = int(np.prod(shape)) * np.dtype(dtype).itemsize + 4096
    return cupy.ndarray(shape, dtype, memptr=memory.MemoryPointer(memory.UnownedMemory(ptr, size, None, device), 0))


def fwd_cupy(**replace: Any) -> tuple[Any, ...]:
    """Good CuPy arguments of variable_selection_fwd, each at its ``ADDRESS``; ``replace`` some."""
    shapes = {"x": (B, K, 56), "W": (40, 40), "b": (40,), "gates": (B, K, 40), "y": (B, K, 40)}
    args = {name: cupy_array(shape, ptr=ADDRESS[name]) for name, shape in shapes.items()}
    args.update(replace)
    return tuple(args.values())


@pytest.fixture(params=["cxx", "dlpack"])
def cpu_is_cuda(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """CPU tensors taken by the Python path for tensors on a CUDA device (``arrays.TORCH_DEVICE_TYPES`` takes
    "cpu" too; ``torch.Tensor.is_cuda`` says so), read by the compiled path through the C++ reader built
    against this torch (``cxx``), or through DLPack's exchange API and torch's Python calls (``dlpack``, as
    where the reader cannot be built)."""
    torch = pytest.importorskip("torch")
    monkeypatch.setattr(torch.Tensor, "is_cuda", property(lambda self: True))
    monkeypatch.setattr(arrays, "TORCH_DEVICE_TYPES", frozenset({"cuda", "cpu"}))
    use_torch()  # the extension takes torch's calls and the reader (built once) now, not at the first plan
    address, calls = torch_cxx_reader.installed()
    assert address is not None and calls, torch_cxx_reader.state()  # it builds wherever the tests run
    with torch_cxx_reader.turned_off(EXT) if request.param == "dlpack" else contextlib.nullcontext():
        yield torch


def fwd_torch(torch: Any, **replace: Any) -> tuple[Any, ...]:
    """Good (CPU) torch arguments of variable_selection_fwd, random inputs and zeroed outputs; ``replace`` some."""
    args = {"x": torch.randn(B, K, 56), "W": torch.randn(40, 40), "b": torch.randn(40), "gates": torch.zeros(B, K, 40),
            "y": torch.zeros(B, K, 40)}
    args.update(replace)
    return tuple(args.values())
