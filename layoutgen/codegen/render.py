"""Rendering a spec into the text of its generated files.

Data in, text out: this module writes nothing to disk (see :mod:`layoutgen.project.files`).
"""

from __future__ import annotations

import functools
import traceback
from dataclasses import dataclass, replace
from pathlib import Path

import jinja2

from ..declare.kernels import Binding
from ..declare.spec import Spec
from ..schema.diagnostics import Diagnostic, Site
from ..version import __version__
from .env import PACKAGE_TEMPLATES, environment, split_marks
from .model import KernelModel, ViewModel, kernel_model, view_model
from .pymodule import module_model
from .stamp import stamp


@dataclass(frozen=True)
class Rendered:
    """The generated files of one spec (paths relative to the root) or why they could not be made."""

    files: dict[str, str]
    diagnostics: tuple[Diagnostic, ...]


def relative(path: str | Path, root: Path) -> str:
    """``path`` relative to ``root`` with ``/`` separators (absolute when outside it).

    layoutgen's own templates are named ``layoutgen/templates/<name>`` wherever
    layoutgen is installed, so generated files do not depend on the machine.
    """
    # The same templates and spec files come back for every binding: resolve each once.
    # A relative path depends on the working directory, so the cache is keyed on it too.
    cwd = "" if Path(path).is_absolute() and root.is_absolute() else str(Path.cwd())
    return _relative(str(path), root, cwd)


@functools.lru_cache(maxsize=4096)
def _relative(path: str, root: Path, cwd: str) -> str:
    resolved = Path(path).resolve()
    if resolved.is_relative_to(PACKAGE_TEMPLATES):
        return f"layoutgen/templates/{resolved.relative_to(PACKAGE_TEMPLATES).as_posix()}"
    try:
        return resolved.relative_to(root.resolve()).as_posix()
    except ValueError:
        return resolved.as_posix()


def site_text(site: Site | None, root: Path) -> str:
    return f"{relative(site.path, root)}:{site.line}" if site else "(unknown)"


def _template_error(exc: Exception, template: Path, binding: Binding) -> Diagnostic:
    """A Jinja failure as LG402 at the template's own line."""
    line = getattr(exc, "lineno", None)
    if line is None:  # a runtime error: Jinja rewrites the traceback to the template
        frames = [f for f in traceback.extract_tb(exc.__traceback__) if Path(f.filename) == template]
        line = frames[-1].lineno if frames else None
    message = exc.message if isinstance(exc, jinja2.TemplateError) and exc.message else str(exc)
    site = Site(str(template), line) if line else binding.kernel.site
    return Diagnostic(
        "LG402", f"template of kernel `{binding.name}` failed to render: {message}", site,
        hint="templates see the kernel's static symbols, `kernel` and `params`; names are case-sensitive",
    )


def _body(k: KernelModel, binding: Binding, root: Path) -> str:
    env = environment(root)
    template = env.get_template(k.template)
    constants = dict(k.static)
    rendered = template.render(**constants, kernel=k, params={p.name: p for p in k.params})
    lines: list[str] = []
    expected: int | None = None
    marked = split_marks(rendered)
    while marked and not marked[-1][1].strip():
        marked.pop()
    for source_line, text in marked:
        if source_line is not None and source_line != expected:
            lines.append(f'#line {source_line} "{k.template}"')
        lines.append(text)
        expected = None if source_line is None else source_line + 1
    if expected is not None:
        # The kernel's closing brace follows: keep it on the template's last line, so that a last
        # statement left open ("expected a ';'") is reported there, not past the template's end.
        lines.append(f'#line {expected - 1} "{k.template}"')
    return "\n".join(lines)


# Where kernel.cu.j2 wants the `#line` that gives the rest of the file back its own line numbers.
_RESTORE = "\x01restore-line\x02"


def _restore_lines(text: str, name: str, stamp_lines: int) -> str:
    """``text`` with its restore marker made ``#line N "name"``: N numbers the next line as in the file."""
    lines = text.split("\n")
    i = lines.index(_RESTORE)
    lines[i] = f'#line {i + stamp_lines + 2} "{name}"'  # 1-based, after the stamp lines
    return "\n".join(lines)


def render_spec(
    spec: Spec, root: Path, spec_path: str, *, debug: bool = False, cache_dir: str | None = None,
    out: str = "generated",
) -> Rendered:
    """Every generated file of ``spec``: the views header and one ``.cu`` per binding.

    ``spec_path`` is the spec module's path relative to ``root``, named in
    each file's first line. Template problems come back as LG402 diagnostics
    and no files. ``debug`` renders the debug build (bounds-checked accessors,
    launchers that report faults and scan outputs); without it the output does
    not depend on the feature at all. ``cache_dir`` is the cubin cache the launchers use, as the
    generated module's folder names it (None: the user cache, see :mod:`layoutgen.runtime.paths`).
    ``out`` is the output folder relative to ``root``: kernels name themselves by their path under
    the root in the ``#line`` after their body.
    """
    env = environment(root)
    header = f"{spec.name}.cuh"
    views: dict[str, ViewModel] = {}
    struct_owner: dict[str, str] = {}
    for binding in spec.kernels:
        for _, view in binding.views:
            if view.name not in views:
                model = view_model(view, site_text(view.site, root))
                owner = struct_owner.setdefault(model.struct, view.name)
                if owner != view.name:  # `a_b` and `a.b` would share a name
                    model = replace(model, struct=f"{model.struct}_{len(struct_owner)}")
                views[view.name] = model
    dtypes = {v.layout.dtype.name for b in spec.kernels for _, v in b.views}
    files: dict[str, str] = {}
    base = f"{spec.name}"
    files[f"{base}/{header}"] = env.get_template("lg/views.cuh.j2").render(
        spec=spec.name, views=list(views.values()), needs_fp16="f16" in dtypes, needs_bf16="bf16" in dtypes,
        debug=debug,
    )
    problems: list[Diagnostic] = []
    stamp_lines = stamp("", comment="//", source=spec_path, version=__version__).count("\n")
    for binding in spec.kernels:
        template = binding.kernel.template_path
        if not template.is_file():
            problems.append(Diagnostic(
                "LG402", f"template `{binding.kernel.template}` of kernel `{binding.kernel.name}` does not exist "
                f"(looked for {relative(template, root)})", binding.kernel.site,
                hint="template paths are relative to the file that declares the kernel",
            ))
            continue
        k = kernel_model(binding, views, relative(template, root), site_text(binding.site, root))
        try:
            body = _body(k, binding, root)
        except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError) as exc:
            problems.append(_template_error(exc, template, binding))
            continue
        path = f"{base}/{binding.name}.cu"
        kernel = env.get_template("lg/kernel.cu.j2").render(
            k=k, spec=spec.name, header=header, body=body, debug=debug, restore=_RESTORE,
        )
        files[path] = _restore_lines(kernel, f"{out}/{path}", stamp_lines)
    if problems:
        return Rendered({}, tuple(problems))
    sites = {id(lay): site_text(lay.site, root) for lay in spec.layouts}
    module = env.get_template("lg/module.py.j2").render(
        source=spec_path, debug=debug, cache_dir=cache_dir, **module_model(spec, sites)
    )
    python = {f"{base}/__init__.py": stamp(module, comment="#", source=spec_path, version=__version__)}
    stamped = {
        path: stamp(text, comment="//", source=spec_path, version=__version__) for path, text in sorted(files.items())
    }
    return Rendered({**stamped, **python}, ())
