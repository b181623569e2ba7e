"""``layoutgen show --format json``: a spec's layouts, views, bindings and programs as one JSON document.

The document's schema is ``show.schema.json`` beside this module (a JSON Schema, draft 2020-12),
documented in docs/show-json.md. Every number is what the generated code uses, derived from the
declarations; sizes that depend on a symbol are strings in it (``"K*56"``), static ones integers.
Declaration sites are ``path:line`` with the path relative to the project root, as ``show`` prints them.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..declare.kernels import Binding
from ..declare.program import Launch, Program
from ..declare.spec import Spec, launch_kernel
from ..declare.unify import unify
from ..schema import Layout, View
from ..schema.diagnostics import Site
from ..schema.dims import Dim, Size
from ..schema.record import Region

#: The value of the document's ``format`` key: what it is and which version of the schema it follows.
FORMAT = "layoutgen-show/1"

#: The JSON Schema of the document.
SCHEMA_PATH = Path(__file__).with_name("show.schema.json")

Json = dict[str, object]


def _size(value: Size | Dim | int) -> int | str:
    """A static size as an integer, a symbolic one as its text (``"K*56"``, ``"B"``)."""
    if isinstance(value, int):
        return value
    if isinstance(value, Dim):
        return value.size if value.size is not None else str(value.name)
    return value.coef if value.is_static else str(value)


def _site(site: Site | None, root: Path) -> str | None:
    if site is None:
        return None
    path = Path(site.path)
    try:
        shown = path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        shown = path.as_posix()
    return f"{shown}:{site.line}"


def _region(region: Region, layout: Layout) -> Json:
    """One entry of a layout's record: a field, a group or padding, with its columns."""
    entry: Json = {"path": region.path, "kind": region.kind, "start": region.start, "stop": region.stop,
                   "shape": [_size(d) for d in region.shape] or None, "doc": region.doc or None}
    if region.kind in ("field", "group"):
        entry["view"] = _view(layout.view[region.path])
    return entry


def _view(view: View) -> Json:
    """Where a view's elements lie: its columns, element strides and offset, its alignment in bytes."""
    return {
        "name": view.name, "layout": view.layout.name, "path": view.path, "cols": view.cols,
        "start": view.offset, "width": view.width, "shape": [_size(d) for d in view.shape],
        "strides": [_size(s) for s in view.strides], "offset": _size(view.base_offset), "align": view.align,
        "vector_bytes": view.vector_bytes, "contiguous": view.contiguous,
        "axis_range": view.axis_range.path if view.axis_range is not None else None,
    }


def _layout(layout: Layout, root: Path) -> Json:
    record = [r for _, r in layout.record.walk() if r is not layout.record]
    ranges = [] if layout.axis_ranges is None else [r for _, r in layout.axis_ranges.walk()
                                                     if r is not layout.axis_ranges]
    return {
        "name": layout.name, "site": _site(layout.site, root), "doc": layout.doc or None,
        "dims": [_size(d) for d in layout.dims], "shape": [_size(d) for d in layout.shape],
        "dtype": layout.dtype.name, "itemsize": layout.dtype.size, "width": layout.width,
        "column_unit": _size(layout.column_unit), "row_elements": _size(layout.row_elements),
        "row_bytes": layout.row_bytes, "row_align": layout.view.row_align, "read_only": layout.read_only,
        "fields": [_region(r, layout) for r in record],
        "named_axis": layout.named_axis,
        "axis_ranges": [{"path": r.path, "kind": r.kind, "start": r.start, "stop": r.stop} for r in ranges],
    }


def _binding(binding: Binding, root: Path) -> Json:
    grid = binding.kernel.grid
    return {
        "name": binding.name, "kernel": binding.kernel.name, "template": binding.kernel.template,
        "site": _site(binding.site, root), "doc": binding.kernel.doc or None,
        "grid": {"per": grid.per, "param": grid.param, "block": grid.block},
        "params": [{"name": p.name, "access": p.access, "shape": [_size(d) for d in p.shape], "view": v.name,
                    "contiguous": p.contiguous, "vector": p.vector} for p, v in binding.pairs],
        "scalars": [{"name": s.name, "dtype": s.dtype.name} for s in binding.kernel.scalars],
        "symbols": {s: _size(d) for s, d in unify(binding).values},
    }


def _touched(launch: Launch, *, writes: bool) -> list[Json]:
    """The buffers' columns a launch reads (or writes): one entry per parameter that does."""
    params = {p.name: p for p in launch.binding.kernel.params}
    return [{"param": a.param, "buffer": a.buffer.name, "view": a.view.name, "field": a.view.path,
             "cols": a.view.cols} for a in launch.args if (params[a.param].writes if writes else params[a.param].reads)]


def _program(spec: Spec, program: Program, root: Path) -> Json:
    return {
        "name": program.name, "site": _site(program.site, root), "doc": program.doc or None,
        "buffers": [{"name": b.name, "layout": b.layout.name, "role": b.role or "scratch"} for b in program.buffers],
        "values": [{"name": v.name, "dtype": v.dtype.name} for v in program.values],
        "launches": [{"kernel": launch_kernel(spec, launch), "site": _site(launch.site, root),
                      "reads": _touched(launch, writes=False), "writes": _touched(launch, writes=True)}
                     for launch in program.launches],
    }


def show_document(spec: Spec, root: Path, spec_path: str, *, only: Layout | Binding | Program | None = None) -> Json:
    """The document of ``spec`` (its module at ``spec_path`` under ``root``); with ``only``, of that one layout,
    binding or program: the other lists are empty, and ``views`` holds the views of that binding."""
    layouts = [lay for lay in spec.layouts if only is None or lay is only]
    bindings = [b for b in spec.kernels if only is None or b is only]
    programs = [p for p in spec.programs if only is None or p is only]
    views: dict[str, View] = {}
    for binding in bindings:
        for _, view in binding.pairs:
            views.setdefault(view.name, view)
    return {
        "format": FORMAT, "spec": spec.name, "source": spec_path,
        "layouts": [_layout(lay, root) for lay in layouts],
        "views": [_view(v) for v in views.values()],
        "bindings": [_binding(b, root) for b in bindings],
        "programs": [_program(spec, p, root) for p in programs],
    }


def show_json(spec: Spec, root: Path, spec_path: str, *, only: Layout | Binding | Program | None = None) -> str:
    """The document as text: indented, keys in the schema's order, one newline at the end."""
    return json.dumps(show_document(spec, root, spec_path, only=only), indent=2, ensure_ascii=False) + "\n"
