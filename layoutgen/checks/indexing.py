"""The integer literals of a template body that take part in addressing a view's memory (LG401's input).

A literal counts only where it shapes an index into a view bound to the kernel:

- a subscript of the view, of a row of it (``x.row(r)[...]``) or of a pointer the body took from it
  (``const float* p = &x.at(0, 0); p[...]``);
- pointer arithmetic on one of those (``x.row(0) + row * 40``, ``p += r * 56``);
- an argument of an accessor (``x.at(r * 40 + c, 0)``, ``x(b, k, c)``, ``x.row(...)``).

There it is a *factor* (it multiplies an index), a *term* (it is added to one) or *alone* (the whole
subscript; :mod:`.terms`). Arrays the body declares (``__shared__ float scratch[2]``) and pointers into
them are its own memory and are not looked at; a subscript of a name the body does not declare (a
header's table) may address any view, and is read as such. The parameters of a function the text
defines point into no view where it is read alone; at each call it is read again with the call's
arguments (:mod:`.flow`), and what it finds there is the calling line's. A subscript whose index adds a
loop's counter (``p[i]`` in ``for (i = row * 96; ...)``) takes the values the loop runs between: its
start and bound are read as indices too. Everything else on a line (array sizes, loop bounds alone,
``acc / (8 * 32 * 5)``) is not index arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import replace

from .constants import Constants
from .cuda_signatures import INTEGER_TYPES
from .cxx import STATEMENT_WORDS, Group, Node, Token, split_at, tree
from .flow import Call, Reading
from .terms import (ALONE, COLUMN_ARGUMENT, FACTOR, POINTER, ROW_ARGUMENT, SUBSCRIPT, TERM, UNTRACED, Base,
                    IndexLiteral, additive_terms, binary_split, group_of, index_constants, is_op, name_of,
                    term_constants)

__all__ = ["ALONE", "COLUMN_ARGUMENT", "FACTOR", "POINTER", "ROW_ARGUMENT", "SUBSCRIPT", "TERM", "Base",
           "IndexLiteral", "accessor_call", "index_literals"]

def index_literals(lines: Iterable[str], views: Iterable[str], constants: Sequence[Constants] | None = None,
                   own: Iterable[str] = (), reading: Reading | None = None,
                   pointers: Iterable[Base] = ()) -> list[list[IndexLiteral]]:
    """For each line of a body (code only, as :func:`.cxx.scan` gives it), in order, its constants that
    take part in an index into one of ``views`` (the kernel's parameter names): literals, and the names
    ``constants`` (one per line, :func:`.constants.line_constants`) give a value. ``own`` names memory
    of the kernel's that is no view (its shared arrays and tiles): indexing it is not looked at.
    ``reading`` (:func:`.flow.read_body` of ``lines``): the parameters of the functions the text defines,
    which are no views where a function is read alone, and their calls, where each is read with the call's
    arguments (what it finds is the calling line's, with ``via`` set). ``pointers``: raw pointer parameters (an
    existing kernel's ``const float* x``), each the base of its view's array: ``x[...]`` and ``x + ...`` index it."""
    reader = _Reader(frozenset(views), own, pointers)
    lines = list(lines)
    known = constants if constants is not None else [Constants()] * len(lines)
    out: list[list[IndexLiteral]] = []
    for n, (line, values) in enumerate(zip(lines, known)):
        if reading is not None:
            reader.declare_none(reading.parameters[n])
        found = reader.line(line, values)
        if reading is not None:
            for call in reading.calls[n]:
                found.extend(replace(lit, via=(call.name, call.header)) for lit in _called(reader, call, known, values))
        out.append(found)
    return out


def _called(reader: _Reader, call: Call, known: Sequence[Constants], at: Constants) -> list[IndexLiteral]:
    """What a helper's body finds, read with a call's arguments, in the caller's scope (left as it was)."""
    saved = reader.scope()
    found: list[IndexLiteral] = []
    try:
        for k, (line, calls) in enumerate(zip(call.lines, call.calls)):
            own = known[call.first + k] if call.first + k < len(known) else at
            # the helper's own definitions shadow the caller's, facts and all
            facts = {**{k: v for k, v in at.facts.items() if k not in own.names}, **own.facts}
            values = Constants({**at.names, **own.names}, at.members, facts)
            found.extend(reader.line(line, values))
            for inner in calls:
                found.extend(_called(reader, inner, known, values))
    finally:
        reader.restore(saved)
    return found


_CASTS = frozenset({"static_cast", "reinterpret_cast", "const_cast"})
#: The bytes of the types a pointer into a view is cast to (`reinterpret_cast<const float4*>`): its index steps.
UNIT_BYTES = {
    "float": 4, "double": 8, "half": 2, "__half": 2, "__nv_bfloat16": 2, "half2": 4,
    "__half2": 4, "__nv_bfloat162": 4, "float2": 8, "int2": 8, "uint2": 8, "double2": 16, "float4": 16, "int4": 16,
    "uint4": 16, "longlong2": 16,
    # every spelling of an integer, from the one table of them (`unsigned long long`, `uint16_t`, `size_t`)
    **{name: max(bits, 8) // 8 for name, (bits, _) in INTEGER_TYPES.items()},
}


def unit_bytes(names: Sequence[str]) -> int | None:
    """Bytes of the element type a cast names (its words, qualifiers and all: `const unsigned long long`), or None."""
    words = [w.removeprefix("std::") for w in names if w not in ("const", "volatile", "__restrict__", "struct")]
    return UNIT_BYTES.get(" ".join(words)) or next((UNIT_BYTES[w] for w in words if w in UNIT_BYTES), None)
# Accessors that give a value (an element, a vector, a count), not a place to index from.
_VALUE_MEMBERS = frozenset({"at", "vec", "rows"})
_SEPARATORS = frozenset({
    "=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>=", ",", "?", ":", "&&", "||",
    "==", "!=", "<", ">", "<=", ">=",
})


_LITERALS = Constants()  # literals only: what `x.row(0)` spells as its row


def _zero_arguments(call: Group) -> bool:
    return all(_LITERALS.value(arg) == 0 for arg in split_at(call.items, ","))


def _declarators(nodes: list[Node]) -> tuple[bool, bool, list[list[Node]]] | None:
    """(a pointer type, an `auto` type, each declarator) when ``nodes`` declare names; else None."""
    start = 1 if nodes and group_of(nodes[0], "[") else 0  # [[maybe_unused]]
    end, names = start, 0
    while end < len(nodes) and (is_op(nodes[end], "::", "*", "&", "&&") or group_of(nodes[end], "<")
                                or (name_of(nodes[end]) or "if") not in STATEMENT_WORDS):
        names += name_of(nodes[end]) is not None
        end += 1
    if names < 2 or name_of(nodes[end - 1]) is None:  # a type and a name at least: `float v`, `auto* p`
        return None
    first = end - 1
    while first > start and is_op(nodes[first - 1], "*", "&", "&&"):
        first -= 1
    specifiers = nodes[start:first]
    return (any(is_op(n, "*") for n in specifiers), any(name_of(n) == "auto" for n in specifiers),
            split_at(nodes[first:], ","))


def accessor_call(nodes: Sequence[Node], i: int, views: frozenset[str]) -> tuple[str, str | None] | None:
    """(view, member) when the call ``nodes[i]`` is ``view.member(...)`` or ``view(...)`` (member None)."""
    at = i - 1
    if at >= 0 and group_of(nodes[at], "<"):
        at -= 1  # x.template vec<16>(r, i)
    member = name_of(nodes[at]) if at >= 0 else None
    if member in views and (at == 0 or not is_op(nodes[at - 1], ".", "->", "::")) and at == i - 1:
        return member, None
    at -= 1
    if at >= 0 and name_of(nodes[at]) == "template":
        at -= 1
    if member is None or at < 1 or not is_op(nodes[at], "."):
        return None
    view = name_of(nodes[at - 1])
    if view not in views or (at >= 2 and is_op(nodes[at - 2], ".", "->", "::")):
        return None
    return view, member


class _Reader:
    """Reads the lines of one body in order, remembering the names it declares."""

    def __init__(self, views: frozenset[str], own: Iterable[str] = (), pointers: Iterable[Base] = ()) -> None:
        self._views = views
        # declared by the body (or the prologue's shared memory): what it points into (None: nothing)
        self._locals: dict[str, Base | None] = dict.fromkeys(own)
        self._locals.update((p.view, p) for p in pointers if p.view is not None)  # raw pointer parameters
        self._text = ""
        self._values = Constants()
        self._found: list[IndexLiteral] = []
        # each loop counter: (the line of its loop, its start, its bound)
        self._counters_of: dict[str, tuple[str, tuple[Node, ...], tuple[Node, ...]]] = {}

    def declare_none(self, names: Iterable[str]) -> None:
        """``names`` (a function's parameters) point into no view from here on."""
        for name in names:
            self._locals[name] = None

    def scope(self) -> dict[str, Base | None]:
        return dict(self._locals)

    def restore(self, scope: dict[str, Base | None]) -> None:
        self._locals = scope

    def line(self, code: str, values: Constants) -> list[IndexLiteral]:
        self._text, self._values, self._found = code, values, []
        nodes = list(tree(code))
        if is_op(nodes[0] if nodes else None, "#") and name_of(nodes[1] if len(nodes) > 1 else None) == "define":
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
        parts = binary_split(nodes, tuple(_SEPARATORS))
        if len(parts) >= 2 and parts[1][0] == "=" and len(parts[0][1]) == 1 and (name := name_of(parts[0][1][0])) \
                and name in self._locals and (base := self._pointer(parts[1][1])) is not None:
            self._locals[name] = base  # `p = x.raw_pointer();`: a pointer declared before it points
        for n, (op, part) in enumerate(parts):
            if op in ("+=", "-=") and (base := self._pointer(parts[n - 1][1])) is not None:
                self._found.extend(index_constants(self._text, part, base, POINTER, self._values))  # p += r * 56
            self._expression(part)

    def _expression(self, nodes: list[Node]) -> None:
        terms = additive_terms(nodes)
        for k, (_, term) in enumerate(terms):
            base = self._pointer_term(term)
            if base is not None and len(terms) > 1:  # x.row(0) + row * 40: the other terms index the view
                offset = [t for j, t in enumerate(terms) if j != k]
                self._found.extend(term_constants(self._text, offset, base, POINTER, self._values))
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
                    self._found.extend(index_constants(self._text, node.items, base, SUBSCRIPT, self._values))
                    self._counters(node.items, base)
            elif node.open == "(":
                self._arguments(nodes, i)
            loop = name_of(nodes[i - 1] if i else None) == "for"
            if loop:
                self._loop(node)
            self._sequence(node.items, statements=node.open == "{" or loop)

    def _loop(self, header: Group) -> None:
        """Remember a loop's counter and the expressions it runs between: `for (T i = start; i < end; ...)`."""
        parts = split_at(header.items, (";",))
        if len(parts) != 3:
            return
        start = split_at(parts[0], ("=",))
        bound = binary_split(parts[1], ("<", "<="))
        name = name_of(start[0][-1]) if len(start) == 2 and start[0] else None
        if name is None or len(bound) != 2 or [name_of(n) for n in bound[0][1]] != [name]:
            return
        self._counters_of[name] = (self._text, tuple(start[1]), tuple(bound[1][1]))

    def _counters(self, index: Sequence[Node], base: Base) -> None:
        """A subscript whose index adds a loop's counter (`p[i]`, `p[i + 4]`) takes every value the loop runs
        between: its start and bound are read as indices into the same memory (a flattened loop,
        `for (i = row * 96; ...) p[i]`), at the loop's line."""
        for sign, term in additive_terms(index):
            name = name_of(term[0]) if len(term) == 1 else None
            loop = self._counters_of.get(name or "")
            if sign == "-" or loop is None:
                continue
            text, start, end = loop
            for expression in (start, end):  # a bound alone is a count: only its steps and terms are read
                if self._values.evaluate(expression) is not None:
                    continue  # a constant bound (`96`, `2 * 48`): a count of elements, not a step
                self._found.extend(f for f in index_constants(text, expression, base, SUBSCRIPT, self._values)
                                   if f.role != ALONE)

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
        while at < len(declarator) and is_op(declarator[at], "*", "&", "&&"):
            pointer = pointer or is_op(declarator[at], "*")
            at += 1
        name = name_of(declarator[at]) if at < len(declarator) else None
        if name is None:
            return
        rest = declarator[at + 1 :]
        if rest and group_of(rest[0], "["):  # an array: the body's own memory; its size is no index
            self._locals[name] = None
            return
        if rest and is_op(rest[0], "="):
            init = rest[1:]
        elif rest and isinstance(rest[0], Group) and rest[0].open in "({":
            init = list(rest[0].items)
        else:
            init = []
        self._statement(init)
        base = self._pointer(init) if (pointer or deduced) and init else None
        if pointer and init and base is None:  # a pointer computed from a view some other way
            view = next((t for n in init if (t := name_of(n)) in self._views), None)
            base = Base(view, row=True, origin=False) if view else None
        self._locals[name] = base

    # -- what is indexed ------------------------------------------------------------------------

    def _pointer(self, nodes: Sequence[Node]) -> Base | None:
        """What the expression ``nodes`` points into, when it is a place inside a view."""
        terms = additive_terms(nodes)
        if len(terms) == 1:
            return self._pointer_term(terms[0][1])
        for _, term in terms:
            base = self._pointer_term(term)
            if base is not None:
                return replace(base, origin=False)
        return None

    def _pointer_term(self, term: Sequence[Node]) -> Base | None:
        if len(term) == 3 and name_of(term[0]) in _CASTS and (cast := group_of(term[1], "<")) and (call := group_of(term[2], "(")):
            base = self._pointer(call.items)
            unit = unit_bytes([t for n in cast.items if (t := name_of(n))])
            return base if base is None or unit is None else replace(base, unit_bytes=unit)
        if len(term) == 1 and (inner := group_of(term[0], "(")) is not None:
            return self._pointer(inner.items)
        if len(term) == 1 and (name := name_of(term[0])) is not None:
            return self._locals.get(name)
        if len(term) > 1 and is_op(term[0], "&"):  # &x.at(0, 0), &x(b, k, c), &p[4]
            name = name_of(term[1])
            if name in self._views:
                call = next((g for n in term[2:] if (g := group_of(n, "(")) is not None), None)
                return Base(name, row=True, origin=call is not None and _zero_arguments(call) and len(term) <= 5,
                            raw=True)
            local = self._locals.get(name or "")
            return replace(local, origin=False) if local is not None else None
        if len(term) == 4 and name_of(term[0]) in self._views and is_op(term[1], ".") and (call := group_of(term[3], "(")):
            member = name_of(term[2])
            if member == "row":
                return Base(name_of(term[0]), row=True, origin=_zero_arguments(call))
            if member not in _VALUE_MEMBERS:  # an accessor that hands out a pointer
                return Base(name_of(term[0]), row=False, origin=True, raw=True)
        return None

    def _subscripted(self, nodes: Sequence[Node], i: int) -> Base | None:
        """What the subscript ``nodes[i]`` indexes, when that may be a view's memory."""
        before = nodes[i - 1] if i else None
        name = name_of(before)
        if name is not None:
            if i >= 2 and is_op(nodes[i - 2], ".", "->", "::"):
                return UNTRACED  # a member of something: s.data[...]
            if name in self._locals:
                return self._locals[name]
            if name in self._views:
                return Base(name, row=False, origin=True)
            return None if name in STATEMENT_WORDS else UNTRACED
        call = group_of(before, "(")
        if call is None:
            return None  # `a[i][j]`, a lambda's captures, an attribute
        accessor = accessor_call(nodes, i - 1, self._views)
        if accessor is not None:
            view, member = accessor
            if member == "row":
                return Base(view, row=True, origin=_zero_arguments(call))
            return None if member in _VALUE_MEMBERS or member is None else Base(view, row=False, origin=True, raw=True)
        if i >= 3 and group_of(nodes[i - 2], "<") and name_of(nodes[i - 3]) in _CASTS:
            return self._pointer_term(nodes[i - 3 : i])  # reinterpret_cast<const float*>(...)[...]
        if i >= 2 and ((name_of(nodes[i - 2]) or "return") not in STATEMENT_WORDS or group_of(nodes[i - 2], "<")):
            return UNTRACED  # what a function returned (`return (p)[i]` is no call: `(p)` is indexed)
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
        unit = None
        if member == "vec" and i >= 1 and (size := group_of(nodes[i - 1], "<")) is not None:
            unit = self._values.value(size.items)  # x.vec<16>(r, i): i counts 16-byte vectors
        for n, (arg, place) in enumerate(zip(args, places)):
            base = Base(view, row=True, origin=False, unit_bytes=unit if place == COLUMN_ARGUMENT else None)
            found = index_constants(self._text, arg, base, place, self._values)
            if place == COLUMN_ARGUMENT and arg:  # the call up to its column: the hint keeps the rest
                start = next(t.start for t in reversed(nodes[:i]) if isinstance(t, Token) and t.text == view)
                found = [replace(f, call=self._text[start : arg[0].start]) for f in found]
            self._found.extend(found)
