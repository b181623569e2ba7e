"""LG4xx: lint of kernel templates.

The motivating bug was ``x + row * 40`` in a kernel reading rows 56 apart. A
template that spells a width, stride or offset of a bound view as a literal
in index arithmetic is reported with the accessor to use instead.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from ..kernels import Binding
from ..schema.diagnostics import Diagnostic, Site

# An integer literal next to `*` or `+`, or alone inside `[...]`: index math.
_ARITH = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
# What is not C++ code, from its opening to its closing text: Jinja tags and
# comments, C comments (which may span lines), string and character literals.
_NOT_CODE = {"{{": "}}", "{%": "%}", "{#": "#}", "/*": "*/", "//": "\n", '"': '"', "'": "'"}
# Preprocessor lines whose numbers are not index math: `#pragma unroll 4`.
_DIRECTIVE = re.compile(r"\s*#\s*(pragma|include|line|error|warning)\b")


@functools.lru_cache(maxsize=64)  # a template bound many times is scanned once
def _code_lines(source: str) -> tuple[str, ...]:
    """``source`` split in lines, with everything but C++ code blanked (columns kept)."""
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
            opener = None if ch not in "{/\"'" else next((o for o in _NOT_CODE if source.startswith(o, i)), None)
            if opener is None:
                out.append(ch)
                i += 1
            else:
                closer = _NOT_CODE[opener]
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
        items = [(view.row_stride, f"the row stride of `{param.name}` ({view.name}); use `{param.name}.row(r)`"
                  f" or `{param.name}.at(r, c)`"),
                 (view.width, f"the width of `{param.name}` ({view.name}); use `{param.name}.width`")]
        if view.offset:
            items.append((view.offset, f"the offset of `{param.name}` ({view.name}) in its rows; "
                                       f"use `{param.name}.at(r, c)`"))
        for value, meaning in items:
            if value > 1 and meaning not in facts.setdefault(value, []):
                facts[value].append(meaning)
    return facts


def lint_template(binding: Binding, template: Path) -> list[Diagnostic]:
    """LG401 for each literal in index arithmetic that equals a bound width, stride or offset."""
    try:
        lines = _code_lines(template.read_text(encoding="utf-8"))
    except OSError:
        return []  # a missing template is reported by the renderer
    facts = _facts(binding)
    out: list[Diagnostic] = []
    for number, code in enumerate(lines, start=1):
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
    return out
