"""A spec: the layouts and kernel bindings of one generated module."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .kernels import Binding, KernelError
from .schema import Layout
from .schema.diagnostics import Diagnostic, Site, caller_site
from .schema.names import name_problem


@dataclass(frozen=True, eq=False)
class Spec:
    """What one spec module generates: ``Spec("vsn", kernels=[...], layouts=[...])``.

    The generated files go to ``<out>/<name>/``. Layouts used by the bindings
    are included without being listed.
    """

    name: str
    layouts: tuple[Layout, ...]
    kernels: tuple[Binding, ...]
    site: Site | None

    def __init__(self, name: str, *, kernels: Sequence[Binding] = (), layouts: Sequence[Layout] = ()) -> None:
        site = caller_site()
        problem = name_problem(name)
        if problem:
            raise KernelError(Diagnostic("LG208", f"a spec name {problem[1]}", site))
        for b in kernels:
            if not isinstance(b, Binding):
                raise KernelError(Diagnostic(
                    "LG208", f"the kernels of spec `{name}` must be bindings (`kernel.bind(...)`), got {b!r}",
                    site, hint="bind the kernel's parameters to views: my_kernel.bind(x=Window.snap, ...)",
                ))
        for lay in layouts:
            if not isinstance(lay, Layout):
                raise KernelError(Diagnostic("LG208", f"the layouts of spec `{name}` must be layouts, got {lay!r}", site))
        ordered: dict[int, Layout] = {}
        for lay in [*layouts, *(v.layout for b in kernels for _, v in b.views)]:
            ordered.setdefault(id(lay), lay)
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "layouts", tuple(ordered.values()))
        object.__setattr__(self, "kernels", tuple(kernels))
        object.__setattr__(self, "site", site)
