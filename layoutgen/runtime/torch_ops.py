"""Generated kernels as torch operators: ``torch.library`` registrations made from a launcher's plan.

A generated ``torch_ops.py`` calls :func:`register` once, with plain data: a
:class:`TorchOpSpec` per kernel binding (its launcher, the schemas the
generator wrote, where each schema argument goes) and an
:class:`AutogradSpec` per declared forward/backward pair. Each binding
becomes two operators:

- ``<namespace>::<binding>``, the functional form, its one overload: the read
  arrays and scalars in, the written arrays allocated packed from their
  layouts (sizes from the symbols the inputs bind, or given) and returned;
  a kernel that reads no array is given its outputs' device, last;
- ``<namespace>::lg_mutating_<binding>``, the mutating form: every array
  passed in, the written ones marked ``Tensor(a!)`` in the schema; it
  launches and returns nothing. It is also ``ops.<binding>.mutating``.

Two operators, not two overloads of one: torch resolves a plain call
``ops.<binding>(...)`` by trying each overload of the operator in turn, so an
overload whose arguments a call also fits (a kernel whose arrays are all
``In`` and ``InOut`` takes the same arguments in both forms) could be chosen
for it. The plain call's operator has the functional overload alone, and no
binding can be named ``lg_...``.

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
from operator import itemgetter
from pathlib import Path
from typing import Any

from ..schema.diagnostics import Diagnostic
from ..schema.dtypes import DTYPES
from . import driver
from .arrays import ArrayInfo, torch_dtype_name
from .errors import LaunchError, launch_error
from .launch import KernelLauncher
from .plan import ParamSpec
from .torch_autograd import AutogradSpec as AutogradSpec  # re-exported: generated modules import it from here
from .torch_autograd import autograd
from .validate import check_param

#: The oldest torch whose ``torch.library`` has ``register_fake`` and ``register_autograd`` for defined ops.
MIN_TORCH = (2, 5)
#: The prefix of a binding's mutating operator (``lg_``: no binding may start with it, so none collides).
MUTATING_PREFIX = "lg_mutating_"


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

    name: str  # the binding's: ``<namespace>::<name>``, the functional operator
    launcher: KernelLauncher
    mutating: str  # the mutating operator's schema, from its arguments on: ``(Tensor x, Tensor(a!) y) -> ()``
    order: tuple[int, ...]  # per launcher argument, its position in the mutating schema (the kernel's signature)
    functional: str  # the functional operator's schema; reading no array, it ends in ``Device lg_device``
    inputs: tuple[int, ...] = ()  # per functional argument before the sizes, the launcher argument it is
    outputs: tuple[int, ...] = ()  # the launcher arrays the functional form returns, in order
    sizes: tuple[str, ...] = ()  # symbols no input binds, given to the functional form after its inputs


def _torch_dtypes(torch: Any) -> dict[str, Any]:
    """layoutgen dtype -> torch dtype (bf16 is torch.bfloat16: the launcher accepts it)."""
    out = {}
    for d in DTYPES.values():
        name = "bfloat16" if d.name == "bf16" else d.numpy_name or d.storage
        out[d.name] = getattr(torch, name)
    return out


class _Op:
    """One registered operator: the implementations of its two forms and their fake ones."""

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
        # the functional form's first array (a scalar may come first): its device and kind are the outputs'; with
        # none, the device is the argument after the sizes
        self.first_input = next((j for j in spec.inputs if j < len(self.params)), -1)
        self.device_argument = self.n_inputs + len(spec.sizes)
        # What a call of the functional form does that does not depend on its arguments' values, worked out once
        # here (issue 33, item 4: each call paid for it in Python frames):
        # - the launcher's arguments from the schema's: an itemgetter over them and a None after them (taken once
        #   more at the end, so that it returns a tuple for one argument too); where the launcher takes the
        #   inputs first and no size is given, the inputs and Nones after them;
        position = {j: pos for pos, j in enumerate(spec.inputs)}
        n_args = self.device_argument + (self.first_input < 0)
        self._gather = itemgetter(*(position.get(j, n_args) for j in range(self.arity)), n_args)
        self._prefix = spec.inputs == tuple(range(self.n_inputs)) and not spec.sizes
        self._tail = (None,) * (self.arity - self.n_inputs)
        # - the arrays it writes: (launcher index, dtype, zeros) per new one; the InOut ones are copied;
        self._made = [(j, self.dtypes[j], self.partial[j]) for j in spec.outputs if self.params[j].access != "inout"]
        self._copied = [j for j in spec.outputs if self.params[j].access == "inout"]
        # - what it allocates, per key (:meth:`functional`): the key holds every input array's shape, since what
        #   :meth:`bound` refuses before anything is allocated (an input of the wrong rank, in the order of the
        #   inputs) depends on each of them;
        self._arrays = tuple(pos for pos, j in enumerate(spec.inputs) if j < len(self.params))
        self._plans: dict[tuple[Any, ...], list[tuple[int, tuple[int, ...], Any, bool]]] = {}
        # - what it returns.
        self._returned = itemgetter(*spec.outputs) if spec.outputs else None

    # -- the mutating form ---------------------------------------------------------------------------------

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

    # -- the functional form -------------------------------------------------------------------------------

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

    def shapes(self, arguments: Sequence[Any], args: Sequence[Any]) -> list[tuple[int, ...]]:
        """The shape of each new array (``_made``'s order), from the inputs among ``arguments`` and the sizes
        among the schema's ``args``; LG601 for an input of the wrong rank, LG631 for a negative size."""
        spec = self.spec
        bound = self.bound(arguments, spec.inputs)
        for symbol, size in zip(spec.sizes, args[self.n_inputs:]):
            if size < 0:
                raise launch_error("LG631", f"`{spec.name}` takes the size of `{symbol}`, which no input has, as an "
                                   f"argument; it must be 0 or more, got {size}")
            bound[symbol] = size
        return [self.params[j].layout.shape_of(bound) for j, _, _ in self._made]

    def gathered(self, args: Sequence[Any]) -> list[Any]:
        """The launcher's arguments of the functional form's ``args``: the inputs in place, None for the rest."""
        arguments = list(self._gather((*args, None)))
        del arguments[-1]
        return arguments

    def allocate(self, args: Sequence[Any], shapes: list[tuple[int, ...]] | None = None) -> list[Any]:
        """The launcher's arguments for functional ``args``: the inputs, and new outputs (InOut: a copy), of
        ``shapes`` where they are known already."""
        arguments = self.gathered(args)
        if shapes is None:
            shapes = self.shapes(arguments, args)
        if self.first_input >= 0:
            like = arguments[self.first_input]
            zeros, empty = like.new_zeros, like.new_empty
        else:  # nothing read: on the device given
            zeros, empty = self._factories(args[self.device_argument])
        for (j, dtype, partial), shape in zip(self._made, shapes):  # packed, as laid out
            arguments[j] = (zeros if partial else empty)(shape, dtype=dtype)
        for j in self._copied:
            arguments[j] = arguments[j].clone()
        return arguments

    def _factories(self, device: Any) -> tuple[Callable[..., Any], Callable[..., Any]]:
        """``new_zeros`` and ``new_empty`` of a tensor on ``device``, with no tensor."""
        torch = self.torch
        return (lambda shape, dtype: torch.zeros(shape, dtype=dtype, device=device),
                lambda shape, dtype: torch.empty(shape, dtype=dtype, device=device))

    def functional(self, *args: Any) -> Any:
        """Allocate what the kernel writes, launch, return it. Written flat: it runs on every call."""
        if self.first_input < 0:  # nothing read: the outputs' device is an argument; on meta, what fakes get
            arguments = self.allocate(args)
            if self.spec.outputs and arguments[self.spec.outputs[0]].device.type != "meta":
                self.launch(arguments, arguments[self.spec.outputs[0]])
            return self.returned(arguments)
        # What to allocate, kept per the first input's dtype, the inputs' shapes and the sizes given: a call of
        # the same shapes as before costs a dict lookup, not the symbols bound again (the launcher checks every
        # array anyway). A key never seen is worked out by the code the fake implementation runs, and refused
        # as it refuses.
        arguments = [*args, *self._tail] if self._prefix else self.gathered(args)
        like = arguments[self.first_input]
        key = (like.dtype, *[args[pos].shape for pos in self._arrays], *args[self.n_inputs:])
        made = self._plans.get(key)
        if made is None:
            made = self._plan(key, like, arguments, args)
        for j, shape, dtype, zeros in made:  # dtype None: the first input's, given by not asking (no keyword)
            if zeros:
                arguments[j] = like.new_zeros(shape) if dtype is None else like.new_zeros(shape, dtype=dtype)
            else:
                arguments[j] = like.new_empty(shape) if dtype is None else like.new_empty(shape, dtype=dtype)
        for j in self._copied:
            arguments[j] = arguments[j].clone()
        self.launch(arguments, like)
        returned = self._returned
        return None if returned is None else returned(arguments)

    def _plan(self, key: tuple[Any, ...], like: Any, arguments: list[Any],
              args: Sequence[Any]) -> list[tuple[int, tuple[int, ...], Any, bool]]:
        """What :meth:`functional` allocates for ``key``: (launcher index, shape, dtype or None where it is
        ``like``'s, zeros) per new array; LG601 and LG631 as :meth:`shapes` raises them."""
        shapes = self.shapes(arguments, args)
        made = [(j, shape, None if dtype == like.dtype else dtype, zeros)
                for (j, dtype, zeros), shape in zip(self._made, shapes)]
        if len(self._plans) >= 64:  # bounded: a run of ever new shapes does not grow it without end
            self._plans.clear()
        self._plans[key] = made
        return made

    def fake(self, *args: Any) -> Any:
        return self.returned(self.allocate(args))

    def returned(self, arguments: Sequence[Any]) -> Any:
        """What the functional schema returns: one tensor, a tuple of them, or None (``-> ()``: nothing written)."""
        return None if self._returned is None else self._returned(arguments)


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
        mutating = f"{MUTATING_PREFIX}{spec.name}"
        library.define(f"{mutating}{spec.mutating}")
        library.define(f"{spec.name}{spec.functional}")
        # CPU too: a CPU tensor reaches the launcher, which refuses it (LG608). An operator with no tensor
        # argument dispatches on no backend: its kernel is every backend's, its device an argument.
        keys = ("CUDA", "CPU") if op.first_input >= 0 else ("CompositeExplicitAutograd",)
        for key in ("CUDA", "CPU"):
            library.impl(mutating, op.mutating, key)
        for key in keys:
            library.impl(spec.name, op.functional, key)
        torch.library.register_fake(f"{namespace}::{mutating}", _no_effect, lib=library)
        torch.library.register_fake(f"{namespace}::{spec.name}", op.fake, lib=library)
        # `ops.<binding>.mutating`: set where the packet keeps the overloads it has looked up (an attribute of
        # its own name), so it is an attribute only; the packet's overloads, which a plain call tries, stay one.
        packets = getattr(torch.ops, namespace)
        getattr(packets, spec.name).mutating = getattr(packets, mutating).default
    for pair in pairs:
        forward, backward = made[pair.forward], made[pair.backward]
        overload = getattr(getattr(torch.ops, namespace), f"{MUTATING_PREFIX}{pair.backward}").default
        setup, derivative = autograd(torch, namespace, forward, backward, overload, pair)
        torch.library.register_autograd(f"{namespace}::{pair.forward}", derivative, setup_context=setup, lib=library)
    _REGISTERED[namespace] = (where, module, library)
    return library
