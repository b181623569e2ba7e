"""Generated program runners: validate each buffer once, then launch every kernel in order.

A generated module builds one :class:`ProgramRunner` per program from plain
data (:class:`ProgramSpec`) and the launchers of its kernels. A call checks
every buffer against its layout once (the same checks a launcher makes, so
the same LG6xx errors) and then launches the kernels without checking again.
:meth:`ProgramRunner.capture` records the launches into a CUDA graph over
the given buffers; :meth:`ProgramGraph.replay` runs them all with one call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema.diagnostics import Diagnostic
from .driver import Launch, check_stream, cupy_stream, device_arch, find_device, no_device_error
from .errors import LaunchError
from .launch import KernelLauncher
from .plan import KernelSpec, LayoutSpec, ParamSpec
from .validate import TorchWrites, buffer_extents, byte_size


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

    def prepare(self, arrays: Sequence[Any], device: int | None = None, stream: Any = None) -> list[_Prepared]:
        """Every buffer checked (raises LaunchError, nothing launched): each launch, ready to go.

        ``device`` None is the current one. Every check that needs no GPU runs
        first (the buffers, the grids, the autograd state of written torch
        tensors, the stream); LG615 when there is no device after all.
        """
        return self._prepare(tuple(arrays), find_device() if device is None else device, stream)[1]

    def _prepare(self, arrays: tuple[Any, ...], device: int | None, stream: Any) -> tuple[int, list[_Prepared]]:
        pointers, bound = self._buffers.bind(arrays, device)
        placed = (*pointers, *sorted(bound.items()))
        if placed != self._distinct:  # new addresses or new sizes: the spans may meet now
            self._check_distinct(pointers, bound)
            self._distinct = placed
        blocks = [launcher.blocks(bound) for launcher in self._launchers]  # LG617 before anything runs
        params = self._buffers.spec.params
        written = TorchWrites.of(params, arrays)
        if written is not None:
            written.check(self.spec.name, params, arrays)
        check_stream(stream, self.spec.name)
        if device is None:
            raise no_device_error(f"program `{self.spec.name}`")
        arch = device_arch(device)
        prepared = []
        for step, launcher, count in zip(self.spec.steps, self._launchers, blocks):
            kernel = launcher.spec
            values = [pointers[i] for i in step.buffers] + [bound[s] for s in kernel.symbols]
            prepared.append((launcher.function(device, arch), count, kernel.block, values))
        return device, prepared

    def _check_distinct(self, pointers: list[int], bound: dict[str, int]) -> None:
        """LG613 when two buffers share memory: the dataflow checks assumed they do not."""
        layouts = [b.layout for b in self.spec.buffers]
        pair = buffer_extents(layouts, bound).first_overlap(pointers)
        if pair is None:
            return
        (start, stop, name), (next_start, _, next_name) = sorted(
            (pointers[i], pointers[i] + byte_size(layouts[i], bound), self.spec.buffers[i].name) for i in pair)
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
        device, prepared = self._prepare(arrays, find_device(), stream)
        try:
            for (function, blocks, block, values), launcher in zip(prepared, self._launchers):
                if not blocks:
                    continue
                if launcher.spec.debug:
                    n = len(launcher.spec.params)
                    launcher.checked_launch(device, function, blocks, block, values[:n], values[n:], stream)
                else:
                    function(blocks, block, values, stream)
        finally:  # what ran wrote its buffers: autograd hears of it (torch's in-place rule)
            written = TorchWrites.of(self._buffers.spec.params, arrays)
            if written is not None:
                written.record(arrays)

    def capture(self, *arrays: Any) -> ProgramGraph:
        """Record the launches over these buffers into a CUDA graph; nothing runs until ``replay``.

        The graph holds the buffers' addresses: replaying it after one of them is
        freed or reallocated is wrong, so the graph keeps a reference to each.
        A debug build's checks need the host between launches, so a replay
        does not make them: run the program plainly to debug it.
        """
        import cupy

        prepared = self.prepare(arrays)  # checks and loads every kernel before the capture starts
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
        self._graph.launch(cupy_stream(stream, self.name))  # LG616 for what is no stream

    def __repr__(self) -> str:
        return f"<ProgramGraph {self.name}: {self.launches} launches>"


__all__ = ["BufferSpec", "ProgramGraph", "ProgramRunner", "ProgramSpec", "StepSpec"]
