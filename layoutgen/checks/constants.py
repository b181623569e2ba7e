"""The constants a template body can name, and their values (for LG401 and LG405).

A stride spelled with a name is the same bug as one spelled with a number: ``x.row(0)[row * F + f]``
with ``F = 40`` reads rows 40 elements apart whatever the name says. The names whose values are known
before anything runs:

- the kernel's static symbols (the renderer's ``constexpr int F = 40;``);
- names the body defines ``constexpr`` from a constant, from their line on;
- the layout facts of a view bound to the kernel: ``x.width``, ``x.row_stride``, ``x.offset`` (the
  ``static constexpr`` members of its ``lg::Field``).

A value also carries where it comes from when it is one view's fact, however it travelled: ``x.row_stride``,
``const int s = x.row_stride;``, ``#define STRIDE (x.row_stride)``, a helper's parameter a call binds to it
(:attr:`Constant.fact`). The number 136 typed by hand and ``x.row_stride`` have one value, but only the second
follows the layout: the lint tells them apart by this, never by how the name is spelled.

An index computed any other way is the debug build's to check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .cxx import Group, Node, Token, int_value, split_at, tree

# The `static constexpr` members of every view (views.cuh.j2's lg::Field), by the fact of the view they hold.
VIEW_FACTS = ("width", "row_stride", "offset")


#: A view's fact a value is: (the view's parameter, "width", "row_stride" or "offset").
Fact = tuple[str, str]


@dataclass(frozen=True)
class Constant:
    """The value of an expression that is one constant, whether it was spelled as a name, and the view's fact it
    is (``x.row_stride`` through any chain of names, parentheses and casts), if any."""

    value: int
    named: bool
    fact: Fact | None = None


@dataclass(frozen=True)
class Constants:
    """What names mean on one line of a body: ``names`` (symbols and ``constexpr`` names), ``members``
    (``("x", "width") -> 40``) and ``facts``: the names whose value is a view's fact (``s`` -> ("x", "row_stride")
    after ``const int s = x.row_stride;``)."""

    names: Mapping[str, int] = field(default_factory=dict)
    members: Mapping[tuple[str, str], int] = field(default_factory=dict)
    facts: Mapping[str, Fact] = field(default_factory=dict)

    def of(self, nodes: Sequence[Node]) -> Constant | None:
        """The value of ``nodes`` when they are one constant: ``40``, ``-1``, ``(F)``, ``F``, ``x.width``."""
        sign = 1
        if len(nodes) == 2 and isinstance(nodes[0], Token) and nodes[0].kind == "op" and nodes[0].text in "+-":
            sign, nodes = (-1 if nodes[0].text == "-" else 1), nodes[1:]
        if len(nodes) == 3:
            view, dot, member = nodes
            if not (isinstance(view, Token) and isinstance(dot, Token) and isinstance(member, Token)):
                return None
            known = dot.text == "." and view.kind == member.kind == "name"
            value = self.members.get((view.text, member.text)) if known else None
            if value is None:
                return None
            return Constant(sign * value, named=True, fact=(view.text, member.text) if sign == 1 else None)
        if len(nodes) != 1:
            return None
        node = nodes[0]
        if isinstance(node, Group):
            inner = self.of(node.items) if node.open == "(" else None
            return None if inner is None else Constant(sign * inner.value, inner.named,
                                                       inner.fact if sign == 1 else None)
        if node.kind == "num":
            value = int_value(node)
            return None if value is None else Constant(sign * value, named=False)
        named = self.names.get(node.text) if node.kind == "name" else None
        if named is None:
            return None
        return Constant(sign * named, named=True, fact=self.facts.get(node.text) if sign == 1 else None)

    def fact(self, nodes: Sequence[Node]) -> Fact | None:
        """The view's fact ``nodes`` are, through parentheses and casts to an integer (``static_cast<int>(
        x.row_stride)``, ``(int)S``): a value that only changes type stays the fact."""
        nodes = list(nodes)
        if len(nodes) == 3 and isinstance(nodes[0], Token) and nodes[0].text in _CASTS \
                and isinstance(nodes[2], Group) and nodes[2].open == "(":
            return self.fact(nodes[2].items)
        if len(nodes) == 2 and isinstance(nodes[0], Token) and nodes[0].text in _INTEGER_TYPES \
                and isinstance(nodes[1], Group) and nodes[1].open == "(":
            return self.fact(nodes[1].items)
        if len(nodes) >= 2 and isinstance(nodes[0], Group) and nodes[0].open == "(" and nodes[0].items and all(
                isinstance(n, Token) and n.text in _INTEGER_TYPES for n in nodes[0].items):
            return self.fact(nodes[1:])
        constant = self.of(nodes)
        return None if constant is None else constant.fact

    def value(self, nodes: Sequence[Node]) -> int | None:
        constant = self.of(nodes)
        return None if constant is None else constant.value

    def evaluate(self, nodes: Sequence[Node]) -> int | None:
        """The value of the integer expression ``nodes`` when every part of it is a constant: ``2 * F + 1``,
        ``static_cast<int>(x.width) << 1``, ``(S / 4) % 3``; None otherwise (or on a division by zero)."""
        nodes = list(nodes)
        for ops in (("<<", ">>"), ("+", "-"), ("*", "/", "%")):  # the lowest precedence first
            at = _last_binary(nodes, ops)
            if at is not None:
                left, right = self.evaluate(nodes[:at]), self.evaluate(nodes[at + 1 :])
                if left is None or right is None:
                    return None
                return _apply(str(nodes[at].text), left, right)  # type: ignore[union-attr]
        if len(nodes) >= 2 and isinstance(nodes[0], Token) and nodes[0].text in ("-", "+"):
            inner = self.evaluate(nodes[1:])
            return None if inner is None else (-inner if nodes[0].text == "-" else inner)
        if len(nodes) == 3 and isinstance(nodes[0], Token) and nodes[0].text in _CASTS \
                and isinstance(nodes[2], Group) and nodes[2].open == "(":
            return self.evaluate(nodes[2].items)  # static_cast<int>(...)
        if len(nodes) == 2 and isinstance(nodes[0], Token) and nodes[0].text in _INTEGER_TYPES \
                and isinstance(nodes[1], Group) and nodes[1].open == "(":
            return self.evaluate(nodes[1].items)  # int(...)
        if len(nodes) >= 2 and isinstance(nodes[0], Group) and nodes[0].open == "(" and nodes[0].items and all(
                isinstance(n, Token) and n.text in _INTEGER_TYPES for n in nodes[0].items):
            return self.evaluate(nodes[1:])  # (int) ...
        if len(nodes) == 1 and isinstance(nodes[0], Group) and nodes[0].open == "(":
            return self.evaluate(nodes[0].items)
        return self.value(nodes)


def line_constants(lines: Iterable[str], symbols: Mapping[str, int],
                   members: Mapping[tuple[str, str], int],
                   definitions: Sequence[Sequence[tuple[str, str]]] | None = None) -> list[Constants]:
    """For each line of a body (code only, as :func:`.cxx.scan` gives it), what its names mean there:
    ``symbols`` (the kernel's static symbols), the view facts ``members``, and the names the body defines
    from constants, from the line that defines them on: ``definitions`` (one tuple of (name, definition)
    a line, :func:`.flow.read_body`), or where none are given its ``constexpr NAME = <constant>;``."""
    known = dict(symbols)
    facts: dict[str, Fact] = {}
    out: list[Constants] = []
    current = Constants(dict(known), members)
    for n, line in enumerate(lines):
        if definitions is None:
            _declare(tree(line), known, members)
            current = Constants(dict(known), members)
        elif definitions[n]:
            for name, text in definitions[n]:
                before = Constants(known, members, facts)
                value = before.evaluate(tree(text))
                fact = before.fact(tree(text)) if value is not None else None
                if value is None:
                    known.pop(name, None)
                else:
                    known[name] = value
                if fact is None:
                    facts.pop(name, None)
                else:
                    facts[name] = fact
            current = Constants(dict(known), members, dict(facts))
        out.append(current)
    return out


_CASTS = frozenset({"static_cast", "reinterpret_cast", "const_cast"})
_INTEGER_TYPES = frozenset({"int", "long", "short", "unsigned", "signed", "size_t", "ptrdiff_t", "int32_t",
                            "int64_t", "uint32_t", "uint64_t"})


def _last_binary(nodes: Sequence[Node], ops: tuple[str, ...]) -> int | None:
    """The index of the last binary operator of ``ops`` in ``nodes`` (one after an operand), or None."""
    found = None
    for k in range(1, len(nodes)):
        node, before = nodes[k], nodes[k - 1]
        if isinstance(node, Token) and node.kind == "op" and node.text in ops and (
                isinstance(before, Group) or before.kind != "op"):
            found = k
    return found


def _apply(op: str, left: int, right: int) -> int | None:
    if op in ("/", "%"):
        if right == 0:
            return None
        quotient = abs(left) // abs(right) * (1 if (left < 0) == (right < 0) else -1)  # C truncates
        return quotient if op == "/" else left - quotient * right
    if op in ("<<", ">>"):
        if not 0 <= right < 64:
            return None
        return left << right if op == "<<" else left >> right
    return {"+": left + right, "-": left - right, "*": left * right}[op]


def view_members(views: Iterable[tuple[str, int, int, int]]) -> dict[tuple[str, str], int]:
    """``("x", "width") -> 40`` for each (parameter, width, row stride, offset) of a kernel."""
    return {(name, fact): value for name, *facts in views for fact, value in zip(VIEW_FACTS, facts)}


def _declare(nodes: Sequence[Node], known: dict[str, int], members: Mapping[tuple[str, str], int]) -> None:
    """Remember the ``constexpr int NAME = <constant>;`` declarations of one line."""
    for statement in split_at(nodes, (";",)):
        if not any(isinstance(n, Token) and n.text == "constexpr" for n in statement):
            continue
        for declarator in split_at(statement, (",",)):
            at = next((k for k, n in enumerate(declarator) if isinstance(n, Token) and n.text == "="), None)
            name = declarator[at - 1] if at else None
            if at is None or not isinstance(name, Token) or name.kind != "name":
                continue
            value = Constants(known, members).value(declarator[at + 1 :])
            if value is not None:
                known[name.text] = value
