"""torch tensors at launch: lazy negation and conjugation refused, autograd's rules for in-place writes kept.

Needs torch (the CPU wheel is enough): skipped, visibly, without it. CPU
tensors are no device arrays, so :class:`OnDevice` (a tensor subclass whose
``is_cuda`` and ``device`` say CUDA) stands in for CUDA ones: everything else
(negative and conjugate bits, ``requires_grad``, leaves, version counters,
``backward``) is real torch. The launch itself is recorded, not run.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import generated.vsn as vsn  # noqa: E402
from layoutgen.runtime import driver, torch_streams  # noqa: E402
from layoutgen.runtime.launch import LaunchError  # noqa: E402
from layoutgen.runtime.typed import Array  # noqa: E402
from tests.helpers.launch import ProtocolStream, launched  # noqa: E402,F401  (launched: the fixture)
from tests.helpers.torch_fakes import OnDevice, on_device  # noqa: E402

B, K = 4, 8
WHO_Y = "`variable_selection_fwd.y` (Features, layout Features [B, K, 40] f32)"


def fwd_args(**replace: Any) -> dict[str, Any]:
    args = {"x": on_device(B, K, 56), "W": on_device(40, 40), "b": on_device(40), "gates": on_device(B, K, 40),
            "y": on_device(B, K, 40)}
    args.update(replace)
    return args


def refused(code: str, **args: Any) -> str:
    with pytest.raises(LaunchError) as info:
        vsn.variable_selection_fwd(**args)
    assert info.value.code == code, str(info.value)
    return str(info.value)


def test_a_negative_view_is_refused(launched: list[Any]) -> None:
    x = on_device(B, K, 56)
    negated = torch._neg_view(x)  # same memory, values read as -x
    assert negated.is_neg() and negated.data_ptr() == x.data_ptr()
    text = refused("LG608", **fwd_args(x=negated))
    assert text == (
        "error[LG608]: `variable_selection_fwd.x` (Window.snap, layout Window [B, K, 56] f32): a torch tensor with its "
        "negative bit set (`torch._neg_view`, or the imaginary part of a conjugate view) would be read without the "
        "negation\n  hint: materialise it once: `t.resolve_neg()`")
    vsn.variable_selection_fwd(**fwd_args(x=negated.resolve_neg()))
    assert len(launched) == 1


def test_a_negative_view_is_refused_on_the_cached_fast_path(launched: list[Any]) -> None:
    args = fwd_args()
    vsn.variable_selection_fwd(**args)  # this kind and shape of tensor is planned now
    refused("LG608", **{**args, "W": torch._neg_view(args["W"])})
    assert len(launched) == 1


def test_a_conjugate_view_is_refused() -> None:
    from layoutgen.runtime.arrays import ArrayKindError, array_info

    z = torch.randn(4, 8, dtype=torch.complex64).as_subclass(OnDevice)
    with pytest.raises(ArrayKindError) as info:
        array_info(z.conj())
    assert str(info.value) == "a torch tensor with its conjugate bit set (`t.conj()`) would be read unconjugated"


def test_a_leaf_that_requires_grad_is_not_written_in_place(launched: list[Any]) -> None:
    y = on_device(B, K, 40, requires_grad=True)
    assert y.is_leaf and y.requires_grad
    text = refused("LG618", **fwd_args(y=y))
    assert text == (
        f"error[LG618]: {WHO_Y} is written in place by the kernel, but the tensor is a leaf that requires grad, which "
        "torch refuses (\"a leaf Variable that requires grad is being used in an in-place operation\"); got a torch "
        "tensor of shape [4, 8, 40]\n  hint: update it under `torch.no_grad()` (as an optimizer does), or write "
        "into a tensor that does not require grad")
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        y.add_(1)  # torch's own rule, which the launcher follows
    assert launched == []
    with torch.no_grad():  # how optimizers update parameters in place: allowed, as torch allows it
        before = y._version
        vsn.variable_selection_fwd(**fwd_args(y=y))
    assert len(launched) == 1 and y._version == before + 1


def test_a_non_leaf_that_requires_grad_is_not_written_behind_autograds_back(launched: list[Any]) -> None:
    y = on_device(B, K, 40, requires_grad=True) * 2  # torch would record an in-place op; a kernel launch is not
    assert not y.is_leaf and y.requires_grad
    text = refused("LG618", **fwd_args(y=y))
    assert text == (
        f"error[LG618]: {WHO_Y} is written in place by the kernel, but the tensor requires grad and autograd does not "
        "record the kernel's write: gradients through it would be wrong; got a torch tensor of shape [4, 8, 40]\n"
        "  hint: write into a tensor that does not require grad (a new one, or `.detach()`), or launch under "
        "`torch.no_grad()`")
    assert launched == []


def test_requires_grad_is_checked_on_every_call(launched: list[Any]) -> None:
    args = fwd_args()
    vsn.variable_selection_fwd(**args)
    args["gates"].requires_grad_()  # same tensors, same plan: the hot path must still see it
    refused("LG618", **args)
    assert len(launched) == 1


def test_written_tensors_have_their_version_bumped_and_inputs_do_not(launched: list[Any]) -> None:
    args = fwd_args()
    before = {name: t._version for name, t in args.items()}
    for _ in range(2):  # the first call plans, the second takes the hot path
        vsn.variable_selection_fwd(**args)
    after = {name: t._version for name, t in args.items()}
    assert {name: after[name] - before[name] for name in args} == {"x": 0, "W": 0, "b": 0, "gates": 2, "y": 2}


def test_a_tensor_saved_for_backward_and_then_overwritten_is_reported_by_backward(launched: list[Any]) -> None:
    w = torch.randn(B, K, 40, requires_grad=True)
    args = fwd_args()
    loss = (w * args["y"]).sum()  # autograd saved y for w's gradient
    vsn.variable_selection_fwd(**args)  # the kernel overwrites y: w's gradient would be computed from new values
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_nothing_launched_bumps_nothing(launched: list[Any]) -> None:
    args = fwd_args(x=on_device(0, K, 56), gates=on_device(0, K, 40), y=on_device(0, K, 40))
    vsn.variable_selection_fwd(**args)
    assert launched == [] and args["y"]._version == 0


def test_a_program_follows_the_same_rules(launched: list[Any]) -> None:
    from tests.helpers.launch import LR, SHAPES, runner_of

    given = {name: on_device(*shape) for name, shape in SHAPES.items()}
    before = {name: t._version for name, t in given.items()}
    vsn.vsn_step(**given, lr=LR)
    bumped = {name for name, t in given.items() if t._version != before[name]}
    assert bumped == {b.name for b in runner_of(vsn, "vsn_step").spec.buffers if b.access != "in"}
    assert "raw" not in bumped and "window" in bumped and len(launched) == 7
    given["grad_W"].requires_grad_()
    with pytest.raises(LaunchError) as info:
        vsn.vsn_step(**given, lr=LR)
    assert info.value.code == "LG618" and "`vsn_step.grad_W` (Weights, layout Weights [40, 40] f32)" in str(info.value)
    assert len(launched) == 7


def test_the_diagnostics_page_shows_what_the_launcher_says(launched: list[Any]) -> None:
    from tests.helpers.docs import DIAGNOSTICS, blocks  # LG618's example: B, K = 256, 64, y a leaf requiring grad

    shown = [content for info, _, content in blocks(DIAGNOSTICS["LG618"]) if info == "text"]
    args = {"x": on_device(256, 64, 56), "W": on_device(40, 40), "b": on_device(40), "gates": on_device(256, 64, 40),
            "y": on_device(256, 64, 40, requires_grad=True)}
    with pytest.raises(LaunchError) as info:
        vsn.variable_selection_fwd(**args)
    assert shown == [f"layoutgen.runtime.errors.LaunchError: {info.value}\n"]


# the stream a launch given none runs on ------------------------------------------------------------------------


@settings(max_examples=60, deadline=None)
@given(kinds=st.lists(st.sampled_from(["torch", "typed torch", "other"]), max_size=5),
       torch_handle=st.sampled_from([0, 0x5, 0x7F00_1234]), cupy_handle=st.sampled_from([0, 0x5, 0x51]),
       given_stream=st.booleans())
def test_a_launch_given_no_stream_follows_its_arrays_library(kinds: list[str], torch_handle: int, cupy_handle: int,
                                                              given_stream: bool) -> None:
    """Any mix of arrays: a stream given is used as given; over no torch tensor, the current CuPy stream (None);
    over torch tensors alone (typed Arrays of them too), torch's current stream of the launch's device; over
    both, the one stream where the two libraries' current streams are one, else LG616 naming both."""
    from tests.helpers.launch import Dev

    arrays = [on_device(2) if kind == "torch" else Array(on_device(2)) if kind == "typed torch" else Dev((2,))
              for kind in kinds]
    n_torch = sum(kind != "other" for kind in kinds)
    asked: list[int] = []
    stream = ProtocolStream(0x99) if given_stream else None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(torch_streams, "_RAW_STREAM", lambda device: asked.append(device) or torch_handle)
        patch.setattr(driver, "_CURRENT_STREAM", lambda: SimpleNamespace(ptr=cupy_handle))
        assert driver.own_streams(arrays) == n_torch
        try:
            got = driver.launch_stream(stream, arrays, n_torch, "k", 3)
        except LaunchError as error:
            got = error
    if given_stream or not n_torch:
        assert got is stream and asked == []
    elif n_torch == len(arrays):
        assert isinstance(got, torch_streams.TorchCurrentStream) and driver.stream_handle(got) == torch_handle
        assert asked == [3]
    elif torch_handle == cupy_handle:
        assert got is None
    else:
        assert isinstance(got, LaunchError) and got.code == "LG616"
        assert (f"whose current streams differ: torch's is 0x{torch_handle:x}, CuPy's 0x{cupy_handle:x}"
                in str(got))


def test_launchers_programs_and_replays_over_torch_tensors_given_no_stream_go_on_torchs_stream(
        launched: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """A launcher, a program's seven launches and a graph's replay, each over torch tensors and given no
    stream: each on torch's current stream (the stand-in device's TORCH_STREAM), as the launch tests check the
    launcher's choice on both paths."""
    from layoutgen.runtime import program
    from layoutgen.runtime.launch import KernelLauncher
    from tests.fake_device import TORCH_STREAM, Recorded
    from tests.helpers.launch import LR, SHAPES

    streams: list[Any] = []
    monkeypatch.setattr(KernelLauncher, "function", lambda self, device, arch: Recorded(
        lambda blocks, block, values, stream: streams.append(stream)))
    vsn.variable_selection_fwd(**fwd_args())
    vsn.vsn_step(**{name: on_device(*shape) for name, shape in SHAPES.items()}, lr=LR)
    monkeypatch.setattr(program, "cupy_stream", lambda stream, kernel: stream)  # the stream the graph launches on
    graph = program.ProgramGraph("p", SimpleNamespace(launch=streams.append), tuple(fwd_args().values()), 1)
    graph.replay()
    assert [driver.stream_handle(s) for s in streams] == [TORCH_STREAM] * 9
