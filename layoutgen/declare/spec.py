"""A spec: the layouts and kernel bindings of one generated module."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..schema import Layout, View
from ..schema.diagnostics import Diagnostic, Site, caller_site
from ..schema.names import name_problem
from .kernels import Binding, KernelError
from .program import Launch, Program, ProgramError

#: What the generated Python module imports or defines at top level besides the spec's names:
#: a kernel, layout or program of that name would replace it.
MODULE_NAMES = frozenset({
    "annotations", "Path", "Any", "KernelLauncher", "KernelSpec", "LayoutSpec", "ParamSpec", "BufferSpec",
    "ProgramGraph", "ProgramRunner", "ProgramSpec", "StepSpec", "Array", "DeviceArray", "LayoutTag", "unwrap",
})


@dataclass(frozen=True, eq=False)
class Spec:
    """What one spec module generates: ``Spec("vsn", kernels=[...], programs=[...], layouts=[...])``.

    The generated files go to ``<out>/<name>/``. Layouts used by the bindings
    are included without being listed, and so are the bindings the programs'
    launches make: a launch whose kernel and views equal a listed binding's
    uses that binding's kernel.
    """

    name: str
    layouts: tuple[Layout, ...]
    kernels: tuple[Binding, ...]
    programs: tuple[Program, ...]
    site: Site | None

    def __init__(self, name: str, *, kernels: Sequence[Binding] = (), programs: Sequence[Program] = (),
                 layouts: Sequence[Layout] = ()) -> None:
        site = caller_site()
        for prog in programs:
            if not isinstance(prog, Program):
                raise KernelError(Diagnostic("LG208", f"the programs of spec `{name}` must be Program(...), got "
                                             f"{prog!r}", site))
        problem = name_problem(name) or (("LG106", "is reserved for layoutgen's C++ namespace, got `lg`")
                                         if name == "lg" else None)
        if problem:
            raise KernelError(Diagnostic("LG208", f"a spec name {problem[1]}", site))
        for b in kernels:
            if not isinstance(b, Binding):
                raise KernelError(Diagnostic(
                    "LG208", f"the kernels of spec `{name}` must be bindings (`kernel.bind(...)`), got {b!r}",
                    site, hint="bind the kernel's parameters to views: my_kernel.bind(x=Window.snap, ...)",
                ))
        kernels = _with_program_bindings(kernels, programs)
        for b in kernels:
            if b.name in (name, "lg"):  # `namespace <spec>` and `namespace lg` are in the generated code
                raise KernelError(Diagnostic(
                    "LG208", f"kernel `{b.name}` would clash with the C++ namespace `{b.name}` of the generated "
                    f"code" + (" (the spec's name)" if b.name == name else ""), b.site,
                    hint=f"name the binding: {b.kernel.name}.bind(name=\"...\", ...), or rename the spec",
                ))
        ordered: dict[int, Layout] = {}
        for lay in [*layouts, *(v.layout for b in kernels for _, v in b.views)]:  # views carry what made them
            if not isinstance(lay, Layout):
                raise KernelError(Diagnostic("LG208", f"the layouts of spec `{name}` must be layouts, got {lay!r}", site))
            ordered.setdefault(id(lay), lay)
        layout_names = {lay.name for lay in ordered.values()}
        for b in kernels:
            if b.name in layout_names:  # the generated Python module defines both at top level
                raise KernelError(Diagnostic(
                    "LG208", f"kernel `{b.name}` has the name of a layout of spec `{name}`; the generated module "
                    f"would define both", b.site,
                    hint=f"name the binding: {b.kernel.name}.bind(name=\"...\", ...), or rename the layout",
                ))
        for what, declared in [("a kernel", b) for b in kernels] + [("a layout", lay) for lay in ordered.values()]:
            if declared.name in MODULE_NAMES:
                raise KernelError(Diagnostic(
                    "LG208", f"{what} named `{declared.name}` would replace a name the generated Python module "
                    f"imports", declared.site, hint="rename it",
                ))
        taken = {b.name: "a kernel" for b in kernels} | {lay.name: "a layout" for lay in ordered.values()}
        taken |= {n: "a name the generated module imports" for n in MODULE_NAMES}
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
