"""LG4xx: lint of kernel templates.

The motivating bug was ``x + row * 40`` in a kernel reading rows 56 apart. A
template that spells a width, stride or offset of a bound view as a literal
in index arithmetic is reported with the accessor to use instead.
"""

from __future__ import annotations

import re
from pathlib import Path

from ..kernels import Binding
from ..schema.diagnostics import Diagnostic, Site

# An integer literal next to `*` or `+`, or alone inside `[...]`: index math.
_ARITH = re.compile(r"(?<![\w.])(\d+)(?![\w.])")
_JINJA = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}")
_COMMENT = re.compile(r"//.*$")


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
        lines = template.read_text(encoding="utf-8").split("\n")
    except OSError:
        return []  # a missing template is reported by the renderer
    facts = _facts(binding)
    out: list[Diagnostic] = []
    for number, raw in enumerate(lines, start=1):
        code = _COMMENT.sub("", _JINJA.sub(lambda m: " " * len(m.group()), raw))
        if code.lstrip().startswith("#"):  # preprocessor lines: #pragma unroll 4
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
