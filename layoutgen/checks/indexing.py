"""The integer literals of a template body that take part in addressing a view's memory (LG401's input).

A literal counts only where it shapes an index into a view bound to the kernel:

- a subscript of the view, of a row of it (``x.row(r)[...]``) or of a pointer the body took from it
  (``const float* p = &x.at(0, 0); p[...]``);
- pointer arithmetic on one of those (``x.row(0) + row * 40``, ``p += r * 56``);
- an argument of an accessor (``x.at(r * 40 + c, 0)``, ``x(b, k, c)``, ``x.row(...)``).

There it is a *factor* (it multiplies an index), a *term* (it is added to one) or *alone* (the whole
subscript). Arrays the body declares (``__shared__ float scratch[2]``) and pointers into them are its
own memory and are not looked at; a subscript of a name the body does not declare (a macro's
pointer, a header's table) may address any view, and is read as such. Everything else on a line
(array sizes, loop bounds, ``acc / (8 * 32 * 5)``) is not index arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from .constants import Constant, Constants
from .cxx import Group, Node, Token, source, split_at, tree

SUBSCRIPT, POINTER, ROW_ARGUMENT, COLUMN_ARGUMENT = "subscript", "pointer", "row argument", "column argument"
FACTOR, TERM, ALONE = "factor", "term", "alone"


@dataclass(frozen=True)
class Base:
    """What an index is relative to."""

    view: str | None  # the parameter whose memory it addresses; None: a name the lint cannot trace
    row: bool  # a row of the view (`x.row(r)`, `&x.at(r, c)`): a literal alone is one of its columns
    origin: bool  # row 0, column 0 of the field (`x`, `x.row(0)`, `&x.at(0, 0)`)


UNTRACED = Base(None, row=False, origin=False)
_Terms = tuple[tuple[str, str, int | None], ...]  # (sign, text, value of a literal) of each term


@dataclass(frozen=True)
class IndexLiteral:
    """One integer literal of an index into a view."""

    value: int
    role: str  # FACTOR, TERM or ALONE
    place: str  # SUBSCRIPT, POINTER, ROW_ARGUMENT or COLUMN_ARGUMENT
    base: Base
    row: str | None  # for a factor: the index it multiplies, as written; None when that is not plain
    others: _Terms  # the index's other terms: (sign, text, constant value)
    spelled: str = ""  # how the body wrote it where that was a name (`F`, `x.width`); empty for a literal


def index_literals(lines: Iterable[str], views: Iterable[str], constants: Sequence[Constants] | None = None,
                   own: Iterable[str] = ()) -> list[list[IndexLiteral]]:
    """For each line of a body (code only, as :func:`.cxx.scan` gives it), in order, its constants that
    take part in an index into one of ``views`` (the kernel's parameter names): literals, and the names
    ``constants`` (one per line, :func:`.constants.line_constants`) give a value. ``own`` names memory
    of the kernel's that is no view (its shared arrays and tiles): indexing it is not looked at."""
    reader = _Reader(frozenset(views), own)
    lines = list(lines)
    known = constants if constants is not None else [Constants()] * len(lines)
    return [reader.line(line, values) for line, values in zip(lines, known)]


# Names that start a statement but no declaration.
_NOT_TYPES = frozenset({
    "return", "else", "case", "default", "goto", "throw", "delete", "new", "sizeof", "if", "while", "for",
    "switch", "do", "using", "namespace", "typedef", "break", "continue", "co_return", "co_yield", "define",
})
_CASTS = frozenset({"static_cast", "reinterpret_cast", "const_cast"})
# Accessors that give a value (an element, a vector, a count), not a place to index from.
_VALUE_MEMBERS = frozenset({"at", "vec", "rows"})
_SEPARATORS = frozenset({
    "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", ",", "?", ":", "&&", "||",
    "==", "!=", "<", ">", "<=", ">=",
})


def _op(node: Node | None, *texts: str) -> bool:
    return isinstance(node, Token) and node.kind == "op" and node.text in texts


def _name(node: Node | None) -> str | None:
    return node.text if isinstance(node, Token) and node.kind == "name" else None


def _group(node: Node | None, opener: str) -> Group | None:
    return node if isinstance(node, Group) and node.open == opener else None


def _operand_end(node: Node | None) -> bool:
    """Whether a binary operator may follow ``node`` (else a `+`, `-`, `*`, `&` after it is unary)."""
    return isinstance(node, Group) or (isinstance(node, Token) and (node.kind != "op" or node.text in ("++", "--")))


def _binary_split(nodes: Sequence[Node], ops: tuple[str, ...]) -> list[tuple[str, list[Node]]]:
    """``nodes`` split at the binary operators ``ops``: (the operator before each part, or "", the part)."""
    parts: list[tuple[str, list[Node]]] = [("", [])]
    for node in nodes:
        if _op(node, *ops) and parts[-1][1] and _operand_end(parts[-1][1][-1]):
            parts.append((node.text if isinstance(node, Token) else "", []))
        else:
            parts[-1][1].append(node)
    return parts


def _terms(nodes: Sequence[Node]) -> list[tuple[str, list[Node]]]:
    """The additive terms of an expression, each with its sign."""
    return [("-" if sign == "-" else "+", part) for sign, part in _binary_split(nodes, ("+", "-")) if part]


_LITERALS = Constants()  # literals only: what `x.row(0)` spells as its row


def _zero_arguments(call: Group) -> bool:
    return all(_LITERALS.value(arg) == 0 for arg in split_at(call.items, ","))


def _declarators(nodes: list[Node]) -> tuple[bool, bool, list[list[Node]]] | None:
    """(a pointer type, an `auto` type, each declarator) when ``nodes`` declare names; else None."""
    start = 1 if nodes and _group(nodes[0], "[") else 0  # [[maybe_unused]]
    end, names = start, 0
    while end < len(nodes) and (_op(nodes[end], "::", "*", "&", "&&") or _group(nodes[end], "<")
                                or (_name(nodes[end]) or "if") not in _NOT_TYPES):
        names += _name(nodes[end]) is not None
        end += 1
    if names < 2 or _name(nodes[end - 1]) is None:  # a type and a name at least: `float v`, `auto* p`
        return None
    first = end - 1
    while first > start and _op(nodes[first - 1], "*", "&", "&&"):
        first -= 1
    specifiers = nodes[start:first]
    return (any(_op(n, "*") for n in specifiers), any(_name(n) == "auto" for n in specifiers),
            split_at(nodes[first:], ","))


def accessor_call(nodes: Sequence[Node], i: int, views: frozenset[str]) -> tuple[str, str | None] | None:
    """(view, member) when the call ``nodes[i]`` is ``view.member(...)`` or ``view(...)`` (member None)."""
    at = i - 1
    if at >= 0 and _group(nodes[at], "<"):
        at -= 1  # x.template vec<16>(r, i)
    member = _name(nodes[at]) if at >= 0 else None
    if member in views and (at == 0 or not _op(nodes[at - 1], ".", "->", "::")) and at == i - 1:
        return member, None
    at -= 1
    if at >= 0 and _name(nodes[at]) == "template":
        at -= 1
    if member is None or at < 1 or not _op(nodes[at], "."):
        return None
    view = _name(nodes[at - 1])
    if view not in views or (at >= 2 and _op(nodes[at - 2], ".", "->", "::")):
        return None
    return view, member


def _literal(text: str, nodes: Sequence[Node], constant: Constant, role: str, place: str, base: Base,
             row: str | None, others: _Terms) -> IndexLiteral:
    return IndexLiteral(constant.value, role, place, base, row, others, source(text, list(nodes)) if constant.named else "")


def _index(text: str, nodes: Sequence[Node], base: Base, place: str, values: Constants,
           outer: _Terms = ()) -> list[IndexLiteral]:
    """The constants of the index ``nodes`` of the line ``text``; ``outer``: the terms around it, when it is in
    parentheses."""
    found: list[IndexLiteral] = []
    for alternative in split_at(nodes, ("?", ":")):
        terms = _terms(alternative)
        constant = values.of(terms[0][1]) if len(terms) == 1 else None
        if constant is not None:  # the whole index: a row or column argument is no arithmetic
            if place == SUBSCRIPT and not outer:
                found.append(_literal(text, terms[0][1], constant, ALONE, place, base, None, ()))
        else:
            found.extend(_index_terms(text, terms, base, place, values, outer))
    return found


def _index_terms(text: str, terms: list[tuple[str, list[Node]]], base: Base, place: str, values: Constants,
                 outer: _Terms = ()) -> list[IndexLiteral]:
    """The constants of the additive ``terms`` of an index: each term a constant, or constant factors of it."""
    found: list[IndexLiteral] = []
    described = [(sign, source(text, term), values.value(term)) for sign, term in terms]
    for k, (_, term) in enumerate(terms):
        others = tuple(d for j, d in enumerate(described) if j != k) + outer
        constant = values.of(term)
        if constant is not None:
            found.append(_literal(text, term, constant, TERM, place, base, None, others))
            continue
        factors = _binary_split(term, ("*", "/", "%"))
        plain = all(op in ("", "*") for op, _ in factors)
        for m, (op, factor) in enumerate(factors):
            constant = values.of(factor)
            multiplies = op == "*" or (op == "" and len(factors) > 1 and factors[1][0] == "*")
            if constant is not None and multiplies:
                row = " * ".join(source(text, f) for n, (_, f) in enumerate(factors) if n != m)
                found.append(_literal(text, factor, constant, FACTOR, place, base, row if plain else None, others))
            elif len(factor) == 1 and (inner := _group(factor[0], "(")) is not None:
                # (row * 56 + f) is the index itself, with the terms around it; (r) * 56 is one factor
                found.extend(_index(text, inner.items, base, place, values, others if len(factors) == 1 else ()))
    return found


class _Reader:
    """Reads the lines of one body in order, remembering the names it declares."""

    def __init__(self, views: frozenset[str], own: Iterable[str] = ()) -> None:
        self._views = views
        # declared by the body (or the prologue's shared memory): what it points into (None: nothing)
        self._locals: dict[str, Base | None] = dict.fromkeys(own)
        self._text = ""
        self._values = Constants()
        self._found: list[IndexLiteral] = []

    def line(self, code: str, values: Constants) -> list[IndexLiteral]:
        self._text, self._values, self._found = code, values, []
        nodes = list(tree(code))
        if _op(nodes[0] if nodes else None, "#") and _name(nodes[1] if len(nodes) > 1 else None) == "define":
            body = nodes[3:]  # `#define NAME(params) body`: the body is code, the parameters are not
            if body and isinstance(body[0], Group) and len(nodes) > 2 and body[0].start == nodes[2].end:
                body = body[1:]
            self._sequence(body, statements=False)
        else:
            self._sequence(nodes, statements=True)
        return self._found

    # -- statements and expressions -----------------------------------------------------------

    def _sequence(self, nodes: Sequence[Node], statements: bool) -> None:
        for statement in split_at(nodes, (";", "}")):
            if not (statements and self._declaration(statement)):
                self._statement(statement)

    def _statement(self, nodes: list[Node]) -> None:
        parts = _binary_split(nodes, tuple(_SEPARATORS))
        for n, (op, part) in enumerate(parts):
            if op in ("+=", "-=") and (base := self._pointer(parts[n - 1][1])) is not None:
                self._found.extend(_index(self._text, part, base, POINTER, self._values))  # p += r * 56
            self._expression(part)

    def _expression(self, nodes: list[Node]) -> None:
        terms = _terms(nodes)
        for k, (_, term) in enumerate(terms):
            base = self._pointer_term(term)
            if base is not None and len(terms) > 1:  # x.row(0) + row * 40: the other terms index the view
                offset = [t for j, t in enumerate(terms) if j != k]
                self._found.extend(_index_terms(self._text, offset, base, POINTER, self._values))
                break
        self._walk(nodes)

    def _walk(self, nodes: Sequence[Node]) -> None:
        """Every subscript and accessor call in ``nodes``, and what the groups hold."""
        for i, node in enumerate(nodes):
            if not isinstance(node, Group) or node.open == "<":
                continue
            if node.open == "[":
                base = self._subscripted(nodes, i)
                if base is not None:
                    self._found.extend(_index(self._text, node.items, base, SUBSCRIPT, self._values))
            elif node.open == "(":
                self._arguments(nodes, i)
            self._sequence(node.items, statements=node.open == "{" or _name(nodes[i - 1] if i else None) == "for")

    def _declaration(self, nodes: list[Node]) -> bool:
        """Declare the names of a declaration statement (``const float* p = ...``, ``float a[F], b;``)."""
        declaration = _declarators(nodes)
        if declaration is None:
            return False
        pointer, deduced, declarators = declaration
        for declarator in declarators:
            self._declare(declarator, pointer, deduced)
        return True

    def _declare(self, declarator: list[Node], pointer: bool, deduced: bool) -> None:
        """Remember one declared name: an array, a pointer into a view, or anything else."""
        at = 0
        while at < len(declarator) and _op(declarator[at], "*", "&", "&&"):
            pointer = pointer or _op(declarator[at], "*")
            at += 1
        name = _name(declarator[at]) if at < len(declarator) else None
        if name is None:
            return
        rest = declarator[at + 1 :]
        if rest and _group(rest[0], "["):  # an array: the body's own memory; its size is no index
            self._locals[name] = None
            return
        if rest and _op(rest[0], "="):
            init = rest[1:]
        elif rest and isinstance(rest[0], Group) and rest[0].open in "({":
            init = list(rest[0].items)
        else:
            init = []
        self._statement(init)
        base = self._pointer(init) if (pointer or deduced) and init else None
        if pointer and init and base is None:  # a pointer computed from a view some other way
            view = next((t for n in init if (t := _name(n)) in self._views), None)
            base = Base(view, row=True, origin=False) if view else None
        self._locals[name] = base

    # -- what is indexed ------------------------------------------------------------------------

    def _pointer(self, nodes: Sequence[Node]) -> Base | None:
        """What the expression ``nodes`` points into, when it is a place inside a view."""
        terms = _terms(nodes)
        if len(terms) == 1:
            return self._pointer_term(terms[0][1])
        for _, term in terms:
            base = self._pointer_term(term)
            if base is not None:
                return replace(base, origin=False)
        return None

    def _pointer_term(self, term: Sequence[Node]) -> Base | None:
        if len(term) == 3 and _name(term[0]) in _CASTS and _group(term[1], "<") and (call := _group(term[2], "(")):
            return self._pointer(call.items)
        if len(term) == 1 and (inner := _group(term[0], "(")) is not None:
            return self._pointer(inner.items)
        if len(term) == 1 and (name := _name(term[0])) is not None:
            return self._locals.get(name)
        if len(term) > 1 and _op(term[0], "&"):  # &x.at(0, 0), &x(b, k, c), &p[4]
            name = _name(term[1])
            if name in self._views:
                call = next((g for n in term[2:] if (g := _group(n, "(")) is not None), None)
                return Base(name, row=True, origin=call is not None and _zero_arguments(call) and len(term) <= 5)
            local = self._locals.get(name or "")
            return replace(local, origin=False) if local is not None else None
        if len(term) == 4 and _name(term[0]) in self._views and _op(term[1], ".") and (call := _group(term[3], "(")):
            member = _name(term[2])
            if member == "row":
                return Base(_name(term[0]), row=True, origin=_zero_arguments(call))
            if member not in _VALUE_MEMBERS:  # an accessor that hands out a pointer
                return Base(_name(term[0]), row=False, origin=True)
        return None

    def _subscripted(self, nodes: Sequence[Node], i: int) -> Base | None:
        """What the subscript ``nodes[i]`` indexes, when that may be a view's memory."""
        before = nodes[i - 1] if i else None
        name = _name(before)
        if name is not None:
            if i >= 2 and _op(nodes[i - 2], ".", "->", "::"):
                return UNTRACED  # a member of something: s.data[...]
            if name in self._locals:
                return self._locals[name]
            if name in self._views:
                return Base(name, row=False, origin=True)
            return None if name in _NOT_TYPES else UNTRACED
        call = _group(before, "(")
        if call is None:
            return None  # `a[i][j]`, a lambda's captures, an attribute
        accessor = accessor_call(nodes, i - 1, self._views)
        if accessor is not None:
            view, member = accessor
            if member == "row":
                return Base(view, row=True, origin=_zero_arguments(call))
            return None if member in _VALUE_MEMBERS or member is None else Base(view, row=False, origin=True)
        if i >= 3 and _group(nodes[i - 2], "<") and _name(nodes[i - 3]) in _CASTS:
            return self._pointer_term(nodes[i - 3 : i])  # reinterpret_cast<const float*>(...)[...]
        if i >= 2 and (_name(nodes[i - 2]) or _group(nodes[i - 2], "<")):
            return UNTRACED  # what a function returned
        return self._pointer(call.items)  # (&x.at(0, 0))[...]

    def _arguments(self, nodes: Sequence[Node], i: int) -> None:
        """The index arguments of an accessor call ``nodes[i]``: rows, then the column."""
        accessor = accessor_call(nodes, i, self._views)
        call = nodes[i]
        if accessor is None or not isinstance(call, Group):
            return
        view, member = accessor
        args = split_at(call.items, ",")
        if member in ("at", "vec"):
            places = [ROW_ARGUMENT, COLUMN_ARGUMENT]
        elif member == "row":
            places = [ROW_ARGUMENT]
        elif member is None:
            places = [ROW_ARGUMENT] * (len(args) - 1) + [COLUMN_ARGUMENT]
        else:
            return
        for arg, place in zip(args, places):
            self._found.extend(_index(self._text, arg, Base(view, row=True, origin=False), place, self._values))
