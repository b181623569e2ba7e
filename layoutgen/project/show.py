"""``layoutgen show``: layout tables and kernel bindings with resolved strides, or their diagrams.

Without ``--svg``/``--png`` it prints text: the table of each layout and each
binding's parameters. With them it writes the diagrams of
:mod:`layoutgen.diagrams` instead (PNG through :mod:`layoutgen.diagrams.png`).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ..checks import describe_view
from ..declare.kernels import Binding
from ..declare.program import Program
from ..declare.spec import Spec, launch_kernel
from ..declare.unify import Unified, unify
from ..schema import Layout
from ..schema.diagnostics import display_path
from ..schema.dims import shape_text, strides_text
from ..codegen.render import relative
from .config import Config
from .report import format_text
from .show_json import show_json
from .specload import load_spec

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _print_binding(binding: Binding) -> None:
    unified = unify(binding)
    print(f"kernel {binding.name} ({binding.kernel.template}), bound at {binding.site}")
    for param, view in binding.pairs:
        print(f"  {param.name:<10} {param.access:<5} {shape_text(param.shape):<12} <- {describe_view(view)}, "
              f"strides {strides_text(view.strides)}, offset {view.base_offset}")
    print(f"  symbols: {_symbol_values(unified)}")


def _symbol_values(unified: Unified) -> str:
    """``B = B, F = 40``; a symbol the views give two values (a refused binding, LG202) shows every side:
    ``F = 4 from `x` but 6 from `y```."""
    parts = []
    for symbol, value in unified.values:
        clashes = [c for c in unified.conflicts if c.symbol == symbol and c.origin is not None]
        text = f"{symbol} = {value}"
        if clashes and clashes[0].origin is not None:
            text += f" from `{clashes[0].origin.param}` but " + ", ".join(
                f"{c.actual} from `{c.param.name}`" for c in clashes)
        parts.append(text)
    return ", ".join(parts)


def _print_program(spec: Spec, program: Program) -> None:
    print(f"program {program.name}, declared at {program.site}" + (f": {program.doc}" if program.doc else ""))
    for b in program.buffers:
        print(f"  buffer {b.name:<10} {b.layout.name} {shape_text(b.layout.shape)} {b.layout.dtype}, "
              f"{b.role or 'scratch'}")
    for n, launch in enumerate(program.launches, start=1):
        print(f"  {n}. {launch.call_text(launch_kernel(spec, launch))}")


def _find(spec: Spec, name: str) -> Layout | Binding | Program | None:
    """The layout called ``name``, else the binding (generated kernel), else the program."""
    for layout in spec.layouts:
        if layout.name == name:
            return layout
    found = next((b for b in spec.kernels if b.name == name), None)
    return found or next((p for p in spec.programs if p.name == name), None)


def _draw(spec: Spec, target: Layout | Binding | Program | None, svg: str | None, png: str | None) -> int:
    from ..diagrams.drawing import binding_svg, layout_svg, program_svg, spec_svg  # only when drawing
    from ..diagrams.png import ConverterMissingError, svg_to_png

    if target is None:
        text = spec_svg(spec)
    elif isinstance(target, Layout):
        text = layout_svg(target)
    elif isinstance(target, Program):
        text = program_svg(spec, target)
    else:
        text = binding_svg(target)
    for path, write in ((svg, lambda p: p.write_text(text, encoding="utf-8")), (png, lambda p: svg_to_png(text, p))):
        if path is None:
            continue
        try:
            write(Path(path))
        except ConverterMissingError as exc:
            print(f"layoutgen: error: {exc}", file=sys.stderr)
            return EXIT_USAGE
        except (OSError, subprocess.CalledProcessError) as exc:
            print(f"layoutgen: error: could not write {path}: {exc}", file=sys.stderr)
            return EXIT_FAILED
        print(f"wrote {display_path(str(Path(path).resolve()))}")
    return EXIT_OK


def show(config: Config, spec_file: Path, name: str | None, *, svg: str | None = None,
         png: str | None = None, color: bool = False, fmt: str = "text") -> int:
    """Print (or, with ``svg``/``png``, draw) the spec's layouts and bindings, or the one called ``name``.

    ``fmt="json"`` prints the JSON document of :mod:`layoutgen.project.show_json` instead of text (of
    the one layout, binding or program called ``name``, where given). Returns the exit code: 1 when the
    spec does not load, 2 when ``name`` is neither a layout nor a binding of it, no PNG converter is
    there, or JSON is asked for with a drawing.
    """
    loaded = load_spec(spec_file)
    if loaded.spec is None:
        print(format_text(list(loaded.diagnostics), color=color), end="", file=sys.stderr)
        return EXIT_FAILED
    spec = loaded.spec
    target = None if name is None else _find(spec, name)
    if name is not None and target is None:
        layouts = ", ".join(lay.name for lay in spec.layouts) or "none"
        kernels = ", ".join(b.name for b in spec.kernels) or "none"
        programs = f"; its programs: {', '.join(p.name for p in spec.programs)}" if spec.programs else ""
        print(f"layoutgen: error: spec `{spec.name}` has no layout, kernel or program `{name}` "
              f"(its layouts: {layouts}; its kernels: {kernels}{programs})", file=sys.stderr)
        return EXIT_USAGE
    if fmt == "json":
        if svg is not None or png is not None:
            print("layoutgen: error: --format json prints the document and --svg/--png draw: give one of them",
                  file=sys.stderr)
            return EXIT_USAGE
        print(show_json(spec, config.root, relative(spec_file, config.root), only=target), end="")
        return EXIT_OK
    if isinstance(target, Program) and svg is None and png is None:
        _print_program(spec, target)
        return EXIT_OK
    if svg is not None or png is not None:
        return _draw(spec, target, svg, png)
    if isinstance(target, Binding):
        _print_binding(target)
        return EXIT_OK
    for layout in [target] if isinstance(target, Layout) else spec.layouts:
        print(layout)
        print()
    if target is not None:
        return EXIT_OK
    for binding in spec.kernels:
        _print_binding(binding)
        print()
    for program in spec.programs:
        _print_program(spec, program)
        print()
    return EXIT_OK
