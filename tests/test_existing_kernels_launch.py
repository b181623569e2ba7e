"""An existing kernel's launches on the stand-in device, through both launch paths: the integers its
`__global__` takes are filled from the layouts (56, not 40), in the order of its own signature."""

from __future__ import annotations

from typing import Any

import pytest

import generated.existing_kernels as ek
from types import SimpleNamespace

from layoutgen.runtime import fastpath, launch
from layoutgen.runtime.raw_launch import RawLaunch
from layoutgen.runtime import program as runtime_program
from layoutgen.runtime.launch import LaunchError
from tests.fake_device import Recorded, fake_device
from tests.launch_paths import COMPILED, launch_path, rebuild  # noqa: F401  (the fixture)
from tests.helpers.launch import BASE, Dev, dev_reader

B, K = 3, 5
LAUNCHERS = ("context_broadcast", "vsn_forward", "vsn_backward")


@pytest.fixture
def recorded(monkeypatch: pytest.MonkeyPatch, launch_path: str) -> list[tuple[str, int, int, list[int]]]:
    """Each launch: (the symbol loaded, blocks, threads, the values as the driver gets them)."""
    made: list[tuple[str, int, int, list[int]]] = []

    class Module:
        def get_function(self, name: str) -> str:
            return name

    monkeypatch.setattr(launch, "_load", lambda *args: Module())
    monkeypatch.setattr(launch, "make_launch", lambda kernel, n, name: Recorded(
        lambda blocks, block, values, stream: made.append((kernel, blocks, block, list(values)))))
    monkeypatch.setattr(launch, "find_device", lambda: 0)
    monkeypatch.setattr(launch, "device_arch", lambda d: "sm_90")
    monkeypatch.setattr(runtime_program, "find_device", lambda: 0)
    monkeypatch.setattr(runtime_program, "device_arch", lambda d: "sm_90")
    monkeypatch.setitem(launch._FAST_READERS, Dev, dev_reader)
    fake_device(monkeypatch)
    for name in LAUNCHERS:
        rebuild(monkeypatch, getattr(ek, f"_lg_kernel_{name}"), ek)
    return made


def arrays(shift: int = 0) -> dict[str, Dev]:
    shapes = {"ctx": (B, 16), "window": (B, K, 56), "W": (40, 40), "b": (40,), "gates": (B, K, 40),
              "y": (B, K, 40), "grad_x": (B, K, 40), "grad_z": (B, K, 40)}
    return {n: Dev(s, ptr=BASE + shift + i * 0x100000) for i, (n, s) in enumerate(shapes.items())}


def ptr(a: Dev) -> int:
    return int(a.__cuda_array_interface__["data"][0])


def test_strides_rows_and_offsets_are_filled_from_the_layouts(recorded: list[Any], launch_path: str) -> None:
    for shift in (0, 0x10000, 0x20000):  # the first call plans; the others are the hot path
        a = arrays(shift)
        ek.vsn_forward(a["window"], a["W"], a["b"], a["gates"], a["y"])
        ek.context_broadcast(a["ctx"], a["window"])
        ek.vsn_backward(a["window"], a["W"], a["gates"], a["y"], a["grad_x"], a["grad_z"])
        p = {n: ptr(v) for n, v in a.items()}
        assert recorded[-3:] == [
            # (x, W, b, gates, y, n_rows = B*K, x_stride = 56: Window's rows, not the 40 features)
            ("vsn_forward", 1, 128, [p["window"], p["W"], p["b"], p["gates"], p["y"], B * K, 56]),
            # (context, window, n_rows, n_snap = K, window_stride = 56, context_offset = 40)
            ("context_broadcast", 1, 128, [p["ctx"], p["window"], B * K, K, 56, 40]),
            ("vsn_backward", 1, 128, [p["window"], p["W"], p["gates"], p["y"], p["grad_x"], p["grad_z"], B * K, 56]),
        ]
    if launch_path == "compiled":  # the hook replays the C side's launches through the plan's RawLaunch
        assert len(COMPILED) == 6


def test_without_the_tests_hook_the_c_side_is_never_taught_an_existing_kernel() -> None:
    """The C side packs layoutgen's order (pointers, scalars, symbols) itself: an existing kernel's launch
    (a RawLaunch, not a PackedLaunch) stays on the Python path, which puts the values in the kernel's order."""
    raw = RawLaunch(Recorded(lambda *a: None), ek._lg_kernel_vsn_forward.spec)
    assert fastpath._launched_in_c(raw, SimpleNamespace(get_hook=lambda: None)) is None
    assert raw.values([11, 12, 13, 14, 15, B, K]) == [11, 12, 13, 14, 15, B * K, 56]


def test_a_caller_cannot_pass_a_stride(recorded: list[Any], launch_path: str) -> None:
    a = arrays()
    given = (a["window"], a["W"], a["b"], a["gates"], a["y"], 40)
    with pytest.raises(TypeError) as error:
        ek.vsn_forward(*given)  # type: ignore[call-arg]
    assert str(error.value) == "vsn_forward() takes 5 positional arguments but 6 were given"
    if launch_path == "python":  # the launcher object itself (the compiled one hands such a call to Python)
        with pytest.raises(LaunchError) as info:
            ek._lg_kernel_vsn_forward(*given)
        assert str(info.value) == "error[LG601]: `vsn_forward` takes 5 arrays, got 6"
    assert not recorded


def test_features_packed_at_stride_40_are_refused_before_the_launch(recorded: list[Any]) -> None:
    a = arrays()
    with pytest.raises(LaunchError) as info:
        ek.vsn_forward(Dev((B, K, 40)), a["W"], a["b"], a["gates"], a["y"])
    assert info.value.code == "LG601" and "x" in str(info.value)
    assert not recorded


def test_a_row_count_past_the_kernels_int_is_refused(recorded: list[Any]) -> None:
    big_b, big_k = 1 << 16, (1 << 15) + 1  # B*K = 2^31 + 2^16 rows: past `int n_rows`
    a = {n: Dev(s, ptr=BASE + i * (1 << 40)) for i, (n, s) in enumerate(
        {"x": (big_b, big_k, 56), "W": (40, 40), "b": (40,), "gates": (big_b, big_k, 40), "y": (big_b, big_k, 40)}.items())}
    with pytest.raises(LaunchError) as info:
        ek.vsn_forward(*a.values())
    assert str(info.value) == (
        'error[LG641]: `int n_rows` (Rows("x")) of `vsn_forward` must be at most 2147483647, got 2147549184 '
        "(`B` = 65536, `K` = 32769)\n  hint: launch it on smaller arrays, or widen the kernel's parameter (`long long`)")
    assert not recorded


def test_a_program_launches_existing_kernels_with_their_filled_values(recorded: list[Any]) -> None:
    a = arrays()
    ek.forward(ctx=a["ctx"], window=a["window"], W=a["W"], b=a["b"], gates=a["gates"], y=a["y"])
    p = {n: ptr(v) for n, v in a.items()}
    assert recorded == [
        ("context_broadcast", 1, 128, [p["ctx"], p["window"], B * K, K, 56, 40]),
        ("vsn_forward", 1, 128, [p["window"], p["W"], p["b"], p["gates"], p["y"], B * K, 56]),
    ]
