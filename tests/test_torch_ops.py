"""The generated torch operators on the CPU build of torch: registration, schemas, fake tensors, compile
tracing, autograd plumbing and refusals. Skipped, visibly, without torch.

No GPU here: meta and fake tensors carry shapes through the fake implementations (which is all
``torch.compile`` traces), and :class:`OnDevice` tensors (CPU tensors that say they are on CUDA device 0,
from tests/helpers/torch_fakes.py) reach the launcher, whose checks run as on a GPU; the launch itself is
recorded (the ``launched`` fixture) or, for autograd, done by the float64 reference of examples/vsn.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import generated.vsn as vsn  # noqa: E402
import generated.vsn.torch_ops as vsn_torch  # noqa: E402
from examples.vsn import reference  # noqa: E402
from layoutgen.runtime import driver, torch_ops  # noqa: E402
from layoutgen.runtime.launch import LaunchError  # noqa: E402
from tests.helpers.launch import launched  # noqa: E402,F401  (the fixture: launches recorded, none made)
from tests.helpers.torch_fakes import OnDevice, cpu_as_cuda, on_device, on_gpu  # noqa: E402,F401  (fixtures)

ops = vsn_torch.ops
REPO = Path(__file__).resolve().parent.parent
B, K = 4, 8


def meta(*shape: int, grad: bool = False) -> Any:
    return torch.empty(*shape, device="meta", requires_grad=grad)


# -- registration and schemas ---------------------------------------------------------------------------


def test_every_binding_is_a_functional_operator_and_a_mutating_one() -> None:
    """The plain call resolves among the overloads of its operator: the functional one alone (issue 29, item 7;
    tests/test_torch_functional.py calls every shape of kernel)."""
    names = [k for k in vars(vsn) if k.startswith("_lg_kernel_")]
    assert len(names) == 11
    for launcher in names:
        name = launcher.removeprefix("_lg_kernel_")
        assert getattr(ops, name).overloads() == ["default"], name
        assert getattr(ops, f"lg_mutating_{name}").overloads() == ["default"], name
        assert getattr(ops, name).mutating is getattr(ops, f"lg_mutating_{name}").default


SCHEMAS = {
    "variable_selection_fwd.default": "(Tensor x, Tensor W, Tensor b) -> (Tensor gates, Tensor y)",
    "variable_selection_fwd.mutating": "(Tensor x, Tensor W, Tensor b, Tensor(a!) gates, Tensor(b!) y) -> ()",
    "variable_selection_bwd.mutating": "(Tensor x, Tensor W, Tensor gates, Tensor grad_y, Tensor(a!) grad_x, "
                                       "Tensor(b!) grad_W, Tensor(c!) grad_b) -> ()",
    "sgd_update.default": "(Tensor W, Tensor b, Tensor grad_W, Tensor grad_b, float lr) -> (Tensor W, Tensor b)",
    "sgd_update.mutating": "(Tensor(a!) W, Tensor(b!) b, Tensor grad_W, Tensor grad_b, float lr) -> ()",
    "context_broadcast.default": "(Tensor ctx, SymInt lg_size_K) -> Tensor dst",
    "zero_grads.default": "(Device lg_device) -> (Tensor grad_W, Tensor grad_b)",
    "zero_grads.mutating": "(Tensor(a!) grad_W, Tensor(b!) grad_b) -> ()",
}


WRITES = {"variable_selection_fwd": ["gates", "y"], "variable_selection_bwd": ["grad_x", "grad_W", "grad_b"],
          "sgd_update": ["W", "b"], "context_broadcast": ["dst"], "zero_grads": ["grad_W", "grad_b"]}


@pytest.mark.parametrize("overload", sorted(SCHEMAS))
def test_schemas_are_exact_and_mark_what_is_mutated(overload: str) -> None:
    name, kind = overload.split(".")
    schema = getattr(getattr(ops, name), kind)._schema
    operator = name if kind == "default" else f"lg_mutating_{name}"
    assert str(schema) == f"layoutgen_vsn::{operator}{SCHEMAS[overload]}"
    mutated = [a.name for a in schema.arguments if a.alias_info is not None and a.alias_info.is_write]
    assert mutated == ([] if kind == "default" else WRITES[name])


def test_importing_the_package_imports_no_torch() -> None:
    code = "import sys, generated.vsn; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout == "False\n"


def test_without_torch_the_torch_module_is_lg629() -> None:
    code = ("import sys; sys.modules['torch'] = None\n"
            "try:\n    import generated.vsn.torch_ops\nexcept ImportError as exc:\n    print(type(exc).__name__, exc)")
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert out.stdout == (
        "TorchUnavailable error[LG629]: `generated.vsn.torch_ops` registers torch operators, but torch is not "
        "importable (import of torch halted; None in sys.modules)\n  hint: install it: `pip install "
        "'layoutgen[torch]'` (the launchers of the package work without it)\n")


def test_a_namespace_another_file_registered_is_lg630() -> None:
    with pytest.raises(LaunchError) as info:
        torch_ops.register("layoutgen_vsn", "other.vsn.torch_ops", "/elsewhere/vsn/torch_ops.py", ())
    assert str(info.value) == (
        "error[LG630]: torch namespace `layoutgen_vsn` already has operators, registered by "
        "`generated.vsn.torch_ops`; `other.vsn.torch_ops` (another file) would register them again\n  hint: a "
        "spec's operators live in `layoutgen_<spec>`: import one generated package of each spec name into a process")
    again = torch_ops.register("layoutgen_vsn", "x", str(REPO / "generated" / "vsn" / "torch_ops.py"), ())
    assert again is vsn_torch._lg_LIBRARY  # the same file imported twice: the first registration


# -- fake tensors: shapes, dtypes and strides from the layouts -------------------------------------------


def test_fake_outputs_follow_the_layouts_with_a_symbolic_batch() -> None:
    from torch.fx.experimental.proxy_tensor import make_fx

    def both(x: Any, W: Any, b: Any, ctx: Any) -> Any:
        gates, y = ops.variable_selection_fwd(x, W, b)
        grads = ops.variable_selection_bwd(x, W, gates, y, W, b)
        ops.variable_selection_fwd.mutating(x, W, b, gates, y)
        return gates, y, *grads, ops.context_broadcast(ctx, 7)

    traced = make_fx(both, tracing_mode="symbolic")(torch.empty(B, K, 56), torch.empty(40, 40), torch.empty(40),
                                                     torch.empty(B, 16))
    x, *_ = (n.meta["val"] for n in traced.graph.nodes if n.op == "placeholder")
    batch, k = x.shape[0], x.shape[1]
    assert isinstance(batch, torch.SymInt) and isinstance(k, torch.SymInt)
    (out,) = (n.args[0] for n in traced.graph.nodes if n.op == "output")
    gates, y, grad_x, grad_W, grad_b, dst = (node.meta["val"] for node in out)
    for t in (gates, y, grad_x):
        assert t.shape == (batch, k, 40) and t.stride() == (k * 40, 40, 1) and t.dtype == torch.float32
    assert grad_W.shape[1] == 40 and grad_b.dim() == 1  # Weights and Bias: [40, 40] and [40]
    assert dst.shape[1:] == (7, 56) and dst.stride()[1:] == (56, 1) and dst.dtype == torch.float32
    called = [str(n.target) for n in traced.graph.nodes if n.op == "call_function" and "getitem" not in str(n.target)]
    assert called == ["layoutgen_vsn.variable_selection_fwd.default", "layoutgen_vsn.variable_selection_bwd.default",
                      "layoutgen_vsn.lg_mutating_variable_selection_fwd.default",
                      "layoutgen_vsn.context_broadcast.default"]


def test_compile_traces_without_graph_breaks_and_changing_batch_sizes() -> None:
    def step(x: Any, W: Any, b: Any) -> Any:
        gates, y = ops.variable_selection_fwd(x, W, b)
        return (y * y).sum() + gates.sum()

    explained = torch._dynamo.explain(step)(meta(B, K, 56), meta(40, 40), meta(40))
    assert (explained.graph_count, explained.graph_break_count) == (1, 0)
    compiled = torch.compile(step, backend="aot_eager", fullgraph=True, dynamic=True)
    for batch in (4, 6, 9):
        x, W, b = meta(batch, K, 56, grad=True), meta(40, 40, grad=True), meta(40, grad=True)
        compiled(x, W, b).backward()
        assert (x.grad.shape, W.grad.shape, b.grad.shape) == ((batch, K, 56), (40, 40), (40,))


def test_a_second_derivative_is_lg632() -> None:
    x, W, b = meta(B, K, 56, grad=True), meta(40, 40, grad=True), meta(40, grad=True)
    _, y = ops.variable_selection_fwd(x, W, b)
    with pytest.raises(LaunchError) as info:
        torch.autograd.grad(y.sum(), (x,), create_graph=True)
    assert str(info.value) == (
        "error[LG632]: `layoutgen_vsn::variable_selection_fwd` is differentiated by the kernel "
        "`variable_selection_bwd`, which has no derivative of its own: its gradients cannot be differentiated "
        "(create_graph=True)\n  hint: differentiate once; for a second derivative, pair the backward with a "
        "backward of its own")


# -- through the launcher: refusals, streams, allocation ---------------------------------------------------


def fwd_inputs(**replace: Any) -> dict[str, Any]:
    args = {"x": on_device(B, K, 56), "W": on_device(40, 40), "b": on_device(40)}
    args.update(replace)
    return args


def test_the_functional_form_allocates_packed_outputs_and_launches_on_torchs_stream(cpu_as_cuda: list[Any]) -> None:
    gates, y = ops.variable_selection_fwd(**fwd_inputs())
    on_gpu = cpu_as_cuda
    assert gates.shape == (B, K, 40) and gates.stride() == (K * 40, 40, 1)
    assert [name for name, *_ in on_gpu] == ["variable_selection_fwd"]
    assert on_gpu[0][2][3:5] == [gates.data_ptr(), y.data_ptr()]  # the launch wrote the allocated outputs


def test_a_partly_written_output_is_zeros_elsewhere(cpu_as_cuda: list[Any]) -> None:
    dst = ops.context_broadcast(on_device(B, 16), K)  # writes Window.context: columns 40..56
    assert dst.shape == (B, K, 56) and not dst[..., :40].any()
    with pytest.raises(LaunchError) as info:
        ops.context_broadcast(on_device(B, 16), -1)
    assert str(info.value) == ("error[LG631]: `context_broadcast` takes the size of `K`, which no input has, as an "
                               "argument; it must be 0 or more, got -1")


@pytest.mark.parametrize("form", ["default", "mutating"])
def test_wrong_tensors_are_refused_through_the_operator(on_gpu: list[Any], form: str) -> None:
    x = on_device(B, K, 56)
    window_slice = x[..., :40]  # the seed bug: the features sliced out of the window, passed as packed rows

    def call(**args: Any) -> None:
        given = fwd_inputs(**args)
        if form == "default":
            ops.variable_selection_fwd(**given)
        else:
            ops.variable_selection_fwd.mutating(**given, gates=on_device(B, K, 40), y=on_device(B, K, 40))

    with pytest.raises(LaunchError) as info:
        call(x=window_slice)
    assert info.value.code == "LG601"
    assert str(info.value).startswith("error[LG601]: `variable_selection_fwd.x` (Window.snap, layout Window "
                                      "[B, K, 56] f32) got an array of shape [4, 8, 40], strides (448, 56, 1)")
    with pytest.raises(LaunchError) as info:
        call(W=on_device(40, 40).double())
    assert info.value.code == "LG602"
    with pytest.raises(LaunchError) as info:
        call(b=torch.zeros(40))  # a CPU tensor: dispatched to the CPU kernel, refused by the launcher
    assert str(info.value).startswith("error[LG608]: `variable_selection_fwd.b` (Bias, layout Bias [40] f32): a torch "
                                      "tensor on cpu is not on a CUDA device")
    assert on_gpu == []


def test_the_mutating_form_keeps_autograds_rules(on_gpu: list[Any]) -> None:
    y = on_device(B, K, 40, requires_grad=True)
    with pytest.raises(LaunchError) as info:
        ops.variable_selection_fwd.mutating(**fwd_inputs(), gates=on_device(B, K, 40), y=y)
    assert info.value.code == "LG618"
    gates, y = on_device(B, K, 40), on_device(B, K, 40)
    ops.variable_selection_fwd.mutating(**fwd_inputs(), gates=gates, y=y)
    assert (gates._version, y._version) == (1, 1) and len(on_gpu) == 1


# -- autograd: the pair's plumbing, with the kernels done by the float64 reference ---------------------------


def _emulate(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Each operator's launch runs the launcher's checks, then the reference of its kernel on the tensors."""
    ran: list[str] = []

    def launch(self: Any, arguments: Any, tensor: Any) -> None:
        self.spec.launcher.check(tuple(t.as_subclass(OnDevice) for t in arguments[: len(self.params)]), 0)
        name = self.spec.name
        ran.append(name)
        a = [t.detach().numpy() if isinstance(t, torch.Tensor) else t for t in arguments]
        if name == "variable_selection_fwd":
            gates, y = reference.vsn_forward(a[0][..., :40], a[1], a[2])
            a[3][...], a[4][...] = gates, y
        elif name == "variable_selection_bwd":
            grad_x, grad_w, grad_b = reference.vsn_backward(a[0][..., :40], a[1], a[2], a[3])
            a[4][...] = grad_x
            a[5][...] += grad_w  # the kernel adds to them: the operator must hand it zeros
            a[6][...] += grad_b
        else:
            raise AssertionError(name)

    monkeypatch.setattr(torch_ops._Op, "launch", launch)
    return ran


def test_gradients_flow_through_the_pair(cpu_as_cuda: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    ran = _emulate(monkeypatch)
    rng = np.random.default_rng(7)
    host = {"x": rng.normal(size=(B, K, 56)), "W": rng.normal(size=(40, 40)) * 0.3, "b": rng.normal(size=40)}
    x, W, b = (torch.tensor(v, dtype=torch.float32).as_subclass(OnDevice).requires_grad_() for v in host.values())
    gates, y = ops.variable_selection_fwd(x, W, b)
    assert y.requires_grad and not gates.requires_grad  # gates has no gradient in the pair: non-differentiable
    weight = torch.tensor(rng.normal(size=(B, K, 40)), dtype=torch.float32)
    (y * weight).sum().backward()
    assert ran == ["variable_selection_fwd", "variable_selection_bwd"]

    x64, W64, b64 = (torch.tensor(v, requires_grad=True) for v in host.values())
    z = torch.softmax(x64[..., :40] @ W64.T + b64, dim=-1)
    ((z * x64[..., :40]) * weight.double()).sum().backward()
    for got, want in ((x.grad, x64.grad), (W.grad, W64.grad), (b.grad, b64.grad)):
        assert got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)  # float32 storage
    assert not x.grad[..., 40:].any()  # the context columns: not read by the forward, zero gradient


def test_a_scalar_declared_before_the_arrays_does_not_place_the_outputs(monkeypatch: pytest.MonkeyPatch) -> None:
    from layoutgen.runtime.launch import KernelLauncher, KernelSpec, LayoutSpec, ParamSpec, ScalarSpec

    rows = LayoutSpec("Rows", ("N",), 40, "f32", 4)
    spec = KernelSpec("scaled", "scaled.cu", (ParamSpec("x", "in", rows, "Rows", 4), ParamSpec("y", "out", rows, "Rows", 4)),
                      symbols=("N",), grid_param=0, per_row=1, block=128, scalars=(ScalarSpec("s", "f32"),))
    op = torch_ops.TorchOpSpec("scaled", KernelLauncher(spec, Path(), ""), "(float s, Tensor x, Tensor(a!) y) -> ()",
                               (1, 2, 0), functional="(float s, Tensor x) -> Tensor y", inputs=(2, 0), outputs=(1,))
    y = torch_ops._Op(torch, op).fake(0.5, meta(6, 40))  # the scalar first: the outputs follow `x`
    assert y.shape == (6, 40) and y.device.type == "meta"


def test_no_binding_can_take_a_name_the_torch_operator_namespace_has() -> None:
    """`torch.ops.<ns>.name` is the namespace's own attribute: a binding of such a name is LG220, for every
    attribute torch's namespace has (the list in declare/spec.py is checked against torch itself)."""
    from layoutgen import Layout, Spec, f32
    from layoutgen.declare.kernels import In, Kernel, KernelError
    from layoutgen.declare.spec import TORCH_NAMESPACE_NAMES

    own = {a for a in dir(torch.ops.layoutgen_probe) if not a.startswith("__")}
    assert own == set(TORCH_NAMESPACE_NAMES)
    rows = Layout("Rows", [4], f32, width=4)
    for name in sorted(n for n in own if not n.startswith("_")):  # a kernel name cannot start with `_`
        binding = Kernel(name, "k.cu.j2", [In("x", [4, 4])]).bind(x=rows)
        with pytest.raises(KernelError) as info:
            Spec("probe", kernels=[binding], torch=True)
        assert info.value.diagnostic.code == "LG220"
        assert info.value.diagnostic.message == (
            f"kernel `{name}` of spec `probe` cannot be a torch operator: `torch.ops.layoutgen_probe.{name}` is the "
            "operator namespace's own attribute")
        Spec("probe", kernels=[binding])  # without torch operators the name is fine
