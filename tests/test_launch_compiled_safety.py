"""The compiled launch path where Python code runs inside it, and where a kind of array could read two ways.

The C side calls back into Python (readers, a stream's ``__cuda_stream__``,
torch, finalizers of what it lets go), and reads CuPy arrays from their
struct fields and torch tensors through DLPack where the Python path reads
their attributes. These tests pin what must hold then: a Launcher and its
plans stay whole while Python code runs, an exception that is not an error
of the call's reads (KeyboardInterrupt) is the call's, and a kind whose
attributes do not read its fields, or a plan taught while torch's reads were
intercepted, is never keyed on the fields: both paths take and refuse the
same calls.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fake_libcuda import run
from tests.helpers.compiled import (  # noqa: F401  (compiled_unless_..., cpu_is_cuda, device, hooked: fixtures)
    ADDRESS, EXT, both_paths, compiled_unless_a_test_says_otherwise, cpu_is_cuda, cupy_array, device, fwd_cupy,
    fwd_torch, hooked, launcher, outcome)
from tests.helpers.launch import FWD, B, K

from layoutgen.runtime import driver, launch
from layoutgen.runtime.launch import KernelLauncher

# the Launcher and its plans while Python code runs ----------------------------------------------------------


def test_a_launcher_and_a_programs_steps_are_initialised_once() -> None:
    fast = launcher(FWD.spec, [])._fast
    with pytest.raises(TypeError) as again:  # a call in flight reads its counts and callables
        fast.__init__("other", 1, (("f32", False),), print, print)
    assert str(again.value) == "a Launcher is initialised once"
    steps = EXT.Steps("program", 1, ())
    with pytest.raises(TypeError) as twice:  # the first steps (their launches) would be lost
        steps.__init__("program", 1, ())
    assert str(twice.value) == "Steps are initialised once"


def test_a_plan_with_a_grid_past_32_bits_is_not_taken(device: dict[str, int], hooked: None) -> None:
    k = launcher(FWD.spec, [])
    args = fwd_cupy()
    sigs = tuple(launch._cupy_reader(a)[0] for a in args)
    ptrs = tuple(launch._cupy_reader(a)[1] for a in args)
    for blocks, block, shared in ((2**32 + 1, 64, 0), (1, 2**32 + 64, 0), (1, 64, 2**32), (-1, 64, 0)):
        with pytest.raises(OverflowError):  # cuLaunchKernel's unsigned ints: never cut to their low bits
            k._fast.add(0, args, sigs, ptrs, (3,) * 5, (), blocks, block, shared, (B, K), (), object(), 0xF00D)
    assert k._fast.plans == 0


def test_a_plan_replaced_while_a_finalizer_launches_the_same_kernel_is_whole(tmp_path: Path) -> None:
    """Replacing a plan lets its signatures go; a finalizer among them (any Python code, or another thread
    it lets run) may launch the same kernel: it finds the new plan, never one half cleared."""
    got = run(tmp_path, r"""
import pytest
from tests.fake_device import fake_device
from tests.launch_paths import current_device, replay
from tests.helpers.compiled import launcher
from tests.helpers.launch import Dev, FWD, dev_info, dev_reader, fwd_args
from layoutgen.runtime.readers import INFOS
from layoutgen.runtime import fastpath, launch

patch = pytest.MonkeyPatch()
patch.setenv("LAYOUTGEN_PYTHON_LAUNCH", "0")
patch.setattr(launch, "find_device", lambda: 0)
patch.setattr(launch, "device_arch", lambda d: "sm_90")
fake_device(patch)
EXT = fastpath.extension()[0]
EXT.set_hook(replay, current_device)
launched, seen, armed = [], [], []
k = launcher(FWD.spec, launched)
args = fwd_args()

class Tag:  # equal to every Tag: a signature read again is the same signature
    def __eq__(self, other): return isinstance(other, Tag)
    def __hash__(self): return 0
    def __del__(self):
        if armed:  # the first Tag let go once armed launches the kernel (its own reads' Tags do not)
            armed.clear()
            seen.append(k._fast.attempt(*args))

tagged = lambda a: ((*dev_reader(a)[0], Tag()), dev_reader(a)[1])
patch.setitem(launch._FAST_READERS, Dev, tagged)
patch.setitem(INFOS, tagged, lambda a, signature, ptr: dev_info(a, signature[:-1], ptr))
k(*args)                  # planned and taught
k._plans.clear()          # the C side's plan holds the only references to the Tags it was taught with
armed.append(True)
k._python_path(*args)     # taught again: the plan of these signatures is replaced, its Tags let go
report(seen=seen, launched=len(launched), plans=k._fast.plans)
""")
    assert got == {"seen": [True], "launched": 3, "plans": 1}


def test_a_keyboard_interrupt_in_a_streams_code_is_the_calls_on_both_paths(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fake_device import Recorded

    class Interrupted:  # Ctrl-C arrives while the stream's handle is read
        def __init__(self) -> None:
            self.reads = 0

        def __cuda_stream__(self) -> tuple[int, int]:
            self.reads += 1
            if self.reads == 1:
                raise KeyboardInterrupt
            return (0, 0x77)

    def run_it(k: KernelLauncher) -> Any:
        made: list[Any] = []  # a launch that reads its stream as PackedLaunch does
        k.function = lambda d, arch: Recorded(  # type: ignore[method-assign,assignment]
            lambda *a: made.append(a[3] is None or driver.stream_handle(a[3], k.spec.name)))
        k(*fwd_cupy())
        stream = Interrupted()
        with pytest.raises(KeyboardInterrupt):
            k(*fwd_cupy(), stream=stream)
        return len(made), stream.reads

    results = both_paths(monkeypatch, FWD.spec, run_it)
    assert results["python"][0] == results["compiled"][0] == (1, 1)  # nothing launched, read once


# a kind whose attributes do not read its fields; a plan taught while torch's reads were intercepted ---------


def test_a_cupy_subclass_that_redefines_an_attribute_is_read_through_its_attributes(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch) -> None:
    import cupy

    class Claimed(cupy.ndarray):
        """Its `shape` is what it claims, where it claims one: the Python path reads that, never the field."""

        __module__ = "cupy.claimed"  # read as CuPy's arrays are, by both paths

        @property
        def shape(self) -> tuple[int, ...]:
            return getattr(self, "claimed", super().shape)

    def run_it(k: KernelLauncher) -> Any:
        k(*fwd_cupy(x=cupy_array((B, K, 56), ptr=ADDRESS["x"]).view(Claimed)))
        lying = cupy_array((B, K, 56), ptr=ADDRESS["x"]).view(Claimed)
        lying.claimed = (B, K, 40)
        return outcome(lambda: k(*fwd_cupy(x=lying)))

    results = both_paths(monkeypatch, FWD.spec, run_it)
    assert results["python"][0] is not None and results["python"][0][0] == "LG601"
    assert results["compiled"][:2] == results["python"][:2]
    assert EXT.kinds().get(Claimed) is None


def test_a_cupy_array_over_a_memory_pointer_subclass_takes_the_compiled_path(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch) -> None:
    from cupy.cuda import memory

    class Pointer(memory.MemoryPointer):
        pass

    def run_it(k: KernelLauncher) -> None:
        import cupy

        for shift in (0, 0x10000):
            ptr = ADDRESS["W"] + shift
            w = cupy.ndarray((40, 40), "float32", memptr=Pointer(memory.UnownedMemory(ptr, 8192, None, 0), 0))
            k(*fwd_cupy(W=w))

    results = both_paths(monkeypatch, FWD.spec, run_it)
    assert results["compiled"][1] == results["python"][1] and len(results["python"][1]) == 2
    assert results["compiled"][2]._fast.hits == 1  # read through its attributes, as the Python reader reads it


def test_a_plan_taught_under_a_torch_function_mode_is_not_keyed_on_dlpack(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, cpu_is_cuda: Any) -> None:
    torch = cpu_is_cuda
    from torch.overrides import TorchFunctionMode

    good = fwd_torch(torch)
    transposed = torch.randn(40, 40).T

    class Contiguous(TorchFunctionMode):  # type: ignore[misc]
        """Says the transposed W is contiguous: what the Python path validated under it."""

        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            if func is torch.Tensor.stride and args and args[0] is transposed:
                return (40, 1)
            return func(*args, **(kwargs or {}))

    def run_it(k: KernelLauncher) -> Any:
        args = (good[0], transposed, *good[2:])
        with Contiguous():
            k(*args)  # validated (and taught) with the mode's strides
        return outcome(lambda: k(*args))  # without it: the transposed W it is

    results = both_paths(monkeypatch, FWD.spec, run_it)
    assert results["python"][0] is not None and results["python"][0][0] == "LG604"
    assert results["compiled"][:2] == results["python"][:2]



def test_a_compiled_call_keeps_no_reference_to_what_it_read(device: dict[str, int], hooked: None,
                                                            cpu_is_cuda: Any) -> None:
    import gc
    import sys

    from tests.launch_paths import COMPILED
    from tests.helpers.launch import ProtocolStream, fwd_args

    torch = cpu_is_cuda
    from tests.fake_device import Recorded

    launched: list[Any] = []
    k = launcher(FWD.spec, launched)
    k.function = lambda d, arch: Recorded(  # type: ignore[method-assign,assignment]
        lambda *a: launched.append(a[3] is None or driver.stream_handle(a[3], k.spec.name)))  # as PackedLaunch
    cupy_args, torch_args, fake_args = fwd_cupy(), fwd_torch(torch), fwd_args()
    refused, stream = fwd_cupy(x=cupy_array((B, K, 40), ptr=ADDRESS["x"])), ProtocolStream(5)
    for args in (cupy_args, torch_args, fake_args):
        k(*args)
    held = [*cupy_args, *torch_args, *fake_args, *refused, stream, cupy_args[0].dtype, torch_args[0].dtype]

    def calls() -> None:
        COMPILED.clear()  # the records of each launch (its stream among them)
        launched.clear()
        for args in (cupy_args, torch_args, fake_args):  # fields, DLPack, a reader
            k(*args)
            k(*args, stream=stream)
        assert k._fast.attempt(*refused) is False  # read, then handed over
        with pytest.raises(launch.LaunchError):
            k(*cupy_args, stream=5)  # LG616, through the Python path

    calls()
    gc.collect()
    before = [sys.getrefcount(o) for o in held]
    for _ in range(200):
        calls()
    gc.collect()
    assert [sys.getrefcount(o) for o in held] == before
    assert k._fast.hits >= 6 * 201
