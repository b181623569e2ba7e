"""Functions a body's text defines, and their calls: a helper read with each call's arguments.

``__device__ float row_sum(const float* p, int width, long long r)`` in a template's preamble, a hand-written
kernel's functions, and function-like macros (``#define ROW(p, r) ((p) + (r) * 96)``) index memory through
their parameters, which say nothing alone: what they point into and how far apart its rows are is what each
call passes. :func:`find_calls` finds each call of such a function and gives the function's body with its
parameters replaced by the call's arguments (:class:`Call`), to be read as if written at the call.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .cxx import Group, Node, Token, split_at, tokens, tree
from .text_offsets import closing, line_at, line_starts

_FUNCTION = re.compile(r"(?<![\w.>:])([A-Za-z_]\w*)\s*\(([^(){};]*)\)\s*(?:const\s*)?\{")
_CONTROL = frozenset({"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "defined"})
_MACRO = re.compile(r"\s*#\s*define\s+([A-Za-z_]\w*)\(([^()]*)\)")
DEPTH = 3  # helpers called from helpers, read this deep


@dataclass(frozen=True)
class Call:
    """A call of a function the text defines: its body read with the call's arguments in its parameters."""

    name: str
    header: int  # the index of the line that names the function
    first: int  # the index of the line of its `{`, the first of ``lines``
    lines: tuple[str, ...]  # the function's lines, from its header's `{` on, parameters replaced
    calls: tuple[tuple[Call, ...], ...]  # the calls on each of those lines


# -- functions the text defines ---------------------------------------------------------------


@dataclass(frozen=True)
class Function:
    """A function (or a function-like macro) the text defines: its parameters and where its lines are."""

    name: str
    params: tuple[tuple[str, str], ...]  # (name, type as written)
    header: int  # line of the name
    open_line: int  # line of its `{`
    open_col: int  # column after the `{`
    last: int  # line of the closing `}`


def find_functions(lines: Sequence[str]) -> list[Function]:
    """The functions ``lines`` define (``T name(params) {`` to its closing brace) and their macros with
    parameters (one line each)."""
    text = "\n".join(lines)
    starts = line_starts(lines)
    out: list[Function] = []
    for m in _FUNCTION.finditer(text):
        name = m.group(1)
        before = text[: m.start()].rstrip()
        if name in _CONTROL or not before or not re.search(r"[\w>*&]$", before):
            continue  # a control statement, a call, an expression in parentheses
        params: list[tuple[str, str]] = []
        for part in m.group(2).split(","):
            words = re.findall(r"[A-Za-z_]\w*", part.split("=")[0])
            if part.strip() in ("", "void"):
                continue
            if len(words) < 2:
                params = []
                break
            params.append((words[-1], part.strip()))
        close = closing(text, m.end() - 1, "{}")
        line_of = functools.partial(line_at, starts)
        out.append(Function(name, tuple(params), line_of(m.start()), line_of(m.end() - 1),
                             m.end() - starts[line_of(m.end() - 1)], line_of(close)))
    for k, line in enumerate(lines):  # `#define ROW(p, r) ((p) + (r) * 96)`: read at each use, as a helper
        macro = _MACRO.match(line)
        if macro and macro.group(2).strip():
            names = tuple((p.strip(), p.strip()) for p in macro.group(2).split(",") if p.strip().isidentifier())
            out.append(Function(macro.group(1), names, k, k, macro.end(2) + 1, k))
    return out


def replace_names(line: str, names: dict[str, str], keep: frozenset[str] = frozenset()) -> str:
    """``line`` with each name token of ``names`` (not a member, not a call) replaced by its text; one followed
    by an operator of ``keep`` (the assignments: ``off *= 96``'s ``off`` is assigned, not read) stays."""
    if not names or not any(n in line for n in names):
        return line
    out, at = [], 0
    toks = tokens(line)
    for k, tok in enumerate(toks):
        if tok.kind != "name" or tok.text not in names:
            continue
        before = toks[k - 1].text if k else ""
        after = toks[k + 1].text if k + 1 < len(toks) else ""
        if before in (".", "->", "::") or after == "::" or after in keep:
            continue
        out.append(line[at : tok.start])
        out.append(names[tok.text])
        at = tok.end
    out.append(line[at:])
    return "".join(out)


def rename_entry(lines: list[str], functions: list[Function], entry: str, names: tuple[str, ...]) -> list[str]:
    """The entry's parameters renamed to the kernel's, by position, inside the entry."""
    fn = next((f for f in functions if f.name == entry and len(f.params) == len(names)), None)
    if fn is None:
        return lines
    renames = {p: n for (p, _), n in zip(fn.params, names) if p != n}
    return [(replace_names(line, renames) if fn.header <= k <= fn.last else line) for k, line in enumerate(lines)]


# -- helpers read at their calls ------------------------------------------------------------------


def find_calls(lines: Sequence[str], source: Sequence[str], functions: list[Function], depth: int,
           inside: Sequence[int] | None = None) -> tuple[tuple[Call, ...], ...]:
    """For each of ``lines``, the calls on it of the ``functions`` that ``source`` (the whole text) defines,
    each with the function's body as that call reads it; ``inside``: each line's index in ``source`` (a
    function's own lines do not call it), None where ``lines`` are ``source``."""
    by_name = {f.name: f for f in functions}
    out: list[tuple[Call, ...]] = []
    for k, line in enumerate(lines):
        found: list[Call] = []
        if depth > 0 and by_name and any(name in line for name in by_name):
            at = inside[k] if inside is not None else k
            for name, args in _call_sites(tree(line), line):
                fn = by_name.get(name)
                if fn is None or fn.header <= at <= fn.last or len(args) != len(fn.params) or not fn.params:
                    continue
                found.append(_inline(source, functions, fn, args, depth - 1))
        out.append(tuple(found))
    return tuple(out)


def _call_sites(nodes: Sequence[Node], line: str) -> list[tuple[str, list[str]]]:
    out: list[tuple[str, list[str]]] = []
    for k, node in enumerate(nodes):
        if not isinstance(node, Group):
            continue
        before = nodes[k - 1] if k else None
        ahead = nodes[k - 2] if k >= 2 else None
        if node.open == "(" and isinstance(before, Token) and before.kind == "name" and not (
                isinstance(ahead, Token) and ahead.text in (".", "->", "::")):
            args = [line[a[0].start : a[-1].end].strip() for a in split_at(node.items, (",",)) if a]
            out.append((before.text, args))
        out.extend(_call_sites(node.items, line))
    return out


def _inline(source: Sequence[str], functions: list[Function], fn: Function, args: list[str], depth: int) -> Call:
    """``fn``'s lines from its `{` on, its parameters replaced by ``args`` (a name or a number as it is,
    anything else in parentheses), and the calls they make in turn."""
    replace = {name: (arg if re.fullmatch(r"[A-Za-z_]\w*|\d+", arg) else f"({arg})")
               for (name, _), arg in zip(fn.params, args)}
    body = [" " * fn.open_col + source[fn.open_line][fn.open_col:], *source[fn.open_line + 1 : fn.last + 1]]
    body = [replace_names(line, replace) for line in body]
    others = [f for f in functions if f.name != fn.name]  # no recursion
    nested = find_calls(body, source, others, depth, inside=range(fn.open_line, fn.last + 1))
    return Call(fn.name, fn.header, fn.open_line, tuple(body), nested)
