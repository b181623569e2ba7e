"""The launch of an existing kernel: layoutgen's launch values put in the order of the kernel's own signature.

Every launch path (the launcher, the debug build, program runners, graph capture) hands a kernel's
:class:`~.driver.Launch` its values as layoutgen orders them: the arrays' pointers, the scalars' values, the
layout symbols' sizes. An existing kernel's ``__global__`` takes its parameters in the team's order, with
integers (row counts, strides, pitches, offsets) that are products of those sizes. :class:`RawLaunch` stands
between: per parameter of the ``__global__`` (:class:`~.plan.RawArg`), a pointer, a scalar, or the product
it carries, then the loaded kernel's own launch. So everything before it stays as it is for every kernel.

It is not a ``PackedLaunch``: the compiled path packs layoutgen's order itself, so it is never taught an
existing kernel's plan and hands each call to the Python path (:func:`.fastpath.learn`).

:func:`check_values` refuses, before a launch, a carried value its C integer cannot hold (LG641).
"""

from __future__ import annotations

from typing import Any

from .driver import Launch
from .errors import launch_error
from .plan import KernelSpec


class RawLaunch:
    """``base`` (the loaded ``__global__``'s launch) given its values in the order of its signature."""

    def __init__(self, base: Launch, spec: KernelSpec) -> None:
        self._base = base
        n_arrays, n_scalars = len(spec.params), len(spec.scalars)
        symbol_at = {s: n_arrays + n_scalars + i for i, s in enumerate(spec.symbols)}
        # per parameter: (the value's index, or -1) and, for a product, (coef, indices of its symbols)
        self._order = tuple(
            (r.index if r.kind == "pointer" else n_arrays + r.index, 0, ()) if r.kind != "value"
            else (-1, r.coef, tuple(symbol_at[s] for s in r.symbols)) for r in spec.raw
        )

    @property
    def handle(self) -> int:
        return self._base.handle

    def values(self, values: list[int]) -> list[int]:
        """The kernel's launch values from layoutgen's (pointers, scalars, symbols)."""
        out = []
        for index, coef, symbols in self._order:
            if index >= 0:
                out.append(values[index])
                continue
            for s in symbols:
                coef *= values[s]
            out.append(coef & 0xFFFFFFFFFFFFFFFF)  # two's complement: the driver copies the type's own bytes
        return out

    def __call__(self, blocks: int, block: int, values: list[int], stream: Any, shared: int = 0) -> None:
        self._base(blocks, block, self.values(values), stream, shared)


def raw_launch(base: Launch, spec: KernelSpec) -> Launch:
    """``base`` as ``spec`` launches it: through a :class:`RawLaunch` for an existing kernel, else itself."""
    return RawLaunch(base, spec) if spec.raw else base


def check_values(spec: KernelSpec, bound: dict[str, int]) -> None:
    """LG641 where a carried value of ``spec``'s launch with these symbols does not fit its C integer."""
    for r in spec.raw:
        if r.kind != "value":
            continue
        value = r.value(bound)
        if value > r.limit:
            sizes = ", ".join(f"`{s}` = {bound[s]}" for s in r.symbols)
            raise launch_error(
                "LG641", f"{r.label} of `{spec.name}` must be at most {r.limit}, got {value} ({sizes})",
                hint="launch it on smaller arrays, or widen the kernel's parameter (`long long`)")
