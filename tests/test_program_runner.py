"""The generated program runner, without a GPU: buffers checked once, then every launch in order.

Fake device arrays (``__cuda_array_interface__``) stand in for CuPy ones and
the kernels' launch functions are replaced by recorders, so what the runner
would send to the driver (kernel, blocks, threads, 8-byte values) is visible.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tests.fake_device import Recorded, fake_device

import generated.vsn as vsn
from layoutgen.runtime import program as runtime_program
from layoutgen.runtime.launch import KernelLauncher, LaunchError
from tests.helpers.launch import BASE, LR, B, Dev, K, buffers

LR_BITS = int.from_bytes(np.float32(LR).tobytes(), "little")  # the f32 `lr` as the launch passes it


@pytest.fixture
def launches(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int, int, list[int]]]:
    """Every launch the runner makes: (kernel, blocks, threads per block, values)."""
    made: list[tuple[str, int, int, list[int]]] = []

    def function(self: KernelLauncher, device: int, arch: str) -> Any:
        return Recorded(lambda blocks, block, values, stream: made.append((self.spec.name, blocks, block,
                                                                          list(values))))

    monkeypatch.setattr(KernelLauncher, "function", function)
    fake_device(monkeypatch)
    monkeypatch.setattr(runtime_program, "find_device", lambda: 0)
    monkeypatch.setattr(runtime_program, "device_arch", lambda device: "sm_90")
    return made


def test_the_runner_launches_every_kernel_in_order_with_each_buffers_pointer(
    launches: list[tuple[str, int, int, list[int]]],
) -> None:
    given = buffers()
    vsn.vsn_step(**given, lr=LR)
    ptr = {name: a.__cuda_array_interface__["data"][0] for name, a in given.items()}
    assert [name for name, *_ in launches] == [
        "snap_feature_assemble", "context_broadcast", "variable_selection_fwd", "mse_grad", "zero_grads",
        "variable_selection_bwd", "sgd_update",
    ]
    by_kernel = {name: (blocks, block, values) for name, blocks, block, values in launches}
    # variable_selection_fwd(x=window.snap, W, b, gates, y), then the layouts' symbols B and K
    assert by_kernel["variable_selection_fwd"][2] == [ptr["window"], ptr["W"], ptr["b"], ptr["gates"], ptr["y"], B, K]
    # one thread per 16-byte group of Window.context (Grid.vectors): B*K rows of 4, 256 threads a block
    assert by_kernel["context_broadcast"][:2] == ((B * K * 4 + 255) // 256, 256)
    # the pointers, then the scalar `lr` by value (a program value, given each run)
    assert by_kernel["sgd_update"][2] == [ptr["W"], ptr["b"], ptr["grad_W"], ptr["grad_b"], LR_BITS]


def test_a_wrong_buffer_is_refused_naming_the_program_and_buffer_and_nothing_runs(
    launches: list[tuple[str, int, int, list[int]]],
) -> None:
    with pytest.raises(LaunchError) as err:
        vsn.vsn_step(**buffers(window=Dev((B, K, 40), ptr=BASE + 0x2000000)), lr=LR)
    assert err.value.code == "LG601"
    assert str(err.value).startswith("error[LG601]: `vsn_step.window` (Window, layout Window [B, K, 56]")
    with pytest.raises(LaunchError) as err:
        vsn.vsn_step(**buffers(y=Dev((B + 1, K, 40), ptr=BASE + 0x7000000)), lr=LR)
    assert err.value.code == "LG603" and "`B` = 5" in str(err.value)
    assert launches == []


def test_one_array_for_two_buffers_is_refused(launches: list[tuple[str, int, int, list[int]]]) -> None:
    shared = Dev((B, K, 40), ptr=BASE + 0x6000000)
    with pytest.raises(LaunchError) as err:
        vsn.vsn_step(**buffers(gates=shared, y=shared), lr=LR)
    assert err.value.code == "LG613"
    assert "same memory for buffers `gates` and `y`" in str(err.value) or \
        "same memory for buffers `y` and `gates`" in str(err.value)
    assert launches == []
    vsn.vsn_step(**buffers(), lr=LR)  # distinct again: runs
    assert len(launches) == 7
