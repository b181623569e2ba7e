"""The grid kinds' tests share: a kernel declaration's refusal, and a device that records what it would start."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from layoutgen import KernelError
from layoutgen.runtime import launch
from layoutgen.runtime import program as runtime_program
from layoutgen.runtime.launch import KernelLauncher
from tests.fake_device import FUNCTION, fake_device
from tests.helpers.launch import BASE

OUT = BASE + 2**32  # where each test's output array lies, clear of the inputs


def raises(make: Callable[[], object]) -> KernelError:
    """The :class:`KernelError` that ``make`` (a declaration) raises; it must raise one."""
    with pytest.raises(KernelError) as info:
        make()
    return info.value


class Recorder:
    """A loaded kernel that launches nothing: each call, with its shared memory, recorded."""

    def __init__(self, name: str, made: list[tuple[str, int, int, int]]) -> None:
        self.name, self.made, self.handle = name, made, FUNCTION

    def __call__(self, blocks: int, block: int, values: list[int], stream: Any, shared: int = 0) -> None:
        self.made.append((self.name, blocks, block, shared))


@pytest.fixture
def device(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Any]]:
    """Device 0, an sm_90 with 132 SMs and 227 KiB a block, on which no launch runs: what each would start is
    recorded (`made`), with every raise of a kernel's shared-memory limit (`raised`)."""
    made: list[tuple[str, int, int, int]] = []
    monkeypatch.setattr(KernelLauncher, "function", lambda self, device, arch: Recorder(self.spec.name, made))
    for module in (launch, runtime_program):
        monkeypatch.setattr(module, "find_device", lambda: 0)
        monkeypatch.setattr(module, "device_arch", lambda device: "sm_90")
    raised = fake_device(monkeypatch)  # 8 resident blocks of any kernel, raises of its shared limit recorded
    yield {"made": made, "raised": raised}
