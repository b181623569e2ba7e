"""Autograd for the generated torch operators: a forward operator's functional form differentiated by a
backward operator (a declared ``Autograd`` pair, docs/torch.md).

:func:`autograd` makes ``setup_context`` and ``backward`` for ``torch.library.register_autograd`` from the
pair's :class:`AutogradSpec`, the plain data a generated ``torch_ops.py`` passes to
:func:`.torch_ops.register`: where each backward argument comes from (a saved forward argument, an incoming
gradient, an array the backward writes), so that no shape or stride is written by hand.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import launch_error
from .plan import ParamSpec


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


def autograd(torch: Any, namespace: str, forward: Any, backward: Any, overload: Any,
             pair: AutogradSpec) -> tuple[Callable[..., None], Callable[..., Any]]:
    """``setup_context`` and ``backward`` for ``torch.library.register_autograd`` of one pair: ``forward`` and
    ``backward`` are the two bindings' operator objects (:class:`.torch_ops._Op`), ``overload`` the
    backward's mutating operator, which the derivative calls on the arrays it allocates."""
    fwd = forward.spec
    position = {j: pos for pos, j in enumerate(fwd.inputs)}  # forward launcher argument -> functional argument
    returned = {j: pos for pos, j in enumerate(fwd.outputs)}
    n_arrays = len(forward.params)
    saved_arrays = [j for kind, j in pair.sources if kind == "saved" and j < n_arrays]
    saved_scalars = [j for kind, j in pair.sources if kind == "saved" and j >= n_arrays]
    results = [j for kind, j in pair.sources if kind.startswith("result")]
    differentiable = {j for kind, j in pair.sources if kind.startswith("grad")}
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
