"""CPU torch tensors that the launchers take for CUDA ones: torch's own rules run, no kernel does.

Import only after ``pytest.importorskip("torch")``: torch is optional. :class:`OnDevice` is a tensor subclass
whose ``is_cuda`` and ``device`` say CUDA device 0; everything else (negative and conjugate bits,
``requires_grad``, leaves, version counters, ``backward``) is real torch. The fixtures make what the generated
torch operators ask before a launch answer as on a GPU; a test using them imports them by name, with
``launched`` (tests/helpers/launch.py), on which they build.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import pytest
import torch

from layoutgen.runtime import driver, torch_ops


class Device(NamedTuple):  # hashable, like torch.device: the launcher's cache key holds it
    type: str
    index: int


class OnDevice(torch.Tensor):  # type: ignore[misc]
    """A CPU tensor that says it is on CUDA device 0."""

    @property
    def is_cuda(self) -> bool:
        return True

    @property
    def device(self) -> Device:  # type: ignore[override]
        return Device("cuda", 0)


def on_device(*shape: int, requires_grad: bool = False) -> Any:
    """A random tensor of ``shape`` on "CUDA device 0", a leaf."""
    t = torch.randn(*shape).as_subclass(OnDevice).detach()  # detached: a leaf
    return t.requires_grad_() if requires_grad else t


@pytest.fixture
def on_gpu(launched: list[Any], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Device 0 is current, torch's stream on it is handle 0x5: what the operators ask before a launch."""
    monkeypatch.setattr(driver, "find_device", lambda: 0)
    return launched


@pytest.fixture
def cpu_as_cuda(on_gpu: list[Any], monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Also the tensors an operator allocates (plain CPU tensors: inside an operator no subclass survives)
    reach the launcher as CUDA tensors of device 0 (the same memory, seen as OnDevice)."""
    launch = torch_ops._Op.launch

    def as_cuda(self: Any, arguments: Any, tensor: Any) -> None:
        seen = [a.as_subclass(OnDevice) if isinstance(a, torch.Tensor) else a for a in arguments]
        launch(self, seen, tensor.as_subclass(OnDevice))

    monkeypatch.setattr(torch_ops._Op, "launch", as_cuda)
    return on_gpu
