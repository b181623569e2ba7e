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
from ..schema.diagnostics import Site, caller_site
from ..schema.dims import Dim, Size, as_shape, shape_text
from ..schema.dtypes import resolve_dtype
from ..schema.names import kernel_name_problem, name_problem
from ..schema.scalars import SCALAR_DTYPES, scalar_type_text
from ..schema.words import with_article
from .errors import KernelError as KernelError  # re-exported: declarations of kernels raise it
from .errors import kernel_error as _kernel_error
from .grids import Grid as Grid  # re-exported beside Kernel
from .grids import check_grid, check_grid_names
from .shared import Shared as Shared
from .shared import Tile as Tile
from .shared import check_shared

Access = Literal["in", "out", "inout"]


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
    # `type(...) is int`: 16.0 and True compare equal to 16 and 1, and would reach the generated code as such
    if vector is not None and (type(vector) is not int or vector not in (1, 2, 4, 8, 16)):
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


@dataclass(frozen=True)
class Scalar:
    """A kernel parameter passed by value: ``Scalar("lr", f32, finite=True)``.

    The body sees it by its name as a ``const`` value of the dtype's C type; the
    launcher takes a Python or NumPy scalar of its kind, checked for type and
    range (and, with ``finite=True``, refused as NaN or Inf) before anything runs.
    """

    name: str
    dtype: DType
    finite: bool
    site: Site | None = field(compare=False, repr=False)

    def __init__(self, name: str, dtype: DType | str, *, finite: bool = False) -> None:
        site = caller_site()
        _check_name(name, "a parameter name", site)
        resolved = resolve_dtype(dtype, f"the dtype of scalar `{name}`", site, SCALAR_DTYPES)  # LG107: unknown
        if resolved.name not in SCALAR_DTYPES:
            raise _kernel_error("LG208", f"scalar `{name}` must be one of {', '.join(SCALAR_DTYPES)}, got {resolved}",
                                site, hint="a 16-bit float travels as f32: convert it in the body")
        if not isinstance(finite, bool):
            raise _kernel_error("LG208", f"`finite` of scalar `{name}` must be True or False, got {finite!r}", site)
        if finite and resolved.kind != "float":
            raise _kernel_error("LG208", f"`finite` of scalar `{name}` applies to f32 and f64 only, got "
                                f"{with_article(str(resolved))} scalar", site, hint="drop finite=True: an integer or a bool is always finite")
        for attr, value in (("name", name), ("dtype", resolved), ("finite", finite), ("site", site)):
            object.__setattr__(self, attr, value)

    @property
    def described(self) -> str:
        """``scalar f32, finite``."""
        return scalar_type_text(self.dtype, self.finite)


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


def _check_clashes(kernel: str, params: Sequence[Param], scalars: Sequence[Scalar] = ()) -> None:
    """LG208 when a parameter (an array's or a scalar's) or symbol would be declared twice in the generated code."""
    symbols = {str(d.name): p for p in params for d in p.shape if d.size is None}
    for symbol, p in symbols.items():
        taken = [*THREAD_INDEX, *TEMPLATE_CONTEXT]
        if symbol in taken:
            raise _kernel_error(
                "LG208", f"shape symbol `{symbol}` of `{kernel}` is a name the generated code defines beside the "
                f"kernel's symbols ({', '.join(taken)})", p.site, hint="rename the dim",
            )
    named: list[Param | Scalar] = [*params, *scalars]
    for entry in named:
        taken = [*THREAD_INDEX, *PARAM_KEYWORDS]
        if entry.name in taken or entry.name in symbols:
            what = "a shape symbol of the kernel" if entry.name in symbols else (
                "a name used beside the parameters (" + ", ".join(taken) + "): the thread index, and the "
                "keywords of bind, Launch and the launcher"
            )
            raise _kernel_error(
                "LG208", f"parameter `{entry.name}` of `{kernel}` clashes with {what}", entry.site,
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


@dataclass(frozen=True, eq=False)
class Kernel:
    """A kernel: its name, its body template (relative to the declaring file) and parameters."""

    name: str
    template: str
    params: tuple[Param, ...]  # the arrays, in declaration order
    grid: Grid
    doc: str
    site: Site | None
    template_root: Path  # the folder the template path is relative to
    scalars: tuple[Scalar, ...]  # the parameters passed by value, in declaration order
    signature: tuple[Param | Scalar, ...]  # every parameter, in declaration order: the launcher's arguments
    shared: tuple[Shared | Tile, ...]  # the arrays and tiles of its dynamic shared memory, in declaration order

    def __init__(self, name: str, template: str, params: Sequence[Param | Scalar], *, grid: Grid | None = None,
                 shared: Sequence[Shared | Tile] = (), doc: str = "",
                 template_root: str | os.PathLike[str] | None = None) -> None:
        site = caller_site()
        check_kernel_name(name, "a kernel name", site)
        if not isinstance(template, str) or not template:
            raise _kernel_error("LG208", f"kernel `{name}` needs a template path, got {template!r}", site)
        if isinstance(params, (str, bytes)) or not isinstance(params, Sequence) or not params:
            raise _kernel_error("LG208", f"kernel `{name}` needs a non-empty list of parameters", site)
        seen: set[str] = set()  # the arrays' names
        scalars: dict[str, Scalar] = {}
        for p in params:
            if not isinstance(p, (Param, Scalar)):
                raise _kernel_error(
                    "LG208", f"the parameters of `{name}` must be In, Out, InOut or Scalar, got {p!r}", site
                )
            if p.name in seen or p.name in scalars:
                raise _kernel_error("LG208", f"kernel `{name}` declares parameter `{p.name}` twice", p.site)
            if isinstance(p, Scalar):
                scalars[p.name] = p
            else:
                seen.add(p.name)
        arrays = [p for p in params if isinstance(p, Param)]
        if not arrays:
            raise _kernel_error("LG208", f"kernel `{name}` needs an In, Out or InOut parameter: its grid follows one",
                                site, hint="a kernel of scalars alone has nothing to write to")
        if isinstance(grid, Grid) and grid.param in scalars:
            raise _kernel_error("LG208", f"the grid of `{name}` must follow an In, Out or InOut parameter, got "
                                f"scalar `{grid.param}`", site, hint=f"for example grid=Grid.rows(\"{arrays[0].name}\")")
        grid = grid or Grid.rows(arrays[0].name)
        symbols: dict[str, Site | None] = {}  # the kernel's symbols, where each is first declared
        for p in arrays:
            for d in p.shape:
                if d.size is None:
                    symbols.setdefault(str(d.name), p.site)
        grid = check_grid(name, grid, [p.name for p in arrays], tuple(symbols), site)  # LG208, LG218
        _check_clashes(name, arrays, tuple(scalars.values()))
        named = [(p.name, p.site) for p in arrays] + [(s.name, s.site) for s in scalars.values()]
        check_grid_names(name, grid, named, symbols, THREAD_INDEX)  # `lane` of Grid.warps, ...
        taken = {**{n: f"the grid's `{n}` ({', '.join(grid.names)})" for n in grid.names},
                 **{s: f"shape symbol `{s}`" for s in symbols}, **{n: f"parameter `{n}`" for n, _ in named}}
        arrays_shared = check_shared(name, shared, taken, tuple(symbols), site,  # LG219, LG227
                                     [p.name for p in arrays], grid)
        if not isinstance(doc, str):
            raise _kernel_error("LG208", f"the doc of kernel `{name}` must be a string, got {doc!r}", site)
        here = Path(site.path).resolve().parent if site else Path.cwd()
        if template_root is not None and not isinstance(template_root, (str, os.PathLike)):
            raise _kernel_error("LG208", f"`template_root` of kernel `{name}` must be a folder (a str or a Path), "
                                f"got {template_root!r}", site)
        # Like the template path itself, a relative root is relative to the file that declares the kernel.
        root = here if template_root is None else here / Path(template_root)
        for attr, value in (("name", name), ("template", template), ("params", tuple(arrays)), ("grid", grid),
                            ("doc", doc), ("site", site), ("template_root", root),
                            ("scalars", tuple(scalars.values())), ("signature", tuple(params)),
                            ("shared", arrays_shared)):
            object.__setattr__(self, attr, value)

    def __repr__(self) -> str:  # short: messages show it ("got <Kernel vsn>")
        return f"<Kernel {self.name}>"

    @property
    def template_path(self) -> Path:
        return self.template_root / self.template

    def param(self, name: str) -> Param:
        return next(p for p in self.params if p.name == name)

    def scalar(self, name: str) -> Scalar:
        return next(s for s in self.scalars if s.name == name)

    @property
    def scalar_names(self) -> frozenset[str]:
        return frozenset(s.name for s in self.scalars)

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
            if key in self.scalar_names:
                raise _kernel_error(
                    "LG207", f"`{self.name}.{key}` is a scalar: it takes a value at each launch, not a view, got "
                    + (value.name if isinstance(value, (View, Layout)) else repr(value)), site,
                    hint=f"leave `{key}` out of bind; give it to the launcher (or to `Launch`, in a program)",
                )
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
    # Made by `Launch(kernel, ...)` rather than `kernel.bind(...)`: its name is the Launch's `name=`, which
    # messages about it then propose.
    by_launch: bool = field(default=False, compare=False, repr=False)

    def __repr__(self) -> str:
        return f"<Binding {self.name} of {self.kernel.name}>"

    def view(self, param: str) -> View:
        return dict(self.views)[param]

    @property
    def pairs(self) -> list[tuple[Param, View]]:
        return [(self.kernel.param(n), v) for n, v in self.views]

    def views_by_param(self) -> Mapping[str, View]:
        return dict(self.views)
