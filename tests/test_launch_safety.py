"""Launch-time refusals beyond one array's fit, without a GPU: shared memory, streams, grids, byte order, no device.

Fake device arrays (``__cuda_array_interface__``, from test_launch_validation)
stand in for CuPy ones; where a call would reach the GPU, the launch function
is replaced by a recorder, so "nothing ran" is visible. Messages are asserted
word for word.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.launch_paths import launch_path  # noqa: F401  (the fixture: every test through both launch paths)
from hypothesis import given, settings
from hypothesis import strategies as st

import generated.vsn as vsn
from layoutgen.runtime import driver, launch
from layoutgen.runtime.launch import MAX_GRID_BLOCKS, KernelLauncher, KernelSpec, LaunchError, LayoutSpec, ParamSpec
from layoutgen.runtime.program import ProgramGraph
from tests.helpers.launch import (BASE, FWD, B, Dev, K, ProtocolStream, fwd_args, launched,  # noqa: F401  (the fixture)
                                  launcher_of)

pytestmark = pytest.mark.usefixtures("launch_path")

GATES, Y = BASE + 0x300000, BASE + 0x400000  # where fwd_args puts the two outputs
FEATURES = B * K * 40 * 4  # bytes of one Features array
WHO = {name: f"`variable_selection_fwd.{name}` ({view}, layout {lay})" for name, view, lay in [
    ("x", "Window.snap", "Window [B, K, 56] f32"), ("W", "Weights", "Weights [40, 40] f32"),
    ("gates", "Features", "Features [B, K, 40] f32"), ("y", "Features", "Features [B, K, 40] f32"),
]}
SHARE_HINT = "give a written parameter an array of its own (e.g. `.copy()`); arrays that are only read may be shared"


def refused(code: str, call: Any) -> LaunchError:
    with pytest.raises(LaunchError) as info:
        call()
    assert info.value.code == code, str(info.value)
    return info.value


# item 5: memory shared with a written argument ---------------------------------------------------------


def test_two_outputs_given_one_array_are_refused(launched: list[Any]) -> None:
    shared = Dev((B, K, 40), ptr=GATES)
    err = refused("LG614", lambda: vsn.variable_selection_fwd(*fwd_args(gates=shared, y=shared)))
    assert str(err) == (
        f"error[LG614]: {WHO['gates']} and {WHO['y']} share memory (bytes 0x{GATES:x}..0x{GATES + FEATURES:x} and "
        f"0x{GATES:x}..0x{GATES + FEATURES:x}), and the kernel writes both: its pointers are `__restrict__`, so it "
        f"may read stale or half-written values\n  hint: {SHARE_HINT}")
    assert launched == []


def test_an_input_that_is_also_an_output_is_refused(launched: list[Any]) -> None:
    mse = launcher_of(vsn, "mse_grad")  # (y: in, target: in, grad_y: out), all Features
    y = Dev((B, K, 40), ptr=GATES)
    err = refused("LG614", lambda: vsn.mse_grad(y, Dev((B, K, 40), ptr=Y), y))
    assert "`mse_grad.y` (Features, layout Features [B, K, 40] f32) and `mse_grad.grad_y`" in str(err)
    assert "and the kernel writes `grad_y`: its pointers are `__restrict__`" in str(err)
    x_as_gates = Dev((B, K, 40), ptr=BASE)  # an output placed over the Window the kernel reads
    err = refused("LG614", lambda: FWD.check(fwd_args(gates=x_as_gates), 0))
    assert str(err).startswith(f"error[LG614]: {WHO['x']} and {WHO['gates']} share memory (bytes 0x{BASE:x}..")
    assert "the kernel writes `gates`" in str(err)
    assert launched == [] and mse.spec.params[2].writes


@pytest.mark.parametrize("offset", [40 * 4, FEATURES - 16, -(FEATURES - 40 * 4)])
def test_outputs_that_overlap_in_part_are_refused(offset: int) -> None:
    # y = big[1:], gates = big[:-1]: all rows but one shared; or one 16-byte group (the outputs are
    # written in 16-byte groups: their launcher checks that alignment first); or y before gates
    err = refused("LG614", lambda: FWD.check(fwd_args(y=Dev((B, K, 40), ptr=GATES + offset)), 0))
    assert f"{WHO['gates']} and {WHO['y']} share memory (bytes 0x{GATES:x}..0x{GATES + FEATURES:x} and " \
        f"0x{GATES + offset:x}..0x{GATES + offset + FEATURES:x})" in str(err)


@pytest.mark.parametrize("offset", [FEATURES, -FEATURES, 0x100000])
def test_outputs_that_touch_without_overlapping_are_accepted(offset: int) -> None:
    assert FWD.check(fwd_args(y=Dev((B, K, 40), ptr=GATES + offset)), 0)[1] == [
        BASE, BASE + 0x100000, BASE + 0x200000, GATES, GATES + offset]


def test_arrays_that_are_only_read_may_be_shared() -> None:
    stats = Dev((40, 2), ptr=BASE + 0x100000)  # mean and inv_std are two fields of one FeatureStats
    window = Dev((B, K, 56), ptr=BASE + 0x200000)
    launcher_of(vsn, "snap_feature_assemble").check((Dev((B, K, 40)), stats, stats, window), 0)
    FWD.check(fwd_args(b=Dev((40,), ptr=BASE + 0x100000)), 0)  # b inside W: both inputs


ROW = LayoutSpec("Row", ("N",), 8, "f32", 4)
OBS = LayoutSpec("Obs", ("N", 3), 8, "f32", 4)


def two(first: ParamSpec, second: ParamSpec, may_alias: tuple[tuple[str, str], ...] = ()) -> KernelLauncher:
    spec = KernelSpec("pair", "pair.cu", (first, second), symbols=("N",), grid_param=0, per_row=1, block=64,
                      may_alias=may_alias)
    return KernelLauncher(spec, FWD.folder, FWD.header)


def test_two_disjoint_fields_of_one_array_may_both_be_written() -> None:
    # rope(buf, buf): q and k are fields of one QKV row; the plan says where each lies
    k = two(ParamSpec("lo", "inout", ROW, "Row.lo", 4, cols=(0, 4)),
            ParamSpec("hi", "out", ROW, "Row.hi", 4, cols=(4, 8)))
    row = Dev((5, 8))
    assert k.check((row, row), 0)[1] == [BASE, BASE]
    err = refused("LG614", lambda: k.check((row, Dev((5, 8), ptr=BASE + 16)), 0))  # not one array: shifted by 4
    assert "the kernel writes both" in str(err)
    overlapping = two(ParamSpec("a", "in", ROW, "Row.a", 4, cols=(0, 5)), ParamSpec("b", "out", ROW, "Row.b", 4,
                                                                                      cols=(4, 8)))
    assert refused("LG614", lambda: overlapping.check((row, row), 0)).hint == SHARE_HINT


def test_two_named_ranges_of_one_array_may_both_be_written() -> None:
    k = two(ParamSpec("t0", "out", OBS, "Obs.t0", 4, cols=(0, 8), rows=(1, 0, 1)),
            ParamSpec("rest", "out", OBS, "Obs.rest", 4, cols=(0, 8), rows=(1, 1, 3)))
    obs = Dev((5, 3, 8))
    k.check((obs, obs), 0)
    crossing = two(ParamSpec("t0", "out", OBS, "Obs.t0", 4, cols=(0, 8), rows=(1, 0, 2)),
                   ParamSpec("snap", "in", OBS, "Obs.snap", 4, cols=(0, 2)))
    refused("LG614", lambda: crossing.check((obs, obs), 0))


def test_fields_of_one_array_count_as_overlapping_where_the_module_does_not_say_where_they_lie() -> None:
    # modules whose template emitted cols= only for debug builds: the check cannot tell the fields apart
    k = two(ParamSpec("lo", "inout", ROW, "Row.lo", 4), ParamSpec("hi", "out", ROW, "Row.hi", 4))
    row = Dev((5, 8))
    err = refused("LG614", lambda: k.check((row, row), 0))
    assert err.hint == (
        f"{SHARE_HINT}; this generated module does not record where its views lie in a row, so two fields of one "
        "array count as overlapping: regenerate it with this version of layoutgen")


def test_a_pair_the_kernel_declares_may_share_memory() -> None:
    # the hook for a kernel that allows aliasing (its pointers then not __restrict__): nothing declares one yet
    assert KernelSpec("k", "k.cu", (), (), 0, 1, 64).may_alias == ()
    row = Dev((5, 8))
    k = two(ParamSpec("x", "in", ROW, "Row", 4), ParamSpec("y", "out", ROW, "Row", 4), may_alias=(("y", "x"),))
    assert k.check((row, row), 0)[1] == [BASE, BASE]


def test_an_empty_array_shares_no_memory() -> None:
    FWD.check(fwd_args(0, K, gates=Dev((0, K, 40), ptr=BASE + 0x400000)), 0)  # y and gates at one address, no bytes


def test_a_program_refuses_buffers_that_overlap_in_part(launched: list[Any]) -> None:
    from tests.helpers.launch import LR, SHAPES, buffers

    gates = list(SHAPES).index("gates")
    shifted = Dev((B, K, 40), ptr=BASE + gates * 0x100000 + 160)  # y starts one row into gates
    err = refused("LG613", lambda: vsn.vsn_step(**buffers(y=shifted), lr=LR))
    assert "same memory for buffers `gates` and `y`" in str(err)
    assert launched == []


@settings(max_examples=300, deadline=None)
@given(accesses=st.lists(st.sampled_from(["in", "out", "inout"]), min_size=2, max_size=4),
       rows=st.lists(st.integers(0, 3), min_size=4, max_size=4),
       slots=st.lists(st.integers(0, 24), min_size=4, max_size=4))
def test_refused_exactly_when_a_written_arguments_bytes_meet_another(
        accesses: list[str], rows: list[int], slots: list[int]) -> None:
    """Arrays of 0..3 rows of 16 bytes at 4-byte slots: LG614 iff some pair with a writer shares a byte."""
    params = tuple(ParamSpec(f"p{i}", a, LayoutSpec(f"L{i}", (f"N{i}",), 4, "f32", 4), f"L{i}", 4)
                   for i, a in enumerate(accesses))
    spec = KernelSpec("prop", "prop.cu", params, symbols=(), grid_param=0, per_row=1, block=64)
    arrays = tuple(Dev((rows[i], 4), ptr=BASE + 4 * slots[i]) for i in range(len(params)))
    spans = [set(range(4 * slots[i], 4 * slots[i] + 16 * rows[i])) for i in range(len(params))]
    clash = [(i, j) for i in range(len(params)) for j in range(i + 1, len(params))
             if "out" in accesses[i] + accesses[j] and spans[i] & spans[j]]
    k = KernelLauncher(spec, FWD.folder, FWD.header)
    if not clash:
        k.check(arrays, 0)
        return
    err = refused("LG614", lambda: k.check(arrays, 0))
    i, j = clash[0]
    assert str(err).startswith(f"error[LG614]: `prop.p{i}` (L{i}, layout L{i} [N{i}, 4] f32) and `prop.p{j}` ")


# item 7: streams -------------------------------------------------------------------------------------

STREAM_MUST = ("`stream` must be a CuPy stream, a torch stream, an object with `__cuda_stream__`, or None (the "
               "current stream of the arrays' library)")
STREAM_HINT = ("pass the stream object itself (`cupy.cuda.Stream()`, `torch.cuda.current_stream()`): a raw handle "
               "cannot be checked, and a wrong one crashes the process")


class BadProtocol:  # named in messages by its module and name
    def __init__(self, returns: Any) -> None:
        self.returns = returns

    def __cuda_stream__(self) -> Any:
        return self.returns

    def __repr__(self) -> str:
        return "<BadProtocol>"


BAD = f"{BadProtocol.__module__}.BadProtocol"


@pytest.mark.parametrize(("stream", "got"), [
    (12345, "got 12345 (int)"),  # a bare handle segfaulted the process
    (-1, "got -1 (int)"),  # raised OverflowError
    (0, "got 0 (int)"),
    (True, "got True (bool)"),
    ("default", "got 'default' (str)"),
    (BadProtocol((1, 5)), f"got <BadProtocol> ({BAD}); its `__cuda_stream__()` "
     "returned (1, 5), not (0, handle)"),
    (BadProtocol(5), f"got <BadProtocol> ({BAD}); its `__cuda_stream__()` returned 5, "
     "not (0, handle)"),
    (BadProtocol((0, -1)), f"got <BadProtocol> ({BAD}); its handle is -1, not a CUstream"),
    (BadProtocol((0, 2**64)), f"got <BadProtocol> ({BAD}); its handle is {2**64}, not "
     "a CUstream"),
])
def test_a_stream_that_is_not_a_stream_object_is_refused(stream: Any, got: str, launched: list[Any]) -> None:
    err = refused("LG616", lambda: vsn.variable_selection_fwd(*fwd_args(), stream=stream))
    assert str(err) == f"error[LG616]: `variable_selection_fwd`: {STREAM_MUST}, {got}\n  hint: {STREAM_HINT}"
    assert launched == []


def test_stream_objects_are_accepted() -> None:
    import cupy

    assert driver.stream_handle(ProtocolStream(0x1234)) == 0x1234
    assert driver.stream_handle(cupy.cuda.Stream.null) == 0
    assert driver.stream_handle(cupy.cuda.Stream.from_external(ProtocolStream(0x99))) == 0x99
    driver.check_stream(None, "k")  # the current stream, found at the launch


def test_both_launch_paths_refuse_a_bare_handle_before_calling_the_driver() -> None:
    import ctypes
    import threading

    calls: list[Any] = []
    packed = object.__new__(driver.PackedLaunch)  # without cuda.bindings: its driver call faked
    packed.__dict__.update(_launch=lambda *a: calls.append(a) or ("CUDA_SUCCESS",), _success="CUDA_SUCCESS",
                           _function=0, _name="fwd", _values=(ctypes.c_uint64 * 1)(), _address=0, _streams={},
                           _stream_type=int, _lock=threading.Lock())
    assert "`fwd`: `stream` must be" in str(refused("LG616", lambda: packed(1, 32, [0], 12345)))
    cupy_launch = driver.CupyLaunch(lambda *a, **kw: calls.append(a), "fwd")
    assert "got 12345 (int)" in str(refused("LG616", lambda: cupy_launch(1, 32, [0], 12345)))
    assert calls == []
    packed(1, 32, [0], ProtocolStream(7))
    assert len(calls) == 1


def test_a_graph_replay_refuses_a_bare_handle() -> None:
    replays: list[Any] = []
    graph = ProgramGraph("p", type("Graph", (), {"launch": lambda self, s: replays.append(s)})(), (), 1)
    assert "`stream` must be" in str(refused("LG616", lambda: graph.replay(12345)))
    assert replays == []


# item 8: grids past what CUDA launches ----------------------------------------------------------------

def test_a_grid_of_more_blocks_than_cuda_allows_is_refused(launched: list[Any]) -> None:
    # context_broadcast(ctx: Context [B, 16], dst: Window.context): a thread per 16-byte group, 4 a row, 256 a block
    b, k = 2**31 - 1, 65
    threads, blocks = b * k * 4, -(-b * k * 4 // 256)
    args = (Dev((b, 16)), Dev((b, k, 56), ptr=BASE + 2**40))
    err = refused("LG617", lambda: vsn.context_broadcast(*args))
    assert str(err) == (
        f"error[LG617]: `context_broadcast` needs {threads} threads (`B` = {b}, `K` = {k}): {blocks} blocks of 256, "
        f"but a CUDA grid has at most 2147483647 blocks\n  hint: launch it on smaller arrays, several times (where "
        "rows are independent, slices `a[i:j]` of the leading axis are packed arrays of the same layout)")
    assert launched == []


def test_the_largest_grid_cuda_allows_is_launched(launched: list[Any]) -> None:
    b, k = 2**31 - 1, 64  # b * 64 * 4 threads: exactly MAX_GRID_BLOCKS blocks of 256
    vsn.context_broadcast(Dev((b, 16)), Dev((b, k, 56), ptr=BASE + 2**40))
    assert launched == [("context_broadcast", MAX_GRID_BLOCKS, [BASE, BASE + 2**40, b, k])]


def test_a_program_refuses_a_grid_past_the_limit_before_any_launch(launched: list[Any]) -> None:
    from tests.helpers.launch import LR, SHAPES

    b, k = 2**26, 2**10  # snap_feature_assemble: a thread per 16-byte group of features, 10 a row
    shapes = {name: tuple({"B": b, "K": k}.get(str(d), d) for d in shape) for name, shape in SHAPES.items()}
    shapes.update(raw=(b, k, 40), window=(b, k, 56), ctx=(b, 16), gates=(b, k, 40), y=(b, k, 40), target=(b, k, 40),
                  grad_y=(b, k, 40), grad_x=(b, k, 40))
    given = {name: Dev(shape, ptr=BASE + i * 2**45) for i, (name, shape) in enumerate(shapes.items())}
    err = refused("LG617", lambda: vsn.vsn_step(**given, lr=LR))
    assert str(err).startswith(f"error[LG617]: `snap_feature_assemble` needs {b * k * 10} threads")
    assert launched == []


# item 10: byte order -------------------------------------------------------------------------------------


@pytest.mark.parametrize("typestr", [">f4", ">i4"])
def test_an_array_in_the_other_byte_order_is_refused(typestr: str) -> None:
    err = refused("LG602", lambda: FWD.check(fwd_args(W=Dev((40, 40), typestr, ptr=BASE + 0x100000)), 0))
    assert str(err) == (
        f"error[LG602]: {WHO['W']} needs f32 elements, got shape [40, 40], strides (40, 1) (elements), {typestr} on "
        f"device 0\n  hint: the array's elements are big-endian (`{typestr}`) and this machine's are little-endian: "
        "a kernel would read each one byte-swapped; convert it once (NumPy: `a.astype(a.dtype.newbyteorder('='))`)")


def test_a_big_endian_bf16_array_is_refused() -> None:
    half = LayoutSpec("Half", ("N",), 8, "bf16", 2)
    k = KernelLauncher(KernelSpec("h", "h.cu", (ParamSpec("h", "in", half, "Half", 2),), ("N",), 0, 1, 64),
                       FWD.folder, FWD.header)
    k.check((Dev((4, 8), "<V2"),), 0)
    assert "got shape [4, 8], strides (8, 1) (elements), >V2 on device 0" in str(
        refused("LG602", lambda: k.check((Dev((4, 8), ">V2"),), 0)))


# item 11: no device: every argument is checked first -----------------------------------------------------

NO_DEVICE = ("cannot run: no CUDA device was found (CuPy reports cudaErrorInsufficientDriver: CUDA driver version is "
             "insufficient for CUDA runtime version); every argument was checked and fits\n  hint: run it on a machine "
             "with an NVIDIA GPU and its driver (`nvidia-smi` lists them); `layoutgen check --compile` compiles the "
             "kernels without one")


@pytest.fixture
def no_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """CuPy without a driver, as on this CI machine, wherever the tests run."""
    from cupy_backends.cuda.api.runtime import CUDARuntimeError

    def get_device() -> int:
        raise CUDARuntimeError(35)  # cudaErrorInsufficientDriver

    monkeypatch.setattr(driver, "_GET_DEVICE", get_device)
    monkeypatch.setattr(driver, "_NO_DEVICE", CUDARuntimeError)


def test_without_a_device_the_arguments_are_checked_first(no_device: None) -> None:
    # a wrongly shaped slice: CuPy's cudaErrorInsufficientDriver used to come first
    err = refused("LG601", lambda: vsn.variable_selection_fwd(*fwd_args(x=Dev((B, K, 40)))))
    assert "`variable_selection_fwd.x` (Window.snap, layout Window [B, K, 56] f32) got an array of shape [4, 8, 40]" \
        in str(err)
    refused("LG614", lambda: vsn.variable_selection_fwd(*fwd_args(y=Dev((B, K, 40), ptr=GATES))))
    refused("LG616", lambda: vsn.variable_selection_fwd(*fwd_args(), stream=12345))
    err = refused("LG615", lambda: vsn.variable_selection_fwd(*fwd_args()))
    assert str(err) == f"error[LG615]: `variable_selection_fwd` {NO_DEVICE}"


def test_a_program_without_a_device_checks_its_buffers_first(no_device: None) -> None:
    from tests.helpers.launch import LR, buffers

    refused("LG601", lambda: vsn.vsn_step(**buffers(window=Dev((B, K, 40), ptr=BASE + 0x2000000)), lr=LR))
    err = refused("LG615", lambda: vsn.vsn_step(**buffers(), lr=LR))
    assert str(err) == f"error[LG615]: program `vsn_step` {NO_DEVICE}"


def test_on_a_machine_without_a_driver_the_real_cupy_error_is_reported() -> None:
    if driver.find_device() is not None:
        pytest.skip("a CUDA device is present: CuPy reports no error to show")
    err = refused("LG615", lambda: vsn.variable_selection_fwd(*fwd_args()))
    assert str(err).startswith("error[LG615]: `variable_selection_fwd` cannot run: no CUDA device was found (CuPy "
                               "reports cudaError")
    with pytest.raises(LaunchError) as info:
        driver.current_device()
    assert info.value.code == "LG615" and str(info.value).startswith("error[LG615]: the launch cannot run")
