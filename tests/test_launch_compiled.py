"""What the compiled launch path reads and checks at C level, against the Python path, without a GPU.

Real CuPy arrays (CuPy's own ndarray, over memory no device backs:
``UnownedMemory``, so their fields and attributes are CuPy's) are read from
their fields, real torch tensors through DLPack's C exchange API (CPU ones,
which the Python path takes for CUDA ones here: ``torch.Tensor.is_cuda`` is
faked), typed ``Array``\\ s are unwrapped, streams read, scalars packed, the
current device taken from the driver (a hook here). Every case runs through
both paths after the same good launch planned the kernel: where the
compiled path does not launch, the Python path must refuse with its code and
message (or launch exactly as it would); where it does, the parameters must
be byte-identical.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.launch_paths import (  # noqa: F401  (launch_path: the fixture)
    COMPILED, HANDLES, current_device, launch_path, replay, take_path)
from tests.fake_device import TORCH_STREAM
from tests.helpers.compiled import (  # noqa: F401  (compiled_unless_..., cpu_is_cuda, device, hooked: fixtures)
    ADDRESS, EXT, both_paths, compiled_unless_a_test_says_otherwise, cpu_is_cuda, cupy_array, device, fwd_cupy,
    fwd_torch, hooked, launcher, outcome)
from tests.helpers.launch import BASE, FWD, B, K, ProtocolStream

from layoutgen.runtime import arrays, driver, launch
from layoutgen.runtime.launch import KernelLauncher, KernelSpec, LaunchError, LayoutSpec, ParamSpec, ScalarSpec
from layoutgen.runtime.typed import Array
from layoutgen.runtime.validate import check_scalar
from layoutgen.schema.scalars import SCALAR_DTYPES


# CuPy arrays: their own fields ------------------------------------------------------------------------------


def test_cupy_arrays_are_read_from_their_fields_as_the_python_reader_reads_them() -> None:
    import cupy

    a = cupy_array((4, 8, 56))
    for x in (a, a[:, 1:], a.T, a[..., :40], a[1], cupy_array((40,), "float64", BASE + 8), cupy_array((0, 3), "int32"),
              cupy_array((2, 3), "uint16", device=1), cupy_array((2, 1, 3), "int8")):
        (_, shape, strides, dtype, device_id), ptr = launch._cupy_reader(x)
        assert EXT.read(x) == ("cupy", ptr, shape, strides, dtype, device_id)
    assert EXT.kinds()[cupy.ndarray] == "fields"


def capsule(address: int, name: bytes) -> Any:
    import ctypes

    new = ctypes.pythonapi.PyCapsule_New
    new.restype, new.argtypes = ctypes.py_object, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
    return new(address, name, None)


def test_a_dlpack_exchange_api_of_another_version_or_name_is_not_used() -> None:
    import ctypes

    class Header(ctypes.Structure):
        _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32), ("prev", ctypes.c_void_p),
                    ("functions", ctypes.c_void_p * 5)]

    tables = [Header(2, 0, None), Header(1, 2, None)]  # a later major version, an earlier minor one (before 1.3)
    names = [b"dlpack_exchange_api", b"dlpack_exchange_api", b"another_name"]
    for table, name in zip([*tables, Header(1, 3, None)], names):
        kind = type("Foreign", (), {"__dlpack_c_exchange_api__": capsule(ctypes.addressof(table), name)})
        assert EXT.read(kind()) is None  # never called: the table is not one this reads (or has no export)
    kind = type("NotACapsule", (), {"__dlpack_c_exchange_api__": 12345})
    assert EXT.read(kind()) is None


CUPY_REFUSALS: list[tuple[str, str, Callable[[], dict[str, Any]]]] = [
    ("LG601", "motivating-bug", lambda: {"x": cupy_array((B, K, 40), ptr=ADDRESS["x"])}),
    ("LG602", "f64", lambda: {"W": cupy_array((40, 40), "float64", ADDRESS["W"])}),
    ("LG603", "B", lambda: {"y": cupy_array((B + 1, K, 40), ptr=ADDRESS["y"])}),
    ("LG604", "transposed", lambda: {"W": cupy_array((40, 40), ptr=ADDRESS["W"]).T}),
    ("LG604", "column-slice", lambda: {"gates": cupy_array((B, K, 56), ptr=ADDRESS["gates"])[..., :40]}),
    ("LG605", "device-1", lambda: {"b": cupy_array((40,), ptr=ADDRESS["b"], device=1)}),
    ("LG606", "misaligned", lambda: {"b": cupy_array((40,), ptr=ADDRESS["b"] + 2)}),  # not even an element
    ("LG614", "y-on-gates", lambda: {"y": cupy_array((B, K, 40), ptr=ADDRESS["gates"])}),
]


@pytest.mark.parametrize(("code", "replace"), [(c, r) for c, _, r in CUPY_REFUSALS],
                         ids=[f"{c}-{i}" for c, i, _ in CUPY_REFUSALS])
def test_every_refusal_of_cupy_arrays_is_handed_over_and_refused_as_the_python_path_refuses(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, code: str,
        replace: Callable[[], dict[str, Any]]) -> None:
    def run(k: KernelLauncher) -> Any:
        k(*fwd_cupy())  # planned (and taught to the C side)
        bad = fwd_cupy(**replace())
        if k._fast is not None:
            assert k._fast.plans == 1 and k._fast.attempt(*bad) is False  # says no, launching nothing
        return outcome(lambda: k(*bad))

    results = both_paths(monkeypatch, FWD.spec, run)
    assert results["python"][0] is not None and results["python"][0][0] == code
    assert results["compiled"][0] == results["python"][0]
    assert len(results["compiled"][1]) == len(results["python"][1]) == 1


def test_cupy_arrays_at_new_addresses_take_the_compiled_path_with_byte_identical_parameters(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch) -> None:
    def run(k: KernelLauncher) -> None:
        for shift in (0, 0x10000, 0x20000):
            k(*fwd_cupy(**{n: cupy_array(a.shape, ptr=ADDRESS[n] + shift) for n, a in zip(ADDRESS, fwd_cupy())}))

    results = both_paths(monkeypatch, FWD.spec, run)
    assert results["compiled"][1] == results["python"][1] and len(results["python"][1]) == 3
    k = results["compiled"][2]
    assert k._fast.hits == 2 and k._fast.handovers == 1 and len(COMPILED) == 2


class CupyAttrs:
    """A kind read with ``launch._cupy_reader`` whose fields are not CuPy's: the C side reads its attributes."""

    def __init__(self, shape: tuple[int, ...], ptr: int) -> None:
        self.data = SimpleNamespace(ptr=ptr, device_id=0)
        self.shape, self.dtype = shape, np.dtype("float32")
        self.strides = tuple(np.empty(shape, np.float32).strides)
        self.__cuda_array_interface__ = {"version": 3, "shape": shape, "typestr": "<f4", "data": (ptr, False),
                                         "strides": self.strides}


def test_a_kind_whose_fields_are_not_confirmed_is_read_through_its_attributes(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(launch._FAST_READERS, CupyAttrs, launch._cupy_reader)

    def run(k: KernelLauncher) -> Any:
        args = [CupyAttrs(a.shape, ADDRESS[n]) for n, a in zip(ADDRESS, fwd_cupy())]
        k(*args)
        k(*args)
        return outcome(lambda: k(CupyAttrs((B, K, 40), ADDRESS["x"]), *args[1:]))

    results = both_paths(monkeypatch, FWD.spec, run)
    assert results["compiled"][:2] == results["python"][:2] and results["python"][0][0] == "LG601"
    assert results["compiled"][2]._fast.hits == 1 and CupyAttrs not in EXT.kinds()


# typed Arrays, streams, the current device ------------------------------------------------------------------


def test_typed_arrays_are_unwrapped_by_the_compiled_path(device: dict[str, int], hooked: None,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    def run(k: KernelLauncher) -> Any:
        k(*fwd_cupy())
        k(*map(Array, fwd_cupy()))  # the same arrays, typed: the same plan
        if k._fast is not None:
            assert k._fast.hits == 1
        wrong = outcome(lambda: k(Array(cupy_array((B, K, 40))), *map(Array, fwd_cupy()[1:])))
        with pytest.raises(AttributeError) as empty:  # an Array whose slot was never set: as typed.unwrap fails
            k(Array.__new__(Array), *fwd_cupy()[1:])
        return wrong, str(empty.value)

    results = both_paths(monkeypatch, FWD.spec, run)
    assert results["compiled"][:2] == results["python"][:2] and results["python"][0][0][0] == "LG601"


def test_the_generated_function_calls_the_entry_with_typed_arrays(launch_path: str) -> None:
    import generated.vsn as vsn
    from tests.fake_device import Recorded

    k = vsn._lg_kernel_variable_selection_fwd
    assert k.entry == (k._fast if launch_path == "compiled" else k._python_path)
    launched: list[Any] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(k, "function", lambda d, arch: Recorded(lambda *a: launched.append(a)))
        patch.setattr(k, "_plans", {})
        patch.setattr(launch, "find_device", lambda: 0)
        patch.setattr(launch, "device_arch", lambda d: "sm_90")
        from tests.fake_device import fake_device

        fake_device(patch)
        for _ in range(2):
            vsn.variable_selection_fwd(*map(Array, fwd_cupy()))
    assert [values[:5] for _, _, values, _ in launched] == [list(ADDRESS.values())] * 2
    if launch_path == "compiled":
        assert k._fast.hits == 1 and len(COMPILED) == 1


@pytest.mark.parametrize("stream", ["none", "null", "protocol", "external"])
def test_the_compiled_path_reads_a_stream_as_stream_handle_does(device: dict[str, int], hooked: None,
                                                                stream: str) -> None:
    import cupy

    given, handle = {"none": (None, None), "null": (cupy.cuda.Stream.null, 0),
                     "protocol": (ProtocolStream(0x5678), 0x5678),
                     "external": (cupy.cuda.Stream.from_external(ProtocolStream(0x99)), 0x99)}[stream]
    k = launcher(FWD.spec, [])
    k(*fwd_cupy())
    k(*fwd_cupy(), stream=given)
    assert k._fast.hits == 1 and HANDLES == [handle] and COMPILED[0][3] is given


@pytest.mark.parametrize("stream", [5, "default", 2.5], ids=["int", "str", "float"])
def test_what_is_no_stream_is_handed_over_and_refused_as_the_python_path_refuses(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, stream: Any) -> None:
    from tests.fake_device import Recorded

    from layoutgen.runtime import driver

    def run(k: KernelLauncher) -> Any:
        made: list[Any] = []  # a launch that reads its stream as PackedLaunch does (LG616 on a planned kernel)
        k.function = lambda d, arch: Recorded(  # type: ignore[method-assign,assignment]
            lambda *a: made.append(a[3] is None or driver.stream_handle(a[3], k.spec.name)))
        k(*fwd_cupy())
        if k._fast is not None:
            assert k._fast.attempt(*fwd_cupy(), stream=stream) is False
        return outcome(lambda: k(*fwd_cupy(), stream=stream))

    results = both_paths(monkeypatch, FWD.spec, run)
    assert results["python"][0][0] == "LG616" and results["compiled"][:2] == results["python"][:2]


def test_without_a_current_context_the_compiled_path_hands_every_call_over(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch) -> None:
    EXT.set_hook(replay, lambda: None)  # the driver: no context is current on this thread

    def run(k: KernelLauncher) -> None:
        for _ in range(3):
            k(*fwd_cupy())

    results = both_paths(monkeypatch, FWD.spec, run)
    assert results["compiled"][1] == results["python"][1] and len(results["python"][1]) == 3
    assert results["compiled"][2]._fast.hits == 0 and results["compiled"][2]._fast.handovers == 3 and COMPILED == []


def test_a_launch_the_driver_refuses_is_handed_to_the_python_path(device: dict[str, int],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    refused: list[int] = []

    def refusing(*args: Any) -> bool:
        refused.append(1)
        return False  # the driver refused it: nothing ran

    EXT.set_hook(refusing, current_device)
    try:
        launched: list[tuple[Any, ...]] = []
        k = launcher(FWD.spec, launched)
        k(*fwd_cupy())
        k(*fwd_cupy())  # refused in C, launched again by the Python path (which reports LG609 where it fails)
        assert refused == [1] and len(launched) == 2 and k._fast.handovers == 2 and k._fast.hits == 0
    finally:
        EXT.set_hook(None)


# scalars --------------------------------------------------------------------------------------------------

ROW = LayoutSpec("Row", ("N",), 8, "f32", 4)
SCALARS = KernelSpec("scaled", "scaled.cu", (ParamSpec("dst", "out", ROW, "Row", 16),),
                     symbols=("N",), grid_param=0, per_row=1, block=64,
                     scalars=(ScalarSpec("alpha", "f32"), ScalarSpec("n", "i64"), ScalarSpec("on", "bool"),
                              ScalarSpec("tol", "f64", finite=True), ScalarSpec("k", "u8")))
ODD_VALUES = [np.float32(1.5), np.float64(-2.0), np.int8(3), np.uint64(2**64 - 1), np.bool_(True), "1", None, [1.0],
              2**64, 2**63, -2**63 - 1, 3.4028235e38, 3.4028236e38, 1e39, -0.0, 1e-46, 5e-324, True, False, 255,
              256, -1]


@settings(max_examples=400, deadline=None)
@given(dtype=st.sampled_from(sorted(SCALAR_DTYPES)), finite=st.booleans(),
       value=st.one_of(st.integers(-2**70, 2**70), st.floats(), st.booleans(), st.sampled_from(ODD_VALUES)))
def test_the_compiled_path_packs_a_scalar_exactly_as_check_scalar_does(dtype: str, finite: bool, value: Any) -> None:
    slot = EXT.scalar_slot(dtype, finite, value)
    try:
        expected = check_scalar("k", ScalarSpec("s", dtype, finite), value)
    except LaunchError:
        assert slot is None  # the Python check decides, and refuses
        return
    assert slot in (None, expected)
    if type(value) in (int, float, bool) and not (isinstance(value, float) and math.isnan(value)):
        assert slot == expected  # a plain Python value is taken in C


@pytest.mark.parametrize("values", [(1.5, -7, True, 0.25, 200), (np.float32(2), np.int64(3), np.bool_(False), 1, 0),
                                    ("1", -7, True, 0.25, 1), (1.5, 2**63, True, 0.25, 1), (1e39, 1, True, 0.25, 1),
                                    (1.5, 1, 1, 0.25, 1), (1.5, 1, True, math.inf, 1), (1.5, 1, True, 0.5, 256),
                                    (math.nan, 1, True, 0.5, 1)],
                         ids=["plain", "numpy", "LG620-str", "LG621-i64", "LG621-f32", "LG620-bool", "LG622",
                              "LG621-u8", "nan"])
def test_scalars_are_taken_or_refused_as_the_python_path_takes_them(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, values: tuple[Any, ...]) -> None:
    def run(k: KernelLauncher) -> Any:
        k(cupy_array((5, 8)), 1.0, 1, True, 1.0, 1)
        return outcome(lambda: k(cupy_array((5, 8)), *values))

    results = both_paths(monkeypatch, SCALARS, run)
    assert results["compiled"][:2] == results["python"][:2]
    if results["python"][0] is None:
        assert results["compiled"][2]._fast.hits == 1


# torch tensors through DLPack -------------------------------------------------------------------------------



def test_torch_tensors_take_the_compiled_path_through_dlpack_and_their_versions_are_bumped(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, cpu_is_cuda: Any) -> None:
    torch = cpu_is_cuda

    def run(k: KernelLauncher) -> Any:
        tensors = fwd_torch(torch, W=torch.nn.Parameter(torch.randn(40, 40), requires_grad=False))
        for _ in range(3):
            k(*tensors)
        return [t._version for t in tensors]

    results = both_paths(monkeypatch, FWD.spec, run)
    assert results["python"][0] == [0, 0, 0, 3, 3] and results["compiled"][0] == results["python"][0]
    assert len(results["compiled"][1]) == 3 and results["compiled"][2]._fast.hits == 2
    assert EXT.kinds()[torch.Tensor] == "dlpack" and EXT.kinds()[torch.nn.Parameter] == "dlpack"


def launched_streams(monkeypatch: pytest.MonkeyPatch, run: Callable[[KernelLauncher], Any]) -> dict[str, Any]:
    """``both_paths`` of FWD: what ``run`` raised (its LaunchError's code and message, or None), the CUstream of
    each launch (None: the current CuPy stream, read at the launch), the launcher."""
    results = both_paths(monkeypatch, FWD.spec, lambda k: outcome(lambda: run(k)), streams=True)
    return {path: (got, [launch[3] for launch in launches], k) for path, (got, launches, k) in results.items()}


def test_torch_tensors_given_no_stream_launch_on_torchs_current_stream(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, cpu_is_cuda: Any) -> None:
    """As DLPack's exchange API asks of a library launching on a framework's tensors: torch's current stream
    (the stand-in device's is TORCH_STREAM), not CuPy's; a stream given is the stream given."""
    torch = cpu_is_cuda
    tensors = fwd_torch(torch)

    def run(k: KernelLauncher) -> None:
        for _ in range(3):
            k(*tensors)
        k(*tensors, stream=ProtocolStream(0x77))

    results = launched_streams(monkeypatch, run)
    assert results["python"][:2] == (None, [TORCH_STREAM] * 3 + [0x77])
    assert results["compiled"][:2] == results["python"][:2]
    assert results["compiled"][2]._fast.hits == 3 and HANDLES == [TORCH_STREAM, TORCH_STREAM, 0x77]


@pytest.mark.parametrize("cupy_current", [0x51, TORCH_STREAM])
def test_torch_tensors_with_other_arrays_and_no_stream_need_the_two_current_streams_to_be_one(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, cpu_is_cuda: Any,
        cupy_current: int) -> None:
    """Torch tensors in, CuPy arrays out, no stream: launched where torch's and CuPy's current streams are one
    stream, else LG616 on both paths (either stream would race with the other library's work)."""
    torch = cpu_is_cuda
    monkeypatch.setattr(driver, "_CURRENT_STREAM", lambda: SimpleNamespace(ptr=cupy_current))
    arrays = fwd_torch(torch, gates=cupy_array((B, K, 40), ptr=ADDRESS["gates"]),
                       y=cupy_array((B, K, 40), ptr=ADDRESS["y"]))
    results = launched_streams(monkeypatch, lambda k: k(*arrays))
    assert results["compiled"][:2] == results["python"][:2]
    if cupy_current == TORCH_STREAM:
        assert results["python"][:2] == (None, [None])
    else:
        assert results["python"][:2] == (("LG616", (
            "error[LG616]: `variable_selection_fwd`: `stream` is None, but the arrays come from torch and from "
            "another library, whose current streams differ: torch's is 0x5, CuPy's 0x51\n  hint: pass the stream to "
            "launch on (`stream=torch.cuda.current_stream()`, or the CuPy stream): a launch on either may race "
            "with the other library's work")), [])


TORCH_REFUSALS: list[tuple[str, str, Callable[[Any, tuple[Any, ...]], dict[str, Any]]]] = [
    ("LG608", "neg-view", lambda torch, good: {"x": torch._neg_view(good[0])}),
    ("LG618", "leaf-requires-grad", lambda torch, good: {"y": torch.zeros(B, K, 40, requires_grad=True)}),
    ("LG618", "non-leaf", lambda torch, good: {"y": torch.zeros(B, K, 40, requires_grad=True) * 2}),
    ("LG601", "shape", lambda torch, good: {"x": torch.zeros(B, K, 40)}),
    ("LG602", "f64", lambda torch, good: {"W": torch.zeros(40, 40, dtype=torch.float64)}),
    ("LG604", "transposed", lambda torch, good: {"W": good[1].T}),
    ("LG614", "y-is-gates", lambda torch, good: {"y": good[3]}),
]


@pytest.mark.parametrize(("code", "replace"), [(c, r) for c, _, r in TORCH_REFUSALS],
                         ids=[f"{c}-{i}" for c, i, _ in TORCH_REFUSALS])
def test_every_refusal_of_torch_tensors_is_handed_over_and_refused_as_the_python_path_refuses(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, cpu_is_cuda: Any, code: str,
        replace: Callable[[Any, tuple[Any, ...]], dict[str, Any]]) -> None:
    torch = cpu_is_cuda
    good = fwd_torch(torch)

    def run(k: KernelLauncher) -> Any:
        k(*good)
        bad = fwd_torch(torch, **{**dict(zip(ADDRESS, good)), **replace(torch, good)})
        if k._fast is not None:
            assert k._fast.attempt(*bad) is False
        return outcome(lambda: k(*bad))

    results = both_paths(monkeypatch, FWD.spec, run)
    assert results["python"][0] is not None and results["python"][0][0] == code
    assert results["compiled"][:2] == results["python"][:2]


@pytest.mark.parametrize("attribute", ["is_neg", "requires_grad"])
@pytest.mark.parametrize("parameters", [False, True], ids=["tensors", "parameters"])
def test_torchs_neg_bit_and_grad_flag_replaced_on_the_class_are_what_the_compiled_path_reads(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, cpu_is_cuda: Any,
        attribute: str, parameters: bool) -> None:
    """The compiled path calls torch's C functions for these directly, but only while the tensor's type finds
    torch's own descriptors: one put in their place (on the class, after the extension took torch's and
    found them on the type) is called as the Python path calls it, so both refuse alike (LG608 for a neg
    view, LG618 for a grad). Also for nn.Parameter, whose base class is the one changed: what the compiled
    path found on the subclass must not outlive the change."""
    torch = cpu_is_cuda
    good = fwd_torch(torch)
    if parameters:
        good = [torch.nn.Parameter(t, requires_grad=False) for t in good]

    def run(k: KernelLauncher) -> Any:
        k(*good)  # planned and taught: torch's descriptors taken
        with monkeypatch.context() as patch:
            if attribute == "is_neg":
                patch.setattr(torch.Tensor, "is_neg", lambda self: True)
            else:
                patch.setattr(torch.Tensor, "requires_grad", property(lambda self: True))
            return outcome(lambda: k(*good))

    results = both_paths(monkeypatch, FWD.spec, run)
    assert results["python"][0] is not None and results["python"][0][0] == ("LG608" if attribute == "is_neg"
                                                                            else "LG618")
    assert results["compiled"][:2] == results["python"][:2]


def test_a_written_leaf_that_requires_grad_is_launched_under_no_grad_on_both_paths(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, cpu_is_cuda: Any) -> None:
    torch = cpu_is_cuda
    y = torch.zeros(B, K, 40, requires_grad=True)
    good = fwd_torch(torch)

    def run(k: KernelLauncher) -> Any:
        k(*good)
        before = y._version
        with torch.no_grad():
            k(*good[:4], y)
        return y._version - before

    results = both_paths(monkeypatch, FWD.spec, run)
    assert results["python"][0] == results["compiled"][0] == 1 and results["compiled"][2]._fast.hits == 1


def test_under_a_torch_function_mode_tensors_are_read_as_the_python_reader_reads_them(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, cpu_is_cuda: Any) -> None:
    torch = cpu_is_cuda
    from torch.overrides import TorchFunctionMode

    seen: list[str] = []

    class Watching(TorchFunctionMode):  # type: ignore[misc]
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            seen.append(getattr(func, "__name__", str(func)))
            return func(*args, **(kwargs or {}))

    good = fwd_torch(torch)

    def run(k: KernelLauncher) -> Any:
        k(*good)
        seen.clear()
        with Watching():
            k(*good)
        return "data_ptr" in seen  # the mode saw the tensors read, on either path

    results = both_paths(monkeypatch, FWD.spec, run)
    assert results["python"][0] is results["compiled"][0] is True
    assert results["compiled"][1] == results["python"][1] and results["compiled"][2]._fast.hits == 1


def test_a_torch_dtype_that_exports_as_another_ones_dlpack_dtype_is_not_taken_for_it(
        device: dict[str, int], hooked: None, monkeypatch: pytest.MonkeyPatch, cpu_is_cuda: Any) -> None:
    torch = cpu_is_cuda
    if not hasattr(torch, "uint4"):
        pytest.skip("this torch has no sub-byte integer dtypes")
    bytes_ = LayoutSpec("Bytes", ("N",), 4, "u8", 1)
    spec = KernelSpec("flags", "flags.cu", (ParamSpec("dst", "out", bytes_, "Bytes", 1),), symbols=("N",),
                      grid_param=0, per_row=1, block=64)

    def run(k: KernelLauncher) -> Any:
        k(torch.zeros(3, 4, dtype=torch.uint8))
        return outcome(lambda: k(torch.empty(3, 4, dtype=torch.uint4)))  # stored, and exported, as bytes

    results = both_paths(monkeypatch, spec, run)
    assert results["python"][0][0] == "LG602" and results["compiled"][0] == results["python"][0]
    assert len(results["compiled"][1]) == len(results["python"][1]) == 1


# program runners: every step in one compiled call -----------------------------------------------------------


@pytest.fixture
def program(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str], list[tuple[str, int, int, list[int]]]]]:
    """Run `vsn_step` twice on the path named; the launches its steps made (a recorder per kernel, kept across
    calls as loaded kernels are, so the runner's prepared launches are reused)."""
    import generated.vsn as vsn
    from tests.fake_device import Recorded, fake_device
    from tests.launch_paths import module_launchers, rebuild
    from tests.helpers.launch import LR, buffers

    from layoutgen.runtime import program as runtime_program

    fake_device(monkeypatch)
    monkeypatch.setattr(runtime_program, "find_device", lambda: 0)
    monkeypatch.setattr(runtime_program, "device_arch", lambda device: "sm_90")
    monkeypatch.setattr(vsn._lg_program_vsn_step, "_ready", {})
    given = buffers()

    def run(path: str) -> list[tuple[str, int, int, list[int]]]:
        take_path(monkeypatch, path)
        made: list[tuple[str, int, int, list[int]]] = []
        for k in module_launchers():
            recorder = Recorded(lambda blocks, block, values, stream, name=k.spec.name: made.append(
                (name, blocks, block, list(values))))
            monkeypatch.setattr(k, "function", lambda device, arch, recorder=recorder: recorder)
            rebuild(monkeypatch, k)
        COMPILED.clear()
        for _ in range(2):
            vsn.vsn_step(**given, lr=LR)
        return made

    yield run


def test_a_program_launches_its_steps_in_one_compiled_call_as_the_python_path_does(hooked: None, program: Any) -> None:
    import generated.vsn as vsn

    python = program("python")
    compiled = program("compiled")
    assert compiled == python and len(python) == 14
    assert len(COMPILED) == 14  # every step through the C Steps (the hook stands in for cuLaunchKernel)
    (ready,) = vsn._lg_program_vsn_step._ready.values()  # prepared once, reused by the second run
    assert ready.steps is not None


def test_a_program_step_the_driver_refuses_is_launched_by_the_python_path_with_the_rest(program: Any) -> None:
    calls: list[int] = []

    def refusing_the_third(*args: Any) -> Any:
        calls.append(1)
        if len(calls) == 3:
            return False  # the driver refused it: nothing ran
        return replay(*args)

    EXT.set_hook(refusing_the_third, current_device)
    try:
        compiled = program("compiled")
    finally:
        EXT.set_hook(None)
    EXT.set_hook(replay, current_device)
    try:
        assert compiled == program("python") and len(compiled) == 14
    finally:
        EXT.set_hook(None)
    assert len(calls) == 3 + 7  # run 1: two launched, the third refused (the Python path launched it and the rest)
