"""``layoutgen show``: layout tables and kernel bindings with resolved strides."""

from __future__ import annotations

from pathlib import Path

from .checks import describe_view
from .config import Config
from .report import format_text
from .schema.dims import shape_text, strides_text
from .specload import load_spec
from .unify import unify


def show(config: Config, spec_file: Path, layout_name: str | None) -> int:
    """Print the spec's layouts (or one) and its bindings; 1 when the spec does not load."""
    loaded = load_spec(spec_file)
    if loaded.spec is None:
        print(format_text(list(loaded.diagnostics)), end="")
        return 1
    spec = loaded.spec
    layouts = spec.layouts
    if layout_name is not None:
        layouts = tuple(lay for lay in layouts if lay.name == layout_name)
        if not layouts:
            names = ", ".join(lay.name for lay in spec.layouts)
            print(f"layoutgen: error: spec `{spec.name}` has no layout `{layout_name}` (its layouts: {names})")
            return 2
    for layout in layouts:
        print(layout)
        print()
    if layout_name is not None:
        return 0
    for binding in spec.kernels:
        unified = unify(binding)
        print(f"kernel {binding.name} ({binding.kernel.template}), bound at {binding.site}")
        for param, view in binding.pairs:
            print(f"  {param.name:<10} {param.access:<5} {shape_text(param.shape):<12} <- {describe_view(view)}, "
                  f"strides {strides_text(view.strides)}, offset {view.offset}")
        values = ", ".join(f"{s} = {d}" for s, d in unified.values)
        print(f"  symbols: {values}")
        print()
    return 0
