"""Existing kernels, declared as they are: a team's ``__global__`` function taking raw pointers and integers.

``ExistingKernel("vsn_forward", "vsn.cu", [In("x", [B, K, F]), Out("y", [B, K, F]), Rows("x"), RowStride("x")])``
declares the ``__global__ void vsn_forward(const float* x, float* y, int n_rows, int x_stride)`` of ``vsn.cu``,
one entry per parameter of the ``__global__``, in its order: an array parameter (``In``/``Out``/``InOut``) is
a pointer to the base of the array of the layout bound to it; a :class:`Carried` value (``Rows``,
``RowStride``, ``Pitch``, ``Offset``, or a ``Dim`` of the kernel's shapes) is an integer the generated
launcher fills from the bound layouts, so a caller never types a stride; a ``Scalar`` is a value the caller
gives. The ``.cu`` file is compiled unchanged and its ``__global__`` launched by its own name.

Why a list of what each parameter *is*, rather than views: the kernel is the team's, written against
pointers; nothing in it changes. What layoutgen adds is the knowledge of what each integer means, which is
what the seed bug lacked (a stride of 40 typed where the buffer's rows are 56 apart). The values each
integer takes at a launch follow from the binding (:func:`carried_values`), which the generated launcher,
the static checks and the CPU run of ``check --execute`` all read from here.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..schema.diagnostics import Site, caller_site
from ..schema.dims import Dim, Size
from ..schema.names import name_problem
from ..schema.view import View
from .errors import kernel_error
from .grids import Grid, launch_dims
from .kernels import Binding, Kernel, Param, Scalar
from .unify import unify

#: What an integer parameter of an existing kernel may carry, and what each means.
CARRIED_KINDS = {
    "rows": "the number of rows of the array bound to it (the product of its leading dims)",
    "row_stride": "the elements from one row of the array to the next (the layout's row, not the field's width)",
    "pitch": "the bytes from one row of the array to the next",
    "offset": "the elements from the start of a row to the field's first element",
    "dim": "the size of a dim of the kernel's shapes",
}


@dataclass(frozen=True)
class Carried:
    """An integer parameter of an existing kernel whose value the launcher fills from the bound layouts.

    ``kind`` is a key of :data:`CARRIED_KINDS`; ``param`` the array parameter it describes (None for a dim);
    ``dim`` the dim it carries (for ``kind == "dim"``).
    """

    kind: str
    param: str | None = None
    dim: Dim | None = None
    site: Site | None = field(default=None, compare=False, repr=False)

    @property
    def text(self) -> str:
        """How the spec writes it: ``RowStride("x")``, ``Dim("B")``."""
        if self.kind == "dim":
            return f'Dim("{self.dim}")' if self.dim is not None and self.dim.size is None else f"Dim.of({self.dim})"
        name = {"rows": "Rows", "row_stride": "RowStride", "pitch": "Pitch", "offset": "Offset"}[self.kind]
        return f'{name}("{self.param}")'


def _carried(kind: str, param: object) -> Carried:
    site = caller_site()
    problem = name_problem(param)
    if problem:
        raise kernel_error("LG231", f"the parameter of a {kind} value {problem[1]}", site,
                           hint="name the kernel's array parameter it describes: RowStride(\"x\")")
    return Carried(kind, str(param), None, site)


def Rows(param: str) -> Carried:
    """An integer carrying the number of rows of the array bound to ``param``: the product of its leading dims."""
    return _carried("rows", param)


def RowStride(param: str) -> Carried:
    """An integer carrying the row stride of ``param``'s array, in elements (56 for a 40-column field of 56-wide
    rows)."""
    return _carried("row_stride", param)


def Pitch(param: str) -> Carried:
    """An integer carrying the row stride of ``param``'s array in bytes."""
    return _carried("pitch", param)


def Offset(param: str) -> Carried:
    """An integer carrying the first element of ``param``'s field within a row (40 for columns 40..56)."""
    return _carried("offset", param)


#: An entry of an existing kernel's argument list: one parameter of its ``__global__``.
Argument = Param | Scalar | Carried

_ACCEPTED = "In, Out, InOut, Scalar, a Dim, Rows, RowStride, Pitch or Offset"


def _as_argument(kernel: str, position: int, value: object, site: Site | None) -> Argument:
    if isinstance(value, (Param, Scalar, Carried)):
        return value
    if isinstance(value, Dim):
        if value.is_derived:
            raise kernel_error("LG231", f"argument {position} of `{kernel}` must be a dim of its shapes, got the "
                               f"product `{value}`", site, hint="declare a dim for it")
        return Carried("dim", None, value, site)
    raise kernel_error("LG231", f"argument {position} of `{kernel}` must be {_ACCEPTED}, got {value!r}", site,
                       hint="give one entry per parameter of the `__global__`, in its order")


@dataclass(frozen=True, eq=False, init=False, repr=False)
class ExistingKernel(Kernel):
    """A team's ``__global__`` kernel, declared as it is: its file, its name and what each parameter is.

    ``args`` has one entry per parameter of the ``__global__``, in the order of its signature: ``In``/``Out``/
    ``InOut`` (a pointer to the base of the array bound to it), ``Scalar`` (a value the caller gives),
    ``Rows``/``RowStride``/``Pitch``/``Offset`` of an array parameter or a ``Dim`` of the shapes (an integer
    the launcher fills). ``function`` is the ``__global__``'s name (default: ``name``). The file is relative to
    the declaring file (or ``source_root``). The launcher takes the arrays, then the scalars, in their order.
    """

    function: str
    args: tuple[Argument, ...]

    def __init__(self, name: str, source: str, args: Sequence[object], *, function: str | None = None,
                 grid: Grid | None = None, doc: str = "",
                 source_root: str | os.PathLike[str] | None = None) -> None:
        site = caller_site()
        if isinstance(args, (str, bytes)) or not isinstance(args, Sequence) or not args:
            raise kernel_error("LG231", f"kernel `{name}` needs a list of arguments, one per parameter of its "
                               f"`__global__`, got {args!r}", site)
        entries = tuple(_as_argument(name, i + 1, a, site) for i, a in enumerate(args))
        super().__init__(name, source, [a for a in entries if not isinstance(a, Carried)], grid=grid, doc=doc,
                         template_root=source_root)
        function = name if function is None else function
        problem = name_problem(function)
        if problem:
            raise kernel_error("LG231", f"the `__global__` function of kernel `{name}` {problem[1]}", site,
                               hint="name the `__global__` function of the file as it is written")
        arrays = [p.name for p in self.params]
        symbols = {str(d.name) for p in self.params for d in p.shape if d.size is None}
        for a in entries:
            if not isinstance(a, Carried):
                continue
            if a.kind == "dim":
                if a.dim is not None and a.dim.size is None and str(a.dim.name) not in symbols:
                    raise kernel_error(
                        "LG231", f"`{a.text}` of `{name}` must be a dim of its shapes ({', '.join(sorted(symbols)) or 'none'}), "
                        f"got `{a.dim}`", a.site, hint="carry a dim that an array's shape declares")
            elif a.param not in arrays:
                raise kernel_error(
                    "LG231", f"`{a.text}` of `{name}` must name an array parameter ({', '.join(arrays)}), got "
                    f"`{a.param}`", a.site, hint="a row stride, pitch, offset or row count belongs to an In, Out "
                    "or InOut of the same kernel")
        object.__setattr__(self, "function", function)
        object.__setattr__(self, "args", entries)

    def __repr__(self) -> str:
        return f"<ExistingKernel {self.name}>"

    @property
    def source_path(self) -> os.PathLike[str]:
        """The team's ``.cu`` file, resolved like a template path."""
        return self.template_path


def _dim_size(dim: Dim) -> Size:
    """``dim`` as a size: static, a symbol, or a product such as ``D*48`` (its factors, as a launch knows them)."""
    return Size.product(launch_dims([dim], {}))


def carried_value(binding: Binding, carried: Carried) -> Size:
    """The value ``carried`` takes at a launch of ``binding``: a constant times the layouts' symbols
    (``56``, ``B*K``, ``224``), evaluated by the launcher with the sizes the arrays bind."""
    dim = carried.dim  # set exactly for a dim entry (_as_argument)
    if dim is not None:
        if dim.size is None:
            dim = dict(unify(binding).values).get(str(dim.name), dim)
        return _dim_size(dim)
    view: View = binding.view(str(carried.param))
    if carried.kind == "rows":
        return Size.product(view.leading_dims)
    stride = Size(view.row_stride, view.column_unit.symbols)
    if carried.kind == "row_stride":
        return stride
    if carried.kind == "pitch":
        return Size(stride.coef * view.dtype.size, stride.symbols)
    return view.column_offset  # offset


def carried_values(binding: Binding) -> tuple[tuple[int, Carried, Size], ...]:
    """Each integer an existing kernel's launch fills: (its position in the ``__global__``'s parameters, what it
    carries, its value in the layouts' symbols). Empty for other kernels."""
    kernel = binding.kernel
    if not isinstance(kernel, ExistingKernel):
        return ()
    return tuple((i, a, carried_value(binding, a)) for i, a in enumerate(kernel.args) if isinstance(a, Carried))
