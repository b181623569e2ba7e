"""LG4xx: lint of kernel templates.

The motivating bug was ``x + row * 40`` in a kernel reading rows 56 apart. A
template that spells a width, stride or offset of a bound view as a literal
in index arithmetic is reported with the accessor to use instead (LG401), and
so is a body that reaches around the views through the kernel's raw ``lg_``
names (LG403). Both are looked for twice: in the template's own text
(:func:`lint_template`) and in the body as rendered into the generated kernel
(:func:`lint_rendered`), which also sees what ``{{ }}`` expressions produced;
either way at the template's line.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from ..declare.kernels import Binding
from ..schema.diagnostics import Diagnostic, Site

# An integer literal next to `*` or `+`, or alone inside `[...]`: index math.
_ARITH = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
# What is not C++ code, from its opening to its closing text: Jinja tags and
# comments, C comments (which may span lines), string and character literals.
_NOT_CODE = {"{{": "}}", "{%": "%}", "{#": "#}", "/*": "*/", "//": "\n", '"': '"', "'": "'"}
# Rendered text has no Jinja left: `{{` there is C++ (`Vec{{1, 2}}`).
_NOT_CPP = {o: c for o, c in _NOT_CODE.items() if o not in ("{{", "{%", "{#")}
# Preprocessor lines whose numbers are not index math: `#pragma unroll 4`.
_DIRECTIVE = re.compile(r"\s*#\s*(pragma|include|line|error|warning)\b")
# A name reserved for generated code: the raw pointers and launch values behind the views.
_RESERVED = re.compile(r"(?<![\w])lg_\w+")
# `#line 3 "examples/vsn/k.cu.j2"` in a generated kernel.
_LINE = re.compile(r'\s*#\s*line\s+(\d+)\s+"([^"]*)"')


@functools.lru_cache(maxsize=64)  # a template bound many times is scanned once
def _code_lines(source: str, jinja: bool = True) -> tuple[str, ...]:
    """``source`` split in lines, with everything but C++ code blanked (columns kept)."""
    not_code = _NOT_CODE if jinja else _NOT_CPP
    out: list[str] = []
    closer: str | None = None
    i = 0
    while i < len(source):
        ch = source[i]
        if ch == "\n":
            out.append(ch)
            if closer in ("\n", '"', "'"):  # line comments and literals end with the line
                closer = None
            i += 1
        elif closer is None:
            opener = None if ch not in "{/\"'" else next((o for o in not_code if source.startswith(o, i)), None)
            if opener is None:
                out.append(ch)
                i += 1
            else:
                closer = not_code[opener]
                out.append(" " * len(opener))
                i += len(opener)
        elif closer in ('"', "'") and ch == "\\" and source[i + 1 : i + 2] not in ("", "\n"):
            out.append("  ")  # an escape: the next character cannot close the literal
            i += 2
        elif closer != "\n" and source.startswith(closer, i):
            out.append(" " * len(closer))
            i += len(closer)
            closer = None
        else:
            out.append(" ")
            i += 1
    return tuple("".join(out).split("\n"))


def _is_index_arithmetic(line: str, start: int, end: int) -> bool:
    before = line[:start].rstrip()
    after = line[end:].lstrip()
    return before.endswith(("*", "+", "[")) or after.startswith(("*", "+"))


def _facts(binding: Binding) -> dict[int, list[str]]:
    """Literal value -> what it would wrongly stand for, over every bound view."""
    facts: dict[int, list[str]] = {}
    for param, view in binding.pairs:
        width_fix = f"use `{param.name}.width`"
        if not view.column_unit.is_static:  # columns count D elements: the width is a count of blocks (heads)
            inner = [str(d) for d in param.shape[len(view.leading_dims):-1]] or ["its dims"]
            width_fix = f"use the kernel's {' * '.join(f'`{d}`' for d in inner)}"
        items = [(view.row_stride, f"the row stride of `{param.name}` ({view.name}); use `{param.name}.row(r)`"
                  f" or `{param.name}.at(r, c)`"),
                 (view.width, f"the width of `{param.name}` ({view.name}); {width_fix}")]
        if view.offset:
            items.append((view.offset, f"the offset of `{param.name}` ({view.name}) in its rows; "
                                       f"use `{param.name}.at(r, c)`"))
        for value, meaning in items:
            if value > 1 and meaning not in facts.setdefault(value, []):
                facts[value].append(meaning)
    return facts


def _reserved(binding: Binding, name: str) -> str:
    """What the reserved ``name`` stands for in this kernel, and what to write instead."""
    bare = name[3:]
    for param, view in binding.pairs:
        if param.name == bare:
            return (f"the raw pointer behind view `{param.name}` ({view.name}); index through `{param.name}` "
                    f"(`{param.name}.at(r, c)`, `{param.name}.row(r)`)")
    if any(bare in view.layout.symbols for _, view in binding.pairs):
        return f"the launch value of `{bare}`; use `{bare}`"
    return "a name reserved for generated code"


def _check_lines(binding: Binding, template: Path, lines: list[tuple[int, str]]) -> list[Diagnostic]:
    """LG401 and LG403 for (template line, code with non-code blanked) pairs."""
    facts = _facts(binding)
    out: list[Diagnostic] = []
    for number, code in lines:
        if _DIRECTIVE.match(code):
            continue
        for m in _ARITH.finditer(code):
            value = int(m.group(1))
            if value in facts and _is_index_arithmetic(code, m.start(), m.end()):
                out.append(Diagnostic(
                    "LG401",
                    f"literal {value} in index arithmetic of kernel `{binding.name}` equals "
                    + "; and ".join(facts[value]),
                    Site(str(template), number),
                    hint="index through the generated view so the stride follows the layout",
                ))
        for m in _RESERVED.finditer(code):
            out.append(Diagnostic(
                "LG403", f"`{m.group(0)}` in the body of kernel `{binding.name}` is {_reserved(binding, m.group(0))}",
                Site(str(template), number),
                hint="names starting with `lg_` belong to the generated prologue; a body that uses them is unchecked",
            ))
    return out


def lint_template(binding: Binding, template: Path) -> list[Diagnostic]:
    """LG401 for each literal in index arithmetic that equals a bound width, stride or offset; LG403 for
    each ``lg_`` name, in the template's own text."""
    try:
        lines = _code_lines(template.read_text(encoding="utf-8"))
    except OSError:
        return []  # a missing template is reported by the renderer
    return _check_lines(binding, template, list(enumerate(lines, start=1)))


def lint_rendered(binding: Binding, template: Path, name: str, kernel: str) -> list[Diagnostic]:
    """The checks of :func:`lint_template` on the body as rendered into ``kernel`` (a generated file).

    The body's lines are those after a ``#line N "name"`` directive (``name``: the template as the
    generated file names it), each reported at its template line, at ``template``. Run it on a
    template whose own text passed :func:`lint_template`, or a finding is reported twice.
    """
    lines: list[tuple[int, str]] = []
    current: int | None = None  # the template line of the next line, inside the body
    for raw, code in zip(kernel.split("\n"), _code_lines(kernel, jinja=False)):
        directive = _LINE.match(raw)  # the raw line: the file name is a string, blanked in `code`
        if directive:
            current = int(directive.group(1)) if directive.group(2) == name else None
            continue
        if current is not None:
            lines.append((current, code))
            current += 1
    return _check_lines(binding, template, lines)
