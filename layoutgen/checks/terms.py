"""What one index expression is made of: its terms, their constant steps, and the memory it is relative to.

An index into a view (a subscript, pointer arithmetic, an accessor's argument: :mod:`.indexing` finds them)
is split into additive terms; a constant there is a *factor* (it multiplies an index: ``row * 40``, or
constants multiplied together, ``(row << 5) * 3``), a *term* (it is added: ``c + 40``, with its sign) or
*alone* (the whole subscript). Each becomes an :class:`IndexLiteral`, read against the view's facts by
:mod:`.lint`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .constants import Constant, Constants, Fact
from .cxx import Group, Node, Token, source, split_at

SUBSCRIPT, POINTER, ROW_ARGUMENT, COLUMN_ARGUMENT = "subscript", "pointer", "row argument", "column argument"
FACTOR, TERM, ALONE = "factor", "term", "alone"


@dataclass(frozen=True)
class Base:
    """What an index is relative to."""

    view: str | None  # the parameter whose memory it addresses; None: a name the lint cannot trace
    row: bool  # a row of the view (`x.row(r)`, `&x.at(r, c)`): a literal alone is one of its columns
    origin: bool  # row 0, column 0 of the field (`x`, `x.row(0)`, `&x.at(0, 0)`)
    unit_bytes: int | None = None  # the bytes one index step moves (a pointer cast to `float4*`); None: an element
    raw: bool = False  # a raw pointer (`&x.at(0, 0)`, `x.raw_pointer()`), which may step rows; not a row object


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
    spelled: str = ""  # how the body wrote it where that was a name (`F`, `x.width`) or a product; empty for a literal
    named: bool = False  # spelled with a name: the body says what it means (:func:`.lint._meanings`)
    unit_bytes: int | None = None  # the bytes one step of the index moves where not an element (`vec<16>`)
    via: tuple[str, int] | None = None  # read in a helper at its call: (the helper, the index of its line)
    negative: bool = False  # a term subtracted (`F - 1 - d`: 1 and d)
    call: str | None = None  # in an accessor's column: the call up to the column (`x.at(row, `)
    scaled: bool = False  # inside parentheses multiplied by another factor (`(b * 61 + k) * 56`: 61 counts rows)
    fact: Fact | None = None  # the view's fact the constant is, however it was spelled (`s` = `x.row_stride`)


def is_op(node: Node | None, *texts: str) -> bool:
    return isinstance(node, Token) and node.kind == "op" and node.text in texts


def name_of(node: Node | None) -> str | None:
    return node.text if isinstance(node, Token) and node.kind == "name" else None


def group_of(node: Node | None, opener: str) -> Group | None:
    return node if isinstance(node, Group) and node.open == opener else None


def _operand_end(node: Node | None) -> bool:
    """Whether a binary operator may follow ``node`` (else a `+`, `-`, `*`, `&` after it is unary)."""
    return isinstance(node, Group) or (isinstance(node, Token) and (node.kind != "op" or node.text in ("++", "--")))


def binary_split(nodes: Sequence[Node], ops: tuple[str, ...]) -> list[tuple[str, list[Node]]]:
    """``nodes`` split at the binary operators ``ops``: (the operator before each part, or "", the part)."""
    parts: list[tuple[str, list[Node]]] = [("", [])]
    for node in nodes:
        if is_op(node, *ops) and parts[-1][1] and _operand_end(parts[-1][1][-1]):
            parts.append((node.text if isinstance(node, Token) else "", []))
        else:
            parts[-1][1].append(node)
    return parts


def additive_terms(nodes: Sequence[Node]) -> list[tuple[str, list[Node]]]:
    """The additive terms of an expression, each with its sign."""
    return [("-" if sign == "-" else "+", part) for sign, part in binary_split(nodes, ("+", "-")) if part]


def _literal(text: str, nodes: Sequence[Node], constant: Constant, role: str, place: str, base: Base,
             row: str | None, others: _Terms) -> IndexLiteral:
    return IndexLiteral(constant.value, role, place, base, row, others,
                        source(text, list(nodes)) if constant.named else "", named=constant.named,
                        unit_bytes=base.unit_bytes, fact=constant.fact)


def _coefficient(nodes: Sequence[Node], values: Constants) -> tuple[int, int, bool] | None:
    """(the product of the constants, how many, whether anything else is multiplied) of a product term:
    ``row * 2 * 28``, ``(row << 5) * 3``, ``row << 5``; None where it divides or is no product."""
    shifted = binary_split(nodes, ("<<",))
    if len(shifted) == 2 and (shift := values.value(shifted[1][1])) is not None and 0 <= shift < 32:
        inner = _coefficient(shifted[0][1], values)
        return None if inner is None else (inner[0] << shift, inner[1] + 1, inner[2])
    if len(shifted) > 1:
        return None
    factors = binary_split(nodes, ("*", "/", "%"))
    if any(op in ("/", "%") for op, _ in factors):
        return None
    product, count, variable = 1, 0, False
    for _, factor in factors:
        constant = values.of(factor)
        group = group_of(factor[0], "(") if len(factor) == 1 else None
        if constant is not None:
            product, count = product * constant.value, count + 1
        elif group is not None and len(additive_terms(group.items)) == 1 and (inner := _coefficient(group.items, values)):
            product, count, variable = product * inner[0], count + inner[1], variable or inner[2]
        else:
            variable = True
    return product, count, variable


def index_constants(text: str, nodes: Sequence[Node], base: Base, place: str, values: Constants,
           outer: _Terms = ()) -> list[IndexLiteral]:
    """The constants of the index ``nodes`` of the line ``text``; ``outer``: the terms around it, when it is in
    parentheses."""
    found: list[IndexLiteral] = []
    for alternative in split_at(nodes, ("?", ":")):
        terms = additive_terms(alternative)
        constant = values.of(terms[0][1]) if len(terms) == 1 else None
        if constant is not None:  # the whole index: a row or column argument is no arithmetic
            if place == SUBSCRIPT and not outer:
                found.append(_literal(text, terms[0][1], constant, ALONE, place, base, None, ()))
        else:
            found.extend(term_constants(text, terms, base, place, values, outer))
    return found


def term_constants(text: str, terms: list[tuple[str, list[Node]]], base: Base, place: str, values: Constants,
                 outer: _Terms = ()) -> list[IndexLiteral]:
    """The constants of the additive ``terms`` of an index: each term a constant, or constant factors of it."""
    found: list[IndexLiteral] = []
    described = [(sign, source(text, term), values.value(term)) for sign, term in terms]
    for k, (_, term) in enumerate(terms):
        others = tuple(d for j, d in enumerate(described) if j != k) + outer
        constant = values.of(term)
        if constant is not None:
            found.append(replace(_literal(text, term, constant, TERM, place, base, None, others),
                                 negative=terms[k][0] == "-"))
            continue
        negative = terms[k][0] == "-"
        product = _coefficient(term, values)
        if product is not None and product[1] >= 2 and product[2]:  # constants multiplied together: one step
            found.append(IndexLiteral(product[0], FACTOR, place, base, None, others, source(text, term),
                                      unit_bytes=base.unit_bytes, negative=negative))
            continue
        factors = binary_split(term, ("*", "/", "%"))
        plain = all(op in ("", "*") for op, _ in factors)
        for m, (op, factor) in enumerate(factors):
            constant = values.of(factor)
            multiplies = op == "*" or (op == "" and len(factors) > 1 and factors[1][0] == "*")
            if constant is not None and multiplies:
                row = " * ".join(source(text, f) for n, (_, f) in enumerate(factors) if n != m)
                found.append(replace(_literal(text, factor, constant, FACTOR, place, base, row if plain else None,
                                              others), negative=negative))
            elif len(factor) == 1 and (inner := group_of(factor[0], "(")) is not None:
                # (row * 56 + f) is the index itself, with the terms around it; (r) * 56 is one factor
                inner_found = index_constants(text, inner.items, base, place, values,
                                              others if len(factors) == 1 else ())
                found.extend(inner_found if len(factors) == 1 else [replace(f, scaled=True) for f in inner_found])
    return found
