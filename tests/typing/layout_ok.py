"""mypy --strict must accept this file: every array has the layout its parameter expects.

It is type-checked only (tests/test_typing.py), never run.
"""

from __future__ import annotations

import cupy

from generated.vsn import (
    Bias,
    Context,
    Features,
    Weights,
    Window,
    context_broadcast,
    variable_selection_bwd,
    variable_selection_fwd,
)
from layoutgen.runtime.typed import Array, unwrap


def forward(x: Array[Window], w: Array[Weights], b: Array[Bias]) -> tuple[Array[Features], Array[Features]]:
    batch, series = x.data.shape[:2]
    gates: Array[Features] = Features.empty(batch, series)
    y = Features.empty(batch, series)
    variable_selection_fwd(x, w, b, gates, y)
    return gates, y


def backward(x: Array[Window], w: Array[Weights], gates: Array[Features], grad_y: Array[Features]) -> None:
    grad_x = Features.empty(4, 8)
    grad_w, grad_b = Weights.empty(40), Bias.empty()
    variable_selection_bwd(x, w, gates, grad_y, grad_x, grad_w, grad_b, stream=None)


def main() -> None:
    raw = cupy.zeros((4, 8, 56), dtype=cupy.float32)  # CuPy has no types: an untyped array is accepted
    variable_selection_fwd(raw, Weights.empty(40), Bias.empty(), Features.empty(4, 8), cupy.empty((4, 8, 40)))
    window: Array[Window] = Window.wrap(raw)  # wrapping types it
    context_broadcast(Context.empty(4), window, stream=cupy.cuda.Stream())
    gates, y = forward(window, Weights.wrap(cupy.ones((40, 40), dtype=cupy.float32)), Bias.empty())
    backward(window, Weights.empty(40), gates, y)
    plain = unwrap(y)  # the CuPy array again
    variable_selection_fwd(window, Weights.empty(40), Bias.empty(), plain, Features.wrap(plain))
