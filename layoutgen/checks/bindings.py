"""LG2xx: whether each kernel parameter fits the view it is bound to."""

from __future__ import annotations

from ..declare.kernels import Binding, Param
from ..declare.spec import Spec
from ..declare.unify import Conflict, unify
from ..schema import View
from ..schema.diagnostics import Diagnostic
from ..schema.dims import shape_text, strides_text
from ..schema.words import with_article
from .dataflow import check_program
from .grids import check_shared_memory

#: The arch checks assume where none is given: the default of `arch` in [tool.layoutgen].
DEFAULT_ARCH = "sm_90"


def describe_view(view: View) -> str:
    """```Window.snap`` (`Window` [B, K, 56], columns 0..40)``."""
    layout = view.layout
    where = "all columns" if view.region.kind == "record" else f"columns {view.cols}"
    if view.axis_range is not None:
        where = f"rows {view.axis_range.cols} of axis {layout.named_axis}, {where}"
    return f"`{view.name}` (`{layout.name}` {shape_text(layout.shape)} {layout.dtype}, {where})"


def _where(view: View) -> str:
    """``QKV` [B, S, D*48], rows 0..32 of axis 2, columns D*32..D*40``."""
    layout = view.layout
    rows = f", rows {view.axis_range.cols} of axis {layout.named_axis}" if view.axis_range is not None else ""
    return f"`{layout.name}` {shape_text(layout.shape)}{rows}, columns {view.cols}"


def _conflict(binding: Binding, c: Conflict) -> Diagnostic:
    who = f"`{binding.name}.{c.param.name}`"
    if c.origin is None:
        message = (
            f"{who} axis {c.axis} must be {c.expected} but is bound to {describe_view(c.view)}, "
            f"where it is {c.actual}"
        )
        hint = f"bind a view whose axis {c.axis} is {c.expected}, or declare the axis with a symbol"
    else:
        o = c.origin
        message = (
            f"{who} axis {c.axis} is `{c.symbol}` = {c.actual} from {describe_view(c.view)}, but `{c.symbol}` "
            f"= {c.expected} from `{binding.name}.{o.param}` axis {o.axis}, bound to {describe_view(o.view)}"
        )
        hint = (
            f"every use of `{c.symbol}` must have one value; bind views that agree, or give "
            f"`{c.param.name}` its own symbol"
        )
    return Diagnostic("LG202", message, binding.site, hint)


def _param_checks(binding: Binding, param: Param, view: View) -> list[Diagnostic]:
    who = f"`{binding.name}.{param.name}`"
    out: list[Diagnostic] = []
    if param.dtype is not None and param.dtype != view.dtype:
        out.append(Diagnostic(
            "LG203", f"{who} is written for {param.dtype} but is bound to {describe_view(view)}",
            binding.site, hint=f"bind {with_article(str(param.dtype))} view, or declare `{param.name}` with dtype={view.dtype.name}",
        ))
    padded = view.padded_axis() if param.contiguous and not view.contiguous else None
    if padded is not None and (view.region.shape or view.axis_range is not None):
        out.append(Diagnostic(
            "LG201",
            f"{who} needs packed elements {shape_text(param.shape)} but is bound to `{view.name}` "
            f"{shape_text(view.shape)}, whose axis {padded} has stride {view.strides[padded]}, not "
            f"{view.packed_strides[padded]} (strides {strides_text(view.strides)}; {_where(view)})",
            binding.site,
            hint="drop contiguous=True and index through the view's accessors (one index per axis), "
            "or copy the field out first",
        ))
    elif param.contiguous and not view.contiguous:
        out.append(Diagnostic(
            "LG201",
            f"{who} needs contiguous rows (stride {view.column_elements(view.width)}) but is bound to "
            f"`{view.name}`, row stride {view.column_elements(view.row_stride)} (`{view.layout.name}` {shape_text(view.layout.shape)}, `{view.path}` = columns "
            f"{view.cols})",
            binding.site,
            hint="drop contiguous=True and index through the view's accessors to read the strided rows, "
            "or copy the field out first",
        ))
    if param.vector is not None and param.vector > view.vector_bytes:
        out.append(Diagnostic(
            "LG204",
            f"{who} makes {param.vector}-byte vector accesses but {describe_view(view)} starts at byte "
            f"{view.byte_offset} of {view.layout.row_bytes}-byte rows and is {view.width * view.dtype.size} "
            f"bytes wide: aligned for {view.vector_bytes}-byte accesses at most",
            binding.site,
            hint=f"declare vector={view.vector_bytes} or less, or pad the layout so the field starts and ends "
            f"on {with_article(f'{param.vector}-byte')} boundary",
        ))
    if param.writes and view.effective_read_only:
        out.append(Diagnostic(
            "LG205", f"{who} is written by the kernel ({param.access}) but is bound to read-only "
            f"{describe_view(view)}",
            binding.site, hint=f"bind a writable view, or declare `{param.name}` as In",
        ))
    return out


def check_binding(binding: Binding, arch: str = DEFAULT_ARCH) -> list[Diagnostic]:
    """Every LG2xx problem of one binding, in parameter order, then its shared memory on ``arch`` (LG217)."""
    unified = unify(binding)
    out: list[Diagnostic] = []
    for param, view in unified.rank_errors:
        out.append(Diagnostic(
            "LG206",
            f"`{binding.name}.{param.name}` has rank {len(param.shape)} {shape_text(param.shape)} but is bound to "
            f"{describe_view(view)}, of rank {len(view.shape)} {shape_text(view.shape)}",
            binding.site, hint="bind a view with as many axes as the parameter declares",
        ))
    out.extend(_conflict(binding, c) for c in unified.conflicts)
    grid = binding.kernel.grid
    grid_view = binding.view(grid.param) if grid.param is not None else None  # Grid.general follows no parameter
    if grid.kind.per_vector and grid_view is not None and not grid_view.column_unit.is_static:
        out.append(Diagnostic(
            "LG210",
            f"`{binding.name}` starts one thread per {grid.per} of `{grid.param}`, bound to {describe_view(grid_view)}, "
            f"whose rows hold {grid_view.column_elements(grid_view.width)} elements: how many aligned vectors a "
            "row holds is only known at launch",
            binding.site, hint=f"use Grid.elements(\"{grid.param}\") (one thread per element, counted at launch), "
            "or follow a parameter whose rows are static",
        ))
    for param, view in binding.pairs:
        out.extend(_param_checks(binding, param, view))
    out.extend(check_shared_memory(binding, unified, arch))
    return out


def check_spec(spec: Spec, arch: str = DEFAULT_ARCH) -> list[Diagnostic]:
    """Binding checks of every kernel of a spec, unique generated names (LG209), and program dataflow (LG3xx).

    ``arch`` is the arch the kernels are compiled for: static shared memory is checked against it (LG217).
    """
    out: list[Diagnostic] = []
    first: dict[str, Binding] = {}
    for binding in spec.kernels:
        if binding.name in first:
            out.append(Diagnostic(
                "LG209",
                f"spec `{spec.name}` generates kernel `{binding.name}` twice (first bound at "
                f"{first[binding.name].site})",
                binding.site, hint=f"name each launch of it: Launch({binding.kernel.name}, name=\"...\", ...)"
                if binding.by_launch else f"name each binding: {binding.kernel.name}.bind(name=\"...\", ...)",
            ))
        first.setdefault(binding.name, binding)
        out.extend(check_binding(binding, arch))
    for program in spec.programs:
        out.extend(check_program(program))
    return out
