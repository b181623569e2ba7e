"""A launch reads each array once: its plan's key and its validation come from that one read.

An array whose reads change while a launch reads it (another thread flipping
a torch tensor's strides with ``as_strided_``, a torch function mode that
answers one read otherwise than the next) must never leave a plan keyed on
one read and validated on another: from then on, an array shaped like the
first read would launch under a check of the second. ``Liar`` stands in for
such an array: every read of it gives the next of its faces. On both paths,
a launcher whose cache such calls warmed never accepts what a fresh launcher
refuses.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.launch_paths import take_path
from tests.helpers.compiled import (  # noqa: F401  (compiled_unless_..., cpu_is_cuda, device, hooked: fixtures)
    compiled_unless_a_test_says_otherwise, cpu_is_cuda, device, fwd_torch, hooked, launcher, outcome)
from tests.helpers.launch import BASE, FWD, Dev, dev_info, fwd_args, packed

from layoutgen.runtime import launch
from layoutgen.runtime.readers import INFOS

PATHS = ("python", "compiled")
W_AT = BASE + 0x100000
TRANSPOSED = (4, 160)  # byte strides of a [40, 40] f32 array transposed


class Liar:
    """A fake device array whose every read (of ``__cuda_array_interface__``) gives the next of ``faces``, in
    turn: an array another thread changes between two reads."""

    def __init__(self, *faces: dict[str, Any]) -> None:
        base = Dev((40, 40), ptr=W_AT)
        self.device = base.device
        self._faces = itertools.cycle([{**base.__cuda_array_interface__, **face} for face in faces])

    @property  # type: ignore[override]
    def __cuda_array_interface__(self) -> dict[str, Any]:
        return next(self._faces)


def liar_reader(a: Liar) -> tuple[tuple[Any, ...], int]:
    cai = a.__cuda_array_interface__  # one read: everything below comes from it
    return (Liar, cai["shape"], cai["strides"], cai["typestr"], cai["data"][1], a.device.id), cai["data"][0]


INFOS[liar_reader] = dev_info  # its reads say what a fake array's say


@pytest.fixture
def liars(device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(launch._FAST_READERS, Liar, liar_reader)


@pytest.mark.parametrize("path", PATHS)
def test_an_array_that_changes_between_reads_never_plans_another_arrays_launch(
        liars: None, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    """W read transposed, then packed (another thread flipping it): afterwards a transposed W, read the same
    every time, is refused (LG604), as a fresh launcher refuses it."""
    take_path(monkeypatch, path)
    launched: list[Any] = []
    k = launcher(FWD.spec, launched)
    k(*fwd_args())
    for _ in range(4):
        flipping = Liar({"strides": TRANSPOSED}, {"strides": None})
        got = outcome(lambda: k(*fwd_args(W=flipping)))
        assert got is None or got[0] == "LG604"
    transposed = Liar({"strides": TRANSPOSED})  # read the same every time
    fresh = outcome(lambda: launcher(FWD.spec, [])(*fwd_args(W=transposed)))
    assert fresh is not None and fresh[0] == "LG604"
    for _ in range(3):
        assert outcome(lambda: k(*fwd_args(W=transposed))) == fresh


# Faces of W a read may give: packed, transposed, a row too long, f64, misaligned, null, past 64 bits.
FACES: list[dict[str, Any]] = [
    {}, {"strides": TRANSPOSED}, {"shape": (41, 40)}, {"typestr": "<f8", "strides": packed((40, 40), 8)},
    {"data": (W_AT + 2, False)}, {"data": (0, False)}, {"data": (2**64 + W_AT, False)}, {"data": (-W_AT, False)},
    {"data": (W_AT, True)},
]


@pytest.mark.parametrize("path", PATHS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(warm=st.lists(st.lists(st.sampled_from(range(len(FACES))), min_size=1, max_size=3), max_size=6),
       probe=st.sampled_from(range(len(FACES))))
@example(warm=[[1, 0]], probe=1)  # the Python path's key read transposed, its validation packed
@example(warm=[[1, 1, 0]], probe=1)  # the compiled path taught the read after the validated one
@example(warm=[[5, 0]], probe=5)  # a null pointer
def test_a_warm_launcher_never_accepts_what_a_fresh_one_refuses(
        liars: None, monkeypatch: pytest.MonkeyPatch, path: str, warm: list[list[int]], probe: int) -> None:
    """Calls whose W changes between reads warm the cache; then a W read the same every time gets what a fresh
    launcher gives it: the same refusal, code and message, or the same launch."""
    take_path(monkeypatch, path)
    launched: list[Any] = []
    k = launcher(FWD.spec, launched)
    for faces in warm:
        outcome(lambda: k(*fwd_args(W=Liar(*(FACES[f] for f in faces)))))
    stable = fwd_args(W=Liar(FACES[probe]))
    fresh_launched: list[Any] = []
    fresh = outcome(lambda: launcher(FWD.spec, fresh_launched)(*stable))
    before = len(launched)
    assert outcome(lambda: k(*stable)) == fresh
    assert launched[before:] == fresh_launched


@pytest.mark.parametrize("path", PATHS)
def test_a_torch_function_mode_answering_two_reads_differently_plans_nothing_for_other_tensors(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, cpu_is_cuda: Any, path: str) -> None:
    """Under a mode whose `stride()` answers transposed, then packed, in turn: afterwards, with no mode, a
    transposed W is refused (LG604) as a fresh launcher refuses it."""
    torch = cpu_is_cuda
    from torch.overrides import TorchFunctionMode

    class Alternating(TorchFunctionMode):  # type: ignore[misc]
        calls = 0

        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            got = func(*args, **(kwargs or {}))
            if getattr(func, "__name__", "") == "stride" and tuple(args[0].shape) == (40, 40):
                Alternating.calls += 1
                return (1, 40) if Alternating.calls % 2 else (40, 1)
            return got

    take_path(monkeypatch, path)
    launched: list[Any] = []
    k = launcher(FWD.spec, launched)
    tensors = fwd_torch(torch)
    k(*tensors)
    transposed = torch.randn(40, 40).t()
    with Alternating():
        for _ in range(4):
            got = outcome(lambda: k(*fwd_torch(torch, W=transposed)))
            assert got is None or got[0] == "LG604"
    fresh = outcome(lambda: launcher(FWD.spec, [])(*fwd_torch(torch, W=transposed)))
    assert fresh is not None and fresh[0] == "LG604"
    for _ in range(3):
        assert outcome(lambda: k(*fwd_torch(torch, W=transposed))) == fresh


# pointers that are no device memory (LG633, LG634) and tensors torch refuses to write (LG635) -----------------


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize(("ptr", "code", "message"), [
    (0, "LG634", "got a null data pointer for 1600 elements: the array has no memory"),
    (-0x100, "LG633", "got the data pointer -256 (-0x100), which is no device address (a pointer is 0 to 2**64 - 1)"),
    (2**64 + 0x100, "LG633", f"got the data pointer {2**64 + 0x100} (0x10000000000000100), which is no device "
     "address (a pointer is 0 to 2**64 - 1)"),
    (2**64 - 0x100, None, None),  # the last aligned address is one: the driver decides whether it is memory
])
def test_a_pointer_that_is_no_device_memory_is_refused_before_and_after_a_plan(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, path: str, ptr: int,
        code: str | None, message: str | None) -> None:
    take_path(monkeypatch, path)
    launched: list[Any] = []
    k = launcher(FWD.spec, launched)
    for _ in range(2):  # unplanned, then planned by the good launch between
        got = outcome(lambda: k(*fwd_args(W=Dev((40, 40), ptr=ptr))))
        if code is None:
            assert got is None and launched[-1][2][1] == ptr
        else:
            assert got is not None and got[0] == code
            assert got[1] == (f"error[{code}]: `variable_selection_fwd.W` (Weights, layout Weights [40, 40] f32) "
                              f"{message}; got shape [40, 40], strides (40, 1) (elements), f32 on device 0\n  hint: "
                              + ("pass an array with memory of its own (torch's `_efficientzerotensor` has none: "
                                 "`torch.zeros(t.shape, dtype=t.dtype, device=t.device)` has)" if code == "LG634" else
                                 "the array's `__cuda_array_interface__` is wrong: fix the library that made it"))
        k(*fwd_args())


@pytest.mark.parametrize("path", PATHS)
def test_an_empty_array_may_have_a_null_pointer(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    take_path(monkeypatch, path)
    launched: list[Any] = []
    k = launcher(FWD.spec, launched)
    for _ in range(2):
        k(*fwd_args(0, 8, x=Dev((0, 8, 56), ptr=0), gates=Dev((0, 8, 40), ptr=0), y=Dev((0, 8, 40), ptr=0)))
    assert launched == []  # nothing to launch, nothing refused


@pytest.mark.parametrize("path", PATHS)
def test_a_torch_zero_tensor_has_no_memory_and_is_refused(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, cpu_is_cuda: Any, path: str) -> None:
    torch = cpu_is_cuda
    take_path(monkeypatch, path)
    launched: list[Any] = []
    k = launcher(FWD.spec, launched)
    k(*fwd_torch(torch))  # planned: the same kinds, shapes and strides
    zero = torch._efficientzerotensor(4, 8, 40)
    assert zero.data_ptr() == 0
    got = outcome(lambda: k(*fwd_torch(torch, y=zero)))
    assert got is not None and got[0] == "LG634" and len(launched) == 1
    assert "`variable_selection_fwd.y` (Features, layout Features [B, K, 40] f32) got a null data pointer for " \
        "1280 elements" in got[1]


@pytest.mark.parametrize("path", PATHS)
def test_an_inference_tensor_is_written_only_in_inference_mode(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, cpu_is_cuda: Any, path: str) -> None:
    """torch refuses `t.add_(1)` of an inference tensor outside inference mode; so does a launch writing one."""
    torch = cpu_is_cuda
    take_path(monkeypatch, path)
    launched: list[Any] = []
    k = launcher(FWD.spec, launched)
    with torch.inference_mode():
        y = torch.zeros(4, 8, 40)
        for _ in range(2):
            k(*fwd_torch(torch, y=y))  # inside: allowed, as torch allows it
    assert len(launched) == 2 and y.is_inference()
    with pytest.raises(RuntimeError, match="Inplace update to inference tensor outside InferenceMode"):
        y.add_(1)
    got = outcome(lambda: k(*fwd_torch(torch, y=y)))
    assert got == ("LG635", "error[LG635]: `variable_selection_fwd.y` (Features, layout Features [B, K, 40] f32) is "
                   "written in place by the kernel, but the tensor is an inference tensor and inference mode is off, "
                   "which torch refuses (\"Inplace update to inference tensor outside InferenceMode is not allowed\"); "
                   "got a torch tensor of shape [4, 8, 40]\n  hint: launch under `torch.inference_mode()`, or write "
                   "into a tensor made outside it (`t.clone()` outside inference mode)")
    assert len(launched) == 2
    with torch.inference_mode():
        x = torch.randn(4, 8, 56)
    k(*fwd_torch(torch, x=x))  # read, not written: allowed
    assert len(launched) == 3


def test_a_launch_without_cupy_says_which_extra_installs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from layoutgen.runtime import driver

    real_import = builtins.__import__

    def no_cupy(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "cupy" or name.startswith("cupy."):
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_cupy)
    monkeypatch.setattr(driver, "_GET_DEVICE", None)
    take_path(monkeypatch, "python")
    got = outcome(lambda: launcher(FWD.spec, [])(*fwd_args()))
    assert got == ("LG636", "error[LG636]: a launch needs CuPy (the device, its streams, the loaded kernels), which "
                   "is not installed here\n  hint: install layoutgen with the extra of your CUDA driver's major "
                   "version: `pip install 'layoutgen[cuda13]'` (CUDA 13) or `pip install 'layoutgen[cuda12]'` (CUDA "
                   "12); `nvidia-smi` shows the driver's CUDA version")


def test_a_programs_overlapping_buffers_are_named_with_both_spans(device: dict[str, int]) -> None:
    import generated.vsn as vsn

    from tests.helpers.launch import LR, SHAPES, buffers

    gates = BASE + list(SHAPES).index("gates") * 0x100000
    got = outcome(lambda: vsn.vsn_step(**buffers(y=Dev((4, 8, 40), ptr=gates + 160)), lr=LR))
    size = 4 * 8 * 40 * 4
    assert got is not None and got[0] == "LG613"
    assert (f"got the same memory for buffers `gates` and `y` (0x{gates:x}..0x{gates + size:x} and "
            f"0x{gates + 160:x}..0x{gates + 160 + size:x})") in got[1]
