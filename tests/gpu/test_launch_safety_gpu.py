"""Launches that would write wrong memory or crash are refused on a real device, and the outputs keep their poison.

Each refusal starts from outputs poisoned with NaN (never zeros) and checks,
after synchronizing, that every element still holds it: the refusal came
before anything ran. Shared memory (LG614), torch's lazy bits and autograd
(LG608, LG618), streams (LG616), grids past CUDA's limit (LG617) and arrays
in the other byte order (LG602) use the generated VSN module; the last tests
show that valid launches still run and match the float64 NumPy reference.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from examples.vsn import reference as ref
from layoutgen.runtime.launch import LaunchError

pytestmark = pytest.mark.gpu
B, K = 5, 7  # odd: the grid's last block is partly idle
TOL = 1e-5


@pytest.fixture
def vsn():  # type: ignore[no-untyped-def]
    import generated.vsn as module

    return module


@pytest.fixture
def host() -> dict[str, np.ndarray]:
    rng = np.random.default_rng()
    window = rng.normal(size=(B, K, 56))
    window[..., ref.CONTEXT] *= 50.0
    return {"x": window, "W": rng.normal(size=(40, 40)) * 0.3, "b": rng.normal(size=40)}


def _device(a: np.ndarray):  # type: ignore[no-untyped-def]
    import cupy

    return cupy.asarray(np.ascontiguousarray(a, dtype=np.float32))


def _poisoned(*shape: int):  # type: ignore[no-untyped-def]
    import cupy

    return cupy.full(shape, cupy.nan, dtype=cupy.float32)


def _still_poisoned(*arrays: Any) -> bool:
    import cupy

    cupy.cuda.runtime.deviceSynchronize()
    return all(bool(cupy.isnan(a).all()) for a in arrays)


def _refused(code: str, call: Any) -> str:
    with pytest.raises(LaunchError) as info:
        call()
    assert info.value.code == code, str(info.value)
    return str(info.value)


class Described:
    """Real device memory described through ``__cuda_array_interface__`` with a shape and typestr of our own."""

    def __init__(self, owner: Any, shape: tuple[int, ...], typestr: str = "<f4") -> None:
        self.owner = owner  # keeps the memory alive
        self.__cuda_array_interface__ = {"version": 3, "shape": shape, "typestr": typestr,
                                         "data": (owner.data.ptr, False), "strides": None}
        self.device = SimpleNamespace(id=owner.data.device_id)


class ProtocolStream:
    """Any stream through the CUDA stream protocol: here a CuPy stream's handle."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream

    def __cuda_stream__(self) -> tuple[int, int]:
        return (0, self.stream.ptr)


# item 5: memory shared with a written argument ------------------------------------------------------


def test_one_array_for_both_outputs_is_refused(vsn, host) -> None:  # type: ignore[no-untyped-def]
    out = _poisoned(B, K, 40)
    text = _refused("LG614", lambda: vsn.variable_selection_fwd(_device(host["x"]), _device(host["W"]),
                                                                _device(host["b"]), out, out))
    assert "`variable_selection_fwd.gates`" in text and "the kernel writes both" in text
    assert _still_poisoned(out)


def test_outputs_overlapping_by_all_rows_but_one_are_refused(vsn, host) -> None:  # type: ignore[no-untyped-def]
    big = _poisoned(B * K + 1, 40)
    gates, y = big[:-1].reshape(B, K, 40), big[1:].reshape(B, K, 40)  # both packed, one row apart
    assert gates.flags.c_contiguous and y.flags.c_contiguous
    _refused("LG614", lambda: vsn.variable_selection_fwd(_device(host["x"]), _device(host["W"]), _device(host["b"]),
                                                         gates, y))
    assert _still_poisoned(big)


def test_an_input_that_is_also_the_output_is_refused(vsn) -> None:  # type: ignore[no-untyped-def]
    import cupy

    y = cupy.asarray(np.random.default_rng().normal(size=(B, K, 40)), dtype=cupy.float32)
    before = y.copy()
    text = _refused("LG614", lambda: vsn.mse_grad(y, _poisoned(B, K, 40), y))
    assert "the kernel writes `grad_y`" in text
    cupy.cuda.runtime.deviceSynchronize()
    assert bool((y == before).all())


def test_an_output_over_the_window_the_kernel_reads_is_refused(vsn, host) -> None:  # type: ignore[no-untyped-def]
    import cupy

    window = _poisoned(B, K, 56)
    gates = cupy.ndarray((B, K, 40), cupy.float32, memptr=window.data)  # the first rows of the Window's memory
    _refused("LG614", lambda: vsn.variable_selection_fwd(window, _device(host["W"]), _device(host["b"]), gates,
                                                         _poisoned(B, K, 40)))
    assert _still_poisoned(window)


def test_overlap_is_refused_on_the_cached_fast_path(vsn, host) -> None:  # type: ignore[no-untyped-def]
    x, w, b = _device(host["x"]), _device(host["W"]), _device(host["b"])
    vsn.variable_selection_fwd(x, w, b, _poisoned(B, K, 40), _poisoned(B, K, 40))  # plans this kind and shape
    out = _poisoned(B, K, 40)
    _refused("LG614", lambda: vsn.variable_selection_fwd(x, w, b, out, out))
    assert _still_poisoned(out)


# item 6: torch tensors ---------------------------------------------------------------------------------


def test_a_negative_view_is_refused(vsn, host) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    t = lambda a: torch.tensor(a, dtype=torch.float32, device="cuda")  # noqa: E731
    gates, y = (torch.full((B, K, 40), float("nan"), device="cuda") for _ in range(2))
    text = _refused("LG608", lambda: vsn.variable_selection_fwd(torch._neg_view(t(host["x"])), t(host["W"]),
                                                                t(host["b"]), gates, y))
    assert "negative bit" in text and "`t.resolve_neg()`" in text
    torch.cuda.synchronize()
    assert bool(torch.isnan(gates).all()) and bool(torch.isnan(y).all())


def test_a_leaf_requiring_grad_is_not_written_and_outputs_get_their_version_bumped(  # type: ignore[no-untyped-def]
        vsn, host) -> None:
    torch = pytest.importorskip("torch")
    t = lambda a: torch.tensor(a, dtype=torch.float32, device="cuda")  # noqa: E731
    x, w, b = t(host["x"]), t(host["W"]), t(host["b"])
    gates = torch.full((B, K, 40), float("nan"), device="cuda")
    y = torch.full((B, K, 40), float("nan"), device="cuda", requires_grad=True)
    text = _refused("LG618", lambda: vsn.variable_selection_fwd(x, w, b, gates, y))
    assert "a leaf that requires grad" in text
    torch.cuda.synchronize()
    with torch.no_grad():
        assert bool(torch.isnan(gates).all()) and bool(torch.isnan(y).all())
        versions = gates._version, y._version, x._version
        vsn.variable_selection_fwd(x, w, b, gates, y)  # under no_grad torch allows it, and so does the launcher
    torch.cuda.synchronize()
    assert (gates._version, y._version, x._version) == (versions[0] + 1, versions[1] + 1, versions[2])
    want_gates, want_y = ref.vsn_forward(host["x"][..., ref.SNAP], host["W"], host["b"])
    assert ref.relative_error(gates.cpu().numpy(), want_gates) < TOL
    assert ref.relative_error(y.detach().cpu().numpy(), want_y) < TOL


# item 7: streams -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [12345, -1, 0, object()])
def test_a_stream_that_is_not_a_stream_object_is_refused(  # type: ignore[no-untyped-def]
        vsn, host, stream: Any) -> None:
    gates, y = _poisoned(B, K, 40), _poisoned(B, K, 40)
    x, w, b = _device(host["x"]), _device(host["W"]), _device(host["b"])
    for _ in range(2):  # planned or not: a bare handle used to crash the process here
        text = _refused("LG616", lambda: vsn.variable_selection_fwd(x, w, b, gates, y, stream=stream))
        assert "`stream` must be a CuPy stream, a torch stream, an object with `__cuda_stream__`, or None" in text
        vsn.variable_selection_fwd(x, w, b, _poisoned(B, K, 40), _poisoned(B, K, 40))
    assert _still_poisoned(gates, y)


def test_stream_objects_run_the_kernel_on_that_stream(vsn, host) -> None:  # type: ignore[no-untyped-def]
    import cupy

    want = ref.vsn_forward(host["x"][..., ref.SNAP], host["W"], host["b"])[1]
    x, w, b = _device(host["x"]), _device(host["W"]), _device(host["b"])
    streams: list[Any] = [cupy.cuda.Stream(non_blocking=True)]
    streams.append(ProtocolStream(streams[0]))
    try:
        import torch

        streams.append(torch.cuda.Stream())
    except ImportError:
        pass
    for stream in streams:
        y, gates = _poisoned(B, K, 40), _poisoned(B, K, 40)
        cupy.cuda.runtime.deviceSynchronize()  # the fills ran on the default stream; the kernel runs on another
        vsn.variable_selection_fwd(x, w, b, gates, y, stream=stream)
        cupy.cuda.runtime.deviceSynchronize()
        assert ref.relative_error(y.get(), want) < TOL, type(stream)


# item 8: a grid past what CUDA launches ---------------------------------------------------------------------


def test_a_grid_of_more_blocks_than_cuda_allows_is_refused(vsn) -> None:  # type: ignore[no-untyped-def]
    # stand-ins of 2**31 - 1 series over small poisoned buffers: a launch would write far past them
    ctx_memory, window_memory = _poisoned(4, 16), _poisoned(4, 65, 56)
    ctx = Described(ctx_memory, (2**31 - 1, 16))
    window = Described(window_memory, (2**31 - 1, 65, 56))
    text = _refused("LG617", lambda: vsn.context_broadcast(ctx, window))  # a thread per 16 bytes: 4 a row
    assert "`context_broadcast` needs 558345748220 threads" in text and "at most 2147483647 blocks" in text
    assert _still_poisoned(ctx_memory, window_memory)


# item 10: byte order ----------------------------------------------------------------------------------------


def test_an_array_in_the_other_byte_order_is_refused(vsn, host) -> None:  # type: ignore[no-untyped-def]
    w = _device(host["W"])
    big_endian = Described(w, (40, 40), ">f4")  # CuPy has no big-endian arrays; the interface can say one
    gates, y = _poisoned(B, K, 40), _poisoned(B, K, 40)
    text = _refused("LG602", lambda: vsn.variable_selection_fwd(_device(host["x"]), big_endian, _device(host["b"]),
                                                                gates, y))
    assert "needs f32 elements, got shape [40, 40], strides (40, 1) (elements), >f4 on device" in text
    assert _still_poisoned(gates, y)


# valid launches still run ------------------------------------------------------------------------------------


def test_valid_launches_match_the_reference(vsn, host) -> None:  # type: ignore[no-untyped-def]
    x, w, b = _device(host["x"]), _device(host["W"]), _device(host["b"])
    want_gates, want_y = ref.vsn_forward(host["x"][..., ref.SNAP], host["W"], host["b"])
    for _ in range(3):  # planned, then the hot path (new outputs each time)
        gates, y = _poisoned(B, K, 40), _poisoned(B, K, 40)
        vsn.variable_selection_fwd(x, w, b, gates, y)
        assert ref.relative_error(gates.get(), want_gates) < TOL
        assert ref.relative_error(y.get(), want_y) < TOL
    big = _poisoned(2, B, K, 40)  # two outputs side by side in one allocation: they touch, they do not overlap
    vsn.variable_selection_fwd(x, w, b, big[0], big[1])
    assert ref.relative_error(big[0].get(), want_gates) < TOL and ref.relative_error(big[1].get(), want_y) < TOL
    stats = np.stack([np.random.default_rng().normal(size=40), np.full(40, 0.5)], axis=1)
    raw = np.random.default_rng().normal(size=(B, K, 40))
    window = _poisoned(B, K, 56)
    shared = _device(stats)  # mean and inv_std read from one array: inputs may share
    vsn.snap_feature_assemble(_device(raw), shared, shared, window)
    assert ref.relative_error(window.get()[..., ref.SNAP], ref.snap_feature_assemble(raw, stats)) < TOL


# issue 29: one read a launch (the as_strided_ race), pointers that are no memory, inference tensors --------------


def test_a_thread_flipping_a_tensors_strides_never_plans_a_transposed_launch(vsn, host) -> None:  # type: ignore[no-untyped-def]
    """Another thread flips W between packed and transposed (``as_strided_``) while launches run: each launch
    is refused (LG604) or launched on the read it validated; afterwards a transposed W, alone and read the same
    every time, is refused (LG604), its outputs untouched (before: launched after a few dozen calls)."""
    import threading

    torch = pytest.importorskip("torch")
    t = lambda a: torch.tensor(a, dtype=torch.float32, device="cuda")  # noqa: E731
    x, b = t(host["x"]), t(host["b"])
    w = t(host["W"])
    stop = threading.Event()

    def flip() -> None:
        while not stop.is_set():
            w.as_strided_((40, 40), (1, 40))  # transposed
            w.as_strided_((40, 40), (40, 1))  # packed

    flipper = threading.Thread(target=flip)
    flipper.start()
    try:
        for _ in range(3000):
            gates, y = (torch.full((B, K, 40), float("nan"), device="cuda") for _ in range(2))
            try:
                vsn.variable_selection_fwd(x, w, b, gates, y)
            except LaunchError as exc:
                assert exc.code == "LG604", str(exc)
    finally:
        stop.set()
        flipper.join()
    w.as_strided_((40, 40), (40, 1))
    transposed = t(host["W"]).t()
    for _ in range(3):
        gates, y = (torch.full((B, K, 40), float("nan"), device="cuda") for _ in range(2))
        _refused("LG604", lambda: vsn.variable_selection_fwd(x, transposed, b, gates, y))
        torch.cuda.synchronize()
        assert bool(torch.isnan(gates).all()) and bool(torch.isnan(y).all())
    gates, y = (torch.full((B, K, 40), float("nan"), device="cuda") for _ in range(2))
    vsn.variable_selection_fwd(x, w, b, gates, y)  # W packed again: launched, and right
    torch.cuda.synchronize()
    want_gates, want_y = ref.vsn_forward(host["x"][..., ref.SNAP], host["W"], host["b"])
    assert ref.relative_error(gates.cpu().numpy(), want_gates) < TOL
    assert ref.relative_error(y.cpu().numpy(), want_y) < TOL


def test_a_zero_tensor_output_is_refused(vsn, host) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    t = lambda a: torch.tensor(a, dtype=torch.float32, device="cuda")  # noqa: E731
    x, w, b = t(host["x"]), t(host["W"]), t(host["b"])
    gates = torch.full((B, K, 40), float("nan"), device="cuda")
    vsn.variable_selection_fwd(x, w, b, gates, torch.empty((B, K, 40), device="cuda"))  # planned
    gates = torch.full((B, K, 40), float("nan"), device="cuda")
    zero = torch._efficientzerotensor((B, K, 40), device="cuda")
    text = _refused("LG634", lambda: vsn.variable_selection_fwd(x, w, b, gates, zero))
    assert f"got a null data pointer for {B * K * 40} elements" in text
    torch.cuda.synchronize()
    assert bool(torch.isnan(gates).all())


def test_an_inference_tensor_is_written_only_in_inference_mode(vsn, host) -> None:  # type: ignore[no-untyped-def]
    torch = pytest.importorskip("torch")
    t = lambda a: torch.tensor(a, dtype=torch.float32, device="cuda")  # noqa: E731
    x, w, b = t(host["x"]), t(host["W"]), t(host["b"])
    with torch.inference_mode():
        gates, y = (torch.full((B, K, 40), float("nan"), device="cuda") for _ in range(2))
    text = _refused("LG635", lambda: vsn.variable_selection_fwd(x, w, b, gates, y))
    assert "inference tensor and inference mode is off" in text
    torch.cuda.synchronize()
    assert bool(torch.isnan(gates).all()) and bool(torch.isnan(y).all())
    with torch.inference_mode():
        for _ in range(2):  # planned, then the hot path
            vsn.variable_selection_fwd(x, w, b, gates, y)
    torch.cuda.synchronize()
    want_gates, want_y = ref.vsn_forward(host["x"][..., ref.SNAP], host["W"], host["b"])
    assert ref.relative_error(gates.cpu().numpy(), want_gates) < TOL
    assert ref.relative_error(y.cpu().numpy(), want_y) < TOL
    text = _refused("LG635", lambda: vsn.variable_selection_fwd(x, w, b, gates, y))  # and again outside, planned


@pytest.mark.parametrize("ptr", [0, -0x100, 2**64 + 0x100])
def test_an_interface_pointer_that_is_no_memory_is_refused(vsn, host, ptr: int) -> None:  # type: ignore[no-untyped-def]
    x, w, b = _device(host["x"]), _device(host["W"]), _device(host["b"])
    gates, y = _poisoned(B, K, 40), _poisoned(B, K, 40)
    bad = Described(w, (40, 40))
    bad.__cuda_array_interface__["data"] = (ptr, False)
    _refused("LG634" if ptr == 0 else "LG633", lambda: vsn.variable_selection_fwd(x, bad, b, gates, y))
    assert _still_poisoned(gates, y)
