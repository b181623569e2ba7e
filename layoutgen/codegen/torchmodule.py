"""The model of a spec's generated torch module: a torch operator per binding, and its autograd pairs.

Everything the module registers is computed here, as data the template
places and :mod:`layoutgen.runtime.torch_ops` reads: the schema of each
form (the mutating one: every array, written ones ``Tensor(a!)``; the
functional one: what the kernel reads in, what it writes out), where each
schema argument goes among the launcher's (arrays, then scalars), the symbols
the functional form must be told because no input has them, and for each
autograd pair where every backward argument comes from.

Every binding has a functional form: one that reads no array is told the
device of its outputs (``Device lg_device``, last), as it is told a size no
input has. The runtime registers the two forms as two operators, so the plain
call ``ops.<binding>(...)``, which torch resolves among one operator's
overloads, has only the functional one to resolve to.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..declare.autograd import Autograd
from ..declare.kernels import Binding, Param, Scalar
from ..declare.spec import Spec
from .pymodule import launcher

#: The torch schema type of a scalar of each kind (torch's `float` is a double, its `int` an int64).
SCHEMA_TYPES = {"float": "float", "int": "int", "uint": "int", "bool": "bool"}
#: The prefix of a functional operator's size arguments: reserved to layoutgen, so no parameter has it.
SIZE_PREFIX = "lg_size_"
#: The functional operator's last argument where the kernel reads no array: the device its outputs go to.
DEVICE_ARGUMENT = "lg_device"


def namespace(spec: Spec) -> str:
    """The torch namespace of a spec's operators: ``layoutgen_<spec>``."""
    return f"layoutgen_{spec.name}"


@dataclass(frozen=True)
class TorchOpModel:
    name: str
    launcher: str  # the generated module's launcher object
    mutating: str  # schema of the mutating form, from the parenthesis on
    order: tuple[int, ...]  # per launcher argument: its position in the mutating schema
    functional: str  # schema of the functional form (the plain call); ends in `Device lg_device` where no array is read
    inputs: tuple[int, ...]  # per functional argument (before the sizes): the launcher argument
    outputs: tuple[int, ...]  # the launcher arrays the functional form returns
    sizes: tuple[str, ...]  # symbols given to the functional form after its inputs


@dataclass(frozen=True)
class AutogradModel:
    forward: str
    backward: str
    sources: tuple[tuple[str, int], ...]  # per backward launcher argument (see runtime.torch_ops.AutogradSpec)


def _launcher_index(b: Binding) -> dict[str, int]:
    """Parameter name -> its index among the launcher's arguments: the arrays in order, then the scalars."""
    arrays = [p.name for p in b.kernel.params]
    return {name: i for i, name in enumerate([*arrays, *(s.name for s in b.kernel.scalars)])}


def _type(p: Param | Scalar, alias: str | None) -> str:
    if isinstance(p, Scalar):
        return SCHEMA_TYPES[p.dtype.kind]
    return f"Tensor({alias}!)" if alias else "Tensor"


def _alias(n: int) -> str:
    """The alias set of the n-th written array: a, b, ..., z, a26, a27, ..."""
    return chr(ord("a") + n) if n < 26 else f"a{n}"


def op_model(b: Binding) -> TorchOpModel:
    index = _launcher_index(b)
    signature = b.kernel.signature
    written = 0
    mutating = []
    for p in signature:
        alias = None
        if isinstance(p, Param) and p.writes:
            alias, written = _alias(written), written + 1
        mutating.append(f"{_type(p, alias)} {p.name}")
    position = {p.name: pos for pos, p in enumerate(signature)}
    order = tuple(position[name] for name, _ in sorted(index.items(), key=lambda item: item[1]))
    read = [p for p in signature if isinstance(p, Scalar) or p.reads]
    outputs = [p for p in signature if isinstance(p, Param) and p.writes]
    given = {s for p in read if isinstance(p, Param) for s in b.view(p.name).layout.symbols}
    sizes = tuple(dict.fromkeys(s for p in outputs for s in b.view(p.name).layout.symbols if s not in given))
    arguments = [f"{_type(p, None)} {p.name}" for p in read] + [f"SymInt {SIZE_PREFIX}{s}" for s in sizes]
    if not any(isinstance(p, Param) for p in read):  # no input says where the outputs go: an argument does
        arguments.append(f"Device {DEVICE_ARGUMENT}")
    returns = ", ".join(f"Tensor {p.name}" for p in outputs)
    functional = f"({', '.join(arguments)}) -> " + (f"({returns})" if len(outputs) != 1 else returns)
    return TorchOpModel(
        name=b.name, launcher=launcher(b.name), mutating=f"({', '.join(mutating)}) -> ()", order=order,
        functional=functional, inputs=tuple(index[p.name] for p in read),
        outputs=tuple(index[p.name] for p in outputs), sizes=sizes,
    )


def autograd_model(pair: Autograd) -> AutogradModel:
    fwd, bwd = _launcher_index(pair.forward), _launcher_index(pair.backward)
    sources: dict[str, tuple[str, int]] = {}
    for target, source in pair.saves:
        sources[target] = ("saved", fwd[source])
    for link in pair.grads:
        incoming = pair.forward.kernel.param(link.forward).access == "out"
        kind = ("grad" if incoming else "result") + ("_field" if link.relation == "field" else "")
        sources[link.backward] = (kind, fwd[link.forward])
    ordered = sorted(bwd.items(), key=lambda item: item[1])
    return AutogradModel(pair.forward.name, pair.backward.name, tuple(sources[name] for name, _ in ordered))


def torch_model(spec: Spec) -> dict[str, object]:
    """What ``torch_ops.py.j2`` places. A pair's bindings are the spec's own or equal to them (Spec checks
    it: LG220), so their kernels, and the launcher arguments counted here, are the same."""
    ops = [op_model(b) for b in spec.kernels]
    return {"spec": spec.name, "namespace": namespace(spec), "ops": ops,
            "pairs": [autograd_model(pair) for pair in spec.autograd],
            "launchers": sorted(op.launcher for op in ops)}
