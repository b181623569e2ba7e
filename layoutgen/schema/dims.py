"""Dimensions and the sizes built from them.

A :class:`Dim` is a named size bound at launch (``B``) or a static one
(``56``). Strides and element counts of a layout are products of dims and a
constant: a :class:`Size` keeps them symbolic until launch.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from .diagnostics import Site, caller_site, layout_error
from .names import name_problem


@dataclass(frozen=True)
class Dim:
    """A size: symbolic (``Dim("B")``, bound at launch) or static (``Dim.of(56)``)."""

    name: str | None = None
    size: int | None = None

    def __post_init__(self) -> None:
        if self.size is None:
            problem = name_problem(self.name)
            if problem:
                code, reason = problem
                raise layout_error(code, f"a symbolic dim's name {reason}", caller_site())
        elif not _is_int(self.size) or self.size < 1:
            raise layout_error(
                "LG103", f"a static dim must be a positive integer, got {self.size!r}", caller_site()
            )

    @staticmethod
    def of(size: int) -> Dim:
        return Dim(None, size)

    @staticmethod
    def expr(size: Size) -> Dim:
        """A dim equal to ``size``: static, a plain symbol, or a product such as ``48*D``.

        A product is a derived extent (the width of a row of symbolic fields):
        it names no symbol of its own and is never bound by itself.
        """
        if size.is_static:
            return Dim.of(size.coef)
        if size.coef == 1 and len(size.symbols) == 1:
            return Dim(size.symbols[0])
        product = object.__new__(Dim)
        object.__setattr__(product, "name", str(size))
        object.__setattr__(product, "size", None)
        return product

    @property
    def is_derived(self) -> bool:
        """Whether this dim is a product of others (``48*D``), not a symbol of its own."""
        return self.size is None and not str(self.name).isidentifier()

    @property
    def is_static(self) -> bool:
        return self.size is not None

    def __str__(self) -> str:
        return str(self.size) if self.size is not None else str(self.name)


def dims(names: str) -> tuple[Dim, ...]:
    """Symbolic dims from a space-separated string: ``B, K = dims("B K")``."""
    if not isinstance(names, str):
        raise layout_error("LG110", f"dims() takes a string of names, got {names!r}", caller_site())
    return tuple(Dim(n) for n in names.split())


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def as_dim(value: object, what: str, site: Site | None) -> Dim:
    """A shape entry as a Dim: a Dim, a positive int, or a symbol's name."""
    if isinstance(value, Dim):
        if value.is_derived:  # `QKV.shape[-1]`: a product, which generated code cannot declare as a symbol
            raise layout_error(
                "LG110", f"{what} is `{value}`, a product of dims taken from another shape; a dim must be a "
                f"size or a symbol of its own", site, hint="declare a symbol with dims(\"...\") or write the size",
            )
        return value
    if _is_int(value):
        if value < 1:  # type: ignore[operator]
            raise layout_error("LG103", f"{what} must be positive, got {value}", site)
        return Dim.of(value)  # type: ignore[arg-type]
    if isinstance(value, str):
        problem = name_problem(value)
        if problem:
            raise layout_error(problem[0], f"{what} {problem[1]}", site)
        return Dim(value)
    raise layout_error("LG110", f"{what} must be a Dim, an int or a name, got {value!r}", site)


def as_shape(values: object, what: str, site: Site | None) -> tuple[Dim, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise layout_error("LG110", f"{what} must be a list of dims, got {values!r}", site)
    return tuple(as_dim(v, f"{what}[{i}]", site) for i, v in enumerate(values))


@dataclass(frozen=True)
class Size:
    """A constant times a product of symbolic dims: ``56*K``, ``B*K``, ``40``."""

    coef: int
    symbols: tuple[str, ...] = ()

    @staticmethod
    def product(factors: Iterable[Dim], coef: int = 1) -> Size:
        symbols: list[str] = []
        for d in factors:
            if d.size is not None:
                coef *= d.size
            else:
                symbols.append(str(d.name))
        return Size(coef, tuple(sorted(symbols)))

    @property
    def is_static(self) -> bool:
        return not self.symbols

    def evaluate(self, bound: Mapping[str, int]) -> int:
        return self.coef * math.prod(bound[s] for s in self.symbols)

    def c_expr(self, spell: Mapping[str, str] | None = None) -> str:
        """C++ for this size in 64-bit arithmetic; ``spell`` renames symbols."""
        spell = spell or {}
        terms = [spell.get(s, s) for s in self.symbols]
        if self.coef != 1 or not terms:
            terms.append(f"{self.coef}LL" if terms else str(self.coef))
        if len(terms) > 1:
            terms[0] = f"(long long){terms[0]}"
        return " * ".join(terms)

    def __str__(self) -> str:
        terms = list(self.symbols)
        if self.coef != 1 or not terms:
            terms.append(str(self.coef))
        return "*".join(terms)


def shape_text(dims: Iterable[object]) -> str:
    """A shape as messages and generated comments spell it: ``[B, K, 56]``."""
    return "[" + ", ".join(str(d) for d in dims) + "]"


def strides_text(strides: Iterable[object]) -> str:
    """Strides as messages and generated comments spell them: ``(K*56, 56, 1)``."""
    return "(" + ", ".join(str(s) for s in strides) + ")"
