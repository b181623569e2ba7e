"""Unifying a kernel's shape symbols with the dims of the views bound to it."""

from __future__ import annotations

from dataclasses import dataclass

from ..schema import View
from ..schema.dims import Dim
from .kernels import Binding, Param


@dataclass(frozen=True)
class Origin:
    """Which parameter and axis fixed a symbol's value."""

    param: str
    axis: int
    view: View


@dataclass(frozen=True)
class Conflict:
    """A symbol, or a static dim, that takes two values."""

    symbol: str
    param: Param
    axis: int
    view: View
    expected: Dim
    actual: Dim
    origin: Origin | None  # None when the expectation is a static dim of the parameter


@dataclass(frozen=True)
class Unified:
    """The kernel's symbols resolved: each to a static size or a layout's symbolic dim."""

    values: tuple[tuple[str, Dim], ...]  # kernel symbol -> the view dim it equals
    conflicts: tuple[Conflict, ...]
    rank_errors: tuple[tuple[Param, View], ...]

    @property
    def static(self) -> dict[str, int]:
        return {s: d.size for s, d in self.values if d.size is not None}

    @property
    def symbolic(self) -> dict[str, str]:
        """Kernel symbol -> the layout dim's name it is bound to at launch."""
        return {s: str(d.name) for s, d in self.values if d.size is None}


def _same(a: Dim, b: Dim) -> bool:
    return a.size == b.size if (a.size is not None or b.size is not None) else a.name == b.name


def unify(binding: Binding) -> Unified:
    values: dict[str, Dim] = {}
    origins: dict[str, Origin] = {}
    conflicts: list[Conflict] = []
    rank_errors: list[tuple[Param, View]] = []
    for param, view in binding.pairs:
        if len(param.shape) != len(view.shape):
            rank_errors.append((param, view))
            continue
        for axis, (want, got) in enumerate(zip(param.shape, view.shape)):
            if want.size is not None:
                if not _same(want, got):
                    conflicts.append(Conflict(str(want), param, axis, view, want, got, None))
                continue
            symbol = str(want.name)
            if symbol not in values:
                values[symbol] = got
                origins[symbol] = Origin(param.name, axis, view)
            elif not _same(values[symbol], got):
                conflicts.append(Conflict(symbol, param, axis, view, values[symbol], got, origins[symbol]))
    return Unified(tuple(values.items()), tuple(conflicts), tuple(rank_errors))
