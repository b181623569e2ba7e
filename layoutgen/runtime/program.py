"""Generated program runners: validate each buffer once, then launch every kernel in order.

A generated module builds one :class:`ProgramRunner` per program from plain
data (:class:`ProgramSpec`) and the launchers of its kernels. A call checks
every buffer against its layout once (the same checks a launcher makes, so
the same LG6xx errors) and every value against its scalar type, and then
launches the kernels without checking again. What a run launches (each
kernel's blocks, shared memory and 8-byte values but the buffers' pointers)
is prepared once per device, set of sizes and values, and kept; where the
compiled launch path is active, one call launches every kernel in C
(:func:`.fastpath.program_steps`). :meth:`ProgramRunner.capture`
records the launches into a CUDA graph over the given buffers and values;
:meth:`ProgramGraph.replay` runs them all with one call. A graph keeps the
values it was captured with: a replay given another value is refused
(LG623) rather than run with the old one, so a value that changes every
replay belongs in a buffer, or in a new capture.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..schema.diagnostics import Diagnostic
from ..schema.scalars import describe_value
from ..schema.words import plural
from . import fastpath
from .driver import (Launch, check_stream, cupy_stream, device_arch, find_device, launch_stream,
                     no_device_error, own_streams)
from .errors import LaunchError, launch_error
from .launch import KernelLauncher
from .occupancy import size_launch
from .plan import KernelSpec, LayoutSpec, ParamSpec, ScalarSpec
from .validate import TorchWrites, buffer_extents, byte_size, check_scalar


@dataclass(frozen=True)
class BufferSpec:
    """One buffer of a program: its name, layout, how the program uses it, the alignment its kernels need."""

    name: str
    layout: LayoutSpec
    access: str  # "in" when no launch writes it, "out" when none reads it, else "inout"
    align: int


@dataclass(frozen=True)
class StepSpec:
    """One launch: the generated kernel, for each of its array parameters the index of the buffer it gets,
    and for each of its scalars the 8-byte value of a constant (an int) or the name of a program value."""

    kernel: str
    buffers: tuple[int, ...]
    scalars: tuple[int | str, ...] = ()

    def __post_init__(self) -> None:
        for given in self.scalars:
            if not isinstance(given, str) and not (type(given) is int and 0 <= given < 2**64):
                raise ValueError(f"the scalars of step `{self.kernel}` must be value names or 8-byte launch "
                                 f"values, got {given!r}")


@dataclass(frozen=True)
class ProgramSpec:
    """A program as the runtime runs it: buffers in argument order, the launches in order, and the values
    the caller gives each run (after the buffers)."""

    name: str
    buffers: tuple[BufferSpec, ...]
    steps: tuple[StepSpec, ...]
    values: tuple[ScalarSpec, ...] = ()


#: One prepared launch: the loaded kernel, blocks, threads per block and the 8-byte values.
_Prepared = tuple[Launch, int, int, list[int]]


@dataclass(frozen=True)
class _Ready:
    """A run's launches prepared for one device, set of sizes and values: each step's loaded kernel (as
    ``launcher.function`` gave it: a new one is prepared again), its sized launch, blocks, threads per block
    and the values after its pointers; and the compiled path's Steps of them, or None."""

    functions: tuple[Launch, ...]
    launches: tuple[tuple[Launch, int, int, tuple[int, ...]], ...]
    steps: Any

    def prepared(self, steps: Sequence[StepSpec], pointers: Sequence[int], first: int = 0) -> list[_Prepared]:
        """The launches from step ``first`` on, with the buffers' ``pointers``."""
        return [(launch, count, block, [*(pointers[i] for i in step.buffers), *constants])
                for step, (launch, count, block, constants) in zip(steps[first:], self.launches[first:])]


class ProgramRunner:
    """Runs one program: checks its buffers once a call, then launches each kernel."""

    def __init__(self, spec: ProgramSpec, launchers: Sequence[KernelLauncher]) -> None:
        if len(launchers) != len(spec.steps):
            raise ValueError(f"program `{spec.name}` has {len(spec.steps)} launches but {len(launchers)} launchers")
        _check_scalars(spec, launchers)
        self.spec = spec
        self._launchers = tuple(launchers)
        # The buffers are checked as the parameters of one pseudo-kernel: the same checks, messages and
        # caching as a launcher's, with the program's name where a launcher names its kernel.
        params = tuple(ParamSpec(b.name, b.access, b.layout, b.layout.name, b.align) for b in spec.buffers)
        self._buffers = KernelLauncher(
            KernelSpec(spec.name, "", params, symbols=(), grid_param=0, per_row=1, block=1), Path(), ""
        )
        self._distinct: tuple[object, ...] = ()  # the last pointers and sizes found not to overlap
        self._ready: dict[tuple[Any, ...], _Ready] = {}  # (device, sizes, values) -> the launches prepared

    def prepare(self, arrays: Sequence[Any], device: int | None = None, stream: Any = None,
                values: Sequence[Any] = ()) -> list[_Prepared]:
        """Every buffer and value checked (raises LaunchError, nothing launched): each launch, ready to go.

        ``device`` None is the current one. Every check that needs no GPU runs
        first (the values, the buffers, the grids, the autograd state of written
        torch tensors, the stream); LG615 when there is no device after all.
        """
        slots = self.value_slots(tuple(values))
        _, ready, pointers = self._prepare(tuple(arrays), slots, find_device() if device is None else device,
                                           stream)
        return ready.prepared(self.spec.steps, pointers)

    def value_slots(self, values: tuple[Any, ...]) -> dict[str, int]:
        """The 8-byte launch value of each program value, by name: LG601 for a wrong count, LG620..LG622 for a
        value its scalar type cannot take (named `program.value`)."""
        spec = self.spec
        if len(values) != len(spec.values):
            raise launch_error("LG601", f"program `{spec.name}` takes {plural(len(spec.values), 'value')} ("
                               f"{', '.join(v.name for v in spec.values) or 'none'}), got {len(values)}")
        return {v.name: check_scalar(spec.name, v, given) for v, given in zip(spec.values, values)}

    def _split(self, arguments: tuple[Any, ...]) -> tuple[tuple[Any, ...], dict[str, int]]:
        """The buffers (the first arguments) and the values' launch values (the rest)."""
        n = len(self.spec.buffers)
        return arguments[:n], self.value_slots(arguments[n:])

    def _prepare(self, arrays: tuple[Any, ...], slots: dict[str, int], device: int | None,
                 stream: Any) -> tuple[int, _Ready, list[int]]:
        pointers, bound = self._buffers.bind(arrays, device)
        sizes = tuple(sorted(bound.items()))
        placed = (*pointers, *sizes)
        if placed != self._distinct:  # new addresses or new sizes: the spans may meet now
            self._check_distinct(pointers, bound)
            self._distinct = placed
        key = (device, sizes, tuple(slots.values()))
        ready = self._ready.get(key)
        blocks = [launcher.blocks(bound) for launcher in self._launchers] if ready is None else []  # LG617 first
        params = self._buffers.spec.params
        written = TorchWrites.of(params, arrays)
        if written is not None:
            written.check(self.spec.name, params, arrays)
        check_stream(stream, self.spec.name)
        if device is None:
            raise no_device_error(f"program `{self.spec.name}`")
        arch = device_arch(device)
        functions = tuple(launcher.function(device, arch) for launcher in self._launchers)
        if ready is None or any(f is not g for f, g in zip(functions, ready.functions)):
            if not blocks:
                blocks = [launcher.blocks(bound) for launcher in self._launchers]
            ready = self._ready_for(functions, blocks, bound, slots, device)
            if len(self._ready) >= 64:  # many sizes or values: start over rather than grow
                self._ready.clear()
            self._ready[key] = ready
        return device, ready, pointers

    def _ready_for(self, functions: tuple[Launch, ...], blocks: list[int], bound: dict[str, int],
                   slots: dict[str, int], device: int) -> _Ready:
        """Each step's launch sized (each kernel's shared memory and a persistent grid's blocks, LG624 and
        LG625 before anything runs) with the values after its pointers."""
        launches = []
        for step, launcher, function, count in zip(self.spec.steps, self._launchers, functions, blocks):
            kernel = launcher.spec
            scalars = [slots[given] if isinstance(given, str) else given for given in step.scalars]
            sized, count = size_launch(kernel, function, device, count, bound)
            launches.append((sized, count, kernel.block, (*scalars, *(bound[s] for s in kernel.symbols))))
        compiled = all(launcher._fast is not None for launcher in self._launchers)  # none is a debug build
        steps = fastpath.program_steps(self.spec.name, len(self.spec.buffers),
                                       [(sized, count, block, step.buffers, constants)
                                        for step, (sized, count, block, constants) in zip(self.spec.steps, launches)]
                                       ) if compiled else None
        return _Ready(functions, tuple(launches), steps)

    def _check_distinct(self, pointers: list[int], bound: dict[str, int]) -> None:
        """LG613 when two buffers share memory: the dataflow checks assumed they do not."""
        layouts = [b.layout for b in self.spec.buffers]
        pair = buffer_extents(layouts, bound).first_overlap(pointers)
        if pair is None:
            return
        (start, stop, name), (next_start, next_stop, next_name) = sorted(
            (pointers[i], pointers[i] + byte_size(layouts[i], bound), self.spec.buffers[i].name) for i in pair)
        raise LaunchError(Diagnostic(
            "LG613", f"program `{self.spec.name}` got the same memory for buffers `{name}` and `{next_name}` "
            f"(0x{start:x}..0x{stop:x} and 0x{next_start:x}..0x{next_stop:x})",
            hint="give every buffer its own array: the program's dataflow checks count on it",
        ))

    def __call__(self, *arguments: Any, stream: Any = None) -> None:
        """Check every buffer and value (given after the buffers), then launch each kernel in order on
        ``stream`` (None: the current stream of the buffers' library, as for a launcher).

        In a debug build each launch is followed by its checks (see
        :mod:`.debug`), so a fault or a NaN is reported at the kernel that made it.
        """
        device = find_device()
        arrays, slots = self._split(arguments)
        device, ready, pointers = self._prepare(arrays, slots, device, stream)
        if stream is None:  # the buffers' framework's current stream (LG616 where two libraries' differ)
            stream = launch_stream(None, arrays, own_streams(arrays), self.spec.name, device)
        try:
            # The compiled path launches every step it can, in order; the Python path launches the rest (and
            # reports why the compiled one stopped: LG609 for a launch the driver refused).
            done = 0 if ready.steps is None else ready.steps.launch(tuple(pointers), stream)
            rest = ready.prepared(self.spec.steps, pointers, done) if done < len(ready.launches) else []
            for (function, blocks, block, values), launcher in zip(rest, self._launchers[done:]):
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

    def capture(self, *arguments: Any) -> ProgramGraph:
        """Record the launches over these buffers and values into a CUDA graph; nothing runs until ``replay``.

        The graph holds the buffers' addresses: replaying it after one of them is
        freed or reallocated is wrong, so the graph keeps a reference to each.
        It holds the values too, as they were given: a replay runs with them.
        A debug build's checks need the host between launches, so a replay
        does not make them: run the program plainly to debug it.
        """
        import cupy

        arrays, slots = self._split(arguments)
        device, ready, pointers = self._prepare(arrays, slots, find_device(), None)  # checked, kernels loaded, first
        prepared = ready.prepared(self.spec.steps, pointers)
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
        given = arguments[len(arrays):]
        captured = tuple((v, given[n], slots[v.name]) for n, v in enumerate(self.spec.values))
        return ProgramGraph(self.spec.name, graph, tuple(arrays), sum(1 for p in prepared if p[1]), captured,
                            device)


def _check_scalars(spec: ProgramSpec, launchers: Sequence[KernelLauncher]) -> None:
    """ValueError when a step's scalars do not match its kernel's: a generated module that disagrees with the
    runtime (plan data, never a user's input)."""
    values = {v.name: v for v in spec.values}
    for step, launcher in zip(spec.steps, launchers):
        scalars = launcher.spec.scalars
        if len(step.scalars) != len(scalars):
            raise ValueError(f"step `{step.kernel}` of program `{spec.name}` gives {len(step.scalars)} scalars to "
                             f"a kernel of {len(scalars)}")
        for given, scalar in zip(step.scalars, scalars):
            if isinstance(given, str) and (given not in values or values[given].dtype != scalar.dtype):
                raise ValueError(f"step `{step.kernel}` of program `{spec.name}` gives `{scalar.name}` "
                                 f"({scalar.dtype}) the value `{given}`, which the program does not have as one")


#: A captured value: its spec, what the capture was given, and its 8-byte launch value.
_Captured = tuple[ScalarSpec, Any, int]


class ProgramGraph:
    """A program's launches captured into a CUDA graph over fixed buffers and values."""

    def __init__(self, name: str, graph: Any, arrays: tuple[Any, ...], launches: int,
                 values: tuple[_Captured, ...] = (), device: int = 0) -> None:
        self.name = name
        self.device = device  # where it was captured: a replay given no stream follows that device's torch stream
        self.launches = launches
        self._graph = graph
        self._arrays = arrays  # keeps the captured addresses alive
        self._values = {spec.name: (spec, given, slot) for spec, given, slot in values}

    @property
    def values(self) -> dict[str, Any]:
        """The values the graph was captured with, by name, as they were given."""
        return {name: given for name, (_, given, _) in self._values.items()}

    def replay(self, stream: Any = None, **values: Any) -> None:
        """Run every launch of the program on ``stream`` with one graph launch (None: the current stream of
        the buffers' library, as for a launcher: torch's where they are all torch tensors, on the device of the
        capture).

        ``values`` may repeat values the graph was captured with; another value
        (or a name the program has not) is LG623, and nothing runs.
        """
        for name, given in values.items():
            self._check_value(name, given)
        if stream is None:
            stream = launch_stream(None, self._arrays, own_streams(self._arrays), self.name, self.device)
        self._graph.launch(cupy_stream(stream, self.name))  # LG616 for what is no stream

    def _check_value(self, name: str, given: Any) -> None:
        captured = self._values.get(name)
        if captured is None:
            names = ", ".join(f"`{n}`" for n in self._values) or "none"
            raise launch_error("LG623", f"`replay` of program `{self.name}`'s graph takes the values it was captured "
                               f"with ({names}), got `{name}`",
                               hint="name a value of the program's, or give none: the graph runs with its own")
        spec, first, slot = captured
        if check_scalar(self.name, spec, given) != slot:  # LG620..LG622 for a value the scalar cannot take at all
            raise launch_error(
                "LG623", f"`{self.name}.{name}` ({spec.described}) was captured into this graph as "
                f"{describe_value(first)}; `replay` must be given that value or none, got {describe_value(given)}",
                hint="a graph keeps the values of its capture: capture the program again with the new value, or "
                "keep a value that changes every replay in a buffer the graph reads")

    def __repr__(self) -> str:
        return f"<ProgramGraph {self.name}: {self.launches} launches>"


__all__ = ["BufferSpec", "ProgramGraph", "ProgramRunner", "ProgramSpec", "StepSpec"]
