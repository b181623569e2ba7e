"""Kernel declarations: a template, typed parameters, and bindings to views.

``Kernel("vsn_fwd", "vsn_fwd.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])])``
declares a kernel whose template writes only the body; ``kernel.bind(x=Window.snap,
y=Selected)`` ties each parameter to a view. Binding records the user's line;
whether the views fit is decided by :mod:`layoutgen.checks` so that every
problem in a spec is reported at once.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..schema import DType, Layout, View
from ..schema.diagnostics import Diagnostic, LayoutgenError, Site, caller_site
from ..schema.dims import Dim, Size, as_shape, shape_text
from ..schema.dtypes import resolve_dtype
from ..schema.names import kernel_name_problem, name_problem

Access = Literal["in", "out", "inout"]


class KernelError(LayoutgenError):
    """A kernel or binding declaration is malformed (LG207, LG208, LG211; LG114 for a view too wide)."""


def _kernel_error(code: str, message: str, site: Site | None, hint: str | None = None) -> KernelError:
    return KernelError(Diagnostic(code, message, site, hint))


def _check_name(name: object, what: str, site: Site | None) -> None:
    problem = name_problem(name)
    if problem:
        raise _kernel_error("LG208", f"{what} {problem[1]}", site)


def check_kernel_name(name: object, what: str, site: Site | None) -> None:
    """LG208 for a name no generated kernel can have, LG211 for one too long for its files."""
    problem = kernel_name_problem(name)
    if problem:
        code = "LG211" if problem[0] == "LG211" else "LG208"
        raise _kernel_error(code, f"{what} {problem[1]}", site,
                            hint="shorten the name" if code == "LG211" else "rename it")


@dataclass(frozen=True)
class Param:
    """A kernel parameter: a name, an access mode, a symbolic shape and requirements.

    ``contiguous``: the template indexes rows as if packed (row stride equal to
    the width); ``vector``: the template makes aligned accesses of this many
    bytes; ``dtype``: the element type the template is written for.
    """

    name: str
    shape: tuple[Dim, ...]
    access: Access
    contiguous: bool = False
    vector: int | None = None
    dtype: DType | None = None
    site: Site | None = field(default=None, compare=False, repr=False)

    @property
    def writes(self) -> bool:
        return self.access != "in"

    @property
    def reads(self) -> bool:
        return self.access != "out"


def _param(
    access: Access, name: str, shape: Sequence[Dim | int | str], contiguous: bool, vector: int | None,
    dtype: DType | str | None,
) -> Param:
    site = caller_site()
    _check_name(name, "a parameter name", site)
    dims = as_shape(shape, f"the shape of parameter `{name}`", site)
    if not dims:
        raise _kernel_error("LG208", f"parameter `{name}` must have at least one dim", site)
    if not isinstance(contiguous, bool):
        raise _kernel_error("LG208", f"`contiguous` of `{name}` must be True or False, got {contiguous!r}", site)
    if vector is not None and (isinstance(vector, bool) or vector not in (1, 2, 4, 8, 16)):
        raise _kernel_error("LG208", f"`vector` of `{name}` must be 1, 2, 4, 8 or 16 bytes, got {vector!r}", site)
    resolved = None if dtype is None else resolve_dtype(dtype, f"the dtype of parameter `{name}`", site)
    return Param(name, dims, access, contiguous, vector, resolved, site)


def In(name: str, shape: Sequence[Dim | int | str], *, contiguous: bool = False, vector: int | None = None,
       dtype: DType | str | None = None) -> Param:
    """A parameter the kernel only reads."""
    return _param("in", name, shape, contiguous, vector, dtype)


def Out(name: str, shape: Sequence[Dim | int | str], *, contiguous: bool = False, vector: int | None = None,
        dtype: DType | str | None = None) -> Param:
    """A parameter the kernel only writes."""
    return _param("out", name, shape, contiguous, vector, dtype)


def InOut(name: str, shape: Sequence[Dim | int | str], *, contiguous: bool = False, vector: int | None = None,
          dtype: DType | str | None = None) -> Param:
    """A parameter the kernel reads and writes."""
    return _param("inout", name, shape, contiguous, vector, dtype)


#: The user names each scope of the generated code holds, beside names the generated code defines
#: there by design. Everything else it defines starts with `lg_` (C++) or `_lg_` (Python).
#: The kernel's body: the parameters' views and the symbols, beside the thread's index.
THREAD_INDEX = ("row", "element", "vector")
#: The generated launcher's arguments: the parameters, beside the keyword ``stream``.
LAUNCHER_KEYWORDS = ("stream",)
#: The keywords beside which the parameters are given by name: ``kernel.bind(name=...)``,
#: ``Launch(..., overwrites=...)`` and the launcher's ``stream=``.
PARAM_KEYWORDS = ("name", "overwrites", *LAUNCHER_KEYWORDS)
#: The template's Jinja context: the static symbols, beside ``kernel`` and ``params``, and the names
#: Jinja gives a meaning there (``self`` is the template, ``none`` a constant).
TEMPLATE_CONTEXT = ("kernel", "params", "self", "none")


def _check_clashes(kernel: str, params: Sequence[Param]) -> None:
    """LG208 when a parameter or symbol would be declared twice in the generated code."""
    symbols = {str(d.name): p for p in params for d in p.shape if d.size is None}
    for symbol, p in symbols.items():
        taken = [*THREAD_INDEX, *TEMPLATE_CONTEXT]
        if symbol in taken:
            raise _kernel_error(
                "LG208", f"shape symbol `{symbol}` of `{kernel}` is a name the generated code defines beside the "
                f"kernel's symbols ({', '.join(taken)})", p.site, hint="rename the dim",
            )
    for p in params:
        taken = [*THREAD_INDEX, *PARAM_KEYWORDS]
        if p.name in taken or p.name in symbols:
            what = "a shape symbol of the kernel" if p.name in symbols else (
                "a name used beside the parameters (" + ", ".join(taken) + "): the thread index, and the "
                "keywords of bind, Launch and the launcher"
            )
            raise _kernel_error(
                "LG208", f"parameter `{p.name}` of `{kernel}` clashes with {what}", p.site,
                hint="rename the parameter; the template sees parameters, symbols and the thread index by name",
            )


#: Generated views hold a row's width, stride and offset as `int`, and index with `long long`.
INT_LIMIT = 2**31
INDEX_LIMIT = 2**63


def _check_fits(kernel: str, param: str, view: View, site: Site | None) -> None:
    """LG114 when a number of ``view``'s layout does not fit the C++ type the generated view holds it in."""
    layout = view.layout
    described = f"`{layout.name}` {shape_text(layout.shape)} {layout.dtype}"
    if layout.width >= INT_LIMIT:
        unit = "" if layout.column_unit.is_static else f" (of `{layout.column_unit}` elements each)"
        raise _kernel_error(
            "LG114", f"`{kernel}.{param}` is bound to {described}, whose rows are {layout.width} columns{unit} wide; "
            f"a generated view holds a row's width, stride and offset as `int`, so they must be less than 2^31",
            site, hint="split each row across a further leading dim (a layout [N, M, W] for [N, M*W])",
        )
    total = Size.product([*layout.dims], layout.width).coef
    if total >= INDEX_LIMIT:
        raise _kernel_error(
            "LG114", f"`{kernel}.{param}` is bound to {described}, whose static dims hold {total} elements; "
            f"a generated view indexes with `long long`, so they must be less than 2^63",
            site, hint="make the largest dims symbolic, bound at launch",
        )


@dataclass(frozen=True)
class Grid:
    """How many threads a launch starts: one per row, element or vector of a parameter.

    ``Grid.rows("x")`` starts one thread per row of ``x`` (the product of its
    leading dims); ``Grid.elements("y")`` one per element; ``Grid.vectors("y")``
    one per aligned group of bytes, as wide as every bound view allows (at
    most 16). ``block`` is the number of threads per block. The template sees
    the thread's index as ``row``, ``element`` or ``vector``.
    """

    param: str
    per: Literal["row", "element", "vector"] = "row"
    block: int = 128

    @staticmethod
    def rows(param: str, block: int = 128) -> Grid:
        return Grid(param, "row", block)

    @staticmethod
    def elements(param: str, block: int = 256) -> Grid:
        return Grid(param, "element", block)

    @staticmethod
    def vectors(param: str, block: int = 256) -> Grid:
        return Grid(param, "vector", block)


@dataclass(frozen=True, eq=False)
class Kernel:
    """A kernel: its name, its body template (relative to the declaring file) and parameters."""

    name: str
    template: str
    params: tuple[Param, ...]
    grid: Grid
    doc: str
    site: Site | None
    template_root: Path  # the folder the template path is relative to

    def __init__(self, name: str, template: str, params: Sequence[Param], *, grid: Grid | None = None,
                 doc: str = "", template_root: str | os.PathLike[str] | None = None) -> None:
        site = caller_site()
        check_kernel_name(name, "a kernel name", site)
        if not isinstance(template, str) or not template:
            raise _kernel_error("LG208", f"kernel `{name}` needs a template path, got {template!r}", site)
        if isinstance(params, (str, bytes)) or not isinstance(params, Sequence) or not params:
            raise _kernel_error("LG208", f"kernel `{name}` needs a non-empty list of parameters", site)
        seen: set[str] = set()
        for p in params:
            if not isinstance(p, Param):
                raise _kernel_error(
                    "LG208", f"the parameters of `{name}` must be In, Out or InOut, got {p!r}", site
                )
            if p.name in seen:
                raise _kernel_error("LG208", f"kernel `{name}` declares parameter `{p.name}` twice", p.site)
            seen.add(p.name)
        grid = grid or Grid.rows(params[0].name)
        if not isinstance(grid, Grid) or grid.param not in seen:
            raise _kernel_error(
                "LG208", f"the grid of `{name}` must follow one of its parameters, got {grid!r}", site,
                hint=f"for example grid=Grid.rows(\"{params[0].name}\")",
            )
        if grid.per not in ("row", "element", "vector"):
            raise _kernel_error(
                "LG208", f"the grid of `{name}` must start one thread per \"row\", \"element\" or \"vector\", "
                f"got {grid.per!r}", site, hint=f"use Grid.rows, Grid.elements or Grid.vectors(\"{grid.param}\")",
            )
        if not isinstance(grid.block, int) or not 1 <= grid.block <= 1024:
            raise _kernel_error("LG208", f"the block size of `{name}` must be 1..1024, got {grid.block!r}", site)
        _check_clashes(name, params)
        if not isinstance(doc, str):
            raise _kernel_error("LG208", f"the doc of kernel `{name}` must be a string, got {doc!r}", site)
        here = Path(site.path).resolve().parent if site else Path.cwd()
        if template_root is not None and not isinstance(template_root, (str, os.PathLike)):
            raise _kernel_error("LG208", f"`template_root` of kernel `{name}` must be a folder (a str or a Path), "
                                f"got {template_root!r}", site)
        # Like the template path itself, a relative root is relative to the file that declares the kernel.
        root = here if template_root is None else here / Path(template_root)
        for attr, value in (("name", name), ("template", template), ("params", tuple(params)), ("grid", grid),
                            ("doc", doc), ("site", site), ("template_root", root)):
            object.__setattr__(self, attr, value)

    def __repr__(self) -> str:  # short: messages show it ("got <Kernel vsn>")
        return f"<Kernel {self.name}>"

    @property
    def template_path(self) -> Path:
        return self.template_root / self.template

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    def bind(self, /, name: str | None = None, **views: View | Layout) -> Binding:
        """Tie every parameter to a view (or a whole layout); checked by ``layoutgen check``.

        ``name`` names the generated kernel; it defaults to the kernel's name,
        so a kernel bound twice needs a name for each binding.
        """
        site = caller_site()
        generated = self.name if name is None else name
        check_kernel_name(generated, "a binding name", site)
        known = {p.name for p in self.params}
        for key, value in views.items():
            if key not in known:
                raise _kernel_error(
                    "LG207", f"`{self.name}` has no parameter `{key}` (its parameters: "
                    + ", ".join(f"`{p.name}`" for p in self.params) + ")", site,
                )
            if not isinstance(value, (View, Layout)):
                raise _kernel_error(
                    "LG207", f"`{self.name}.{key}` must be bound to a view or layout, got {value!r}", site
                )
        missing = [p.name for p in self.params if p.name not in views]
        if missing:
            raise _kernel_error(
                "LG207", f"`{self.name}` is bound without " + ", ".join(f"`{m}`" for m in missing), site,
                hint="bind every parameter: " + ", ".join(f"{p.name}=..." for p in self.params),
            )
        bound = tuple(
            (p.name, v.view if isinstance(v, Layout) else v) for p in self.params for v in [views[p.name]]
        )
        for param, view in bound:
            _check_fits(generated, param, view, site)
        return Binding(self, generated, bound, site)


@dataclass(frozen=True, eq=False)
class Binding:
    """A kernel with each parameter tied to a view: one generated kernel."""

    kernel: Kernel
    name: str
    views: tuple[tuple[str, View], ...]  # in parameter order
    site: Site | None

    def __repr__(self) -> str:
        return f"<Binding {self.name} of {self.kernel.name}>"

    def view(self, param: str) -> View:
        return dict(self.views)[param]

    @property
    def pairs(self) -> list[tuple[Param, View]]:
        return [(self.kernel.param(n), v) for n, v in self.views]

    def views_by_param(self) -> Mapping[str, View]:
        return dict(self.views)
