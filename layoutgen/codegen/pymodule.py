"""The model of a spec's generated Python module of launchers."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema.dims import shape_text, strides_text
from ..spec import Spec
from .model import grid_shape


@dataclass(frozen=True)
class PyLayout:
    name: str
    shape: str
    dtype: str
    site: str
    dims: tuple[str | int, ...]
    width: int
    numpy: str
    itemsize: int


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


@dataclass(frozen=True)
class PyKernel:
    name: str
    doc: str
    params: tuple[PyParam, ...]
    symbols: tuple[str, ...]
    grid_param: int
    per_row: int
    block: int


def module_model(spec: Spec, site_text: dict[int, str]) -> dict[str, object]:
    """What ``module.py.j2`` places; ``site_text`` maps id(layout) to its declaration site."""
    layouts = [
        PyLayout(
            name=lay.name, shape=shape_text(lay.shape), dtype=str(lay.dtype),
            site=site_text[id(lay)], dims=tuple(d.size if d.size is not None else str(d.name) for d in lay.dims),
            width=lay.width, numpy=lay.dtype.numpy_name or lay.dtype.storage, itemsize=lay.dtype.size,
        )
        for lay in spec.layouts
    ]
    kernels = []
    for b in spec.kernels:
        params = []
        symbols: dict[str, None] = {}
        for param, view in b.pairs:
            lay = view.layout
            params.append(PyParam(
                name=param.name, access=param.access, layout=lay.name,
                layout_text=f"{lay.name} {shape_text(lay.shape)} {lay.dtype}",
                view=view.name, cols=view.cols, strides=strides_text(view.strides),
                align=max(param.vector or 0, lay.dtype.size),
            ))
            for s in lay.symbols:
                symbols.setdefault(s, None)
        grid = b.kernel.grid
        _, per_row = grid_shape(b)
        kernels.append(PyKernel(
            name=b.name, doc=b.kernel.doc or f"Kernel `{b.kernel.name}`.", params=tuple(params),
            symbols=tuple(symbols), grid_param=[p.name for p, _ in b.pairs].index(grid.param),
            per_row=per_row, block=grid.block,
        ))
    exports = sorted([lay.name for lay in layouts] + [k.name for k in kernels])
    return {"spec": spec.name, "layouts": layouts, "kernels": kernels, "exports": exports,
            "header": f"{spec.name}.cuh"}

