"""Generated program runners: validate each buffer once, then launch every kernel in order.

A generated module builds one :class:`ProgramRunner` per program from plain
data (:class:`ProgramSpec`) and the launchers of its kernels. A call checks
every buffer against its layout once (the same checks a launcher makes, so
the same LG6xx errors) and then launches the kernels without checking again.
:meth:`ProgramRunner.capture` records the launches into a CUDA graph over
the given buffers; :meth:`ProgramGraph.replay` runs them all with one call.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema.diagnostics import Diagnostic
from .driver import Launch, cupy_stream
from .errors import LaunchError
from .launch import KernelLauncher, current_device, device_arch
from .plan import KernelSpec, LayoutSpec, ParamSpec


@dataclass(frozen=True)
class BufferSpec:
    """One buffer of a program: its name, layout, how the program uses it, the alignment its kernels need."""

    name: str
    layout: LayoutSpec
    access: str  # "in" when no launch writes it, "out" when none reads it, else "inout"
    align: int


@dataclass(frozen=True)
class StepSpec:
    """One launch: the generated kernel and, for each of its parameters, the index of the buffer it gets."""

    kernel: str
    buffers: tuple[int, ...]


@dataclass(frozen=True)
class ProgramSpec:
    """A program as the runtime runs it: buffers in argument order, then the launches in order."""

    name: str
    buffers: tuple[BufferSpec, ...]
    steps: tuple[StepSpec, ...]


#: One prepared launch: the loaded kernel, blocks, threads per block and the 8-byte values.
_Prepared = tuple[Launch, int, int, list[int]]


class ProgramRunner:
    """Runs one program: checks its buffers once a call, then launches each kernel."""

    def __init__(self, spec: ProgramSpec, launchers: Sequence[KernelLauncher]) -> None:
        if len(launchers) != len(spec.steps):
            raise ValueError(f"program `{spec.name}` has {len(spec.steps)} launches but {len(launchers)} launchers")
        self.spec = spec
        self._launchers = tuple(launchers)
        # The buffers are checked as the parameters of one pseudo-kernel: the same checks, messages and
        # caching as a launcher's, with the program's name where a launcher names its kernel.
        params = tuple(ParamSpec(b.name, b.access, b.layout, b.layout.name, b.align) for b in spec.buffers)
        self._buffers = KernelLauncher(
            KernelSpec(spec.name, "", params, symbols=(), grid_param=0, per_row=1, block=1), Path(), ""
        )
        self._distinct: tuple[object, ...] = ()  # the last pointers and sizes found not to overlap

    def prepare(self, arrays: Sequence[Any], device: int | None = None) -> list[_Prepared]:
        """Every buffer checked (raises LaunchError, nothing launched): each launch, ready to go."""
        device = current_device() if device is None else device
        pointers, bound = self._buffers.bind(tuple(arrays), device)
        placed = (*pointers, *sorted(bound.items()))
        if placed != self._distinct:  # new addresses or new sizes: the spans may meet now
            self._check_distinct(pointers, bound)
            self._distinct = placed
        arch = device_arch(device)
        prepared = []
        for step, launcher in zip(self.spec.steps, self._launchers):
            kernel = launcher.spec
            block = kernel.block
            blocks = (launcher.grid(bound) + block - 1) // block
            values = [pointers[i] for i in step.buffers] + [bound[s] for s in kernel.symbols]
            prepared.append((launcher.function(device, arch), blocks, block, values))
        return prepared

    def _check_distinct(self, pointers: list[int], bound: dict[str, int]) -> None:
        """LG613 when two buffers share memory: the dataflow checks assumed they do not."""
        spans = []
        for b, ptr in zip(self.spec.buffers, pointers):
            size = b.layout.itemsize * math.prod(b.layout.shape_of(bound))
            spans.append((ptr, ptr + size, b.name))
        spans.sort()
        for (start, stop, name), (next_start, _, next_name) in zip(spans, spans[1:]):
            if next_start < stop:
                raise LaunchError(Diagnostic(
                    "LG613", f"program `{self.spec.name}` got the same memory for buffers `{name}` and `{next_name}` "
                    f"(0x{start:x}..0x{stop:x} and 0x{next_start:x}..)",
                    hint="give every buffer its own array: the program's dataflow checks count on it",
                ))

    def __call__(self, *arrays: Any, stream: Any = None) -> None:
        """Check every buffer, then launch each kernel in order on ``stream`` (the current CuPy stream).

        In a debug build each launch is followed by its checks (see
        :mod:`.debug`), so a fault or a NaN is reported at the kernel that made it.
        """
        device = current_device()
        for (function, blocks, block, values), launcher in zip(self.prepare(arrays, device), self._launchers):
            if not blocks:
                continue
            if launcher.spec.debug:
                n = len(launcher.spec.params)
                launcher.checked_launch(device, function, blocks, block, values[:n], values[n:], stream)
            else:
                function(blocks, block, values, stream)

    def capture(self, *arrays: Any) -> ProgramGraph:
        """Record the launches over these buffers into a CUDA graph; nothing runs until ``replay``.

        The graph holds the buffers' addresses: replaying it after one of them is
        freed or reallocated is wrong, so the graph keeps a reference to each.
        A debug build's checks need the host between launches, so a replay
        does not make them: run the program plainly to debug it.
        """
        import cupy

        prepared = self.prepare(arrays)  # compiles and loads every kernel before the capture starts
        capture_stream = cupy.cuda.Stream(non_blocking=True)
        capture_stream.begin_capture()
        try:
            for function, blocks, block, values in prepared:
                if blocks:
                    function(blocks, block, values, capture_stream)
        except BaseException:
            try:  # end the capture, but let the launch's own error be the one reported
                capture_stream.end_capture()
            except Exception:  # noqa: S110 - the capture is abandoned either way
                pass
            raise
        graph = capture_stream.end_capture()
        return ProgramGraph(self.spec.name, graph, tuple(arrays), sum(1 for p in prepared if p[1]))


class ProgramGraph:
    """A program's launches captured into a CUDA graph over fixed buffers."""

    def __init__(self, name: str, graph: Any, arrays: tuple[Any, ...], launches: int) -> None:
        self.name = name
        self.launches = launches
        self._graph = graph
        self._arrays = arrays  # keeps the captured addresses alive

    def replay(self, stream: Any = None) -> None:
        """Run every launch of the program on ``stream`` (the current CuPy stream) with one graph launch."""
        self._graph.launch(cupy_stream(stream))

    def __repr__(self) -> str:
        return f"<ProgramGraph {self.name}: {self.launches} launches>"


__all__ = ["BufferSpec", "ProgramGraph", "ProgramRunner", "ProgramSpec", "StepSpec"]
