"""The constants a template body can name, and their values (for LG401 and LG405).

A stride spelled with a name is the same bug as one spelled with a number: ``x.row(0)[row * F + f]``
with ``F = 40`` reads rows 40 elements apart whatever the name says. The names whose values are known
before anything runs:

- the kernel's static symbols (the renderer's ``constexpr int F = 40;``);
- names the body defines ``constexpr`` from a constant, from their line on;
- the layout facts of a view bound to the kernel: ``x.width``, ``x.row_stride``, ``x.offset`` (the
  ``static constexpr`` members of its ``lg::Field``).

An index computed any other way is the debug build's to check.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from .cxx import Group, Node, Token, int_value, split_at, tree

# The `static constexpr` members of every view (views.cuh.j2's lg::Field), by the fact of the view they hold.
VIEW_FACTS = ("width", "row_stride", "offset")


@dataclass(frozen=True)
class Constant:
    """The value of an expression that is one constant, and whether it was spelled as a name."""

    value: int
    named: bool


@dataclass(frozen=True)
class Constants:
    """What names mean on one line of a body: ``names`` (symbols and ``constexpr`` names) and ``members``
    (``("x", "width") -> 40``)."""

    names: Mapping[str, int] = field(default_factory=dict)
    members: Mapping[tuple[str, str], int] = field(default_factory=dict)

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
            return None if value is None else Constant(sign * value, named=True)
        if len(nodes) != 1:
            return None
        node = nodes[0]
        if isinstance(node, Group):
            inner = self.of(node.items) if node.open == "(" else None
            return None if inner is None else Constant(sign * inner.value, inner.named)
        if node.kind == "num":
            value = int_value(node)
            return None if value is None else Constant(sign * value, named=False)
        named = self.names.get(node.text) if node.kind == "name" else None
        return None if named is None else Constant(sign * named, named=True)

    def value(self, nodes: Sequence[Node]) -> int | None:
        constant = self.of(nodes)
        return None if constant is None else constant.value


def line_constants(lines: Iterable[str], symbols: Mapping[str, int],
                   members: Mapping[tuple[str, str], int]) -> list[Constants]:
    """For each line of a body (code only, as :func:`.cxx.scan` gives it), what its names mean there:
    ``symbols`` (the kernel's static symbols), the view facts ``members``, and the body's own
    ``constexpr NAME = <constant>;`` declarations from the line that declares them on."""
    known = dict(symbols)
    out: list[Constants] = []
    for line in lines:
        _declare(tree(line), known, members)
        out.append(Constants(dict(known), members))
    return out


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
