"""A validated launch: what a launcher's checks found for one kind of call, and the plan it keeps for it.

:class:`KernelLauncher <.launch.KernelLauncher>` validates a call's arrays once per key (their types, shapes,
strides, dtypes and devices): the outcome, all but the pointers, is a :class:`Checked`; with the kernel loaded on
the device it is a :class:`Plan`, which later calls of the same key reuse (the compiled path is taught it too).
The grid's block count is checked here (LG617), before anything is compiled.
"""

from __future__ import annotations

from dataclasses import dataclass

from .driver import Launch
from .errors import launch_error
from .plan import KernelSpec
from .validate import TorchWrites

#: Blocks a one-dimensional CUDA grid may have (gridDim.x, every device since compute capability 3.0).
#: Past it the driver refuses the launch, or CuPy truncates the count and launches part of the work.
MAX_GRID_BLOCKS = 2**31 - 1


def grid_blocks(spec: KernelSpec, threads: int, bound: dict[str, int]) -> int:
    """Blocks a launch of ``spec`` needs for ``threads`` (a persistent grid's: one per tile, at most; a rule's
    "threads" are rows); LG617 when that is more than a CUDA grid has (nothing is launched)."""
    block, rule = spec.block, spec.count
    blocks = (threads + block - 1) // block if rule is None else rule.blocks(threads, bound)
    if blocks > MAX_GRID_BLOCKS:
        sizes = ", ".join(f"`{s}` = {bound[s]}" for s in sorted(bound))
        need = f"{threads} threads ({sizes}): {blocks} blocks of {block}" if rule is None else (
            f"{blocks} blocks of {block} threads ({sizes})")
        raise launch_error(
            "LG617", f"`{spec.name}` needs {need}, but a CUDA grid has at most {MAX_GRID_BLOCKS} blocks",
            hint="launch it on smaller arrays, several times (where rows are independent, slices `a[i:j]` of "
            "the leading axis are packed arrays of the same layout)")
    return blocks


@dataclass(frozen=True)
class Checked:
    """What :meth:`KernelLauncher.check` found for one set of array kinds and shapes: all but the pointers."""

    blocks: int
    block: int
    symbols: tuple[int, ...]
    masks: tuple[int, ...]  # alignment - 1 of each parameter
    any_mask: int  # the masks or-ed: a pointer with none of these bits set is aligned for every parameter
    pairs: tuple[tuple[int, int, int, int, bool], ...]  # Extents.pairs: arguments that must not overlap
    written: TorchWrites | None  # written parameters that got a torch tensor
    bound: dict[str, int]  # the symbols' sizes (for messages)
    torch_arrays: int  # how many arrays are torch tensors: a launch given no stream follows torch's where all are


@dataclass(frozen=True)
class Plan:
    """A validated launch: the checks' outcome and the loaded kernel on ``device``."""

    device: int
    checked: Checked
    launch: Launch
