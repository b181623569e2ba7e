"""Rendering a spec into the text of its generated files.

Data in, text out: this module writes nothing to disk (see :mod:`layoutgen.project.files`).
"""

from __future__ import annotations

import difflib
import functools
import re
import traceback
from dataclasses import dataclass
from pathlib import Path

import jinja2

from ..declare.kernels import Binding
from ..declare.spec import Spec
from ..schema.diagnostics import Diagnostic, Site
from ..version import __version__
from .env import (
    PACKAGE_TEMPLATES, Origin, TemplateEncodingError, environment, marked_file, skeletons, split_origins,
    template_files,
)
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


def _template_error(exc: Exception, template: Path, binding: Binding, root: Path,
                    folders: tuple[Path, ...] = ()) -> Diagnostic:
    """A Jinja failure as LG402 at the line of the template it happened in (an included one, too)."""
    files = template_files(root, folders) | {str(template)}
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
    hint = ("save the template as UTF-8" if isinstance(exc, TemplateEncodingError) else _NOT_FOUND_HINT
            if isinstance(exc, jinja2.TemplateNotFound) else _brace_hint(exc, root) or
            "templates see the kernel's static symbols, `kernel` and `params`; names are case-sensitive")
    return Diagnostic("LG402", f"template of kernel `{binding.name}` failed to render: {message}", site, hint=hint)


_NOT_FOUND_HINT = ("`{% include %}`, `{% import %}` and `{% from %}` look in the including template's folder, then "
                   "in each folder of `templates` in [tool.layoutgen]")


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


#: The one Jinja block a kernel template may define: what goes before the kernel, at file scope.
PREAMBLE = "preamble"
# Renders a kernel template whole, its preamble between two marks, so that one render gives both parts.
_SPLIT = "{% extends lg_template %}{% block preamble %}\x03{{ super() }}\x04{% endblock %}"
_PREAMBLE_TEXT = re.compile("\x03(.*?)\x04", re.S)


def _unknown_blocks(k: KernelModel, binding: Binding, root: Path, folders: tuple[Path, ...]) -> list[Diagnostic]:
    """LG515 for each block of a kernel template but ``preamble``: it would render into the body unseen."""
    env = environment(root, folders)
    template = env.get_template(k.template)  # a syntax error is raised here, as when it renders
    if set(template.blocks) <= {PREAMBLE}:
        return []
    source = binding.kernel.template_path.read_text(encoding="utf-8")  # UTF-8: get_template read it
    out = []
    for block in env.parse(source).find_all(jinja2.nodes.Block):
        if block.name == PREAMBLE:
            continue
        close = difflib.get_close_matches(block.name, [PREAMBLE], n=1)
        out.append(Diagnostic(
            "LG515", f"template of kernel `{binding.name}` must define no block but `{PREAMBLE}`, got "
            f"`{{% block {block.name} %}}`", Site(str(binding.kernel.template_path), block.lineno),
            hint=(f"did you mean `{{% block {PREAMBLE} %}}`? It" if close else f"`{{% block {PREAMBLE} %}}`")
            + " holds what goes before the kernel, at file scope (device functions, `#include`s); every line outside "
            "it is the body, where a block of another name would land unseen",
        ))
    return out


def _render(k: KernelModel, root: Path, folders: tuple[Path, ...]) -> tuple[str, str]:
    """The template's preamble and body as rendered, their line marks kept."""
    env = environment(root, folders)
    template = env.get_template(k.template)
    # One dict, not keywords: a symbol may be named like render()'s own parameters (`self`).
    context: dict[str, object] = {**dict(k.static), "kernel": k, "params": {p.name: p for p in k.params}}
    if PREAMBLE not in template.blocks:
        return "", template.render(context)
    # `lg_template` is no name of the user's: names starting with `lg_` are reserved (LG106).
    whole = env.from_string(_SPLIT).render({**context, "lg_template": k.template})
    return "".join(_PREAMBLE_TEXT.findall(whole)), _PREAMBLE_TEXT.sub("", whole)


def _with_lines(rendered: str, root: Path, folders: tuple[Path, ...], *, closing: bool) -> str:
    """``rendered`` without its marks, a ``#line`` before each line that does not follow the one before in
    the same template file (an included template's lines name that file). ``closing``: end on the last
    line's own number, for the kernel's closing brace."""
    marked = split_origins(rendered)
    while marked and not marked[-1][1].strip():
        marked.pop()
    lines: list[str] = []
    expected: Origin | None = None
    for origin, text in marked:
        if origin is not None and origin != expected:
            lines.append(f"#line {origin[1]} {_file_name(root, folders, origin[0])}")
        lines.append(text)
        expected = None if origin is None else (origin[0], origin[1] + 1)
    if closing and expected is not None:
        # The kernel's closing brace follows: keep it on the template's last line, so that a last
        # statement left open ("expected a ';'") is reported there, not past the template's end.
        lines.append(f"#line {expected[1] - 1} {_file_name(root, folders, expected[0])}")
    return "\n".join(lines)


def _file_name(root: Path, folders: tuple[Path, ...], number: int) -> str:
    return c_string(relative(marked_file(root, folders, number), root))


# Where kernel.cu.j2 wants the `#line` that gives the rest of the file back its own line numbers.
_RESTORE = "\x01restore-line\x02"


def _restore_lines(text: str, name: str, stamp_lines: int) -> str:
    """``text`` with each restore marker made ``#line N "name"``: N numbers the next line as in the file."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line == _RESTORE:
            lines[i] = f"#line {i + stamp_lines + 2} {c_string(name)}"  # 1-based, after the stamp lines
    return "\n".join(lines)


def render_spec(
    spec: Spec, root: Path, spec_path: str, *, debug: bool = False, cache_dir: str | None = None,
    out: str = "generated", templates: tuple[Path, ...] = (), include: tuple[str, ...] = (),
) -> Rendered:
    """Every generated file of ``spec``: the views header and one ``.cu`` per binding.

    ``spec_path`` is the spec module's path relative to ``root``, named in
    each file's first line. Template problems come back as LG402 diagnostics
    and no files. ``debug`` renders the debug build (bounds-checked accessors,
    launchers that report faults and scan outputs); without it the output does
    not depend on the feature at all. ``cache_dir`` is the cubin cache the launchers use, as the
    generated module's folder names it (None: the user cache, see :mod:`layoutgen.runtime.paths`).
    ``out`` is the output folder relative to ``root``: kernels name themselves by their path under
    the root in the ``#line`` after their body. ``templates`` are the project's template folders, which
    includes and imports search after the including template's own; ``include`` the project's header
    folders as the generated module's folder names them (``"../../cuda/include"``), for its launchers.
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
            unknown = _unknown_blocks(k, binding, root, templates)
            if unknown:
                problems.extend(unknown)
                continue
            preamble, body = _render(k, root, templates)
        except (jinja2.TemplateError, TypeError, ValueError, ArithmeticError, RecursionError) as exc:
            problems.append(_template_error(exc, template, binding, root, templates))
            continue
        preamble = _with_lines(preamble, root, templates, closing=False)
        body = _with_lines(body, root, templates, closing=True)
        path = f"{base}/{binding.name}.cu"
        # The body is the user's C++ and the `#line` directives around it, whose paths are escaped above;
        # the preamble the same, and a `#line` after it that gives the file back its own numbers.
        kernel = skeletons().get_template("kernel.cu.j2").render(
            k=k, spec=spec.name, header=header, body=Escaped(body), debug=debug, restore=Escaped(_RESTORE),
            preamble=Escaped(f"{preamble}\n{_RESTORE}" if preamble else ""),
        )
        files[path] = _restore_lines(kernel, f"{out}/{path}", stamp_lines)
    if problems:
        return Rendered({}, tuple(problems))
    sites = {id(lay): site_text(lay.site, root) for lay in spec.layouts}
    module = skeletons().get_template("module.py.j2").render(
        source=spec_path, debug=debug, cache_dir=cache_dir, include=include, **module_model(spec, sites)
    )
    python = {f"{base}/__init__.py": stamp(module, comment="#", source=spec_path, version=__version__)}
    stamped = {
        path: stamp(text, comment="//", source=spec_path, version=__version__) for path, text in sorted(files.items())
    }
    return Rendered({**stamped, **python}, ())
