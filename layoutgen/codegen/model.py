"""Everything the templates place, computed in Python.

Templates get these frozen records and only place their values: every stride,
offset, width and index expression below is derived from the schema.

Generated identifiers never meet user names: a kernel's pointer arguments (and
its scalars, passed by value) are ``lg_arg_<param>``, the layout symbols it is
passed and its views store are ``lg_dim_<symbol>``, view structs are ``<Layout>_<field>_view`` (no member of
a view ends in ``_view``) in namespace ``lg::views::<spec>``, and layoutgen's
own C++ is in namespace ``lg``. User names cannot start with ``lg_`` or be
``lg`` (:mod:`layoutgen.schema.names`), so ``lg::`` needs no ``::`` in front:
no scope between a use and the global namespace can declare another ``lg``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..declare.grids import launch_dims
from ..declare.kernels import Binding, Param
from ..declare.tiles import tile_vector_bytes, tiled_params
from ..declare.unify import unify
from .library import library_namespace
from .grids import SharedModel, grid_model, vector_params, vector_width
from ..schema import View
from ..schema.dims import Dim, Size, shape_text, strides_text
from ..schema.names import CPP_ARGUMENT, CPP_DIM
from ..schema.words import plural

#: Element counts at or past this need 64-bit index arithmetic.
INT32_LIMIT = 2**31


def argument(param: str) -> str:
    """The kernel's pointer argument behind the view of ``param``: ``lg_arg_x``."""
    return f"{CPP_ARGUMENT}{param}"


def dim(symbol: str) -> str:
    """A layout symbol as the kernel's argument and the views' member: ``lg_dim_B``."""
    return f"{CPP_DIM}{symbol}"


def launch_value(layout_dim: Dim) -> str:
    """C++ for the launch value of a symbolic layout dim a kernel symbol was unified with: its argument
    (``lg_dim_B``), or, for a product such as ``D*3`` (the width of a row of fields counted in ``D``), the
    product of its factors' arguments, never the product's text as one name."""
    size = Size.product(launch_dims([layout_dim], {}))
    return size.c_expr({s: dim(s) for s in size.symbols})


def _c_dims(dims: list[Dim] | tuple[Dim, ...]) -> list[str]:
    """Each dim as C++: its size, or the member holding its launch value."""
    return [str(d.size) if d.size is not None else dim(str(d.name)) for d in dims]


@dataclass(frozen=True)
class ViewModel:
    """A generated C++ view struct for one field of one layout."""

    struct: str  # C++ name: Window_snap_view
    name: str  # Window.snap
    layout: str
    shape: str  # [B, K, 56]
    dtype: str
    cols: str
    source: str  # the file that declares it, never a line (generated text depends on no line)
    width: int
    row_stride: int
    offset: int
    vector_bytes: int  # the widest access aligned on every row of the field (a kernel may check less)
    symbols: tuple[str, ...]  # the layout's symbolic dims, stored in the struct as `lg_dim_<symbol>`
    index_type: str  # "int" or "long long"
    rows_expr: str  # C++ for the number of rows
    indices: tuple[str, ...]  # accessor argument names, one per leading dim
    row_index_expr: str  # C++ flattening ``indices`` into a row number
    strides: str  # (56*K, 56, 1)
    policies: str = ""  # extra lg::Field arguments: how the geometry scales, which rows the view has
    scale_init: str = ""  # the lg::Scaled initializer after the base pointer: ", {lg_dim_D}"
    column_type: str = "int"  # the column index: `long long` where a row can hold 2^31 elements or more
    column_params: str = "int c"  # the accessor's parameters after the row indices
    column_expr: str = "c"  # C++ for the column in the row, from ``column_params``
    # Debug build: each accessor index and its extent, checked one by one (a flattened
    # index can land inside the field while one of its parts is out of range).
    index_checks: tuple[tuple[str, str], ...] = ()
    unit: str = ""  # what one column counts where that is a symbol (`D`); empty for plain fields
    # The device library's namespace, by version (`lg::v0_1_0`): the header names it in full, so that its views
    # bind to the library of the layoutgen that generated them (layoutgen/include/lg/version.cuh).
    library: str = field(default_factory=lambda: f"lg::{library_namespace()}")

    @property
    def members(self) -> tuple[str, ...]:
        """The struct's members that hold the layout's symbols: ``lg_dim_B``, ``lg_dim_K``."""
        return tuple(dim(s) for s in self.symbols)

    @property
    def tag(self) -> str:
        """The struct holding the view's message for arithmetic on one of its rows: ``Window_snap_view_rows``.

        Every view struct's name ends in ``_view``, so no tag can be one of them."""
        return row_tag(self.struct)

    @property
    def row_arithmetic(self) -> str:
        """What NVRTC prints for ``x.row(0) + r * x.width``: why it does not compile, with the real stride."""
        apart = (plural(self.row_stride, "element") if not self.unit
                 else f"{plural(self.row_stride, 'column')} of {self.unit} elements")
        return (f"a row of '{self.name}' is not a pointer: its rows are {apart} apart "
                f"({plural(self.width, 'column')} each); "
                f"index the row with row(r)[c], or the view with at(r, c)")

    @property
    def base(self) -> str:
        """The ``lg::Field`` the struct derives from, with the kernel's checked vector width as ``VectorBytes``
        and whether the parameter is declared packed as ``Pack``, in its version's namespace."""
        policies = self.policies.replace("lg::", f"{self.library}::")
        return (f"{self.library}::Field<{self.tag}, T, {self.width}, {self.row_stride}, {self.offset}, VectorBytes, "
                f"Pack, {self.index_type}{policies}>")

    @property
    def checked_base(self) -> str:
        """The debug build's base: ``lg::debug::CheckedField`` of the struct itself over :attr:`base`, which
        checks each accessor of the field (layoutgen/include/lg/checked.cuh)."""
        return f"{self.library}::debug::CheckedField<{self.struct}<T, VectorBytes, Pack>, {self.base}>"


def _horner(names: list[str], dims: list[str]) -> str:
    """``((i0 * d1 + i1) * d2 + i2)``: indices flattened row-major; ``dims[n]`` is the extent of ``names[n]``."""
    expr = names[0] if names else "0"
    for n, (name, extent) in enumerate(zip(names[1:], dims[1:])):
        expr = f"{f'({expr})' if n else expr} * {extent} + {name}"
    return expr


def _policies(view: View) -> tuple[str, str]:
    """(extra lg::Field template arguments, the scale's initializer) of a view; empty for plain fields."""
    layout = view.layout
    scaled = not layout.column_unit.is_static
    if not scaled and view.axis_rows is None:
        return "", ""
    policies = ", lg::Scaled" if scaled else ", lg::Unscaled"
    if view.axis_rows is not None:
        axis, start, stop = view.axis_rows
        inner = Size.product(layout.dims[axis + 1 :]).coef  # static: checked at declaration
        policies += f", lg::AxisRows<{start}, {stop - start}, {layout.dims[axis].size}, {inner}>"
    unit = layout.column_unit.c_expr({s: dim(s) for s in layout.column_unit.symbols})
    return policies, (f", {{{unit}}}" if scaled else "")


def _columns(view: View, column_type: str) -> tuple[str, str]:
    """(the accessor's column parameters, C++ for the column): ``int j0, int c`` and ``j0 * D + c``."""
    inner = view.region.shape
    if not inner:
        return f"{column_type} c", "c"
    names = [f"j{n}" for n in range(len(inner) - 1)] + ["c"]
    expr = _horner(names, _c_dims(inner))
    return ", ".join(f"{column_type} {n}" for n in names), expr


def _index_type(size: Size) -> str:
    return "int" if size.is_static and size.coef < INT32_LIMIT else "long long"


def row_tag(struct: str) -> str:
    """The name of the struct holding the row message of the view struct ``struct``."""
    return f"{struct}_rows"


def struct_name(view: View) -> str:
    """``Window_snap_view``: the suffix keeps the struct's name off every member name a view has."""
    return view.name.replace(".", "_") + "_view"


def view_model(view: View, source: str, struct: str | None = None) -> ViewModel:
    """The model of ``view``'s struct; ``struct`` names it where :func:`struct_name` is taken."""
    layout = view.layout
    total = Size.product([*layout.dims, *(Dim(s) for s in layout.column_unit.symbols)], layout.width)
    index_type = _index_type(total)
    # A row counted in a symbol can hold any number of elements: its columns are 64-bit.
    column_type = _index_type(Size.product((Dim(s) for s in layout.column_unit.symbols), layout.width))
    leading = view.leading_dims
    names = [f"i{n}" for n in range(len(leading))]
    # Horner's rule over the view's leading dims: ((i0 * d1 + i1) * d2 + i2) ...
    expr = _horner(names, _c_dims(leading))
    rows = view.rows
    policies, scale_init = _policies(view)
    column_params, column_expr = _columns(view, column_type)
    inner = [f"j{n}" for n in range(len(view.region.shape) - 1)] + ["c"] if view.region.shape else []
    checks = [*zip(names, _c_dims(leading)), *zip(inner, _c_dims(view.region.shape))]
    return ViewModel(
        struct=struct or struct_name(view),
        name=view.name,
        layout=layout.name,
        shape=shape_text(layout.shape),
        dtype=str(layout.dtype),
        cols=view.cols,
        source=source,
        width=view.width,
        row_stride=view.row_stride,
        offset=view.offset,
        vector_bytes=view.vector_bytes,
        symbols=layout.symbols,
        index_type=index_type,
        rows_expr=rows.c_expr({s: dim(s) for s in rows.symbols}) if not rows.is_static else str(rows.coef),
        indices=tuple(names),
        row_index_expr=expr,
        strides=strides_text(view.strides),
        policies=policies,
        scale_init=scale_init,
        column_type=column_type,
        column_params=column_params,
        column_expr=column_expr,
        index_checks=tuple(checks),
        unit="" if layout.column_unit.is_static else str(layout.column_unit),
    )


def grid_shape(binding: Binding) -> tuple[int, int]:
    """(bytes per thread for ``Grid.vectors``, else 0; threads per row of the grid's parameter).

    For ``Grid.elements`` over a row counted in a symbol (``[H, D]`` fields), the
    threads per row are this count times the symbol: see :func:`per_row_symbols`.
    """
    grid = binding.kernel.grid
    if not (grid.kind.per_element or grid.kind.per_vector) or grid.param is None:  # a row a thread, or cooperative
        return 0, 1
    view = binding.view(grid.param)
    if grid.kind.per_element:
        return 0, view.width
    vector_bytes = vector_width(binding)  # of the views moved group for group with the grid's (codegen/grids.py)
    return vector_bytes, view.width * view.dtype.size // vector_bytes


def param_vector_bytes(binding: Binding, param: Param, view: View) -> int:
    """The widest access a kernel may make on ``param``: the alignment its launcher checks.

    ``vector=`` where declared (LG204 keeps it within the field's alignment), the kernel's width
    with ``Grid.vectors`` for the views it moves in groups, else one element. The generated view takes it as ``VectorBytes``, so a
    body's ``x.vec<N>()`` wider than what the launcher checks does not compile.
    """
    tiled = tile_vector_bytes(view) if param.name in tiled_params(binding) else 0  # a tile's copies
    grid = grid_shape(binding)[0] if param.name in vector_params(binding) else 0  # Grid.vectors' groups
    return max(param.vector or 0, grid, view.dtype.size, tiled)


def per_row_symbols(binding: Binding) -> tuple[str, ...]:
    """The symbols the threads per row are multiplied by at launch (``("D",)``), or none."""
    grid = binding.kernel.grid
    return binding.view(grid.param).column_unit.symbols if grid.kind.per_element and grid.param else ()


@dataclass(frozen=True)
class ParamModel:
    name: str
    access: str  # in / out / inout
    c_type: str  # element type, const for inputs
    view: ViewModel
    shape: str  # the kernel's declared shape: [B, K, F]
    contiguous: bool
    vector: int | None
    vector_bytes: int = 0  # the widest access the launcher checks the array for (the view's VectorBytes)

    @property
    def argument(self) -> str:
        """The kernel's pointer argument: ``lg_arg_x``."""
        return argument(self.name)

    @property
    def packing(self) -> str:
        """Whether the view hands out ``raw_pointer()``: only for a parameter declared ``contiguous=True``."""
        return "lg::Packing::contiguous" if self.contiguous else "lg::Packing::strided"

    @property
    def initializer(self) -> str:
        """What the view is built from: ``{lg_arg_x, {lg_dim_D}}, lg_dim_B, lg_dim_D``."""
        return ", ".join([self.field_initializer, *self.view.members])

    @property
    def field_initializer(self) -> str:
        """What the view's ``lg::Field`` is built from: ``{lg_arg_x, {lg_dim_D}}`` (the debug build's view puts
        its ``lg::debug::CheckedField``'s parameter number and name after it, in braces of their own)."""
        return f"{{{self.argument}{self.view.scale_init}}}"


@dataclass(frozen=True)
class ScalarModel:
    """A parameter passed by value: the launch passes ``lg_arg_lr``, the body sees ``const float lr``."""

    name: str
    c_type: str  # float, unsigned long long, bool
    described: str  # scalar f32, finite

    @property
    def argument(self) -> str:
        """The kernel's by-value argument: ``lg_arg_lr``."""
        return argument(self.name)


def scalar_models(binding: Binding) -> tuple[ScalarModel, ...]:
    """The binding's scalars, in declaration order."""
    return tuple(ScalarModel(s.name, s.dtype.c_type, s.described) for s in binding.kernel.scalars)


@dataclass(frozen=True)
class KernelModel:
    name: str  # the generated kernel's name
    kernel: str  # the declared kernel's name
    template: str  # the template path relative to the project root
    source: str  # the file that binds it, never a line
    params: tuple[ParamModel, ...]
    layout_symbols: tuple[str, ...]  # launch arguments: the layouts' symbolic dims
    arguments: tuple[str, ...]  # the kernel's C++ parameter declarations, in launch order
    static: tuple[tuple[str, int], ...]  # kernel symbol -> value, for constexprs
    aliases: tuple[tuple[str, str], ...]  # kernel symbol -> C++ for the layout dim it equals (launch_value)
    block: int
    grid_param: str
    grid_per: str  # row / element / vector (the thread's index), tile / warp / persistent / persistent_warp / general
    grid_count: str  # C++ for the number of threads the launch needs
    vector_bytes: int  # bytes each thread moves with Grid.vectors (0 otherwise)
    per_row: int  # threads per row of the grid's parameter
    index_type: str
    scalars: tuple[ScalarModel, ...] = ()  # the parameters passed by value, after the pointers
    grid_capacity: int = 1  # rows of a tile (Grid.tiles, Grid.persistent), of a warp (Grid.warps) or its tile
    # Grid.persistent's blocks_per_sm, where declared: the kernel's __launch_bounds__ asks the compiler to
    # fit that many blocks on an SM (registers), as many as the launch starts; 0: no such bound
    min_blocks: int = 0
    prologue: tuple[str, ...] = ()  # the skeletons of the prologue (codegen/grids.py)
    helpers: tuple[str, ...] = ()  # file-scope skeletons the prologue needs
    shared: tuple[SharedModel, ...] = ()  # the arrays of the dynamic shared memory

    @property
    def argument_lines(self) -> tuple[str, ...]:
        """The signature's lines after the name: each argument, then `,` or the closing `)`."""
        return tuple(a + ("," if n < len(self.arguments) - 1 else ")") for n, a in enumerate(self.arguments))

    @property
    def alias_members(self) -> tuple[tuple[str, str], ...]:
        """(kernel symbol, C++ for its launch value): ``("B", "lg_dim_B")``, ``("F", "(long long)lg_dim_D * 3LL")``."""
        return self.aliases

    @property
    def constants(self) -> tuple[tuple[str, str, int], ...]:
        """(C++ type, symbol, value) of each static symbol: `long long` for a value past `int`."""
        return tuple(("int" if -INT32_LIMIT <= v < INT32_LIMIT else "long long", s, v) for s, v in self.static)


def kernel_model(binding: Binding, views: dict[str, ViewModel], template: str, source: str) -> KernelModel:
    """The model of one binding; ``views`` maps view names to their structs."""
    unified = unify(binding)
    params = []
    layout_symbols: dict[str, None] = {}
    for param, view in binding.pairs:
        model = views[view.name]
        c_type = view.dtype.c_type
        params.append(ParamModel(
            name=param.name, access=param.access, c_type=c_type if param.writes else f"const {c_type}",
            view=model, shape=shape_text(param.shape),
            contiguous=param.contiguous, vector=param.vector, vector_bytes=param_vector_bytes(binding, param, view),
        ))
        for s in view.layout.symbols:
            layout_symbols.setdefault(s, None)
    grid = binding.kernel.grid
    vector_bytes, per_row = grid_shape(binding)
    count = "" if grid.param is None else f"{grid.param}.rows()" + ("" if per_row == 1 else f" * {per_row}")
    count += "".join(f" * {dim(s)}" for s in per_row_symbols(binding))
    cooperative = grid_model(binding, dict(unified.values))
    wide = any(p.view.index_type != "int" for p in params) or cooperative.wide
    return KernelModel(
        name=binding.name,
        kernel=binding.kernel.name,
        template=template,
        source=source,
        params=tuple(params),
        layout_symbols=tuple(layout_symbols),
        arguments=tuple(
            [f"{p.c_type}* __restrict__ {p.argument}" for p in params]
            + [f"{s.c_type} {s.argument}" for s in scalar_models(binding)]
            + [f"long long {dim(s)}" for s in layout_symbols]
        ),
        static=tuple(sorted(unified.static.items())),
        aliases=tuple(sorted((s, launch_value(d)) for s, d in unified.values if d.size is None)),
        block=grid.block,
        grid_param=grid.param or "",
        grid_per=grid.per,
        grid_count=count,
        vector_bytes=vector_bytes,
        per_row=per_row,
        index_type="long long" if wide else "int",
        grid_capacity=cooperative.capacity,
        min_blocks=grid.blocks_per_sm or 0 if grid.kind.resident else 0,
        prologue=cooperative.prologue,
        helpers=cooperative.helpers,
        shared=cooperative.shared,
        scalars=scalar_models(binding),
    )
