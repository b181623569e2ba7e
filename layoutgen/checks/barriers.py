"""Block barriers that only some threads of a block reach (LG411's input).

``if (threadIdx.x < 32) { ...; __syncthreads(); }`` is undefined behaviour in CUDA: the threads that do not
take the branch never arrive, so the block hangs or pairs the barrier with another one. The same holds for a
barrier in a loop whose trip count is the thread's own (``for (int i = threadIdx.x; i < n; i += blockDim.x)``),
in the ``else`` of such a branch, and for a barrier after a branch that returns some threads early
(``if (lane >= n) return;``). Whether a condition is the thread's own is read from the names it uses: the
thread's index (``threadIdx``, the grid's ``lane``, ``warp`` and per-thread indices) and the names the body
computes from them. Conditions on block-uniform values (``tile_rows``, ``blockIdx``, a symbol) are fine.
The diagnostics of barriers are here too: LG406 and LG408 for a grid that returns threads before the body
(:func:`early_barrier`), LG411 for a branch (:func:`divergent_barrier`).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from ..declare.kernels import Binding
from ..schema.diagnostics import Diagnostic, Site
from .text_offsets import closing, line_at, line_starts
from .tile_loops import statement_end

BARRIER = re.compile(r"(?<![\w.:>])__syncthreads\s*\(")
_CONTROL = re.compile(r"\b(if|while|for|switch)\s*\(")
_ELSE = re.compile(r"\s*else\b")
_RETURN = re.compile(r"\breturn\b")
# every assignment, compound ones too (`lane |= threadIdx.x & 1`): each passes its value on
_ASSIGNED = re.compile(r"\b([A-Za-z_]\w*)\s*(?:<<|>>|[-+*/%&|^])?=(?!=)([^;,)]*)")


@dataclass(frozen=True)
class Divergent:
    """A barrier (the index of its line) and the condition, as written, that only some threads pass."""

    line: int
    condition: str
    returns: bool  # the condition returns threads before the barrier (else: the barrier is inside it)


@functools.lru_cache(maxsize=256)
def divergent_barriers(codes: tuple[str, ...], thread_names: frozenset[str]) -> tuple[Divergent, ...]:
    """The barriers of a body (code lines, as :func:`.cxx.scan` gives them) inside, or after an early return
    from, a branch or loop whose condition depends on ``thread_names`` (the thread's own indices)."""
    text = "\n".join(codes)
    starts = line_starts(codes)
    own = _thread_values(text, thread_names)
    ranges: list[tuple[int, int, str]] = []  # (start, end, condition) of each branch the thread decides
    for m in _CONTROL.finditer(text):
        close = closing(text, m.end() - 1)
        condition = text[m.end() : close].strip()
        if not any(re.search(rf"\b{re.escape(name)}\b", condition) for name in own):
            continue
        end = statement_end(text, close + 1)
        ranges.append((close + 1, end, condition))
        after = _ELSE.match(text, end + 1)
        if m.group(1) == "if" and after:
            ranges.append((after.end(), statement_end(text, after.end()), condition))
    out: list[Divergent] = []
    for barrier in BARRIER.finditer(text):
        at = barrier.start()
        number = line_at(starts, at)
        inside = next((c for s, e, c in ranges if s <= at <= e), None)
        if inside is not None:
            out.append(Divergent(number, inside, returns=False))
            continue
        scope = _scope(text, at)  # a return leaves the function it is in: the barrier's own
        gone = next((c for s, e, c in ranges if e < at and s >= scope and _RETURN.search(text, s, e + 1)), None)
        if gone is not None:
            out.append(Divergent(number, gone, returns=True))
    return tuple(out)


def _scope(text: str, at: int) -> int:
    """Where the outermost brace block around ``at`` opens (a function the text defines), or 0: the body."""
    depth, start = 0, 0
    for n in range(at):
        if text[n] == "{":
            if depth == 0:
                start = n
            depth += 1
        elif text[n] == "}":
            depth = max(depth - 1, 0)
    if depth == 0:
        return 0
    head = text[max(0, start - 200) : start]
    return start if re.search(r"\)\s*(?:const\s*)?$", head) and not re.search(
        r"\b(?:if|for|while|switch)\s*\([^;{}]*\)\s*$", head) else 0


def _thread_values(text: str, names: frozenset[str]) -> frozenset[str]:
    """``names`` and the names the body assigns from them (`const int t = threadIdx.x % 32;`), to a fixed point."""
    own = set(names)
    assigned = [(m.group(1), m.group(2)) for m in _ASSIGNED.finditer(text)]
    grew = True
    while grew:
        grew = False
        for name, value in assigned:
            if name not in own and any(re.search(rf"\b{re.escape(n)}\b", value) for n in own):
                own.add(name)
                grew = True
    return frozenset(own)


def early_barrier(binding: Binding, template: Path, line: int, early: str) -> Diagnostic:
    """LG406, or LG408 in Grid.warps: a block-wide barrier in a grid that returns threads before the body.

    In Grid.warps the warps of a block work alone by design and the last block's warps with no rows have
    returned, so a barrier of the block is undefined behaviour on every shape that leaves one: an error. The
    thread grids (Grid.rows and friends) return threads only on a shape that leaves a partial block, which a
    project may rule out: a warning there."""
    if binding.kernel.grid.kind.whole_warps:  # its warps work alone: one with no rows returned whole
        return Diagnostic(
            "LG408", f"`__syncthreads()` in kernel `{binding.name}`, whose {early} before the body: the barrier "
            "is not reached by every thread of the block, which is undefined behaviour", Site(str(template), line),
            hint="a warp of Grid.warps orders its own work with __syncwarp(); for a barrier of the whole block, "
            "declare Grid.tiles or Grid.persistent, where every thread runs the whole body",
        )
    return Diagnostic(
        "LG406", f"`__syncthreads()` in kernel `{binding.name}`, whose {early} before the body: the barrier "
        "is not reached by every thread of the block", Site(str(template), line),
        hint="use Grid.tiles or Grid.persistent, where every thread runs the whole body; within a warp "
        "of Grid.warps, __syncwarp()",
    )


def divergent_barrier(binding: Binding, template: Path, line: int, branch: Divergent) -> Diagnostic:
    """LG411 for a barrier that only the threads taking (or not returned by) ``branch`` reach."""
    where = f"after a return under `{branch.condition}`" if branch.returns else f"under `{branch.condition}`"
    return Diagnostic(
        "LG411", f"`__syncthreads()` in kernel `{binding.name}` {where}, which depends on the thread: the threads "
        f"that {'returned' if branch.returns else 'do not take it'} never reach the barrier, which is undefined "
        "behaviour", Site(str(template), line),
        hint="put the barrier where every thread of the block arrives (before or after the branch), and keep "
        "threads with no work alive to it instead of returning them",
    )
