"""The model of a spec's generated Python module of launchers."""

from __future__ import annotations

from dataclasses import dataclass

from ..declare.kernels import Scalar
from ..declare.program import Program, Value
from ..declare.spec import Spec, launch_kernel
from ..declare.unify import unify
from ..schema import Dim
from ..schema.dims import shape_text, strides_text
from ..schema.names import PY_PRIVATE
from ..schema.view import LayoutLike
from .grids import BlockRuleModel, SharedArrayModel, block_rule, shared_arrays
from .model import grid_shape, param_vector_bytes, per_row_symbols


def launcher(kernel: str) -> str:
    """The generated module's launcher object of ``kernel``: ``_lg_kernel_fwd``."""
    return f"{PY_PRIVATE}kernel_{kernel}"


def runner(program: str) -> str:
    """The generated module's runner of ``program``: ``_lg_program_step``."""
    return f"{PY_PRIVATE}program_{program}"


@dataclass(frozen=True)
class PyLayout:
    name: str
    shape: str
    dtype: str
    source: str  # the file that declares it, never a line
    dims: tuple[str | int, ...]
    width: int
    itemsize: int
    unit: str | None = None  # the symbol one column of the row counts; None: one element


@dataclass(frozen=True)
class PyParam:
    name: str
    access: str
    layout: str
    layout_text: str
    view: str
    cols: str
    strides: str
    align: int
    offset: int  # the field's first column
    field_width: int
    axis_rows: tuple[int, int, int] | None  # (named axis, start, stop) where the view covers a range of it

    @property
    def is_scalar(self) -> bool:
        return False

    @property
    def verb(self) -> str:
        """What the kernel does to the parameter's field: ``reads``, ``writes``, ``reads and writes``."""
        return {"in": "reads", "out": "writes"}.get(self.access, "reads and writes")


#: The runtime's type (in `layoutgen.runtime.typed`) of a launcher's argument of each kind of scalar.
SCALAR_TYPES = {"float": "FloatScalar", "int": "IntScalar", "uint": "IntScalar", "bool": "BoolScalar"}
_KIND_TEXT = {"float": "a real number", "int": "an integer", "uint": "an integer", "bool": "a bool"}


@dataclass(frozen=True)
class PyScalar:
    """A scalar parameter of a launcher, or a value of a program's runner."""

    name: str
    dtype: str  # f32
    kind: str  # float / int / uint / bool
    finite: bool
    c_type: str  # float

    @property
    def is_scalar(self) -> bool:
        return True

    @property
    def described(self) -> str:
        """``scalar f32, finite``."""
        return f"scalar {self.dtype}" + (", finite" if self.finite else "")

    @property
    def annotation(self) -> str:
        """The argument's type as the generated module imports it: ``_lg_FloatScalar``."""
        return PY_PRIVATE + SCALAR_TYPES[self.kind]

    @property
    def kind_text(self) -> str:
        """What the argument takes, in the docstring's words."""
        return _KIND_TEXT[self.kind]


def _py_scalar(declared: Scalar | Value, finite: bool) -> PyScalar:
    dtype = declared.dtype
    return PyScalar(declared.name, dtype.name, dtype.kind, finite, dtype.c_type)


@dataclass(frozen=True)
class PyKernel:
    name: str
    doc: str
    params: tuple[PyParam, ...]
    symbols: tuple[str, ...]
    grid_param: int
    per_row: int
    per_row_symbols: tuple[str, ...]  # symbols the threads per row are multiplied by at launch
    grid_dims: tuple[str | int, ...] | None  # the grid parameter's leading dims where its view narrows an axis
    block: int
    scalars: tuple[PyScalar, ...] = ()  # in declaration order, passed to the launcher after the arrays
    signature: tuple[PyParam | PyScalar, ...] = ()  # every parameter in declaration order: the function's
    count: BlockRuleModel | None = None  # how a cooperative grid counts its blocks; None: threads per row
    shared: tuple[SharedArrayModel, ...] = ()  # the arrays of the dynamic shared memory the launcher sizes
    function: str = ""  # an existing kernel's symbol in the cubin ("": the kernel's name)
    raw: tuple[tuple[object, ...], ...] = ()  # an existing kernel's RawArgs, in the order of its signature

    @property
    def launcher(self) -> str:
        return launcher(self.name)

    @property
    def marked(self) -> tuple[str, ...]:
        """The parameters after the first scalar that an array follows, which get a marker default: a call that
        leaves that scalar out shifts an array into its place, and the launcher, not Python's TypeError about
        the last parameter, says which was left out (:mod:`layoutgen.schema.arguments`)."""
        names = [p.name for p in self.signature]
        first = next((i for i, p in enumerate(self.signature)
                      if p.is_scalar and any(not q.is_scalar for q in self.signature[i + 1:])), len(names))
        return tuple(names[first + 1:])

    @property
    def described_params(self) -> tuple[tuple[str, str], ...]:
        """(name, ``array`` or ``scalar f32``) of each parameter, for the message of a call that misses one."""
        return tuple((p.name, f"scalar {p.dtype}" if isinstance(p, PyScalar) else "array") for p in self.signature)


@dataclass(frozen=True)
class PyBuffer:
    name: str
    layout: str
    layout_text: str
    access: str  # in / out / inout: what the program's launches do to it
    align: int
    role: str  # "input", "output", "input and output" or "" (scratch)


@dataclass(frozen=True)
class PyStep:
    kernel: str
    buffers: tuple[int, ...]
    call: str  # assemble(raw=market, snap=window.snap)
    scalars: tuple[int | str, ...] = ()  # per scalar of the kernel: a constant's launch value, or a value's name

    @property
    def launcher(self) -> str:
        return launcher(self.kernel)


@dataclass(frozen=True)
class PyProgram:
    name: str
    doc: str
    buffers: tuple[PyBuffer, ...]
    steps: tuple[PyStep, ...]
    values: tuple[PyScalar, ...] = ()  # given each run, after the buffers

    @property
    def runner(self) -> str:
        return runner(self.name)

    @property
    def capture(self) -> str:
        """The function that captures the program into a CUDA graph: ``capture_<program>``."""
        return f"capture_{self.name}"


def _runtime_dims(dims: tuple[Dim, ...]) -> tuple[str | int, ...]:
    """Dims as the runtime checks them: sizes, or the names of symbols bound at launch."""
    return tuple(d.size if d.size is not None else str(d.name) for d in dims)


def _layout_text(layout: LayoutLike) -> str:
    """``Window [B, K, 56] f32``."""
    return f"{layout.name} {shape_text(layout.shape)} {layout.dtype}"


def program_model(spec: Spec, program: Program, kernels: dict[str, PyKernel]) -> PyProgram:
    """A program's buffers (in order of first use) and launches, with each buffer's access and alignment."""
    index = {b.name: i for i, b in enumerate(program.buffers)}
    reads: set[str] = set()
    writes: set[str] = set()
    align: dict[str, int] = {b.name: b.layout.dtype.size for b in program.buffers}
    finite: dict[str, bool] = {}  # a value is refused as NaN or Inf where any scalar it is given to says so
    steps = []
    for launch in program.launches:
        kernel = kernels[launch_kernel(spec, launch)]
        by_param = {p.name: p for p in kernel.params}
        for a in launch.args:
            p = by_param[a.param]
            if p.access != "in":
                writes.add(a.buffer.name)
            if p.access != "out":
                reads.add(a.buffer.name)
            align[a.buffer.name] = max(align[a.buffer.name], p.align)
        for s in launch.scalars:
            if isinstance(s.given, Value):
                finite[s.given.name] = finite.get(s.given.name, False) or launch.binding.kernel.scalar(s.param).finite
        steps.append(PyStep(kernel.name, tuple(index[a.buffer.name] for a in launch.args), launch.call_text(kernel.name),
                            tuple(s.launch_value for s in launch.scalars)))
    buffers = []
    for b in program.buffers:
        access = "inout" if b.name in reads and b.name in writes else ("out" if b.name in writes else "in")
        buffers.append(PyBuffer(b.name, b.layout.name, _layout_text(b.layout), access, align[b.name], b.role))
    values = tuple(_py_scalar(v, finite[v.name]) for v in program.values)
    return PyProgram(program.name, program.doc or f"Program `{program.name}`.", tuple(buffers), tuple(steps), values)


def module_model(spec: Spec, sources: dict[int, str],
                 existing: dict[str, tuple[str, tuple[tuple[object, ...], ...]]] | None = None) -> dict[str, object]:
    """What ``module.py.j2`` places; ``sources`` maps id(layout) to the file that declares it (no line);
    ``existing`` each existing kernel's binding to its symbol and raw arguments (codegen/existing_kernel.py)."""
    existing = existing or {}
    layouts = [
        PyLayout(
            name=lay.name, shape=shape_text(lay.shape), dtype=str(lay.dtype),
            source=sources[id(lay)], dims=_runtime_dims(lay.dims),
            width=lay.width, itemsize=lay.dtype.size, unit=str(lay.column_unit) if not lay.column_unit.is_static else None,
        )
        for lay in spec.layouts
    ]
    kernels = []
    for b in spec.kernels:
        _, per_row = grid_shape(b)
        params = []
        symbols: dict[str, None] = {}
        for param, view in b.pairs:
            lay = view.layout
            params.append(PyParam(
                name=param.name, access=param.access, layout=lay.name,
                layout_text=_layout_text(lay),
                view=view.name, cols=view.cols, strides=strides_text(view.strides),
                align=param_vector_bytes(b, param, view), offset=view.offset,
                field_width=view.width, axis_rows=view.axis_rows,
            ))
            for s in lay.symbols:
                symbols.setdefault(s, None)
        grid = b.kernel.grid
        grid_view = b.view(grid.param) if grid.param is not None else None  # Grid.general follows no parameter
        unified = dict(unify(b).values)
        scalars = {s.name: _py_scalar(s, s.finite) for s in b.kernel.scalars}
        declared: dict[str, PyParam | PyScalar] = {**{p.name: p for p in params}, **scalars}
        kernels.append(PyKernel(
            name=b.name, doc=b.kernel.doc or f"Kernel `{b.kernel.name}`.", params=tuple(params),
            symbols=tuple(symbols), grid_param=[p.name for p, _ in b.pairs].index(grid.param) if grid.param is not None else 0,
            per_row=per_row, per_row_symbols=per_row_symbols(b), block=grid.block,
            grid_dims=None if grid_view is None or grid_view.axis_rows is None else _runtime_dims(grid_view.leading_dims),
            count=block_rule(b, unified), shared=shared_arrays(b, unified),
            scalars=tuple(scalars.values()), signature=tuple(declared[p.name] for p in b.kernel.signature),
            function=existing.get(b.name, ("", ()))[0], raw=existing.get(b.name, ("", ()))[1],
        ))
    by_name = {k.name: k for k in kernels}
    programs = [program_model(spec, p, by_name) for p in spec.programs]
    exports = sorted([lay.name for lay in layouts] + [k.name for k in kernels]
                     + [n for p in programs for n in (p.name, p.capture)])
    every_scalar = [s for k in kernels for s in k.scalars] + [v for p in programs for v in p.values]
    # The runtime's typing names the module uses: the scalars' aliases only where it has scalars, `unwrap` only
    # where it has programs (a launcher's entry unwraps typed Arrays itself).
    typed = {"Array", "DeviceArray", "LayoutTag", *(("unwrap",) if programs else ())} | {
        SCALAR_TYPES[s.kind] for s in every_scalar}
    return {"spec": spec.name, "layouts": layouts, "kernels": kernels, "programs": programs, "exports": exports,
            "marked": any(k.marked for k in kernels),
            "header": f"{spec.name}.cuh", "scalar_specs": bool(every_scalar), "typed_imports": sorted(typed),
            "block_rules": any(k.count for k in kernels), "shared_arrays": any(k.shared for k in kernels),
            "raw_args": any(k.raw for k in kernels)}

