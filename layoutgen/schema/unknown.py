"""Unknown field names (LG111): raised at once, or collected while layoutgen loads a spec module.

Renaming a field breaks every use of the old name. Raised at the first one, a
check would show one use per run; so while :func:`collecting_unknown_fields`
is active (``layoutgen`` loading a spec), a lookup of a name the layout lacks
records its diagnostic and hands back a *stand-in*: a new view of the same
columns as the view it was looked up on, which lets the module run on to its
next use. The loader reports every recorded name and refuses the spec, so no
stand-in reaches a check or a generated file. Outside it (a plain ``import``
of the spec), the lookup raises :class:`UnknownFieldError` as always.

While collecting, ``hasattr(Window, "nope")`` is True and reports LG111: a
spec module that probes for fields that way is told so, not misled.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TypeVar

from .diagnostics import Diagnostic, UnknownFieldError

V = TypeVar("V")


@dataclass(frozen=True, eq=False)
class UnknownField:
    """One lookup of a name the layout does not have: its LG111, and the stand-in view handed back."""

    diagnostic: Diagnostic
    stand_in: object  # a View; identity tells the loader which bindings and launches it reached


_COLLECTED: ContextVar[list[UnknownField] | None] = ContextVar("layoutgen_unknown_fields", default=None)


@contextmanager
def collecting_unknown_fields() -> Iterator[list[UnknownField]]:
    """Record unknown field names instead of raising them, in the list yielded (in lookup order)."""
    collected: list[UnknownField] = []
    token = _COLLECTED.set(collected)
    try:
        yield collected
    finally:
        _COLLECTED.reset(token)


def is_stand_in(view: object) -> bool:
    """Whether ``view`` is a stand-in of the current collection: its fields are unknown too, not news."""
    collected = _COLLECTED.get()
    return collected is not None and any(u.stand_in is view for u in collected)


def unknown_field(diagnostic: Diagnostic, stand_in: Callable[[], V]) -> V:
    """Raise ``diagnostic`` (LG111) as :class:`UnknownFieldError`, or, while collecting, record it and
    return a new ``stand_in()``."""
    collected = _COLLECTED.get()
    if collected is None:
        raise UnknownFieldError(diagnostic)
    view = stand_in()
    collected.append(UnknownField(diagnostic, view))
    return view
