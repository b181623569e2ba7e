"""C++ text as the template lint reads it: code lines, their ``//`` comments, tokens and brackets.

Not a C++ parser: enough structure to tell an index expression from the rest of a line. A line is
split into tokens; brackets nest into :class:`Group` nodes (one left open runs to the end of the
line, one that closes nothing is a plain token), and template argument lists (``vec<16>(...)``,
``static_cast<int>(...)``) become groups too, so that their numbers are not read as arithmetic.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# What is not C++ code, from its opening to its closing text: Jinja tags and
# comments, C comments (which may span lines), string and character literals.
_NOT_CODE = {"{{": "}}", "{%": "%}", "{#": "#}", "/*": "*/", "//": "\n", '"': '"', "'": "'"}
# Rendered text has no Jinja left: `{{` there is C++ (`Vec{{1, 2}}`).
_NOT_CPP = {o: c for o, c in _NOT_CODE.items() if o not in ("{{", "{%", "{#")}


@dataclass(frozen=True)
class Text:
    """A source split in lines: the code with everything else blanked (columns kept), and each line's
    ``//`` comment (the text after the slashes; None where the line has none)."""

    code: tuple[str, ...]
    comments: tuple[str | None, ...]


@functools.lru_cache(maxsize=64)  # a template bound many times is scanned once
def scan(source: str, jinja: bool = True) -> Text:
    """``source`` as code and comments; ``jinja``: the source is a template (its tags are not code)."""
    not_code = _NOT_CODE if jinja else _NOT_CPP
    out: list[str] = []
    comments: list[str | None] = [None]
    comment_start = -1  # where the text of an open `//` comment starts
    closer: str | None = None
    i = 0
    while i < len(source):
        ch = source[i]
        if ch == "\n":
            if closer == "\n":
                comments[-1] = source[comment_start:i]
            out.append(ch)
            comments.append(None)
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
                comment_start = i
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
    if closer == "\n":
        comments[-1] = source[comment_start:]
    return Text(tuple("".join(out).split("\n")), tuple(comments))


@dataclass(frozen=True)
class Token:
    """One token of a code line: ``kind`` is "num", "name" or "op"; ``start``/``end`` its columns."""

    kind: str
    text: str
    start: int
    end: int


@dataclass(frozen=True)
class Group:
    """A bracketed part of a line: ``open`` is "(", "[", "{" or "<" (template arguments)."""

    open: str
    items: tuple[Node, ...]
    start: int
    end: int


Node = Token | Group

_TOKEN = re.compile(r"""
    (?P<num>\.?\d(?:[eEpP][+-]|[\w.])*)  # a pp-number: 56, 56u, 4.0f, 1e-3
  | (?P<name>[A-Za-z_]\w*)
  | (?P<op>->|\+\+|--|<<=|>>=|<<|>>|<=|>=|==|!=|&&|\|\||[-+*/%&|^]=|::|[^\s\w])
""", re.X)
# A decimal integer literal, with its suffix: 56, 56u, 56LL (0 alone; 07 is octal and left alone).
_INT = re.compile(r"(0|[1-9]\d*)(?:[uU](?:ll|LL|l|L)?|(?:ll|LL|l|L)[uU]?)?")
_CLOSE = {"(": ")", "[": "]", "{": "}"}
#: Words that begin a statement or an expression, never a declaration's type: what the lint's readers of
#: declarations (checks/flow.py's locals, checks/indexing.py's pointers) rule out before a name.
STATEMENT_WORDS = frozenset({
    "return", "else", "case", "default", "goto", "throw", "delete", "new", "sizeof", "if", "while", "for",
    "switch", "do", "using", "namespace", "typedef", "break", "continue", "co_return", "co_yield", "define",
    "template", "typename",
})
# What may follow a template's argument list: a call or a brace initializer (or `::`, or a declared name).
_AFTER_TEMPLATE = ("(", "{")


def int_value(node: Node) -> int | None:
    """The value of an integer literal token; None for anything else."""
    if isinstance(node, Token) and node.kind == "num":
        m = _INT.fullmatch(node.text)
        if m:
            return int(m.group(1))
    return None


def tokens(line: str) -> list[Token]:
    """The tokens of one code line (with non-code blanked, as :func:`scan` gives it)."""
    return [Token(m.lastgroup or "op", m.group(0), m.start(), m.end()) for m in _TOKEN.finditer(line)]


@functools.lru_cache(maxsize=4096)  # the lines of a template recur in every binding and reading of it
def tree(line: str) -> tuple[Node, ...]:
    """The tokens of ``line`` with brackets nested into groups."""
    # (opening bracket, its column, what it holds so far); the line itself is the bottom entry.
    stack: list[tuple[str, int, list[Node]]] = [("", 0, [])]
    for token in tokens(line):
        if token.kind == "op" and token.text in _CLOSE:
            stack.append((token.text, token.start, []))
        elif token.kind == "op" and len(stack) > 1 and token.text == _CLOSE[stack[-1][0]]:
            opener, start, items = stack.pop()
            stack[-1][2].append(Group(opener, _templates(items), start, token.end))
        else:
            stack[-1][2].append(token)
    while len(stack) > 1:  # left open: the group runs to the end of the line
        opener, start, items = stack.pop()
        stack[-1][2].append(Group(opener, _templates(items), start, len(line)))
    return _templates(stack[0][2])


def _templates(items: list[Node]) -> tuple[Node, ...]:
    """``items`` with each template argument list (``name<...>`` followed by a call, a brace, ``::`` or a
    name) folded into one "<" group; a ``<`` that is a comparison stays a token."""
    out: list[Node] = []
    i = 0
    while i < len(items):
        node = items[i]
        close = _template_end(items, i) if _is_op(node, "<") and out and _is_name(out[-1]) else None
        if close is None:
            out.append(node)
            i += 1
            continue
        inner = items[i + 1 : close]
        out.append(Group("<", tuple(inner), node.start, items[close].end))
        i = close + 1
    return tuple(out)


def _template_end(items: list[Node], i: int) -> int | None:
    depth = 0
    for j in range(i, len(items)):
        node = items[j]
        if _is_op(node, "<"):
            depth += 1
        elif _is_op(node, ">") or _is_op(node, ">>"):
            depth -= 1 if _is_op(node, ">") else 2
            if depth <= 0:
                after = items[j + 1] if j + 1 < len(items) else None
                fits = (isinstance(after, Group) and after.open in _AFTER_TEMPLATE) or _is_op(after, "::") \
                    or _is_name(after)
                return j if depth == 0 and fits else None
        elif isinstance(node, Token) and node.text in (";", "&&", "||", "=", "?"):
            return None
    return None


def _is_op(node: Node | None, text: str) -> bool:
    return isinstance(node, Token) and node.kind == "op" and node.text == text


def _is_name(node: Node | None) -> bool:
    return isinstance(node, Token) and node.kind == "name"


def source(line: str, nodes: tuple[Node, ...] | list[Node]) -> str:
    """The text of ``line`` that ``nodes`` cover."""
    return line[nodes[0].start : nodes[-1].end].strip() if nodes else ""


def split_at(nodes: Sequence[Node], separators: Iterable[str]) -> list[list[Node]]:
    """``nodes`` split at the operators ``separators`` (at this level of nesting only)."""
    parts: list[list[Node]] = [[]]
    stops = frozenset(separators)
    for node in nodes:
        if isinstance(node, Token) and node.kind == "op" and node.text in stops:
            parts.append([])
        else:
            parts[-1].append(node)
    return parts
