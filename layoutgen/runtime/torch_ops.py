"""Generated kernels as torch operators: ``torch.library`` registrations made from a launcher's plan.

A generated ``torch_ops.py`` calls :func:`register` once, with plain data: a
:class:`TorchOpSpec` per kernel binding (its launcher, the schemas the
generator wrote, where each schema argument goes) and an
:class:`AutogradSpec` per declared forward/backward pair. Each binding
becomes two overloads of one operator, ``<namespace>::<binding>``:

- ``.mutating``: every array passed in, the written ones marked ``Tensor(a!)``
  in the schema; it launches and returns nothing;
- ``.default`` (the functional form, where the kernel reads an array): the
  read arrays and scalars in, the written arrays allocated packed from their
  layouts (sizes from the symbols the inputs bind) and returned.

They are registered with ``Library.define``/``impl`` (the cheapest boundary
torch has: no ``custom_op`` wrapper on the call path). The fake
implementations allocate exactly what the functional form allocates, with the
same code, so shapes and strides come from the layouts and nowhere else. A
launch runs on ``torch.cuda.current_stream()`` of the tensors' device, under a
device guard (torch's and CuPy's) when that is not the current device; the
launcher checks every array first, so wrong tensors are refused with the same
LG6xx errors as a direct launch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema.diagnostics import Diagnostic
from ..schema.dtypes import DTYPES
from . import driver
from .arrays import ArrayInfo, torch_dtype_name
from .errors import LaunchError, launch_error
from .launch import KernelLauncher
from .plan import ParamSpec
from .validate import check_param

#: The oldest torch whose ``torch.library`` has ``register_fake`` and ``register_autograd`` for defined ops.
MIN_TORCH = (2, 5)


class TorchUnavailable(LaunchError, ImportError):
    """LG629: a generated torch module was imported where torch (2.5 or newer) is not."""


def import_torch(module: str) -> Any:
    """torch, or LG629 naming ``module`` (the generated module) when it is missing or too old."""
    hint = "install it: `pip install 'layoutgen[torch]'` (the launchers of the package work without it)"
    try:
        import torch
    except ImportError as exc:
        raise TorchUnavailable(Diagnostic("LG629", f"`{module}` registers torch operators, but torch is not "
                                          f"importable ({exc})", None, hint)) from None
    version = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2] if part.isdigit())
    if version < MIN_TORCH:
        raise TorchUnavailable(Diagnostic(
            "LG629", f"`{module}` registers torch operators with `torch.library.register_fake` and "
            f"`register_autograd`, which need torch {'.'.join(map(str, MIN_TORCH))} or newer, got torch "
            f"{torch.__version__}", None, hint))
    return torch


@dataclass(frozen=True)
class TorchOpSpec:
    """One binding's operator. Launcher arguments are counted as the launcher takes them: arrays, then scalars."""

    name: str  # the binding's: ``<namespace>::<name>``
    launcher: KernelLauncher
    mutating: str  # the ``.mutating`` overload's schema, from its arguments on: ``(Tensor x, Tensor(a!) y) -> ()``
    order: tuple[int, ...]  # per launcher argument, its position in the mutating schema (the kernel's signature)
    functional: str | None = None  # the ``.default`` overload's schema; None where the kernel reads no array
    inputs: tuple[int, ...] = ()  # per functional argument before the sizes, the launcher argument it is
    outputs: tuple[int, ...] = ()  # the launcher arrays the functional form returns, in order
    sizes: tuple[str, ...] = ()  # symbols no input binds, given to the functional form after its inputs


@dataclass(frozen=True)
class AutogradSpec:
    """A forward operator's functional form differentiated by a backward operator.

    ``sources`` has one entry per launcher argument of the backward, saying
    where its value comes from: ``("saved", j)`` forward launcher argument
    ``j`` (an input, an output or a scalar) as the forward saw it;
    ``("grad", j)`` / ``("grad_field", j)`` the gradient coming in for
    forward output ``j`` (whole, or the forward view's field sliced out);
    ``("result", j)`` / ``("result_field", j)`` an array the backward writes,
    the gradient of forward input ``j`` (whole, or written into zeros of the
    forward array at its view's field). Written arrays are allocated empty
    (Out) or zeroed (InOut: the backward adds to them).
    """

    forward: str
    backward: str
    sources: tuple[tuple[str, int], ...]


def _torch_dtypes(torch: Any) -> dict[str, Any]:
    """layoutgen dtype -> torch dtype (bf16 is torch.bfloat16: the launcher accepts it)."""
    out = {}
    for d in DTYPES.values():
        name = "bfloat16" if d.name == "bf16" else d.numpy_name or d.storage
        out[d.name] = getattr(torch, name)
    return out


class _Op:
    """One registered operator: the implementations of its two overloads and its fake ones."""

    def __init__(self, torch: Any, spec: TorchOpSpec) -> None:
        self.torch, self.spec = torch, spec
        launch_spec = spec.launcher.spec
        self.params: tuple[ParamSpec, ...] = launch_spec.params
        self.arity = len(self.params) + len(launch_spec.scalars)
        dtypes = _torch_dtypes(torch)
        self.dtypes = [dtypes[p.layout.dtype] for p in self.params]
        # A written view narrower than its layout's array leaves the rest unwritten: allocated as zeros, so a
        # functional form never returns memory nothing wrote.
        self.partial = [p.rows is not None or (p.cols is not None and p.cols != (0, p.layout.width))
                        for p in self.params]
        self.identity = spec.order == tuple(range(self.arity))
        self.first_array = min(spec.order[: len(self.params)])  # the mutating schema's first tensor
        self.n_inputs = len(spec.inputs)
        # the functional form's first array (a scalar may come first): its device and kind are the outputs'
        self.first_input = next((j for j in spec.inputs if j < len(self.params)), -1)

    # -- the mutating overload -----------------------------------------------------------------------------

    def mutating(self, *args: Any) -> None:
        """Launch on the arguments as given (schema order), on the tensors' device and current stream."""
        arguments = args if self.identity else tuple(args[k] for k in self.spec.order)
        self.launch(arguments, args[self.first_array])

    def launch(self, arguments: Sequence[Any], tensor: Any) -> None:
        # Given no stream, the launcher launches over torch tensors on torch's current stream of the current
        # device: the tensors', under a guard where it is not current. A CPU tensor it refuses, with every
        # other check first (LG608); with no device, it checks, then says so (LG615).
        device = tensor.device
        index = device.index or 0
        if device.type != "cuda" or driver.find_device() in (index, None):
            self.spec.launcher(*arguments)
            return
        import cupy

        with cupy.cuda.Device(index), self.torch.cuda.device(index):  # torch's device and the launcher's (CuPy's)
            self.spec.launcher(*arguments)

    # -- the functional overload ---------------------------------------------------------------------------

    def bound(self, arguments: Sequence[Any], given: Sequence[int]) -> dict[str, Any]:
        """The symbols the arrays at launcher indices ``given`` bind (the first one read wins; the launcher
        compares the rest). An array of the wrong rank is refused as the launcher would refuse it (LG601)."""
        bound: dict[str, Any] = {}
        for j in given:
            if j >= len(self.params):
                continue  # a scalar
            p, t = self.params[j], arguments[j]
            lay = p.layout
            shape = t.shape
            if len(shape) != len(lay.dims) + 1:
                name = torch_dtype_name(t.dtype)
                check_param(self.spec.name, p, ArrayInfo(0, tuple(shape), tuple(t.stride()), name, 0, False), {}, None)
            for axis, dim in enumerate(lay.dims):
                if isinstance(dim, str):
                    bound.setdefault(dim, shape[axis])
            if lay.unit is not None:
                bound.setdefault(lay.unit, shape[-1] // lay.width)
        return bound

    def allocate(self, args: Sequence[Any]) -> list[Any]:
        """The launcher's arguments for functional ``args``: the inputs, and new outputs (InOut: a copy)."""
        spec = self.spec
        arguments: list[Any] = [None] * self.arity
        for pos, j in enumerate(spec.inputs):
            arguments[j] = args[pos]
        bound = self.bound(arguments, spec.inputs)
        for symbol, size in zip(spec.sizes, args[self.n_inputs:]):
            if size < 0:
                raise launch_error("LG631", f"`{spec.name}` takes the size of `{symbol}`, which no input has, as an "
                                   f"argument; it must be 0 or more, got {size}")
            bound[symbol] = size
        like = arguments[self.first_input]
        for j in spec.outputs:
            p = self.params[j]
            if p.access == "inout":
                arguments[j] = arguments[j].clone()
            else:  # packed, as laid out
                make = like.new_zeros if self.partial[j] else like.new_empty
                arguments[j] = make(p.layout.shape_of(bound), dtype=self.dtypes[j])
        return arguments

    def functional(self, *args: Any) -> Any:
        arguments = self.allocate(args)
        self.launch(arguments, arguments[self.first_input])
        return self.returned(arguments)

    def fake(self, *args: Any) -> Any:
        return self.returned(self.allocate(args))

    def returned(self, arguments: Sequence[Any]) -> Any:
        outs = tuple(arguments[j] for j in self.spec.outputs)
        return outs[0] if len(outs) == 1 else outs


def _no_effect(*args: Any) -> None:
    """The fake implementation of a mutating overload: it allocates nothing and returns nothing."""


#: namespace -> the file and name of the generated module that registered it (in this process), and its library.
_REGISTERED: dict[str, tuple[str, str, Any]] = {}


def register(namespace: str, module: str, module_file: str, ops: Sequence[TorchOpSpec],
             pairs: Sequence[AutogradSpec] = ()) -> Any:
    """Define every operator of ``ops`` in ``namespace``, their fake implementations and the autograd pairs;
    the ``torch.library.Library`` that holds them (keep it: the registrations live as long as it does).

    A second import of the same generated file returns the first registration; a namespace another file
    registered is LG630.
    """
    torch = import_torch(module)
    where = str(Path(module_file).resolve())
    known = _REGISTERED.get(namespace)
    if known is not None:
        if known[0] != where:
            raise launch_error(
                "LG630", f"torch namespace `{namespace}` already has operators, registered by `{known[1]}`; "
                f"`{module}` (another file) would register them again",
                hint="a spec's operators live in `layoutgen_<spec>`: import one generated package of each spec "
                "name into a process")
        return known[2]
    library = torch.library.Library(namespace, "DEF")
    made: dict[str, _Op] = {}
    for spec in ops:
        op = made[spec.name] = _Op(torch, spec)
        library.define(f"{spec.name}.mutating{spec.mutating}")
        qualified = f"{namespace}::{spec.name}"
        for key in ("CUDA", "CPU"):  # CPU too: a CPU tensor reaches the launcher, which refuses it (LG608)
            library.impl(f"{spec.name}.mutating", op.mutating, key)
        torch.library.register_fake(f"{qualified}.mutating", _no_effect, lib=library)
        if spec.functional is not None:
            library.define(f"{spec.name}{spec.functional}")
            for key in ("CUDA", "CPU"):
                library.impl(spec.name, op.functional, key)
            torch.library.register_fake(qualified, op.fake, lib=library)
    for pair in pairs:
        forward, backward = made[pair.forward], made[pair.backward]
        setup, derivative = _autograd(torch, namespace, forward, backward, pair)
        torch.library.register_autograd(f"{namespace}::{pair.forward}", derivative, setup_context=setup, lib=library)
    _REGISTERED[namespace] = (where, module, library)
    return library


def _autograd(torch: Any, namespace: str, forward: _Op, backward: _Op,
              pair: AutogradSpec) -> tuple[Callable[..., None], Callable[..., Any]]:
    """``setup_context`` and ``backward`` for ``torch.library.register_autograd`` of one pair."""
    fwd = forward.spec
    position = {j: pos for pos, j in enumerate(fwd.inputs)}  # forward launcher argument -> functional argument
    returned = {j: pos for pos, j in enumerate(fwd.outputs)}
    n_arrays = len(forward.params)
    saved_arrays = [j for kind, j in pair.sources if kind == "saved" and j < n_arrays]
    saved_scalars = [j for kind, j in pair.sources if kind == "saved" and j >= n_arrays]
    results = [j for kind, j in pair.sources if kind.startswith("result")]
    differentiable = {j for kind, j in pair.sources if kind.startswith("grad")}
    overload = getattr(getattr(torch.ops, namespace), pair.backward).mutating
    bwd = backward.spec
    reads = [k for k, (kind, _) in enumerate(pair.sources) if not kind.startswith("result")]

    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: Any) -> None:
        outs = output if isinstance(output, tuple) else (output,)

        def value(j: int) -> Any:
            return inputs[position[j]] if j in position else outs[returned[j]]

        ctx.save_for_backward(*(value(j) for j in saved_arrays))
        ctx.lg_scalars = [inputs[position[j]] for j in saved_scalars]
        ctx.lg_shapes = {j: inputs[position[j]].shape for j in results}
        silent = [outs[returned[j]] for j in fwd.outputs if j not in differentiable]
        if silent:
            ctx.mark_non_differentiable(*silent)

    def derivative(ctx: Any, *grads: Any) -> tuple[Any, ...]:
        if torch.is_grad_enabled():  # backward(create_graph=True): nothing records the kernel's own derivative
            raise launch_error(
                "LG632", f"`{namespace}::{pair.forward}` is differentiated by the kernel `{pair.backward}`, "
                "which has no derivative of its own: its gradients cannot be differentiated (create_graph=True)",
                hint="differentiate once; for a second derivative, pair the backward with a backward of its own")
        arrays = iter(ctx.saved_tensors)
        scalars = iter(ctx.lg_scalars)
        arguments: list[Any] = [None] * backward.arity
        for k, (kind, j) in enumerate(pair.sources):
            if kind == "saved":
                arguments[k] = next(arrays) if j < n_arrays else next(scalars)
            elif kind.startswith("grad"):
                g = grads[returned[j]]
                arguments[k] = (g[_field(forward.params[j], g.shape)] if kind == "grad_field" else g).contiguous()
        bound = backward.bound(arguments, reads)
        for k, (kind, _) in enumerate(pair.sources):
            if kind.startswith("result"):
                p = backward.params[k]
                make = grads[0].new_zeros if p.access == "inout" or backward.partial[k] else grads[0].new_empty
                arguments[k] = make(p.layout.shape_of(bound), dtype=backward.dtypes[k])
        in_schema: list[Any] = [None] * backward.arity
        for k, pos in enumerate(bwd.order):
            in_schema[pos] = arguments[k]
        overload(*in_schema)
        out: list[Any] = [None] * (len(fwd.inputs) + len(fwd.sizes))
        for k, (kind, j) in enumerate(pair.sources):
            if kind == "result":
                out[position[j]] = arguments[k]
            elif kind == "result_field":
                whole = arguments[k].new_zeros(ctx.lg_shapes[j])
                whole[_field(forward.params[j], whole.shape)] = arguments[k]
                out[position[j]] = whole
        return tuple(out)

    return setup_context, derivative


def _field(p: ParamSpec, shape: Any) -> tuple[slice, ...]:
    """The index of ``p``'s view in an array of its layout of ``shape``: its rows of a named axis, its columns."""
    index = [slice(None)] * len(shape)
    if p.rows is not None:
        axis, start, stop = p.rows
        index[axis] = slice(start, stop)
    if p.cols is not None:
        unit = 1 if p.layout.unit is None else shape[-1] // p.layout.width
        index[-1] = slice(p.cols[0] * unit, p.cols[1] * unit)
    return tuple(index)

