"""A spec: the layouts and kernel bindings of one generated module."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..schema import Layout, View
from ..schema.diagnostics import Diagnostic, Site, caller_site
from ..schema.names import file_name_problem, name_problem
from ..schema.record import Region
from .autograd import Autograd
from .kernels import Binding, KernelError
from .program import Launch, Program, ProgramError


@dataclass(frozen=True, eq=False)
class Spec:
    """What one spec module generates: ``Spec("vsn", kernels=[...], programs=[...], layouts=[...])``.

    The generated files go to ``<out>/<name>/``. Layouts used by the bindings
    are included without being listed, and so are the bindings the programs'
    launches make: a launch whose kernel and views equal a listed binding's
    uses that binding's kernel.

    ``torch=True`` also generates ``torch_ops.py``: a torch operator per binding
    (docs/torch.md); ``autograd`` pairs forward and backward bindings for it.
    """

    name: str
    layouts: tuple[Layout, ...]
    kernels: tuple[Binding, ...]
    programs: tuple[Program, ...]
    site: Site | None
    torch: bool
    autograd: tuple[Autograd, ...]
    facts: bool = False  # also generate `<spec>_facts.h`, the layouts' numbers as C constants (docs/own-kernels.md)

    def __init__(self, name: str, *, kernels: Sequence[Binding] = (), programs: Sequence[Program] = (),
                 layouts: Sequence[Layout] = (), torch: bool = False, autograd: Sequence[Autograd] = (),
                 facts: bool = False) -> None:
        site = caller_site()
        if not isinstance(facts, bool):
            raise KernelError(Diagnostic("LG208", f"`facts` of spec `{name}` must be True or False, got {facts!r}", site))
        kernels, programs, layouts = (_listed(name, arg, given, site) for arg, given in (
            ("kernels", kernels), ("programs", programs), ("layouts", layouts)))
        for prog in programs:
            if not isinstance(prog, Program):
                raise KernelError(Diagnostic("LG208", f"the programs of spec `{name}` must be Program(...), got "
                                             f"{prog!r}", site))
        problem = name_problem(name) or (file_name_problem(name) if isinstance(name, str) else None)
        if problem:
            raise KernelError(Diagnostic("LG211" if problem[0] == "LG211" else "LG208", f"a spec name {problem[1]}",
                                         site))
        for b in kernels:
            if not isinstance(b, Binding):
                raise KernelError(Diagnostic(
                    "LG208", f"the kernels of spec `{name}` must be bindings (`kernel.bind(...)`), got {b!r}",
                    site, hint="bind the kernel's parameters to views: my_kernel.bind(x=Window.snap, ...)",
                ))
        kernels = _with_program_bindings(kernels, programs)
        _check_file_names(name, kernels)
        ordered: dict[int, Layout] = {}
        for lay in [*layouts, *(v.layout for b in kernels for _, v in b.views)]:  # views carry what made them
            if not isinstance(lay, Layout):
                raise KernelError(Diagnostic("LG208", f"the layouts of spec `{name}` must be layouts, got {lay!r}", site))
            ordered.setdefault(id(lay), lay)
        layout_names = _layout_names(name, list(ordered.values()))
        for b in kernels:
            if b.name in layout_names:  # the generated Python module defines both at top level
                raise KernelError(Diagnostic(
                    "LG208", f"kernel `{b.name}` has the name of a layout of spec `{name}`; the generated module "
                    f"would define both", b.site,
                    hint=f"name the binding: {b.kernel.name}.bind(name=\"...\", ...), or rename the layout",
                ))
        taken = {b.name: "a kernel" for b in kernels} | {lay.name: "a layout" for lay in ordered.values()}
        for prog in programs:
            for generated in (prog.name, f"capture_{prog.name}"):
                if generated in taken:  # the spec's own name is free: runners are Python only
                    what = taken[generated]
                    raise ProgramError(Diagnostic(
                        "LG305", f"program `{prog.name}` would define `{generated}` in the generated module, the "
                        f"name of {what}", prog.site, hint="rename the program",
                    ))
                taken[generated] = "a program's runner"
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "layouts", tuple(ordered.values()))
        object.__setattr__(self, "kernels", tuple(kernels))
        object.__setattr__(self, "programs", tuple(programs))
        object.__setattr__(self, "site", site)
        object.__setattr__(self, "torch", torch)
        object.__setattr__(self, "facts", facts)
        object.__setattr__(self, "autograd", _check_autograd(name, torch, autograd, kernels, site))


def _listed(spec: object, arg: str, given: object, site: Site | None) -> tuple[Any, ...]:
    """``kernels=``, ``programs=`` or ``layouts=`` as a tuple (read once: a generator is read here only); each
    entry is checked by what reads it."""
    if isinstance(given, (str, bytes, Mapping)) or not isinstance(given, Iterable):
        raise KernelError(Diagnostic("LG208", f"`{arg}` of spec `{spec}` must be a list, got {given!r}", site))
    return tuple(given)


#: What ``torch.ops.<namespace>`` has of its own (``dir`` of torch's ``_OpNamespace``, less dunders): an
#: operator of one of these names would be shadowed by it. tests/test_torch_ops.py checks the list against torch.
TORCH_NAMESPACE_NAMES = frozenset({"name", "_dir"})


def _check_autograd(spec: str, torch: object, pairs: object, kernels: Sequence[Binding],
                    site: Site | None) -> tuple[Autograd, ...]:
    """LG220 for a `torch` that is no bool, and for autograd pairs that are malformed or not the spec's own."""
    if not isinstance(torch, bool):
        raise KernelError(Diagnostic("LG220", f"`torch` of spec `{spec}` must be True or False, got {torch!r}", site))
    for b in kernels if torch else ():
        if b.name in TORCH_NAMESPACE_NAMES:
            raise KernelError(Diagnostic(
                "LG220", f"kernel `{b.name}` of spec `{spec}` cannot be a torch operator: `torch.ops.layoutgen_{spec}."
                f"{b.name}` is the operator namespace's own attribute", b.site, hint="rename the binding"))
    if isinstance(pairs, (str, bytes)) or not isinstance(pairs, Sequence):
        raise KernelError(Diagnostic("LG220", f"`autograd` of spec `{spec}` must be a list of Autograd(...), got "
                                     f"{pairs!r}", site))
    forwards: dict[str, Autograd] = {}
    for pair in pairs:
        if not isinstance(pair, Autograd):
            raise KernelError(Diagnostic("LG220", f"`autograd` of spec `{spec}` must be a list of Autograd(...), got "
                                         f"{pair!r}", site))
        if not torch:
            raise KernelError(Diagnostic(
                "LG220", f"spec `{spec}` pairs `{pair.forward.name}` with `{pair.backward.name}` for autograd, but "
                "generates no torch operators", pair.site, hint=f"Spec(\"{spec}\", ..., torch=True)"))
        for b in (pair.forward, pair.backward):
            if not any(k is b or same_binding(k, b) for k in kernels):
                raise KernelError(Diagnostic(
                    "LG220", f"the Autograd pair of `{pair.forward.name}` names `{b.name}`, which is not a kernel of "
                    f"spec `{spec}`", pair.site, hint="list the binding in `kernels=`"))
        other = forwards.setdefault(pair.forward.name, pair)
        if other is not pair:
            raise KernelError(Diagnostic(
                "LG220", f"`{pair.forward.name}` is the forward of two Autograd pairs of spec `{spec}` (the other "
                f"declared at {other.site})", pair.site, hint="one operator has one backward: drop one pair"))
    return tuple(pairs)


def _check_file_names(spec: str, kernels: Sequence[Binding]) -> None:
    """LG212 when two kernels' files differ only in case: one file where case does not count (macOS, Windows).

    Two kernels of one name are LG209, reported by ``layoutgen check`` with the other binding checks.
    """
    first: dict[str, Binding] = {}
    for b in kernels:
        other = first.setdefault(b.name.casefold(), b)
        if other.name != b.name:
            raise KernelError(Diagnostic(
                "LG212", f"kernels `{other.name}` and `{b.name}` of spec `{spec}` would be generated into "
                f"`{other.name}.cu` and `{b.name}.cu`, one file where case does not count (macOS, Windows; "
                f"`{other.name}` bound at {other.site})", b.site,
                hint=f"name the binding: {b.kernel.name}.bind(name=\"...\", ...)",
            ))


def _layout_names(spec: str, layouts: Sequence[Layout]) -> set[str]:
    """The layouts' names; LG212 for two different layouts of one name, which would share a view struct and a
    class (two declarations of the same rows, like the packed layouts of two ``field_copies``, may)."""
    first: dict[str, Layout] = {}
    for lay in layouts:
        other = first.setdefault(lay.name, lay)
        if _geometry(other) != _geometry(lay):
            raise KernelError(Diagnostic(
                "LG212", f"spec `{spec}` has two layouts named `{lay.name}` (the other declared at {other.site}); "
                "its generated views and classes are named after each layout", lay.site,
                hint="rename one of them",
            ))
    return set(first)


def _geometry(layout: Layout) -> tuple[object, ...]:
    """Everything of a layout that its generated view structs and class are made of (not docs, not sites)."""
    def region(r: Region | None) -> object:
        return None if r is None else (r.name, r.kind, r.start, r.stop, r.shape, tuple(map(region, r.children)))

    return (layout.dims, layout.dtype, region(layout.record), layout.column_unit, layout.named_axis,
            region(layout.axis_ranges), layout.read_only)


def same_binding(a: Binding, b: Binding) -> bool:
    """Whether two bindings generate the same kernel: one declared kernel, the same columns of the same layouts."""
    return a.kernel is b.kernel and a.name == b.name and all(
        x[0] == y[0] and same_view(x[1], y[1]) for x, y in zip(a.views, b.views)
    )


def same_view(a: View, b: View) -> bool:
    """The same elements of the same layout: one field, and one range of the named axis."""
    return a.layout is b.layout and a.region == b.region and a.box == b.box


def _with_program_bindings(kernels: Sequence[Binding], programs: Sequence[Program]) -> list[Binding]:
    """The listed bindings, then each binding a launch made that none of them equals."""
    out = list(kernels)
    for prog in programs:
        for launch in prog.launches:
            if not any(b is launch.binding or same_binding(b, launch.binding) for b in out):
                out.append(launch.binding)
    return out


def launch_kernel(spec: Spec, launch: Launch) -> str:
    """The name of the generated kernel a launch runs."""
    return next(b.name for b in spec.kernels if b is launch.binding or same_binding(b, launch.binding))
