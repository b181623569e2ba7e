"""Autograd pairs: a forward binding, the backward binding that differentiates it, and how the two connect.

``Autograd(forward=fwd, backward=bwd, saves=["x", "W", "gates"], grads={"x": "grad_x", "y": "grad_y"})``
says what a generated torch operator (:mod:`layoutgen.codegen.torchmodule`) registers with
``torch.library.register_autograd``: the forward's functional operator saves the parameters named in
``saves`` (inputs or outputs) for the backward's parameters of the same name, and ``grads`` maps each
forward parameter to the backward parameter that is its gradient: for a forward input, a parameter the
backward writes (the gradient it computes); for a forward output, one it reads (the gradient coming in).

Every backward parameter must get its value from one of the two, so nothing the backward reads is left
to chance; everything is checked here, at the declaration's line (LG221..LG223).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from ..schema import View
from ..schema.diagnostics import Site, caller_site
from ..schema.dims import Dim, shape_text
from .errors import KernelError
from .errors import kernel_error as _error
from .kernels import Binding, Param, Scalar

#: How a gradient connects a forward parameter's view and the backward parameter's: the same elements of
#: the same layout ("whole": the tensor passes as it is), or a backward layout that is exactly the forward
#: view's field ("field": the gradient is that field sliced out of, or written into zeros of, the forward
#: parameter's array).
Relation = Literal["whole", "field"]


@dataclass(frozen=True)
class GradLink:
    """A forward parameter and the backward parameter that is its gradient."""

    forward: str
    backward: str
    relation: Relation


@dataclass(frozen=True, eq=False)
class Autograd:
    """A forward binding differentiated by a backward binding (see the module's docstring).

    ``saves``: the names of forward parameters (arrays or scalars) that the
    backward reads under the same name, or a mapping ``{backward parameter:
    forward parameter}``. ``grads``: ``{forward parameter: backward parameter}``.
    A forward output without a gradient is marked non-differentiable; a forward
    input without one gets no gradient (None). The backward's ``InOut``
    parameters (a gradient it accumulates into) are given zeros.
    """

    forward: Binding
    backward: Binding
    saves: tuple[tuple[str, str], ...]  # (backward parameter, forward parameter)
    grads: tuple[GradLink, ...]
    site: Site | None

    def __init__(self, forward: Binding, backward: Binding, *, saves: Sequence[str] | Mapping[str, str] = (),
                 grads: Mapping[str, str]) -> None:
        site = caller_site()
        for what, b in (("forward", forward), ("backward", backward)):
            if not isinstance(b, Binding):
                raise _error("LG221", f"the {what} of an Autograd pair must be a binding (`kernel.bind(...)`), got "
                             f"{b!r}", site)
        if forward is backward or forward.name == backward.name:
            raise _error("LG221", f"an Autograd pair needs two bindings, got `{forward.name}` as both forward and "
                         "backward", site)
        in_place = [p.name for p, _ in forward.pairs if p.access == "inout"]
        if in_place:
            raise _error("LG221", f"the forward `{forward.name}` of an Autograd pair must not update a parameter in "
                         f"place, got InOut `{in_place[0]}`", site,
                         hint="write the result to an Out parameter: a value overwritten in place has no gradient "
                         "of its own")
        saved = _check_saves(forward, backward, saves, site)
        links = _check_grads(forward, backward, grads, site)
        _check_every_backward_parameter(backward, saved, links, site)
        for attr, value in (("forward", forward), ("backward", backward), ("saves", saved), ("grads", links),
                            ("site", site)):
            object.__setattr__(self, attr, value)

    def __repr__(self) -> str:
        return f"<Autograd {self.forward.name} / {self.backward.name}>"


def _signature(b: Binding) -> dict[str, Param | Scalar]:
    return {p.name: p for p in b.kernel.signature}


def _names(b: Binding) -> str:
    return ", ".join(f"`{p.name}`" for p in b.kernel.signature)


def _check_saves(forward: Binding, backward: Binding, saves: object, site: Site | None) -> tuple[tuple[str, str], ...]:
    """LG222 unless each saved forward parameter feeds a backward parameter of its kind and view."""
    if isinstance(saves, Mapping):
        pairs = list(saves.items())
    elif isinstance(saves, Sequence) and not isinstance(saves, (str, bytes)):
        pairs = [(name, name) for name in saves]
    else:
        raise _error("LG222", f"`saves` of Autograd `{forward.name}` must be a list of parameter names or a mapping "
                     f"{{backward parameter: forward parameter}}, got {saves!r}", site)
    fwd, bwd = _signature(forward), _signature(backward)
    out = []
    for target, source in pairs:
        if not isinstance(target, str) or not isinstance(source, str):
            raise _error("LG222", f"`saves` of Autograd `{forward.name}` must name parameters by strings, got "
                         f"{target!r}: {source!r}", site)
        if source not in fwd:
            raise _error("LG222", f"`saves` names `{source}`, which is no parameter of the forward `{forward.name}` "
                         f"(its parameters: {_names(forward)})", site)
        got = bwd.get(target)
        if got is None or (isinstance(got, Param) and got.access != "in"):
            what = "no parameter" if got is None else f"{got.access} parameter `{target}`"
            raise _error("LG222", f"`{forward.name}.{source}` is saved for `{backward.name}.{target}`, but the "
                         f"backward has {what} there: a saved value is read, by an In parameter or a scalar",
                         site, hint=f"the backward's parameters: {_names(backward)}")
        given = fwd[source]
        if isinstance(given, Scalar) != isinstance(got, Scalar):
            kinds = ("a scalar", "an array") if isinstance(given, Scalar) else ("an array", "a scalar")
            raise _error("LG222", f"`{forward.name}.{source}` is {kinds[0]} but `{backward.name}.{target}`, which "
                         f"it is saved for, is {kinds[1]}", site)
        if isinstance(given, Scalar) and isinstance(got, Scalar):
            if given.dtype != got.dtype:
                raise _error("LG222", f"scalar `{forward.name}.{source}` is {given.dtype} but "
                             f"`{backward.name}.{target}`, which it is saved for, is {got.dtype}", site)
        elif not _same_elements(forward.view(source), backward.view(target)):
            raise _error("LG222", f"`{forward.name}.{source}` is bound to {_bound(forward.view(source))} but "
                         f"`{backward.name}.{target}`, which it is saved for, to {_bound(backward.view(target))}",
                         site, hint="a saved tensor passes to the backward as it is: bind both to the same view")
        out.append((target, source))
    return tuple(out)


def _check_grads(forward: Binding, backward: Binding, grads: object, site: Site | None) -> tuple[GradLink, ...]:
    """LG223 unless each gradient pairs a forward array with a backward array of the matching direction and
    shape."""
    if not isinstance(grads, Mapping):
        raise _error("LG223", f"`grads` of Autograd `{forward.name}` must be a mapping {{forward parameter: backward "
                     f"parameter}}, got {grads!r}", site)
    fwd, bwd = _signature(forward), _signature(backward)
    links = []
    for source, target in grads.items():
        if not isinstance(source, str) or not isinstance(target, str):
            raise _error("LG223", f"`grads` of Autograd `{forward.name}` must name parameters by strings, got "
                         f"{source!r}: {target!r}", site)
        p, q = fwd.get(source), bwd.get(target)
        if not isinstance(p, Param):
            what = "a scalar" if p is not None else "no parameter"
            raise _error("LG223", f"`grads` names `{source}`, which is {what} of the forward `{forward.name}`: a "
                         f"gradient belongs to an array (its arrays: "
                         + ", ".join(f"`{a.name}`" for a in forward.kernel.params) + ")", site)
        if not isinstance(q, Param):
            what = "a scalar" if q is not None else "no parameter"
            raise _error("LG223", f"the gradient of `{forward.name}.{source}` is `{target}`, which is {what} of the "
                         f"backward `{backward.name}` (its arrays: "
                         + ", ".join(f"`{a.name}`" for a in backward.kernel.params) + ")", site)
        if p.access == "in" and q.access == "in":
            raise _error("LG223", f"`{forward.name}.{source}` is an input, so its gradient is computed by the "
                         f"backward, but `{backward.name}.{target}` is In: the backward only reads it", site,
                         hint="the gradient of an input is an Out (or an InOut the backward adds to)")
        if p.access == "out" and q.access != "in":
            raise _error("LG223", f"`{forward.name}.{source}` is an output, so its gradient comes in to the backward, "
                         f"but `{backward.name}.{target}` is {q.access}: the backward writes it", site,
                         hint="the gradient of an output is an In parameter of the backward")
        relation = _relation(forward.view(source), backward.view(target))
        if relation is None:
            v, w = forward.view(source), backward.view(target)
            raise _error("LG223", f"the gradient of `{forward.name}.{source}` ({_bound(v)}, elements "
                         f"{shape_text(_elements(v))} {v.dtype}) cannot be `{backward.name}.{target}` ({_bound(w)}, "
                         f"{shape_text(_elements(w))} {w.dtype})", site,
                         hint="bind the gradient to the same view, or to a whole layout of the view's shape and dtype")
        links.append(GradLink(source, target, relation))
    return tuple(links)


def _check_every_backward_parameter(backward: Binding, saved: tuple[tuple[str, str], ...],
                                    links: tuple[GradLink, ...], site: Site | None) -> None:
    """LG223 when a backward parameter gets its value from nothing, or from two things."""
    given: dict[str, str] = {}
    for target, source in saved:
        given.setdefault(target, f"saved `{source}`")
    for link in links:
        other = given.get(link.backward)
        if other is not None:
            raise _error("LG223", f"`{backward.name}.{link.backward}` is both {other} and the gradient of "
                         f"`{link.forward}`", site)
        given[link.backward] = f"the gradient of `{link.forward}`"
    for p in backward.kernel.signature:
        if p.name not in given:
            what = "an array it writes" if isinstance(p, Param) and p.writes else "what it reads"
            raise _error("LG223", f"`{backward.name}.{p.name}` gets no value from the pair: it is neither saved nor "
                         f"a gradient ({what})", site,
                         hint="name it in `saves` (a forward parameter of the same name) or in `grads`")


def _same_elements(a: View, b: View) -> bool:
    """One field of one layout (what ``spec.same_view`` compares)."""
    return a.layout is b.layout and a.region == b.region and a.box == b.box


def _elements(v: View) -> tuple[Dim, ...]:
    """The view's elements as an array: its leading dims, then its columns in elements."""
    return (*v.leading_dims, Dim.expr(v.column_elements(v.width)))


def _relation(v: View, w: View) -> Relation | None:
    """How a gradient moves between the forward's view ``v`` and the backward's ``w`` (None: it cannot)."""
    if v.dtype != w.dtype:
        return None
    if _same_elements(v, w) or (v.is_whole and w.is_whole and v.layout.shape == w.layout.shape):
        return "whole"
    if w.is_whole and w.layout.shape == _elements(v):
        return "field"
    return None


def _bound(v: View) -> str:
    lay = v.layout
    return f"`{v.name}` of {lay.name} {shape_text(lay.shape)}"


__all__ = ["Autograd", "GradLink", "KernelError", "Relation"]
