"""Which names a body assigns after their declaration, and which of those it assigns in straight-line code.

``long long off = row; off *= 96; p[off + c]`` spells one offset over three statements. A name assigned again
is no longer what its declaration says; but where every assignment is a statement of its own (``off *= 96;``,
``off = off + c;``) in the very block that declares it, each runs once, in order, every time the declaration
does, so its value at any later line of the block is its definition with the assignments applied
(:mod:`.flow` folds them: ``off`` is ``((row) * 96)`` from there on). An assignment in another block (a
branch, a loop's body), inside an expression (``a[off++]``, ``f(off = 2)``), or by ``++``/``--`` makes the
name *mutable*: it stays a name, as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .cxx import STATEMENT_WORDS, tokens

#: Every assignment operator; those a straight-line statement may fold (the rest stay names).
ASSIGN = frozenset({"=", "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<=", ">>="})
FOLDED_OPS = frozenset({"=", "+=", "-=", "*=", "<<="})


@dataclass(frozen=True)
class Assignments:
    """The names a body assigns after their declaration: ``mutable`` ones, and ``folded`` ones (every assignment
    a statement of its own, in the block that declares the name, by an operator of :data:`FOLDED_OPS`)."""

    mutable: frozenset[str]
    folded: frozenset[str]


def assignments(lines: Sequence[str]) -> Assignments:
    """The assignments of the body ``lines`` (code only; preprocessor lines are skipped)."""
    declared: dict[str, set[int]] = {}  # name -> the blocks that declare it with `=`
    assigned: dict[str, list[tuple[int, bool]]] = {}  # name -> (block, a statement of its own) of each assignment
    stack, blocks = [0], 0
    parent: dict[int, int] = {}  # each block's enclosing block
    depth = 0  # of `(` and `[`: a statement starts only outside them
    start = True  # the next token starts a statement
    for line in lines:
        if line.lstrip().startswith("#"):
            continue
        toks = tokens(line)
        for k, tok in enumerate(toks):
            text = tok.text
            before = toks[k - 1] if k else None
            after = toks[k + 1] if k + 1 < len(toks) else None
            if tok.kind == "name" and after is not None:
                if after.text in ("++", "--") or (before is not None and before.text in ("++", "--")):
                    assigned.setdefault(text, []).append((stack[-1], False))
                elif after.text in ASSIGN and after.text != "=":
                    assigned.setdefault(text, []).append((stack[-1], start and depth == 0
                                                          and after.text in FOLDED_OPS))
                elif after.text == "=" and (before is None or before.kind == "op" and before.text not in (
                        "*", "&", ">", "::", ".", "->") or before.text in STATEMENT_WORDS):
                    assigned.setdefault(text, []).append((stack[-1], start and depth == 0))
                elif after.text == "=" and before is not None and before.kind == "name":
                    declared.setdefault(text, set()).add(stack[-1])  # `long long off = row`
            if text in ("(", "["):
                depth += 1
            elif text in (")", "]"):
                depth = max(depth - 1, 0)
            elif text == "{":
                blocks += 1
                parent[blocks] = stack[-1]
                stack.append(blocks)
            elif text == "}" and len(stack) > 1:
                stack.pop()
            start = text in (";", "{", "}") and depth == 0
    folded = {name for name, where in assigned.items()
              if all(own and block in declared.get(name, ()) for block, own in where)
              and not _shadowed(declared[name], parent)}
    return Assignments(frozenset(assigned) - folded, frozenset(folded))


def _shadowed(blocks: set[int], parent: dict[int, int]) -> bool:
    """Whether one of ``blocks`` (those declaring a name) lies inside another: an inner declaration shadows the
    outer one until its block closes, which the line-by-line folding does not undo."""
    for block in blocks:
        at = parent.get(block)
        while at is not None:
            if at in blocks:
                return True
            at = parent.get(at)
    return False
