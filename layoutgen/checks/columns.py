"""The constant column indices of a template body (LG405's input).

A view's accessors check nothing in the release build: ``reward(t, e, 1)`` on a one-column field
reads the next field of the row. Where the index of a field's own axis is a constant, whether it is
in range is known before anything runs. The places read here:

- the column of ``x.at(r, c)`` and the subscript of a row, ``x.row(r)[c]`` (elements of the row);
- the last arguments of ``x(i0, ..., c)``, one per axis of the field (``q(b, s, h, d)``: the head
  ``h`` and the element ``d`` of a ``[H, D]`` field);
- the vector index ``i`` of ``x.vec<16>(r, i)`` (16-byte groups of the row).

A constant is what :mod:`.constants` gives a value: an integer literal (signed, in parentheses), a
static symbol of the kernel, a name the body defines ``constexpr`` from a constant, or a view's
layout fact (``x.width``).
An index computed any other way is the debug build's to check.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .constants import Constants
from .cxx import Group, Node, Token, split_at, tree
from .indexing import accessor_call

AT, CALL, ROW, VEC = "at", "call", "row", "vec"


@dataclass(frozen=True)
class ConstantIndex:
    """One constant index of a field's own axis, as the body writes it."""

    view: str  # the parameter indexed
    form: str  # AT (`x.at(r, c)`), ROW (`x.row(r)[c]`), CALL (`x(i0, ..., c)`) or VEC (`x.vec<N>(r, i)`)
    value: int
    argument: int  # which argument of the call: for CALL, its position among all of them
    arguments: int  # how many the call has
    vector_bytes: int | None  # for VEC: the N of `vec<N>`
    text: str  # the call (and subscript) as written


def constant_indices(lines: Iterable[str], views: Iterable[str],
                     constants: Sequence[Constants]) -> list[list[ConstantIndex]]:
    """For each line of a body (code only, as :func:`.cxx.scan` gives it), its constant indices into one
    of ``views``; ``constants``: what names mean on each line (:func:`.constants.line_constants`)."""
    names = frozenset(views)
    out: list[list[ConstantIndex]] = []
    for line, known in zip(lines, constants):
        found: list[ConstantIndex] = []
        _walk(line, tree(line), names, known, found)
        out.append(found)
    return out


def _vector_bytes(nodes: Sequence[Node], i: int, constants: Constants) -> int | None:
    """The N of `x.vec<N>(...)`, the call ``nodes[i]``; None without a constant one."""
    before = nodes[i - 1] if i else None
    return constants.value(before.items) if isinstance(before, Group) and before.open == "<" else None


def _walk(text: str, nodes: Sequence[Node], views: frozenset[str], constants: Constants,
          found: list[ConstantIndex]) -> None:
    for i, node in enumerate(nodes):
        if not isinstance(node, Group) or node.open == "<":
            continue
        if node.open == "(" and (accessor := accessor_call(nodes, i, views)) is not None:
            view, member = accessor
            args = split_at(node.items, ",")
            # the view's name: `x(`, `x.at(`, `x.vec<16>(`, `x.template vec<16>(`
            start = next(n.start for n in reversed(nodes[:i]) if isinstance(n, Token) and n.text == view)
            call = text[start : node.end].strip()
            subscript = nodes[i + 1] if i + 1 < len(nodes) else None
            if member == "row" and isinstance(subscript, Group) and subscript.open == "[":
                value = constants.value(subscript.items)
                if value is not None:
                    found.append(ConstantIndex(view, ROW, value, 0, 1, None,
                                               text[start : subscript.end].strip()))
            elif member in (AT, VEC) and len(args) == 2:
                value = constants.value(args[1])
                if value is not None:
                    if member == AT:
                        found.append(ConstantIndex(view, AT, value, 1, 2, None, call))
                    elif (n := _vector_bytes(nodes, i, constants)) is not None:
                        found.append(ConstantIndex(view, VEC, value, 1, 2, n, call))
            elif member is None:
                for k, arg in enumerate(args):
                    value = constants.value(arg)
                    if value is not None:
                        found.append(ConstantIndex(view, CALL, value, k, len(args), None, call))
        _walk(text, node.items, views, constants, found)
