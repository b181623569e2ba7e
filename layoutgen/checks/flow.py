"""Values through statements: a body's code as the index checks read it, with what flows between lines made visible.

The lint reads one line at a time, and CUDA spells one stride in many lines: ``const int stride = 96;``,
``#define STRIDE 96``, ``auto w = x.width;``, ``long long off = row * 96;`` then ``p[off + c]``,
``constexpr int F = Snap::width;``, a helper ``dot(const float* p, int width)`` called with the width. This
module rewrites a body so that each index shows what it is made of, and the existing checks see it:

- a name defined once from a constant (a literal, a kernel symbol, a view's ``x.width``, another such
  name, arithmetic of those), by a declaration of any integer type or by an object-like ``#define``, is a
  *definition*: the name stays, and :mod:`.constants` gives it its value per binding (``stride`` (96));
- a name defined once from anything else of integer type (``off = row * 96``) is replaced, on every later
  line, by its definition in parentheses, so the index ``off + c`` is read as ``(row * 96) + c``;
- ``Type::width`` of a type that a function takes a view as or that names ``decltype(x)`` (``using X =
  decltype(x);``), and ``decltype(x)::width``, read as ``x.width``;
- a hand-written entry's parameters are renamed to the kernel's, by position;
- a function defined in the text (a helper) is read at each call, with its parameters replaced by the call's
  arguments (:class:`Call`, :mod:`.functions`), and its parameters are no views where it is read alone.

A name assigned again (``++i``, ``s += 4``, ``x = ...``), a pointer, a reference, a float and a value read
from memory are never replaced. Nothing here depends on a binding: a body is read once for all the
bindings of its template (:func:`read_body` is cached on the text).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from .assignments import ASSIGN, FOLDED_OPS, assignments
from .cuda_signatures import INTEGER_TYPES
from .cxx import STATEMENT_WORDS, Group, Node, Token, split_at, tokens, tree
from .functions import DEPTH, Call, Function, find_calls, find_functions, rename_entry, replace_names

__all__ = ["Call", "Reading", "read_body"]

# Declared types whose values are no index: a float is never a stride.
_NOT_INTEGER = frozenset({"float", "double", "half", "__half", "__nv_bfloat16", "bool", "float2", "float4",
                          "half2", "__half2", "char", "void"})
# Calls that keep an integer expression an integer expression (casts and pure helpers of CUDA).
_PURE_CALLS = frozenset({"static_cast", "min", "max", "int", "long", "unsigned", "abs", "llabs", "__mul24",
                         "__umul24", "size_t"})
_LONGEST = 300  # the longest definition a name is replaced by
# `decltype(x)::width`: a member of the type of a view.
_MEMBER = re.compile(r"\bdecltype\s*\(\s*([A-Za-z_]\w*)\s*\)\s*::\s*([A-Za-z_]\w*)")
# `using X = decltype(x);`, `typedef decltype(x) X;`: a name of the type of a view.
_ALIAS = re.compile(r"\busing\s+([A-Za-z_]\w*)\s*=\s*(?:const\s+)?decltype\s*\(\s*([A-Za-z_]\w*)\s*\)"
                    r"|\btypedef\s+(?:const\s+)?decltype\s*\(\s*([A-Za-z_]\w*)\s*\)\s*([A-Za-z_]\w*)")


@dataclass(frozen=True)
class Reading:
    """A body's code lines rewritten (one string a line, as many as given), and what flows through them."""

    lines: tuple[str, ...]
    definitions: tuple[tuple[tuple[str, str], ...], ...]  # per line: (name, its constant definition's text)
    parameters: tuple[tuple[str, ...], ...]  # per line: the names a function defined there takes (no views)
    calls: tuple[tuple[Call, ...], ...]  # per line: the calls of functions the text defines
    names: frozenset[str]  # every name the lines and the calls' lines use: what a value of a binding may matter to


@functools.lru_cache(maxsize=256)  # a template bound many times is read once
def read_body(codes: tuple[str, ...], views: tuple[str, ...], symbols: tuple[str, ...],
              entry: tuple[str, tuple[str, ...]] | None = None) -> Reading:
    """``codes`` (lines of code, as :func:`.cxx.scan` gives them) of a body whose kernel has the parameters
    ``views`` and the shape symbols ``symbols``; ``entry``: a hand-written kernel's entry function and the
    kernel's parameter names in declaration order (views and scalars)."""
    lines = list(codes)
    defined = find_functions(lines)
    if entry is not None:
        lines = rename_entry(lines, defined, *entry)
        defined = find_functions(lines)
    lines = _type_members(lines, defined, frozenset(views))
    assigned = assignments(lines)
    lines, definitions = _propagate(lines, assigned.mutable, assigned.folded, frozenset(views), frozenset(symbols))
    defined = find_functions(lines)
    view_set = frozenset(views)
    parameters = [tuple[str, ...]() for _ in lines]
    for fn in defined:
        parameters[fn.header] = tuple(p for p, _ in fn.params if p not in view_set)
    called = find_calls(lines, lines, defined, DEPTH)
    used = {t.text for line in lines for t in tokens(line) if t.kind == "name"}
    return Reading(tuple(lines), tuple(definitions), tuple(parameters), called, frozenset(used))


def _type_members(lines: list[str], functions: list[Function], views: frozenset[str]) -> list[str]:
    """``Type::member`` of a type that a function takes a view as, and ``decltype(x)::member``, as ``x.member``."""
    types: dict[str, str] = {}
    for fn in functions:
        for name, written in fn.params:
            words = re.findall(r"[A-Za-z_]\w*", written.split("<")[0])
            if name in views and len(words) >= 2:
                types.setdefault(words[-2], name)
    for line in lines:
        for m in _ALIAS.finditer(line):
            alias, view = (m.group(1), m.group(2)) if m.group(1) else (m.group(4), m.group(3))
            if view in views:
                types.setdefault(alias, view)
    out = []
    for line in lines:
        line = _MEMBER.sub(lambda m: f"{m.group(1)}.{m.group(2)}" if m.group(1) in views else m.group(0), line)
        for type_name, view in types.items():
            if type_name in line:
                line = re.sub(rf"(?<![\w:.]){re.escape(type_name)}\s*::\s*(width|row_stride|offset)\b",
                              rf"{view}.\1", line)
        out.append(line)
    return out


# -- names defined once ---------------------------------------------------------------------------


def _assigned(lines: Sequence[str]) -> frozenset[str]:
    """Every name a body assigns after its declaration (``x = ...``, ``x += ...``, ``++x``), folded or not: what
    :mod:`.raw_kernels` reads as no carried value."""
    found = assignments(lines)
    return found.mutable | found.folded


def _integer_expression(nodes: Sequence[Node]) -> bool:
    """Whether ``nodes`` are integer arithmetic that reads no memory: names, numbers, operators, members,
    parentheses and casts; no subscript, no braces, no call but a cast or a pure function."""
    for k, node in enumerate(nodes):
        before = nodes[k - 1] if k else None
        if isinstance(node, Group):
            if node.open in "[{":
                return False
            if node.open == "(" and isinstance(before, Token) and before.kind == "name" \
                    and before.text not in _PURE_CALLS:
                return False
            if node.open == "(" and isinstance(before, Group) and before.open == "<":
                name = nodes[k - 2] if k >= 2 else None
                if not (isinstance(name, Token) and name.text in _PURE_CALLS):
                    return False
            if node.open != "<" and not _integer_expression(node.items):
                return False
        elif node.kind == "num" and re.search(r"[.eEfF]", node.text) and not node.text.lower().startswith("0x"):
            return False  # 4.0f: a float
        elif node.kind == "op" and node.text in (";", "=", "&&=") or node.kind == "op" and node.text in ASSIGN:
            return False
    if nodes and isinstance(nodes[0], Token) and nodes[0].text in ("&", "*"):
        return False  # an address, or a value read through a pointer
    return bool(nodes)


def _names(nodes: Sequence[Node]) -> list[tuple[str, bool]]:
    """The names ``nodes`` use as values: (name, is a member of the name before a `.`); casts' types left out."""
    out: list[tuple[str, bool]] = []
    for k, node in enumerate(nodes):
        if isinstance(node, Group):
            if node.open != "<":
                out.extend(_names(node.items))
        elif node.kind == "name":
            before = nodes[k - 1] if k else None
            after = nodes[k + 1] if k + 1 < len(nodes) else None
            if isinstance(after, Group) and after.open in "(<" and node.text in _PURE_CALLS:
                continue
            out.append((node.text, isinstance(before, Token) and before.text in (".", "->", "::")))
    return out


def _reads_view(nodes: Sequence[Node], views: frozenset[str]) -> bool:
    """Whether ``nodes`` name a view other than for one of its facts (``x.width``): a view is no integer."""
    names = _names(nodes)
    return any(name in views and not member and not (k + 1 < len(names) and names[k + 1][1])
               for k, (name, member) in enumerate(names))


def _constant_capable(nodes: Sequence[Node], constant: set[str], views: frozenset[str]) -> bool:
    """Whether ``nodes`` may be a constant for some binding: only symbols, constant names and views' facts."""
    names = _names(nodes)
    for k, (name, member) in enumerate(names):
        if member:
            continue  # checked with the name before it
        follows = names[k + 1] if k + 1 < len(names) else None
        if name in views and follows is not None and follows[1] and follows[0] in ("width", "row_stride", "offset"):
            continue
        if name not in constant and name not in _PURE_CALLS:
            return False
    return True


# The words of an integer declaration's type: every word of a kernel parameter's integer types, and `auto`.
_INTEGER_WORDS = frozenset({w for t in INTEGER_TYPES for w in t.split()} | {"auto", "Index"}) - _NOT_INTEGER


def _declaration(statement: list[Node]) -> tuple[str, list[Node]] | None:
    """(name, initializer) when ``statement`` declares one integer name with a value; else None."""
    nodes = statement[1:] if statement and isinstance(statement[0], Group) and statement[0].open == "[" else statement
    eq = next((k for k, n in enumerate(nodes) if isinstance(n, Token) and n.text == "="), None)
    if eq is not None:
        head, init = nodes[:eq], list(nodes[eq + 1 :])
    elif len(nodes) >= 3 and isinstance(nodes[-1], Group) and nodes[-1].open in "({":
        head, init = nodes[:-1], list(nodes[-1].items)
    else:
        return None
    name = head[-1] if head else None
    words = [n.text for n in head[:-1] if isinstance(n, Token)]
    if len(head) < 2 or not isinstance(name, Token) or name.kind != "name" or not _INTEGER_WORDS & set(words):
        return None
    if any(not (isinstance(n, Token) and (n.kind == "name" or n.text == "::") or isinstance(n, Group) and n.open == "<")
           for n in head) or STATEMENT_WORDS & set(words) or _NOT_INTEGER & set(words):
        return None
    if any(isinstance(n, Token) and n.text == "," for n in init):
        return None
    return name.text, init


def _propagate(lines: list[str], mutable: frozenset[str], folded: frozenset[str], views: frozenset[str],
               symbols: frozenset[str]) -> tuple[list[str], list[tuple[tuple[str, str], ...]]]:
    """Each line with the names defined once from non-constants replaced, and the constant definitions; a name
    of ``folded`` (:mod:`.assignments`) takes each assignment into its definition, from the next line on."""
    constant: set[str] = set(symbols)
    texts: dict[str, str] = {}  # each constant name the body defines: its definition
    replaced: dict[str, str] = {}
    out: list[str] = []
    definitions: list[tuple[tuple[str, str], ...]] = []
    for line in lines:
        defined: list[tuple[str, str]] = []
        stripped = line.lstrip()
        if stripped.startswith("#"):
            m = re.fullmatch(r"\s*#\s*define\s+([A-Za-z_]\w*)(?:\s+(.*?))?\s*", line)
            if m and m.group(2) and m.group(1) not in mutable:  # an object-like macro: `#define STRIDE 96`
                value = replace_names(m.group(2), replaced)
                nodes = list(tree(value))
                if _integer_expression(nodes) and _constant_capable(nodes, constant, views):
                    constant.add(m.group(1))
                    texts[m.group(1)] = value
                    replaced.pop(m.group(1), None)
                    defined.append((m.group(1), value))
                elif _integer_expression(nodes) and len(value) <= _LONGEST:
                    replaced[m.group(1)] = f"({value})"
            out.append(line)
            definitions.append(tuple(defined))
            continue
        line = replace_names(line, replaced, ASSIGN)
        for statement in split_at(tree(line), (";", "{", "}")):
            if _fold(line, list(statement), folded, constant, texts, replaced, defined, views):
                continue
            declared = _declaration(list(statement))
            if declared is None:
                continue
            name, init = declared
            replaced.pop(name, None)
            constant.discard(name)
            if name in mutable or name in views or not _integer_expression(init) or _reads_view(init, views):
                continue
            text = line[init[0].start : init[-1].end]
            _define(name, text, constant, texts, replaced, defined, views)
        out.append(line)
        definitions.append(tuple(defined))
    return out, definitions



def _define(name: str, text: str, constant: set[str], texts: dict[str, str], replaced: dict[str, str],
            defined: list[tuple[str, str]], views: frozenset[str]) -> None:
    """``name`` is ``text`` (an integer expression, names replaced) from here on: a constant definition, a
    replacement, or, where it grows too long, a name again."""
    was_constant = name in texts
    texts.pop(name, None)
    replaced.pop(name, None)
    if _constant_capable(list(tree(text)), constant, views):
        constant.add(name)
        texts[name] = text
        defined.append((name, text))
        return
    constant.discard(name)
    if was_constant:
        defined.append((name, ""))  # no value from here on
    if len(text) <= _LONGEST:  # definitions of definitions grow: past this, the name stays a name
        replaced[name] = f"({text})"


def _fold(line: str, statement: list[Node], folded: frozenset[str], constant: set[str], texts: dict[str, str],
          replaced: dict[str, str], defined: list[tuple[str, str]], views: frozenset[str]) -> bool:
    """Take the straight-line assignment ``statement`` (``off *= 96``, of a name of ``folded``) into the name's
    definition; whether it was one."""
    if len(statement) < 3 or not (isinstance(statement[0], Token) and statement[0].text in folded) \
            or not (isinstance(statement[1], Token) and statement[1].text in FOLDED_OPS):
        return False
    name, op, value = statement[0].text, statement[1].text, statement[2:]
    old = texts.get(name) or replaced.get(name)
    text = line[value[0].start : value[-1].end]
    if op != "=":
        text = f"({old}) {op[:-1]} ({text})" if old is not None else ""
    if not text or not _integer_expression(value) or _reads_view(value, views):
        if name in texts:
            defined.append((name, ""))  # a value the lint cannot follow: the name is a name again
        texts.pop(name, None)
        replaced.pop(name, None)
        constant.discard(name)
        return True
    _define(name, text, constant, texts, replaced, defined, views)
    return True
