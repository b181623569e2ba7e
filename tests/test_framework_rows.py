"""The rows of ``runtime/arrays.py``'s ``FRAMEWORKS`` as the launch path uses them, without a GPU.

- JAX arrays (a fake ``jax`` module whose ``Array`` class the fake arrays subclass, as ``jaxlib``'s
  ``ArrayImpl`` subclasses ``jax.Array``) take a keyed fast read: a repeated launch is validated once, on
  both launch paths, and a written JAX array is refused (LG607) as JAX arrays are immutable.
- An object that offers only ``__dlpack__`` and ``__dlpack_device__`` (a fake producer that builds real
  DLPack capsules with ctypes and counts its deleter's calls) is read through its capsule, the legacy and the
  versioned one, and launches; one on the host, one of another dtype or with lanes is refused with the
  array named; every capsule's tensor is released exactly once, refused or not.
- A framework's launch rules are the row's: a written-array rule of a row added in a test is checked
  before the launch and recorded after it, by the launcher that never names it, and a plan with a rule the
  compiled path does not apply stays on the Python path.
- The stream a launch given none runs on is the row's: a row added in a test with a current stream of its own
  is launched on it by the launcher that never names it, on both paths (the compiled one hands such a call to
  the Python path).

Property tests: any mix of arrays of rows with and without their own current stream runs on the stream
given, the one current stream of its libraries, or is refused with LG616 naming two rows whose differ; any JAX
array (right or wrong in shape, dtype, alignment, device, platform, memory kind,
deleted) is launched or refused alike by both paths; a DLPack read of any shape, strides, dtype, offset and
device says what the ``__cuda_array_interface__`` read of the same array says.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutgen.runtime import arrays, launch, readers
from layoutgen.runtime.arrays import FRAMEWORKS, JAX, ArrayKindError, array_info, framework_of
from layoutgen.runtime.launch import KernelLauncher, LaunchError
from tests.helpers.compiled import device, hooked, launcher, outcome  # noqa: F401  (fixtures)
from tests.helpers.dlpack_producer import DELETED, LIVE, DLPackOnly
from tests.helpers.jax_fakes import FakeJaxArray, JaxArray
from tests.helpers.launch import BASE, FWD, B, Dev, K, counted_launcher, dev_reader
from tests.launch_paths import launch_path, take_path  # noqa: F401  (the fixture: every test through both launch paths)


@pytest.fixture
def fwd(monkeypatch: pytest.MonkeyPatch) -> tuple[KernelLauncher, list[tuple[Any, ...]], list[int]]:
    """A fresh variable_selection_fwd launcher with the GPU faked: it, its launches, and a count of full binds."""
    return counted_launcher(monkeypatch)


SHAPES = {"x": (B, K, 56), "W": (40, 40), "b": (40,), "gates": (B, K, 40), "y": (B, K, 40)}


# -- JAX ---------------------------------------------------------------------------------------------------


@pytest.fixture
def fake_jax(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A module named ``jax`` whose ``Array`` is :class:`JaxArray` (arrays exist only once jax is imported)."""
    module = types.ModuleType("jax")
    module.Array = JaxArray  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "jax", module)
    monkeypatch.setattr(arrays, "_READERS", {})
    yield
    readers.FAST_READERS.pop(FakeJaxArray, None)  # found while the fake jax was imported


def jax_args(offset: int = 0, **replace_: Any) -> list[Any]:
    made: dict[str, Any] = {name: FakeJaxArray(shape, BASE + i * 0x100000 + offset)
                            for i, (name, shape) in enumerate(SHAPES.items())}
    made.update(replace_)
    return list(made.values())


@pytest.mark.usefixtures("fake_jax")
def test_a_jax_array_takes_the_rows_keyed_fast_read() -> None:
    a = FakeJaxArray((4, 40), BASE)
    assert framework_of(FakeJaxArray, a) is JAX
    reader = readers.FAST_READERS.get(FakeJaxArray)
    assert reader is JAX.fast_reader is not None
    signature, info = readers.read_once(a)
    assert signature is not None and signature[0] is FakeJaxArray
    assert (info.ptr, info.shape, info.strides, info.dtype, info.device, info.readonly) == (
        BASE, (4, 40), (40, 1), "float32", 0, True)
    assert array_info(a) == info  # the full read is the same read


@pytest.mark.usefixtures("fake_jax")
def test_jax_inputs_are_validated_once_and_launched_every_time(
        fwd: Any, monkeypatch: pytest.MonkeyPatch, launch_path: str) -> None:
    k, launched, binds = fwd
    monkeypatch.setitem(readers.FAST_READERS, Dev, dev_reader)
    outputs = {"gates": FakeJaxArray((B, K, 40), BASE + 0x300000), "y": FakeJaxArray((B, K, 40), BASE + 0x400000)}
    with pytest.raises(LaunchError) as refused:
        k(*jax_args(**outputs))
    assert refused.value.code == "LG607"
    assert str(refused.value).split("\n")[0] == (
        "error[LG607]: `variable_selection_fwd.gates` (Features, layout Features [B, K, 40] f32) is "
        "written by the kernel but the array is read-only (e.g. a JAX buffer); got shape [4, 8, 40], strides "
        "(320, 40, 1) (elements), f32 on device 0")
    writable = {"gates": Dev((B, K, 40), ptr=BASE + 0x300000), "y": Dev((B, K, 40), ptr=BASE + 0x400000)}
    binds.clear()
    k(*jax_args(**writable))
    k(*jax_args(0x40000, **writable))  # other buffers of the same kinds, shapes and devices: no new validation
    assert len(binds) == 1 and len(launched) == 2
    assert [tuple(values[:3]) for _, _, values, _ in launched] == [
        (BASE, BASE + 0x100000, BASE + 0x200000), (BASE + 0x40000, BASE + 0x140000, BASE + 0x240000)]
    (key,) = k._plans
    assert [type(s) is tuple and s[0] for s in key[1:4]] == [FakeJaxArray] * 3  # keyed on the JAX reads
    if launch_path == "compiled":  # taught to the C side, which reads JAX arrays through the row's reader
        hits = k._fast.hits
        k(*jax_args(0x80000, **writable))
        assert k._fast.hits == hits + 1 and len(binds) == 1 and len(launched) == 3


@st.composite
def jax_arrays(draw: st.DrawFn) -> tuple[str, Any]:
    """An input of variable_selection_fwd (x, W or b) as a JAX array, right or wrong in one or more ways."""
    index = draw(st.integers(0, 2))
    name, shape = list(SHAPES.items())[index]
    if draw(st.booleans()):
        shape = draw(st.sampled_from([shape[:-1] + (shape[-1] + 1,), (*shape, 1), shape[1:] or (2,), (5, *shape[1:])]))
    return name, FakeJaxArray(
        shape, BASE + index * 0x100000 + draw(st.sampled_from([0, 0x40000, 1, 2, 4, 16])),
        draw(st.sampled_from(["float32", "float32", "float16", "float64", "int32"])), draw(st.sampled_from([0, 0, 1])),
        draw(st.sampled_from(["gpu", "gpu", "cpu"])), draw(st.sampled_from(["device", "device", "pinned_host"])),
        draw(st.booleans()) and draw(st.booleans()),
        draw(st.none() | st.permutations(range(len(shape))).map(tuple)))


@pytest.mark.usefixtures("fake_jax", "hooked")
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(drawn=jax_arrays())
def test_the_compiled_path_takes_or_hands_over_a_jax_array_exactly_as_the_python_path_decides(
        device: dict[str, int], monkeypatch: pytest.MonkeyPatch, drawn: tuple[str, Any]) -> None:
    name, array = drawn
    writable = {"gates": Dev((B, K, 40), ptr=BASE + 0x300000), "y": Dev((B, K, 40), ptr=BASE + 0x400000)}
    results = {}
    for path in ("python", "compiled"):
        take_path(monkeypatch, path)
        launched: list[tuple[Any, ...]] = []
        k = launcher(FWD.spec, launched)
        k(*jax_args(**writable))  # planned (and taught to the C side)
        results[path] = (outcome(lambda: k(*jax_args(**writable, **{name: array}))), [v for _, _, v, _ in launched])
    assert results["compiled"] == results["python"]


@pytest.mark.usefixtures("fake_jax")
@pytest.mark.parametrize(("array", "message"), [
    (FakeJaxArray((40,), BASE, platform="cpu"), "a jax array on cpu device 0 is not on a CUDA device"),
    (FakeJaxArray((40,), BASE, memory_kind="pinned_host"),
     "a jax array in `pinned_host` memory is not in device memory"),
    (FakeJaxArray((40,), BASE, deleted=True),
     "a jax array whose buffer cannot be read (RuntimeError: Array has been deleted with shape=float32[40].)"),
    (FakeJaxArray((40, 40), BASE, major_to_minor=(1, 0)),
     "a jax array whose device layout is (1, 0) (major to minor) is not row-major: it would be read as if it were"),
])
def test_a_jax_array_the_fast_read_cannot_take_is_refused_with_it_named(array: Any, message: str) -> None:
    with pytest.raises(ArrayKindError) as refused:
        array_info(array)
    assert str(refused.value) == message
    with pytest.raises(ArrayKindError) as again:
        readers.read_once(array)
    assert str(again.value) == message


# -- a DLPack-only producer ------------------------------------------------------------------------------

@pytest.fixture
def capsules() -> Any:
    LIVE.clear()
    DELETED.clear()
    yield
    assert not LIVE, "a DLPack capsule's tensor was never released"


def dlpack_args(offset: int = 0, **kw: Any) -> list[DLPackOnly]:
    return [DLPackOnly(shape, BASE + i * 0x100000 + offset, **kw) for i, shape in enumerate(SHAPES.values())]


@pytest.mark.usefixtures("capsules")
@pytest.mark.parametrize("versioned", [True, False])
def test_a_dlpack_only_producer_is_read_through_its_capsule_and_the_capsule_released(versioned: bool) -> None:
    a = DLPackOnly((4, 40), BASE + 0x40, versioned=versioned, byte_offset=0x40, readonly=True)
    info = array_info(a)
    assert (info.ptr, info.shape, info.strides, info.dtype, info.device, info.readonly) == (
        BASE + 0x40, (4, 40), (40, 1), "float32", 0, versioned)  # only the versioned struct has the flag
    assert len(DELETED) == 1 and not LIVE
    strided = array_info(DLPackOnly((4, 40), BASE, strides=(1, 4), versioned=versioned, device=(2, 3)))
    assert (strided.strides, strided.device) == ((1, 4), 3)
    assert array_info(DLPackOnly((2,), BASE, dtype="bfloat16", versioned=versioned)).dtype == "bfloat16"
    assert len(DELETED) == 3


TYPESTRS = {"float32": "<f4", "float16": "<f2", "int32": "<i4", "uint8": "|u1", "bool": "|b1", "bfloat16": "<V2"}


@pytest.mark.usefixtures("capsules")
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(shape=st.lists(st.integers(0, 5), max_size=4).map(tuple), data=st.data(),
       dtype=st.sampled_from(sorted(TYPESTRS)), versioned=st.booleans(), readonly=st.booleans(),
       offset=st.sampled_from([0, 0x40, 0x1000]), device=st.integers(0, 3))
def test_a_dlpack_read_says_what_the_interface_read_of_the_same_array_says(
        shape: tuple[int, ...], data: st.DataObject, dtype: str, versioned: bool, readonly: bool, offset: int,
        device: int) -> None:
    strides = data.draw(st.none() | st.tuples(*[st.integers(-50, 50) for _ in shape]))
    deleted = len(DELETED)
    got = array_info(DLPackOnly(shape, BASE + offset, dtype, (2, device), strides, versioned, readonly,
                                byte_offset=offset))
    itemsize = 1 if TYPESTRS[dtype].endswith(("1",)) else int(TYPESTRS[dtype][-1])
    want = arrays.interface_info(shape, TYPESTRS[dtype], None if strides is None else [s * itemsize for s in strides],
                                 BASE + offset, readonly and versioned, device)
    assert got == want and len(DELETED) == deleted + 1


class BeforeVersions(DLPackOnly):
    """A producer from before DLPack 1.0: ``__dlpack__`` takes no ``max_version``."""

    def __dlpack__(self, *, stream: Any = None) -> Any:  # type: ignore[override]
        return super().__dlpack__(stream=stream)


@pytest.mark.usefixtures("capsules")
def test_a_producer_from_before_dlpack_1_is_asked_without_max_version() -> None:
    info = array_info(BeforeVersions((4, 40), BASE, readonly=True))
    assert (info.shape, info.readonly) == ((4, 40), False) and len(DELETED) == 1


@pytest.mark.usefixtures("capsules", "launch_path")
def test_dlpack_only_arrays_launch_and_are_validated_on_every_call(fwd: Any) -> None:
    k, launched, binds = fwd
    given = dlpack_args()
    k(*given)
    k(*dlpack_args(0x40000))
    assert len(launched) == 2 and len(binds) == 2  # no fast read: each call is validated
    assert [tuple(values) for _, _, values, _ in launched] == [
        tuple(BASE + i * 0x100000 for i in range(5)) + (B, K),
        tuple(BASE + i * 0x100000 + 0x40000 for i in range(5)) + (B, K)]
    assert len(DELETED) == 10


@pytest.mark.usefixtures("capsules", "launch_path")
@pytest.mark.parametrize(("change", "message"), [
    ({"device": (1, 0)}, "{kind} on DLPack device type 1 (kDLCPU) is not on a CUDA "
                          "device"),
    ({"device": (3, 0)}, "{kind} on DLPack device type 3 (kDLCUDAHost) is not on a "
                          "CUDA device"),
    ({"dtype": "complex64"}, "{kind} has DLPack dtype code 5 (kDLComplex), 64 bits, "
                             "which layoutgen does not read"),
    ({"dtype": "float8"}, "{kind} has DLPack dtype code 2 (kDLFloat), 8 bits, which "
                          "layoutgen does not read"),
    ({"version": (2, 0)}, "{kind} exported a DLPack 2.0 tensor: layoutgen reads DLPack 1"),
    ({"lanes": 4}, "{kind} has DLPack dtype lanes 4: vector elements are not read "
                   "(lanes must be 1)"),
])
def test_a_dlpack_array_layoutgen_cannot_take_is_refused_with_it_named(
        fwd: Any, change: dict[str, Any], message: str) -> None:
    k, launched, _ = fwd
    message = message.format(kind=f"{DLPackOnly.__module__}.DLPackOnly")
    bad = DLPackOnly((40, 40), BASE + 0x100000, **change)
    given = dlpack_args()
    given[1] = bad
    with pytest.raises(LaunchError) as refused:
        k(*given)
    assert refused.value.code == "LG608" and not launched
    assert str(refused.value).split("\n")[0] == (
        f"error[LG608]: `variable_selection_fwd.W` (Weights, layout Weights [40, 40] f32): {message}")
    with pytest.raises(ArrayKindError) as direct:
        array_info(bad)
    assert str(direct.value) == message


def test_an_object_with_both_interfaces_is_read_through_cuda_array_interface() -> None:
    class Both(DLPackOnly):
        __cuda_array_interface__ = {"version": 3, "shape": (3,), "typestr": "<f4", "data": (BASE, False),
                                    "strides": None}

    both = Both((5,), BASE + 0x100)
    assert array_info(both).shape == (3,) and both.exported == 0


def test_a_host_array_keeps_its_message_though_numpy_speaks_dlpack() -> None:
    with pytest.raises(ArrayKindError) as refused:
        array_info(np.zeros((2, 3), np.float32))
    assert str(refused.value) == "a host array (numpy.ndarray, shape [2, 3], f32) is not on a CUDA device"


# -- the rules are the row's -----------------------------------------------------------------------------


class Tracked:
    """An array of a framework that only exists in this test; it answers torch's questions of a written tensor
    as one that may be written, so that only its own rule can refuse it."""

    requires_grad = False

    def __init__(self, shape: tuple[int, ...], ptr: int) -> None:
        self.shape, self.ptr = shape, ptr

    def is_inference(self) -> bool:
        return False


class TrackedWrites:
    """A written-array rule: refuses a launch while ``LOCKED``, records what it wrote."""

    LOCKED: list[bool] = []
    RECORDED: list[tuple[int, ...]] = []
    in_c = False

    def __init__(self, indices: tuple[int, ...], who: Any) -> None:
        self.indices, self.who = indices, who

    def check(self, kernel: str, params: Any, arrays: Any) -> None:
        if self.LOCKED:
            raise launch.launch_error("LG618", f"{self.who(kernel, params[self.indices[0]])} is locked")

    def record(self, arrays: Any) -> None:
        self.RECORDED.append(self.indices)


def tracked_row() -> Any:
    from layoutgen.runtime.arrays import ArrayInfo, packed_strides

    def read(a: Tracked) -> tuple[tuple[Any, ...], int]:
        return (Tracked, a.shape), a.ptr

    def info(a: Any, signature: tuple[Any, ...], ptr: int) -> ArrayInfo:
        return ArrayInfo(ptr, signature[1], packed_strides(signature[1]), "float32", 0, False)

    return replace(JAX, name="tracked", array_types=lambda kind: issubclass(kind, Tracked),
                   owns=lambda kind, a: False, info=lambda a: info(a, *read(a)), fast_reader=read, fast_info=info,
                   refuse=None, written=TrackedWrites)


@pytest.fixture
def tracked(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    pytest.importorskip("torch")  # the compiled path knows torch's rule (as in a run with torch imported)
    row = tracked_row()
    monkeypatch.setattr(arrays, "FRAMEWORKS", (*FRAMEWORKS, row))
    monkeypatch.setattr(arrays, "_READERS", {})
    TrackedWrites.LOCKED.clear()
    TrackedWrites.RECORDED.clear()
    yield row
    readers.INFOS.pop(readers.FAST_READERS.pop(Tracked, None), None)  # found while the row was in the table


def test_a_row_added_to_the_table_is_read_by_every_reader(tracked: Any) -> None:
    a = Tracked((3, 40), BASE)
    assert framework_of(Tracked, a) is tracked
    assert array_info(a).shape == (3, 40)
    assert readers.FAST_READERS.get(Tracked) is tracked.fast_reader
    assert readers.read_once(a)[0] == (Tracked, (3, 40))


@pytest.mark.usefixtures("launch_path")
def test_a_rows_written_rule_is_checked_before_and_recorded_after_every_launch(tracked: Any, fwd: Any) -> None:
    k, launched, _ = fwd
    given = [Tracked(shape, BASE + i * 0x100000) for i, shape in enumerate(SHAPES.values())]
    k(*given)
    hits = k._fast.hits if k._fast is not None else 0
    k(*given)
    assert len(launched) == 2 and TrackedWrites.RECORDED == [(3, 4), (3, 4)]  # gates and y are written
    if k._fast is not None:  # a rule the C side does not apply keeps the plan on the Python path
        assert k._fast.hits == hits and k._fast.plans == 0
    TrackedWrites.LOCKED.append(True)
    with pytest.raises(LaunchError) as refused:
        k(*given)
    assert str(refused.value).split("\n")[0] == (
        "error[LG618]: `variable_selection_fwd.gates` (Features, layout Features [B, K, 40] f32) is locked")
    assert len(launched) == 2


# -- the stream of a launch given none is the row's ------------------------------------------------------------


class Streamed(Tracked):
    """An array of a framework with a current stream of its own (``streamed_row``), existing only in this test."""


class Other(Tracked):
    """An array of a second such framework (``other_row``)."""


def streamed_row(name: str, kind: type, handles: dict[str, int]) -> Any:
    """A row, added in a test, whose arrays are ``kind``'s and whose current stream on device d is a protocol
    stream of handle ``handles[name] + d``; it writes with no rule of its own."""
    from tests.helpers.launch import ProtocolStream

    return replace(tracked_row(), name=name, array_types=lambda k: issubclass(k, kind), written=None,
                   current_stream=lambda device: ProtocolStream(handles[name] + device))


@pytest.fixture
def streamed(monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, int]]:
    """Two rows with current streams of their own (``streamed`` and ``other``) added to the table; the handles
    of their current streams, which a test may change; CuPy's current stream is 0x51."""
    from types import SimpleNamespace

    from layoutgen.runtime import driver

    handles = {"streamed": 0x700, "other": 0x900}
    rows = (streamed_row("streamed", Streamed, handles), streamed_row("other", Other, handles))
    monkeypatch.setattr(arrays, "FRAMEWORKS", (*FRAMEWORKS, *rows))
    monkeypatch.setattr(arrays, "_READERS", {})
    monkeypatch.setattr(driver, "_CURRENT_STREAM", lambda: SimpleNamespace(ptr=0x51))
    yield handles
    for kind in (Streamed, Other):
        readers.INFOS.pop(readers.FAST_READERS.pop(kind, None), None)  # found while the rows were in the table


@pytest.mark.usefixtures("launch_path")
def test_a_launch_given_no_stream_runs_on_the_current_stream_of_a_row_added_to_the_table(
        streamed: dict[str, int], fwd: Any) -> None:
    """The launcher, which never names the row, asks it for its current stream on the launch's device: on both
    paths, every call (the compiled path hands such a call to the Python path, which asks the row)."""
    from layoutgen.runtime import driver

    k, launched, _ = fwd
    given = [Streamed(shape, BASE + i * 0x100000) for i, shape in enumerate(SHAPES.values())]
    k(*given)
    streamed["streamed"] = 0x7100  # the row's current stream changed between two calls of one plan
    k(*given)
    assert [driver.stream_handle(stream) for *_, stream in launched] == [0x700, 0x7100]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(kinds=st.lists(st.sampled_from(["streamed", "other", "plain"]), min_size=1, max_size=5),
       streamed_handle=st.sampled_from([0x51, 0x700]), other_handle=st.sampled_from([0x51, 0x700, 0x900]),
       given_stream=st.booleans())
def test_a_launch_given_no_stream_follows_its_arrays_rows(
        streamed: dict[str, int], kinds: list[str], streamed_handle: int, other_handle: int,
        given_stream: bool) -> None:
    """Any mix of arrays of rows with and without a current stream of their own: a stream given is used as given;
    over none of those rows, CuPy's current stream (None); over one row's alone, its current stream; over
    several libraries, their one stream where their current streams are one (None where CuPy's is among them),
    else LG616 naming, by the rows' names, the first two in the arrays' order whose current streams differ."""
    from layoutgen.runtime import driver
    from tests.helpers.launch import Dev, ProtocolStream

    streamed.update(streamed=streamed_handle, other=other_handle)
    made = {"streamed": lambda: Streamed((2,), BASE), "other": lambda: Other((2,), BASE), "plain": lambda: Dev((2,))}
    given = [made[kind]() for kind in kinds]
    stream = ProtocolStream(0x99) if given_stream else None
    own = driver.own_streams(given)
    assert own == sum(kind != "plain" for kind in kinds)
    try:
        got = driver.launch_stream(stream, given, own, "k", 0)
    except LaunchError as error:
        got = error
    libraries = list(dict.fromkeys(kinds))  # in the arrays' order, "plain" (CuPy's) last
    if "plain" in libraries:
        libraries.remove("plain")
        libraries.append("plain")
    handle = {"streamed": streamed_handle, "other": other_handle, "plain": 0x51}
    if given_stream or not own:
        assert got is stream
    elif len({handle[name] for name in libraries}) == 1:
        assert got is None if "plain" in libraries else driver.stream_handle(got) == handle[libraries[0]]
    else:
        first, second = next((a, b) for a, b in zip(libraries, libraries[1:]) if handle[a] != handle[b])
        assert isinstance(got, LaunchError) and got.code == "LG616"
        second_name = "another library" if second == "plain" else second
        stream_name = "CuPy" if second == "plain" else second
        assert str(got).split("\n")[0] == (
            f"error[LG616]: `k`: `stream` is None, but the arrays come from {first} and from {second_name}, whose "
            f"current streams differ: {first}'s is 0x{handle[first]:x}, {stream_name}'s 0x{handle[second]:x}")
        assert got.diagnostic.hint == (
            f"pass the stream to launch on ({first}'s current stream, or the {stream_name} stream): a launch on "
            "either may race with the other library's work")
