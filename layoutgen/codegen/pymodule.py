"""The model of a spec's generated Python module of launchers."""

from __future__ import annotations

from dataclasses import dataclass

from ..declare.program import Program
from ..declare.spec import Spec, launch_kernel
from ..schema import Dim
from ..schema.dims import shape_text, strides_text
from ..schema.names import PY_PRIVATE
from ..schema.view import LayoutLike
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
    site: str
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
    def verb(self) -> str:
        """What the kernel does to the parameter's field: ``reads``, ``writes``, ``reads and writes``."""
        return {"in": "reads", "out": "writes"}.get(self.access, "reads and writes")


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

    @property
    def launcher(self) -> str:
        return launcher(self.name)


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

    @property
    def launcher(self) -> str:
        return launcher(self.kernel)


@dataclass(frozen=True)
class PyProgram:
    name: str
    doc: str
    buffers: tuple[PyBuffer, ...]
    steps: tuple[PyStep, ...]

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
        steps.append(PyStep(kernel.name, tuple(index[a.buffer.name] for a in launch.args), launch.call_text(kernel.name)))
    buffers = []
    for b in program.buffers:
        access = "inout" if b.name in reads and b.name in writes else ("out" if b.name in writes else "in")
        buffers.append(PyBuffer(b.name, b.layout.name, _layout_text(b.layout), access, align[b.name], b.role))
    return PyProgram(program.name, program.doc or f"Program `{program.name}`.", tuple(buffers), tuple(steps))


def module_model(spec: Spec, site_text: dict[int, str]) -> dict[str, object]:
    """What ``module.py.j2`` places; ``site_text`` maps id(layout) to its declaration site."""
    layouts = [
        PyLayout(
            name=lay.name, shape=shape_text(lay.shape), dtype=str(lay.dtype),
            site=site_text[id(lay)], dims=_runtime_dims(lay.dims),
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
        grid_view = b.view(grid.param)
        kernels.append(PyKernel(
            name=b.name, doc=b.kernel.doc or f"Kernel `{b.kernel.name}`.", params=tuple(params),
            symbols=tuple(symbols), grid_param=[p.name for p, _ in b.pairs].index(grid.param),
            per_row=per_row, per_row_symbols=per_row_symbols(b), block=grid.block,
            grid_dims=None if grid_view.axis_rows is None else _runtime_dims(grid_view.leading_dims),
        ))
    by_name = {k.name: k for k in kernels}
    programs = [program_model(spec, p, by_name) for p in spec.programs]
    exports = sorted([lay.name for lay in layouts] + [k.name for k in kernels]
                     + [n for p in programs for n in (p.name, p.capture)])
    return {"spec": spec.name, "layouts": layouts, "kernels": kernels, "programs": programs, "exports": exports,
            "header": f"{spec.name}.cuh"}

