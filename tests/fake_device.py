"""A device 0 for tests that launch nothing: the facts the launcher asks the driver, given.

torch's current stream on device 0 is the handle ``TORCH_STREAM`` (device d's, 0x50 + d).

An sm_90 with 132 SMs and 227 KiB of shared memory a block, on which a kernel's static shared memory
is 0, 8 blocks of any kernel are resident, and raising a kernel's dynamic shared-memory limit is
recorded. :class:`Recorded` stands in for a loaded kernel: it has a CUfunction handle and records
each launch through a callback.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from layoutgen.runtime import occupancy, torch_streams

FUNCTION = 0xF00D  # the CUfunction the recorded launches pretend to have
SMS = 132
TORCH_STREAM = 0x5  # the handle of torch's current stream on device 0
RESIDENT = 8


class Recorded:
    """A loaded kernel that launches nothing: ``record(blocks, block, values, stream)`` for each call."""

    def __init__(self, record: Callable[..., Any]) -> None:
        self.record, self.handle = record, FUNCTION

    def __call__(self, blocks: int, block: int, values: Any, stream: Any, shared: int = 0) -> None:
        self.record(blocks, block, values, stream)


def fake_device(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, int, int]]:
    """Give device 0's limits (above) to the launcher; the raises of a kernel's shared-memory limit,
    (device, function, bytes), are recorded in the list returned."""
    import cupy

    raised: list[tuple[int, int, int]] = []
    monkeypatch.setattr(occupancy, "_DEVICES", {0: occupancy.DeviceLimits(227 * 1024, SMS)})
    monkeypatch.setattr(occupancy, "_STATIC", {(0, FUNCTION): 0})
    monkeypatch.setattr(occupancy, "_ALLOWED", {})
    # the torch row's current stream (arrays.TORCH.current_stream) reads torch's raw stream through this
    monkeypatch.setattr(torch_streams, "_RAW_STREAM", lambda device: TORCH_STREAM if device == 0 else 0x50 + device)
    monkeypatch.setattr(occupancy, "_RESIDENT", {})
    attribute = {"max": occupancy.DEFAULT_DYNAMIC_SHARED}
    monkeypatch.setattr(cupy.cuda.driver, "funcGetAttribute", lambda attr, fn: attribute["max"])

    def set_attribute(fn: int, attr: int, value: int) -> None:
        assert attr == cupy.cuda.driver.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        raised.append((0, fn, value))
        attribute["max"] = value

    monkeypatch.setattr(cupy.cuda.driver, "funcSetAttribute", set_attribute)
    monkeypatch.setattr(cupy.cuda.driver, "occupancyMaxActiveBlocksPerMultiprocessor",
                        lambda fn, block, shared: RESIDENT)
    return raised
