"""The generated torch operators on an H200: opcheck, torch.compile, CUDA graphs, streams, refusals, gradients.

Every operator of examples/vsn (the spec with ``torch=True``) on CUDA tensors of fresh random data.
Tolerances: float32 kernels against float64 references, relative error (‖got − want‖ / ‖want‖) under
1e-5 for the forward and 1e-4 for the gradients (the backward sums B*K rows into grad_W and grad_b in
float32). Skipped without a GPU (tests/gpu/conftest.py) and without torch.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch")

FWD_TOL, GRAD_TOL = 1e-5, 1e-4
B, K = 64, 32


@pytest.fixture
def ops() -> Any:
    import generated.vsn.torch_ops as module

    return module.ops


def rel(got: Any, want: Any) -> float:
    got64, want64 = got.detach().double().cpu(), want.detach().double().cpu()
    assert torch.isfinite(got64).all(), "a NaN or Inf in the result"
    return float((got64 - want64).norm() / want64.norm().clamp_min(1e-300))


def inputs(batch: int = B, grad: bool = False, seed: int | None = None) -> tuple[Any, Any, Any]:
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed if seed is not None else int(np.random.default_rng().integers(2**31)))
    x = torch.randn(batch, K, 56, device="cuda", generator=gen)
    W = 0.3 * torch.randn(40, 40, device="cuda", generator=gen)
    b = torch.randn(40, device="cuda", generator=gen)
    return tuple(t.requires_grad_(grad) for t in (x, W, b))  # type: ignore[return-value]


def reference(x: Any, W: Any, b: Any) -> tuple[Any, Any]:
    """gates = softmax(W x + b) over the 40 features of x's snap columns, y = gates * x, in float64."""
    snap = x[..., :40]
    gates = torch.softmax(snap @ W.T + b, dim=-1)
    return gates, gates * snap


# -- item 4: opcheck ----------------------------------------------------------------------------------------


def opcheck_cases() -> dict[str, Any]:
    """Arguments for one call of each generated operator of the example, which its layouts accept (made on the
    GPU: called inside the tests, never at collection)."""
    def f(*shape: int) -> Any:
        return torch.randn(*shape, device="cuda")

    stats = torch.stack([torch.randn(40, device="cuda"), torch.rand(40, device="cuda") + 0.5], dim=1)
    window = f(8, 16, 56)
    return dict([
        ("snap_feature_assemble.default", (f(8, 16, 40), stats, stats)),
        ("snap_feature_assemble.mutating", (f(8, 16, 40), stats, stats, torch.zeros(8, 16, 56, device="cuda"))),
        ("context_broadcast.default", (f(8, 16), 16)),
        ("context_broadcast.mutating", (f(8, 16), torch.zeros(8, 16, 56, device="cuda"))),
        ("variable_selection_fwd.default", (window, 0.3 * f(40, 40), f(40))),
        ("variable_selection_fwd.mutating", (window, 0.3 * f(40, 40), f(40), f(8, 16, 40), f(8, 16, 40))),
        ("variable_selection_bwd.default", (window, f(40, 40), torch.softmax(f(8, 16, 40), -1), f(8, 16, 40),
                                            torch.zeros(40, 40, device="cuda"), torch.zeros(40, device="cuda"))),
        ("variable_selection_bwd.mutating", (window, f(40, 40), torch.softmax(f(8, 16, 40), -1), f(8, 16, 40),
                                             f(8, 16, 40), torch.zeros(40, 40, device="cuda"),
                                             torch.zeros(40, device="cuda"))),
        ("gather_Window_snap.default", (window,)),
        ("scatter_Window_snap.default", (f(8, 16, 40),)),
        ("gather_Window_context.default", (window,)),
        ("scatter_Window_context.default", (f(8, 16, 16),)),
        ("mse_grad.default", (f(8, 16, 40), f(8, 16, 40))),
        ("mse_grad.mutating", (f(8, 16, 40), f(8, 16, 40), f(8, 16, 40))),
        ("zero_grads.default", ("cuda",)),
        ("zero_grads.mutating", (f(40, 40), f(40))),
        ("sgd_update.default", (f(40, 40), f(40), f(40, 40), f(40), 0.01)),
        ("sgd_update.mutating", (f(40, 40), f(40), f(40, 40), f(40), 0.01)),
    ])


#: Every overload opchecked: each one's arguments come from opcheck_cases().
OPCHECKED = [
    "snap_feature_assemble.default", "snap_feature_assemble.mutating", "context_broadcast.default",
    "context_broadcast.mutating", "variable_selection_fwd.default", "variable_selection_fwd.mutating",
    "variable_selection_bwd.default", "variable_selection_bwd.mutating", "gather_Window_snap.default",
    "scatter_Window_snap.default", "gather_Window_context.default", "scatter_Window_context.default",
    "mse_grad.default", "mse_grad.mutating", "zero_grads.default", "zero_grads.mutating", "sgd_update.default", "sgd_update.mutating",
]


@pytest.mark.parametrize("overload", OPCHECKED)
def test_opcheck(ops: Any, overload: str) -> None:
    name, kind = overload.split(".")
    results = torch.library.opcheck(getattr(getattr(ops, name), kind), opcheck_cases()[overload])
    assert set(results.values()) == {"SUCCESS"}, results


def test_every_operator_has_an_opcheck_case(ops: Any) -> None:
    import generated.vsn as vsn

    assert sorted(opcheck_cases()) == sorted(OPCHECKED)
    covered = set(OPCHECKED)
    names = [k.removeprefix("_lg_kernel_") for k in vars(vsn) if k.startswith("_lg_kernel_")]
    assert all(getattr(ops, n).overloads() == ["default"] for n in names)  # the plain call: functional alone
    every = {f"{n}.{o}" for n in names for o in ("default", "mutating")}
    # the field copies' mutating forms are the launchers' own checks on the same kernels: opchecked as functional
    assert every - covered <= {f"{n}.mutating" for n in names if n.startswith(("gather_", "scatter_"))}


# -- the plain call is the functional form (issue 29, item 7) ------------------------------------------------


def test_the_plain_call_of_an_in_place_kernel_returns_new_tensors(ops: Any) -> None:
    """`sgd_update` reads and writes W and b (InOut): its plain call returns updated copies and leaves W and b as
    they were; `.mutating` updates them in place. Both against float64 numpy."""
    W, b, gW, gb = (torch.randn(*shape, device="cuda") for shape in ((40, 40), (40,), (40, 40), (40,)))
    lr = 0.0625
    host = [t.cpu().double().numpy() for t in (W, b, gW, gb)]
    want_W, want_b = host[0] - lr * host[2], host[1] - lr * host[3]
    W_before, b_before = W.clone(), b.clone()
    new_W, new_b = ops.sgd_update(W, b, gW, gb, lr)
    torch.cuda.synchronize()
    assert torch.equal(W, W_before) and torch.equal(b, b_before)  # the inputs: untouched
    assert new_W.data_ptr() != W.data_ptr() and new_b.data_ptr() != b.data_ptr()
    np.testing.assert_allclose(new_W.cpu().double().numpy(), want_W, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(new_b.cpu().double().numpy(), want_b, rtol=1e-6, atol=1e-6)
    assert ops.sgd_update.mutating(W, b, gW, gb, lr) is None
    np.testing.assert_allclose(W.cpu().double().numpy(), want_W, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(b.cpu().double().numpy(), want_b, rtol=1e-6, atol=1e-6)


def test_the_plain_call_of_a_kernel_that_reads_no_array_allocates_on_the_device_given(ops: Any) -> None:
    """`zero_grads` reads nothing: its functional form is told the device, allocates and clears its outputs.
    The caching allocator is handed NaN blocks of the same sizes first, so memory left unwritten shows."""
    for shape in ((40, 40), (40,)):
        poisoned = torch.full(shape, float("nan"), device="cuda")
        del poisoned
    grad_W, grad_b = ops.zero_grads("cuda")
    torch.cuda.synchronize()
    assert grad_W.shape == (40, 40) and grad_b.shape == (40,) and grad_W.device.type == "cuda"
    assert not grad_W.cpu().double().numpy().any() and not grad_b.cpu().double().numpy().any()


# -- the forward and its gradients against torch's own autograd ----------------------------------------------


def test_forward_matches_the_float64_reference(ops: Any) -> None:
    x, W, b = inputs()
    gates, y = ops.variable_selection_fwd(x, W, b)
    want_gates, want_y = reference(x.double(), W.double(), b.double())
    assert rel(gates, want_gates) < FWD_TOL and rel(y, want_y) < FWD_TOL
    assert gates.stride() == (K * 40, 40, 1) and gates.device == x.device


def test_gradients_match_torch_autograd_of_a_float64_reference(ops: Any) -> None:
    x, W, b = inputs(grad=True)
    weight = torch.randn(B, K, 40, device="cuda")
    _, y = ops.variable_selection_fwd(x, W, b)
    (y * weight).sum().backward()
    x64, W64, b64 = (t.detach().double().requires_grad_() for t in (x, W, b))
    (reference(x64, W64, b64)[1] * weight.double()).sum().backward()
    assert rel(x.grad[..., :40], x64.grad[..., :40]) < GRAD_TOL
    assert rel(W.grad, W64.grad) < GRAD_TOL and rel(b.grad, b64.grad) < GRAD_TOL
    assert not x.grad[..., 40:].any()  # the context columns: not read, no gradient
    # twice: the backward's grad_W and grad_b are fresh zeros each time, not yesterday's sums
    W.grad = None
    _, y = ops.variable_selection_fwd(x, W, b)
    (y * weight).sum().backward()
    assert rel(W.grad, W64.grad) < GRAD_TOL


# -- torch.compile: no graph break, a changing batch size ------------------------------------------------------


def test_compile_fullgraph_without_graph_breaks_and_with_changing_batch_sizes(ops: Any) -> None:
    def step(x: Any, W: Any, b: Any) -> Any:
        gates, y = ops.variable_selection_fwd(x, W, b)
        return (y * y).sum() + gates.mean()

    explained = torch._dynamo.explain(step)(*inputs())
    assert (explained.graph_count, explained.graph_break_count) == (1, 0), explained.break_reasons
    torch._dynamo.reset()
    compiled = torch.compile(step, fullgraph=True, dynamic=True)
    for batch in (16, 48, 100):
        x, W, b = inputs(batch, grad=True)
        loss = compiled(x, W, b)
        loss.backward()
        x64, W64, b64 = (t.detach().double().requires_grad_() for t in (x, W, b))
        gates64, y64 = reference(x64, W64, b64)
        want = (y64 * y64).sum() + gates64.mean()
        want.backward()
        assert abs(float(loss) - float(want)) <= GRAD_TOL * abs(float(want))  # a float32 sum of B*K*40 terms
        assert rel(W.grad, W64.grad) < GRAD_TOL and rel(x.grad[..., :40], x64.grad[..., :40]) < GRAD_TOL


# -- CUDA graphs and streams --------------------------------------------------------------------------------


def test_cuda_graph_capture_and_replay(ops: Any) -> None:
    x, W, b = inputs()
    gates, y = torch.empty(B, K, 40, device="cuda"), torch.empty(B, K, 40, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm up off the default stream: compile, load, plan
        ops.variable_selection_fwd.mutating(x, W, b, gates, y)
        out_gates, out_y = ops.variable_selection_fwd(x, W, b)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        ops.variable_selection_fwd.mutating(x, W, b, gates, y)
        out_gates, out_y = ops.variable_selection_fwd(x, W, b)
    for _ in range(2):  # new inputs in the captured memory, replayed
        fresh = inputs()
        for dst, src in zip((x, W, b), fresh):
            dst.copy_(src)
        gates.fill_(float("nan"))
        y.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        want_gates, want_y = reference(x.double(), W.double(), b.double())
        assert rel(gates, want_gates) < FWD_TOL and rel(y, want_y) < FWD_TOL
        assert rel(out_y, want_y) < FWD_TOL


def test_a_non_default_stream_is_the_one_launched_on(ops: Any) -> None:
    x, W, b = inputs(batch=4096)
    stream = torch.cuda.Stream()
    gate = torch.cuda.Event()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(50_000_000)  # the stream is busy: a launch on it cannot have finished
        gates, y = ops.variable_selection_fwd(x, W, b)
        gate.record(stream)
    assert not gate.query()  # the kernel waits behind the sleep on `stream`, not on the default stream
    stream.synchronize()
    assert rel(y, reference(x.double(), W.double(), b.double())[1]) < FWD_TOL


def test_a_tensor_on_another_device_launches_under_its_device_guard(ops: Any) -> None:
    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    with torch.cuda.device(1):
        x, W, b = inputs()
    assert torch.cuda.current_device() == 0
    _, y = ops.variable_selection_fwd(x, W, b)
    assert y.device == x.device and rel(y, reference(x.double(), W.double(), b.double())[1]) < FWD_TOL
    assert torch.cuda.current_device() == 0


# -- wrong tensors, through the operator ----------------------------------------------------------------------


def test_wrong_tensors_are_refused_through_the_operators(ops: Any) -> None:
    from layoutgen.runtime.launch import LaunchError

    x, W, b = inputs()
    cases = {
        "LG601": lambda: ops.variable_selection_fwd(x[..., :40], W, b),  # the seed bug: snap sliced as packed rows
        "LG602": lambda: ops.variable_selection_fwd(x, W.double(), b),
        "LG604": lambda: ops.variable_selection_fwd(x, W.T, b),
        "LG608": lambda: ops.variable_selection_fwd(x, W, b.cpu()),
        "LG618": lambda: ops.variable_selection_fwd.mutating(
            x, W, b, torch.empty(B, K, 40, device="cuda"), torch.empty(B, K, 40, device="cuda", requires_grad=True)),
    }
    for code, call in cases.items():
        with pytest.raises(LaunchError) as info:
            call()
        assert info.value.code == code, str(info.value)
    with pytest.raises(LaunchError) as info:
        compiled = torch.compile(lambda x, W, b: ops.variable_selection_fwd(x, W, b)[1], fullgraph=True)
        compiled(x, W.T, b)  # compiled, the launch still checks its arrays
    assert info.value.code == "LG604"
