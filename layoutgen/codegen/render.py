"""Rendering a spec into the text of its generated files.

Data in, text out: this module writes nothing to disk (see :mod:`layoutgen.project.files`).
"""

from __future__ import annotations

import functools
import traceback
from dataclasses import dataclass
from pathlib import Path

import jinja2

from ..declare.kernels import Binding
from ..declare.spec import Spec
from ..schema.diagnostics import Diagnostic, Site
from ..version import __version__
from .env import PACKAGE_TEMPLATES, TemplateEncodingError, environment, skeletons, split_marks, template_files
from .escape import Escaped, c_string
from .model import KernelModel, ViewModel, kernel_model, struct_name, view_model
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


def _template_error(exc: Exception, template: Path, binding: Binding, root: Path) -> Diagnostic:
    """A Jinja failure as LG402 at the line of the template it happened in (an included one, too)."""
    files = template_files(root) | {str(template)}
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename in files]
    where, line = str(template), None
    if isinstance(exc, RecursionError):
        return _recursion_error(frames, template, binding)
    if getattr(exc, "lineno", None) is not None:  # a syntax or encoding error names its file and line
        where, line = getattr(exc, "filename", None) or where, exc.lineno  # type: ignore[attr-defined]
    elif frames:  # a runtime error: Jinja rewrites the traceback to the templates' lines
        where, line = frames[-1].filename, frames[-1].lineno
    message = exc.message if isinstance(exc, jinja2.TemplateError) and exc.message else str(exc)
    site = Site(where, line) if line else binding.kernel.site
    hint = ("save the template as UTF-8" if isinstance(exc, TemplateEncodingError) else _brace_hint(exc, root) or
            "templates see the kernel's static symbols, `kernel` and `params`; names are case-sensitive")
    return Diagnostic("LG402", f"template of kernel `{binding.name}` failed to render: {message}", site, hint=hint)


def _brace_hint(exc: Exception, root: Path) -> str | None:
    """For a syntax error in a ``{{ ... }}``: that ``{{`` may be C++ brace initialisation (``Vec{{1, 2}}``),
    which Jinja reads as an expression and reports where the expression fails, often a line later.

    The expression is the one open at the error's line that the lexer left open or that fails alone.
    """
    if not isinstance(exc, jinja2.TemplateSyntaxError) or exc.lineno is None or not exc.source:
        return None
    env = environment(root)
    spans: list[tuple[int, list[str], int | None]] = []  # each `{{ }}`: its first line, its text, its last line
    try:
        for lineno, token, value in env.lex(exc.source):
            if token == "variable_begin":
                spans.append((lineno, [], None))
            elif token == "variable_end" and spans and spans[-1][2] is None:
                spans[-1] = (spans[-1][0], spans[-1][1], lineno)
            elif spans and spans[-1][2] is None:
                spans[-1][1].append(value)
    except jinja2.TemplateSyntaxError:  # the lexer stops at its own error, inside the span it left open
        pass

    def fails(text: list[str]) -> bool:
        try:
            env.parse("{{" + "".join(text) + "}}")
        except jinja2.TemplateSyntaxError:
            return True
        return False

    for first, text, last in spans:
        if first <= exc.lineno and (last is None or (exc.lineno <= last and fails(text))):
            return (f"the `{{{{` at line {first} opens a Jinja expression; if it is C++ brace initialisation "
                    "(`Vec{{1, 2}}`), write `Vec{ {1, 2} }` or put the lines between `{% raw %}` and `{% endraw %}`")
    return None


def _recursion_error(frames: list[traceback.FrameSummary], template: Path, binding: Binding) -> Diagnostic:
    """LG402 for templates that include each other (or a macro that calls itself): the loop, at its start."""
    seen: list[tuple[str, int | None]] = []
    for f in frames:
        step = (f.filename, f.lineno)
        if step in seen:
            seen = seen[seen.index(step):]
            break
        seen.append(step)
    chain = " -> ".join(f"{Path(name).name}:{line}" for name, line in [*seen, seen[0]]) if seen else "?"
    return Diagnostic(
        "LG402", f"template of kernel `{binding.name}` failed to render: it recurses without end ({chain})",
        Site(seen[0][0], seen[0][1] or 1) if seen else binding.kernel.site,
        hint="templates that include each other, or a macro that calls itself, need a condition that ends it",
    )


def _body(k: KernelModel, binding: Binding, root: Path) -> str:
    env = environment(root)
    template = env.get_template(k.template)
    # One dict, not keywords: a symbol may be named like render()'s own parameters (`self`).
    context: dict[str, object] = {**dict(k.static), "kernel": k, "params": {p.name: p for p in k.params}}
    rendered = template.render(context)
    lines: list[str] = []
    expected: int | None = None
    marked = split_marks(rendered)
    while marked and not marked[-1][1].strip():
        marked.pop()
    path = c_string(k.template)
    for source_line, text in marked:
        if source_line is not None and source_line != expected:
            lines.append(f"#line {source_line} {path}")
        lines.append(text)
        expected = None if source_line is None else source_line + 1
    if expected is not None:
        # The kernel's closing brace follows: keep it on the template's last line, so that a last
        # statement left open ("expected a ';'") is reported there, not past the template's end.
        lines.append(f"#line {expected - 1} {path}")
    return "\n".join(lines)


# Where kernel.cu.j2 wants the `#line` that gives the rest of the file back its own line numbers.
_RESTORE = "\x01restore-line\x02"


def _restore_lines(text: str, name: str, stamp_lines: int) -> str:
    """``text`` with its restore marker made ``#line N "name"``: N numbers the next line as in the file."""
    lines = text.split("\n")
    i = lines.index(_RESTORE)
    lines[i] = f"#line {i + stamp_lines + 2} {c_string(name)}"  # 1-based, after the stamp lines
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
    header = f"{spec.name}.cuh"
    views: dict[str, ViewModel] = {}
    structs: set[str] = set()
    for binding in spec.kernels:
        for _, view in binding.views:
            if view.name not in views:
                struct = struct_name(view)
                n = 1
                while struct in structs:  # `a_b` and `a.b` would share a name: number the later ones
                    n += 1
                    struct = f"{struct_name(view)}_{n}"
                structs.add(struct)
                views[view.name] = view_model(view, site_text(view.site, root), struct)
    dtypes = {v.layout.dtype.name for b in spec.kernels for _, v in b.views}
    files: dict[str, str] = {}
    base = f"{spec.name}"
    files[f"{base}/{header}"] = skeletons().get_template("views.cuh.j2").render(
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
        except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError, RecursionError) as exc:
            problems.append(_template_error(exc, template, binding, root))
            continue
        path = f"{base}/{binding.name}.cu"
        # The body is the user's C++ and the `#line` directives around it, whose paths are escaped above.
        kernel = skeletons().get_template("kernel.cu.j2").render(
            k=k, spec=spec.name, header=header, body=Escaped(body), debug=debug, restore=Escaped(_RESTORE),
        )
        files[path] = _restore_lines(kernel, f"{out}/{path}", stamp_lines)
    if problems:
        return Rendered({}, tuple(problems))
    sites = {id(lay): site_text(lay.site, root) for lay in spec.layouts}
    module = skeletons().get_template("module.py.j2").render(
        source=spec_path, debug=debug, cache_dir=cache_dir, **module_model(spec, sites)
    )
    python = {f"{base}/__init__.py": stamp(module, comment="#", source=spec_path, version=__version__)}
    stamped = {
        path: stamp(text, comment="//", source=spec_path, version=__version__) for path, text in sorted(files.items())
    }
    return Rendered({**stamped, **python}, ())
