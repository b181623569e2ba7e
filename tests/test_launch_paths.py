"""The compiled launch path (runtime/fastlaunch/) against the Python path, without a GPU.

Every refusal of the launch-validation suite is pushed through both paths
after the same good launch planned them: the compiled path must hand each
over (it refuses nothing itself), and the code and message must be the
Python path's. Accepted launches must pack byte-identical parameters. The
fake arrays get a fast reader here, so the compiled path really reads and
matches them; CuPy's and torch's readers are compared at C level.
"""

from __future__ import annotations

import ctypes
import runpy
import warnings
from collections.abc import Callable
from contextlib import redirect_stdout
from io import StringIO
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from tests.fake_device import fake_device
from tests.launch_paths import COMPILED, launch_path, take_path  # noqa: F401  (the fixture)
from tests.helpers.compiled import (EXT, WHY, compiled_unless_a_test_says_otherwise, device,  # noqa: F401  (fixtures)
                                    hooked, launcher, outcome)

from layoutgen.runtime import driver, fastpath, launch
from layoutgen.runtime.launch import KernelLauncher, KernelSpec, LayoutSpec, ParamSpec, ScalarSpec
from layoutgen.runtime.paths import PYTHON_LAUNCH_ENV
from layoutgen.runtime.plan import SharedArray
from tests.helpers.launch import BASE, FWD, B, Dev, K, fwd_args, packed

GATES = BASE + 0x300000


def test_the_extension_is_built_here_and_imports() -> None:
    assert EXT is not None, WHY
    assert EXT.__name__ == "layoutgen.runtime._fastlaunch" and EXT.__file__.endswith(".so")


# (id, replacements of fwd_args, launch device): every refusal of test_launch_validation and the hot-path ones
# of test_launch_safety and test_launch_fastpath, after a good launch planned the kernel.
REFUSALS: list[tuple[str, dict[str, Any], int]] = [
    ("LG601-motivating-bug", {"x": Dev((B, K, 40))}, 0),
    *[(f"LG601-{p}-{list(s)}", {p: Dev(s)}, 0) for p, s in [
        ("x", (B * K, 56)), ("x", (B, K, 56, 1)), ("x", (B, K, 57)), ("W", (40,)), ("b", (1, 40)), ("b", ()),
        ("gates", (B, K, 56)), ("W", (41, 40))]],
    *[(f"LG602-{p}-{t}", {p: Dev(s, t)}, 0) for p, s, t in [
        ("W", (40, 40), "<f8"), ("x", (B, K, 56), "<f2"), ("y", (B, K, 40), "<i4")]],
    ("LG603-B", {"gates": Dev((5, K, 40))}, 0),
    ("LG603-K", {"y": Dev((B, K + 1, 40))}, 0),
    ("LG603-first-binds", {"x": Dev((5, K, 56))}, 0),
    ("LG604-transposed", {"W": Dev((40, 40), strides=(4, 160))}, 0),
    ("LG604-sliced", {"gates": Dev((B, K, 40), strides=packed((B, K, 56)))}, 0),
    *[(f"LG604-{p}-{st}", {p: Dev(s, strides=st)}, 0) for p, s, st in [
        ("W", (40, 40), (0, 4)), ("x", (B, K, 56), (0, 56 * 4, 4)), ("b", (40,), (0,)), ("b", (40,), (8,)),
        ("x", (B, K, 56), (K * 56 * 4, 56 * 4, -4)), ("y", (B, K, 40), (2 * K * 40 * 4, 40 * 4, 4))]],
    *[(f"LG610-{p}-{st}", {p: Dev((B, K, 40), strides=st)}, 0) for p, st in [
        ("gates", (0, 160, 4)), ("y", (K * 40 * 4, 0, 4)), ("y", (K * 20 * 4, 20 * 4, 4))]],
    ("LG605-array-on-1", {"gates": Dev((B, K, 40), device=1)}, 0),
    ("LG605-launch-on-1", {}, 1),
    *[(f"LG606-W+{o}", {"W": Dev((40, 40), ptr=BASE + 0x100000 + o)}, 0) for o in (1, 2, 3)],  # W: 4 bytes
    *[(f"LG606-gates+{o}", {"gates": Dev((B, K, 40), ptr=GATES + o)}, 0) for o in (4, 8, 12)],  # a 16-byte tile
    ("LG606-b+2", {"b": Dev((40,), ptr=BASE + 0x200000 + 2)}, 0),
    ("LG607-y", {"y": Dev((B, K, 40), readonly=True)}, 0),
    ("LG608-numpy", {"x": np.zeros((B, K, 56), np.float32)}, 0),
    *[(f"LG608-{type(t).__name__}", {"W": t}, 0) for t in (None, 1.5, [[0.0] * 40] * 40, "W", np.float32(1.0))],
    ("LG614-outputs-one-array", {"gates": Dev((B, K, 40), ptr=GATES), "y": Dev((B, K, 40), ptr=GATES)}, 0),
    ("LG614-gates-over-x", {"gates": Dev((B, K, 40), ptr=BASE)}, 0),
    *[(f"LG614-y-at-{o}", {"y": Dev((B, K, 40), ptr=GATES + o)}, 0) for o in (160, B * K * 160 - 16)],
]


@pytest.mark.parametrize(("code", "replace", "on"), [(i[:5], r, d) for i, r, d in REFUSALS],
                         ids=[i for i, _, _ in REFUSALS])
def test_every_refusal_is_handed_over_and_refused_with_the_python_paths_code_and_message(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, code: str, replace: dict[str, Any],
        on: int) -> None:
    results = {}
    for path in ("python", "compiled"):
        take_path(monkeypatch, path)
        launched: list[tuple[Any, ...]] = []
        k = launcher(FWD.spec, launched)
        assert (k._fast is None) == (path == "python")
        device["id"] = 0
        k(*fwd_args())  # planned (and, on the compiled path, taught to the C side)
        device["id"] = on
        bad = fwd_args(**replace)
        if path == "compiled":
            assert k._fast.plans == 1
            assert k._fast.attempt(*bad) is False  # the compiled path says no, launching nothing
        results[path] = outcome(lambda: k(*bad))
        assert len(launched) == 1
    assert results["python"] is not None and results["python"][0] == code
    assert results["compiled"] == results["python"]


# accepted launches ---------------------------------------------------------------------------------------

ROW = LayoutSpec("Row", ("N",), 8, "f32", 4)
SCALED = KernelSpec("scaled", "scaled.cu", (ParamSpec("src", "in", ROW, "Row", 16), ParamSpec("dst", "out", ROW, "Row", 16)),
                    symbols=("N",), grid_param=0, per_row=1, block=64,
                    scalars=(ScalarSpec("alpha", "f32"), ScalarSpec("n", "i64"), ScalarSpec("on", "bool")))
STAGED = KernelSpec("staged", "staged.cu", (ParamSpec("dst", "out", ROW, "Row", 16),), symbols=("N",), grid_param=0,
                    per_row=1, block=64, shared=(SharedArray("stage", 4, ("N", 8)),))
ACCEPTED: list[tuple[str, KernelSpec, Callable[[int], tuple[Any, ...]]]] = [
    ("fwd", FWD.spec, lambda shift: tuple(Dev(a.__cuda_array_interface__["shape"],
                                              ptr=a.__cuda_array_interface__["data"][0] + shift) for a in fwd_args())),
    ("fwd-empty-batch", FWD.spec, lambda shift: fwd_args(0, K)),
    ("scalars", SCALED, lambda shift: (Dev((5, 8), ptr=BASE + shift), Dev((5, 8), ptr=BASE + 0x1000 + shift), -1.5,
                                       -7, True)),
    ("shared-memory", STAGED, lambda shift: (Dev((5, 8), ptr=BASE + shift),)),
]


def parameter_bytes(values: list[int]) -> bytes:
    """What PackedLaunch hands cuLaunchKernel for ``values``: its c_uint64 buffer."""
    return bytes((ctypes.c_uint64 * len(values))(*values))


@pytest.mark.parametrize(("spec", "arguments"), [(s, a) for _, s, a in ACCEPTED], ids=[i for i, _, _ in ACCEPTED])
def test_accepted_launches_pack_byte_identical_parameters_on_both_paths(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, spec: KernelSpec,
        arguments: Callable[[int], tuple[Any, ...]]) -> None:
    packed_by: dict[str, list[tuple[int, int, bytes]]] = {}
    for path in ("python", "compiled"):
        take_path(monkeypatch, path)
        launched: list[tuple[Any, ...]] = []
        k = launcher(spec, launched)
        COMPILED.clear()
        for shift in (0, 0x10000, 0x20000):  # the first call plans; the others are the hot path
            k(*arguments(shift))
        packed_by[path] = [(blocks, block, parameter_bytes(list(values))) for blocks, block, values, _ in launched]
        if path == "compiled":
            assert [(b, bl, p) for b, bl, _, _, p in COMPILED] == packed_by[path][1:]  # the C path's own bytes
            assert k._fast.hits == 2 and k._fast.handovers == 1
    assert packed_by["compiled"] == packed_by["python"]


def test_the_compiled_launch_passes_the_dynamic_shared_memory_of_the_plan(device: dict[str, int], hooked: None) -> None:
    k = launcher(STAGED, [])
    for _ in range(2):
        k(Dev((5, 8)))
    assert [(blocks, block, shared) for blocks, block, shared, _, _ in COMPILED] == [(1, 64, 5 * 8 * 4)]


def test_repeated_layouts_take_the_compiled_path_and_a_new_shape_is_handed_over(device: dict[str, int],
                                                                                  hooked: None) -> None:
    launched: list[tuple[Any, ...]] = []
    k = launcher(FWD.spec, launched)
    counts = []
    for nb in (B, B, B, B + 1, B + 1, B):
        k(*fwd_args(nb, K))
        counts.append((k._fast.hits, k._fast.handovers))
    assert counts == [(0, 1), (1, 1), (2, 1), (2, 2), (3, 2), (4, 2)]  # both plans kept
    assert [tuple(v[-2:]) for _, _, v, _ in launched] == [(B, K)] * 3 + [(B + 1, K)] * 2 + [(B, K)]
    assert len(COMPILED) == 4 and k._fast.plans == 2


def test_kinds_without_a_fast_reader_stay_on_the_python_path(hooked: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(launch, "find_device", lambda: 0)
    monkeypatch.setattr(launch, "device_arch", lambda d: "sm_90")
    fake_device(monkeypatch)
    launched: list[tuple[Any, ...]] = []
    k = launcher(FWD.spec, launched)
    for _ in range(3):  # __cuda_array_interface__ only: validated every call, never taught to the C side
        k(*fwd_args())
    assert len(launched) == 3 and COMPILED == [] and k._fast.plans == 0 and k._fast.handovers == 3


def test_without_libcuda_the_compiled_path_hands_over_to_the_drivers_launch(device: dict[str, int],
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    assert EXT.get_hook() is None
    calls: list[tuple[Any, ...]] = []
    packed_launch = object.__new__(driver.PackedLaunch)  # without cuda.bindings: its driver call recorded
    packed_launch.__dict__.update(
        _launch=lambda *args: (calls.append(args[1:8]) or ("ok",)), _success="ok", _function=0, _name="fwd",
        _values=(ctypes.c_uint64 * 7)(), _address=0, _streams={}, _stream_type=int, _lock=threading.Lock(),
        handle=0xF00D)
    monkeypatch.setattr(driver, "stream_handle", lambda stream, kernel="": 0)
    k = FWD.fresh()
    k.function = lambda d, arch: packed_launch  # type: ignore[method-assign]
    for _ in range(2):
        k(*fwd_args())
    if "libcuda loaded" not in EXT.driver():  # this machine: no driver, so the C side launches nothing
        assert k._fast.plans == 1 and k._fast.hits == 0 and k._fast.handovers == 2
    assert len(calls) == 2 and list(packed_launch._values)[-2:] == [B, K]


# how an array is read: at C level exactly as the Python fast readers read it --------------------------------


def torch_tensors() -> list[Any]:
    torch = pytest.importorskip("torch")
    t = torch.arange(24, dtype=torch.float32).reshape(2, 3, 4)
    odd = torch.zeros(100)  # strides of size-1 and empty dims as given: a DLPack export must not normalise them
    return [t, t.transpose(0, 2), t[:, 1:], t.to(torch.bfloat16), torch.nn.Parameter(t.clone()),
            torch.zeros(0, 5, dtype=torch.int64), torch.ones(()), t.to(torch.uint8), t > 3,
            odd.as_strided((3, 1, 4), (4, 999, 1)), odd.as_strided((2, 0), (9, 9)), odd.as_strided((1,), (5,))]


def test_torch_tensors_are_read_through_dlpack_as_the_python_reader_reads_them() -> None:
    torch = pytest.importorskip("torch")
    for t in torch_tensors():
        (kind, shape, strides, _, device, neg), ptr = launch._torch_reader(t)
        assert EXT.read(t)[:4] == ("dlpack", ptr, tuple(shape), strides) and neg is False
        assert EXT.read(t)[5] == (1, 0)  # kDLCPU, device 0: torch's `cpu`
    assert EXT.read(torch._neg_view(torch_tensors()[0])) is None  # DLPack has no neg bit: is_neg() is read too


class CupyLike:
    """What the C side reads of a CuPy array: ``data.ptr``, ``data.device_id``, ``shape``, ``strides``, ``dtype``."""

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: str) -> None:
        self.data = SimpleNamespace(ptr=ptr, device_id=1)
        self.shape, self.dtype = shape, np.dtype(dtype)
        self.strides = tuple(s * self.dtype.itemsize for s in np.empty(shape, np.uint8).strides)


def test_kinds_the_c_side_does_not_know_are_not_read_there() -> None:
    assert EXT.read(CupyLike(BASE, (4, 8, 56), "float32")) is None  # no reader of its own: not CuPy's fields
    assert EXT.read(object()) is None


# which path, and forcing the Python one -----------------------------------------------------------------------


def test_the_environment_variable_forces_the_python_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PYTHON_LAUNCH_ENV, "1")
    assert launch.launch_path() == "python" and FWD.fresh()._fast is None
    assert fastpath.launch_path_text() == "launch path: python (LAYOUTGEN_PYTHON_LAUNCH is set)"
    monkeypatch.setenv(PYTHON_LAUNCH_ENV, "0")
    assert launch.launch_path() == "compiled" and FWD.fresh()._fast is not None


@pytest.mark.parametrize("value", [None, "", " 0 "], ids=["unset", "empty", "0"])
def test_the_compiled_path_is_the_default_where_it_is_built(monkeypatch: pytest.MonkeyPatch,
                                                            value: str | None) -> None:
    if value is None:
        monkeypatch.delenv(PYTHON_LAUNCH_ENV, raising=False)
    else:
        monkeypatch.setenv(PYTHON_LAUNCH_ENV, value)
    assert launch.launch_path() == "compiled" and FWD.fresh()._fast is not None
    assert fastpath.launch_path_text().startswith("launch path: compiled (")


def test_a_debug_build_takes_the_python_path() -> None:
    from dataclasses import replace

    assert KernelLauncher(replace(FWD.spec, debug=True), FWD.folder, FWD.header)._fast is None


def test_a_missing_extension_falls_back_to_the_python_path_and_says_so_once(device: dict[str, int],
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PYTHON_LAUNCH_ENV, "0")
    reason = "layoutgen.runtime._fastlaunch could not be imported (No module named 'layoutgen.runtime._fastlaunch')"
    monkeypatch.setattr(fastpath, "_loaded", [(None, reason)])
    monkeypatch.setattr(fastpath, "_warned", [])
    launched: list[tuple[Any, ...]] = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        launchers = [launcher(FWD.spec, launched) for _ in range(3)]
    assert [str(w.message) for w in caught] == [f"layoutgen: {reason}; launchers take the Python launch path"]
    assert caught[0].category is RuntimeWarning
    assert all(k._fast is None for k in launchers) and launch.launch_path() == "python"
    assert fastpath.launch_path_text() == f"launch path: python ({reason})"
    for k in launchers:
        k(*fwd_args())
    assert len(launched) == 3


def test_python_m_layoutgen_runtime_says_which_path_is_active() -> None:
    out = StringIO()
    with redirect_stdout(out):
        runpy.run_module("layoutgen.runtime", run_name="__main__")
    assert out.getvalue() == fastpath.launch_path_text() + "\n"
    assert out.getvalue().startswith("launch path: compiled (") and "_fastlaunch" in out.getvalue()
