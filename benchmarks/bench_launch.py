"""Per-call host overhead: generated launcher (with validation) vs raw CuPy vs Triton.

Run on a GPU machine from the repository root:

    PYTHONPATH=. python3 benchmarks/bench_launch.py

Each row launches an empty kernel with the same five arrays and two sizes,
N times back to back from a Python loop that calls it as a user's code does
(`for _ in range(n): launcher(x, w, b, gates, y)`), and reports the host time
per call: the median of ROUNDS rounds after WARM_ROUNDS not kept, every row's
rounds interleaved with the others'. The floor is a C program's bare
`cuLaunchKernel` loop of the same kernel (benchmarks/launch/floor.cu), one
process of it kept running beside this one: it runs N launches before the
first row of a round and after every row, so each row's round lies between
two rounds of the floor taken milliseconds before and after it, and its
ratio to the floor is the median, over the rounds, of its time over the mean
of those two. A slow spell of the machine moves both sides of each ratio
alike, and this process and the floor program run on one CPU, the one this
process starts on (``--no-pin`` leaves both where the OS puts them). Prints
a table; no assertion. The launcher rows take the compiled
launch path where `runtime/fastlaunch/*.c` is built (`pip install -e .`, or
`python setup.py build_ext --inplace`; the line printed after the first row
says which path ran), and the Python path where they say it is forced.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
N, ROUNDS = 10000, 15
# Interleaved rounds run first and not kept: in a probe on the lent H200 the same calls ran slower in the
# first seconds of a process (on torch tensors by 2 µs a call, on CuPy arrays by 0.8). Later spells of
# either cost stay in the rounds kept, and move the floor's rounds beside them alike.
WARM_ROUNDS = 2
FLOOR_ROW = "C program: bare cuLaunchKernel loop"

try:  # Triton resolves a kernel's globals at compile time: define it at module level
    import triton
    import triton.language as tl

    @triton.jit
    def triton_empty(x, w, b, g, y, nb, nk, BLOCK: tl.constexpr):  # type: ignore[no-untyped-def]
        pass

except ImportError as exc:  # pragma: no cover - reported in the table
    triton_empty = None
    TRITON_MISSING = str(exc)


def per_call_us(fn: Callable[..., Any], sync: Callable[[], None], *args: Any, **kwargs: Any) -> float:
    """µs per call of ``fn(*args, **kwargs)``: the median of ROUNDS rounds of N calls after a warm-up
    (bench_launch_parts.py, bench_torch.py and bench_program.py time their rows so, one row after the other)."""
    warm_up(fn, sync, *args, **kwargs)
    return statistics.median(one_round(fn, sync, *args, **kwargs) for _ in range(ROUNDS))


def warm_up(fn: Callable[..., Any], sync: Callable[[], None], *args: Any, **kwargs: Any) -> None:
    calls_of(fn, args, kwargs)(2000)
    sync()


def one_round(fn: Callable[..., Any], sync: Callable[[], None], *args: Any, **kwargs: Any) -> float:
    """µs per call of N calls of ``fn(*args, **kwargs)`` back to back, then ``sync``."""
    calls = calls_of(fn, args, kwargs)
    start = time.perf_counter()
    calls(N)
    sync()
    return (time.perf_counter() - start) / N * 1e6


def calls_of(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Callable[[int], None]:
    """A function that calls ``fn(*args, **kwargs)`` n times, written out as a user's loop writes the call
    (``for _ in range(n): launcher(x, w, b, gates, y)``, the arguments local names): no lambda or argument
    unpacking between the loop and the call, which would add a Python frame of its own to every row."""
    names = [f"a{i}" for i in range(len(args))] + [f"{key}=k{i}" for i, key in enumerate(kwargs)]
    parameters = [f"a{i}" for i in range(len(args))] + [f"k{i}" for i in range(len(kwargs))]
    source = (f"def calls(n, fn, {', '.join(['_'] + parameters)}):\n"
              f"    for _ in range(n):\n"
              f"        fn({', '.join(names)})\n")
    namespace: dict[str, Any] = {}
    exec(compile(source, "<bench_launch calls>", "exec"), namespace)
    loop = namespace["calls"]
    return lambda n: loop(n, fn, None, *args, *kwargs.values())


class Interleaved:
    """Rows timed in interleaved rounds (round r of every row, then round r + 1) after WARM_ROUNDS rounds of
    every row that are not kept; where a ``floor`` is given (one round of the floor: µs per call), it runs
    before a round's first row and after every row, and each row's round is also taken as a ratio to the mean
    of the floor's rounds just before and just after it.

    A machine whose speed drifts during the run (a virtual machine's neighbours, clocks) moves every row
    alike, so the ratios within the run hold; rows timed one after the other would each see a different
    machine, and a ratio of two medians taken seconds apart still mixes two moments of it."""

    def __init__(self, rows: list[tuple[str, Callable[[], float]]], floor: Callable[[], float] | None = None):
        self.rounds: dict[str, list[float]] = {name: [] for name, _ in rows}  # µs per call, each kept round
        self.ratios: dict[str, list[float]] = {name: [] for name, _ in rows}  # to the floor beside it
        self.floor_rounds: list[float] = []
        for r in range(WARM_ROUNDS + ROUNDS):
            kept = r >= WARM_ROUNDS
            before = floor() if floor is not None else None
            if kept and before is not None:
                self.floor_rounds.append(before)
            for name, round_us in rows:
                us = round_us()
                after = floor() if floor is not None else None
                if kept:
                    self.rounds[name].append(us)
                if kept and before is not None and after is not None:
                    self.ratios[name].append(2 * us / (before + after))
                    self.floor_rounds.append(after)
                before = after

    def median_us(self, name: str) -> float:
        return statistics.median(self.rounds[name])

    def floor_us(self) -> float:
        return statistics.median(self.floor_rounds) if self.floor_rounds else float("nan")

    def ratio(self, name: str) -> float:
        """The row's median ratio to the floor beside it (NaN without a floor)."""
        ratios = self.ratios.get(name)
        return statistics.median(ratios) if ratios else float("nan")

    def spread(self, name: str) -> str:
        """The row's ratio to the floor: median and range over the rounds, so that one run says how far its
        ratio can be trusted."""
        ratios = sorted(self.ratios.get(name, []))
        if not ratios:
            return "no rounds"
        return f"{statistics.median(ratios):.2f}× (rounds {ratios[0]:.2f}× to {ratios[-1]:.2f}×)"


def interleaved(rows: list[tuple[str, Callable[[], float]]]) -> list[tuple[str, float]]:
    """Each row's median µs per call over ROUNDS interleaved rounds (``Interleaved``, no floor)."""
    timed = Interleaved(rows)
    return [(name, timed.median_us(name)) for name, _ in rows]


def without_reader(round_us: Callable[[], float]) -> Callable[[], float]:
    """``round_us`` with torch's tensors read through DLPack's exchange API and torch's Python calls, as where
    the C++ reader cannot be built (``torch_cxx_reader.turned_off``)."""
    from layoutgen.runtime import torch_cxx_reader
    from layoutgen.runtime.fastpath import extension

    def round_through_dlpack() -> float:
        with torch_cxx_reader.turned_off(extension()[0]):
            return round_us()
    return round_through_dlpack


def build_floor(out: Path) -> Path | None:
    """benchmarks/launch/floor.cu built with nvcc; None where nvcc is missing or the build fails (said on
    stderr)."""
    nvcc = shutil.which("nvcc") or next((str(p) for p in Path("/usr/local").glob("cuda*/bin/nvcc")), None)
    if nvcc is None:
        print("nvcc not found: no C floor", file=sys.stderr)
        return None
    program = out / "floor"
    built = subprocess.run([nvcc, "-O2", "-arch=sm_90", "-o", str(program), str(ROOT / "benchmarks/launch/floor.cu"),
                            "-lcuda"], check=False, capture_output=True, text=True)
    if built.returncode:
        print(f"floor.cu did not build:\n{built.stderr}", file=sys.stderr)
        return None
    return program


class FloorProgram:
    """One process of the built floor.cu, running ``cubin``'s ``kernel`` among its ways: ``round_us(way)``
    asks it for one timed loop of N launches that way and gives its µs per call. A context manager: the
    process ends with it."""

    def __init__(self, program: Path, cubin: Path, kernel: str):
        self.process = subprocess.Popen([str(program), str(cubin), kernel], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def round_us(self, way: str = "cuLaunchKernel") -> float:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{way} {N}\n")
        self.process.stdin.flush()
        answer = self.process.stdout.readline().split()
        if len(answer) != 2 or answer[0] != way:
            self.process.kill()
            raise RuntimeError(f"floor program: no answer to {way!r}: {self.process.communicate()[1].strip()}")
        return float(answer[1])

    def __enter__(self) -> FloorProgram:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.process.poll() is None:
            self.process.communicate("", timeout=60)  # end of its input: it frees what it holds and exits


def cuda_core_launch(cubin: Path, arrays: tuple[Any, ...], sizes: tuple[int, int],
                     grid: int) -> tuple[Callable[..., None], ...]:
    """A launch of the same cubin through cuda.core (its prepared launch: config and kernel made once): the
    function and its arguments."""
    try:
        from cuda.core import Device, LaunchConfig, ObjectCode, launch
    except ImportError:  # releases before 1.0 keep the API under .experimental
        from cuda.core.experimental import Device, LaunchConfig, ObjectCode, launch
    import cupy
    import numpy as np

    device = Device()
    device.set_current()
    stream = device.create_stream(cupy.cuda.get_current_stream())  # CuPy's stream, through __cuda_stream__
    kernel = ObjectCode.from_cubin(cubin.read_bytes()).get_kernel("empty")
    config = LaunchConfig(grid=grid, block=128)
    args = (*(np.intp(a.data.ptr) for a in arrays), *(np.int64(n) for n in sizes))
    return (launch, stream, config, kernel, *args)


def launchers_cubin(empty: Any) -> Path:
    """The cubin that ``empty`` (the benchmark's KernelLauncher) loads for sm_90, compiled into its cache or
    found there: what the raw CuPy row, cuda.core and the C floor's ``cubin`` way launch too."""
    request = empty.compile_request("sm_90")
    empty.cache().get_or_compile(request)
    return Path(empty.cache().paths(request.key())[0])


def generated_module(out: Path):  # type: ignore[no-untyped-def]
    from layoutgen.cli import main

    code = main(["generate", "--quiet", "--out", str(out.relative_to(ROOT)), str(ROOT / "benchmarks/launch/spec.py")])
    if code:
        sys.exit(code)
    sys.path.insert(0, str(out))
    return importlib.import_module("launch_bench")


def pin_to_this_cpu() -> int | None:
    """Keep this thread, and the floor program it starts (a child inherits the mask), on the CPU it runs on
    now: the CPU it was found on, or None where that cannot be read or set.

    Why: in a run on the lent H200 (2026-12-02) a row's rounds ranged 0.88× to 1.39× of the floor rounds
    taken milliseconds beside them, so the two processes did not see the same machine even at the same
    moment; where each lands (a virtual machine's CPUs are not alike, and a neighbour's work lands on some)
    is the part of that a benchmark can hold still. Both sides of every ratio then run on one CPU, one after
    the other."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        cpu = int(fields[36])  # field 39 of proc(5), "processor": the CPU it last ran on
        os.sched_setaffinity(0, {cpu})
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    return cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-pin", action="store_true",
                        help="leave this process and the floor program wherever the OS puts them (default: both on "
                             "the CPU this one starts on; see pin_to_this_cpu)")
    options = parser.parse_args()
    pinned = None if options.no_pin else pin_to_this_cpu()
    print(f"pinned to CPU {pinned}, with the floor program" if pinned is not None else "not pinned to a CPU")

    import cupy
    import numpy as np

    B, K = 64, 32
    x = cupy.random.standard_normal((B, K, 56), dtype=cupy.float32)
    w = cupy.random.standard_normal((40, 40), dtype=cupy.float32)
    b = cupy.random.standard_normal(40, dtype=cupy.float32)
    gates = cupy.empty((B, K, 40), cupy.float32)
    y = cupy.empty((B, K, 40), cupy.float32)
    sync = cupy.cuda.runtime.deviceSynchronize
    rows: list[tuple[str, Callable[[], float]]] = []  # each row: one round of its calls, µs per call
    missing: list[tuple[str, float]] = []  # what could not be timed here, and why (a NaN row)

    def row(name: str, fn: Callable[..., Any], *args: Any, sync: Callable[[], None] = sync, **kwargs: Any) -> None:
        warm_up(fn, sync, *args, **kwargs)
        rows.append((name, lambda: one_round(fn, sync, *args, **kwargs)))

    with tempfile.TemporaryDirectory(dir=ROOT) as tmp, contextlib.ExitStack() as stack:
        module = generated_module(Path(tmp))

        from layoutgen.runtime.driver import LAUNCH_ENV, PackedLaunch
        from layoutgen.runtime import torch_cxx_reader
        from layoutgen.runtime.fastpath import extension, launch_path_text, program_steps
        from layoutgen.runtime.paths import PYTHON_LAUNCH_ENV

        launcher = module.empty
        empty = module._lg_kernel_empty
        row("layoutgen launcher, compiled path (validates 5 arrays)", launcher, x, w, b, gates, y)
        print(launch_path_text())  # the path the row above takes: compiled where the extension is built
        plan = next(iter(empty._plans.values()))  # planned by the row's warm-up
        steps = program_steps("empty", 5, [(plan.launch, plan.checked.blocks, plan.checked.block, (0, 1, 2, 3, 4),
                                            plan.checked.symbols)])
        if steps is not None:  # the compiled path's own floor: a program step, launched with nothing read or checked
            pointers = (x.data.ptr, w.data.ptr, b.data.ptr, gates.data.ptr, y.data.ptr)
            row("compiled path, nothing checked (a program's step)", steps.launch, pointers, None)
        os.environ[PYTHON_LAUNCH_ENV] = "1"  # read when a launcher is built
        python_path = empty.fresh()
        del os.environ[PYTHON_LAUNCH_ENV]  # back to the default, the compiled path
        wrapped = getattr(launcher, "__wrapped__", None)  # the generated function, where C stands in its name
        if wrapped is not None:
            row("the same through the generated function's frame", wrapped, x, w, b, gates, y)
        row("layoutgen launcher, Python path forced", python_path, x, w, b, gates, y)
        print(f"default launch path: {type(empty.function(0, 'sm_90')).__name__}")

        # The raw CuPy call: a RawKernel of the same cubin, loaded the way CuPy users load one.
        cubin = launchers_cubin(empty)
        kernel = cupy.RawModule(path=str(cubin)).get_function("empty")
        grid, block = ((B * K + 127) // 128,), (128,)
        nb, nk = np.int64(B), np.int64(K)
        row("raw CuPy RawKernel call", kernel, grid, block, (x, w, b, gates, y, nb, nk))
        values = [x.data.ptr, w.data.ptr, b.data.ptr, gates.data.ptr, y.data.ptr, B, K]
        try:
            packed = PackedLaunch(int(kernel.kernel.ptr), 7)
            row("cuLaunchKernel via cuda.bindings (no checks)", packed, grid[0], 128, values, None)
        except ImportError as exc:
            missing.append((f"cuda.bindings unavailable: {exc}", float("nan")))
        try:
            row("cuda.core launch (prepared config)",
                *cuda_core_launch(cubin, (x, w, b, gates, y), (B, K), grid[0]))
        except Exception as exc:  # not installed, or an API this script does not know: reported in the table
            missing.append((f"cuda.core unavailable: {type(exc).__name__}: {exc}"[:60], float("nan")))
        program = build_floor(Path(tmp))
        floor: FloorProgram | None = None
        if program is not None:  # one process, serving the floor's rounds and its other ways' rows
            floor = served = stack.enter_context(FloorProgram(program, cubin, "empty"))
            served.round_us()  # its warm-up
            for way, name in (("chevrons", "C program: <<<>>> loop"),
                              ("cubin", "C program: cuLaunchKernel of the launchers' cubin"),
                              ("device_then_launch", "C program: current device read, then launch"),
                              ("touch_only", "C program: 32 KB of other reads alone"),
                              ("touch_then_launch", "C program: 32 KB of other reads, then launch")):
                rows.append((name, functools.partial(served.round_us, way)))
        else:
            missing.append((FLOOR_ROW, float("nan")))
        os.environ[LAUNCH_ENV] = "cupy"  # read when the launcher is built and when its kernel loads (the warm-up)
        through_cupy = empty.fresh()
        row("layoutgen launcher, CuPy launch path", through_cupy, x, w, b, gates, y)
        del os.environ[LAUNCH_ENV]

        if triton_empty is not None:
            import torch

            # torch's own tensors, as a torch program has them (same shapes, its caching allocator's memory)
            tx, tw, tb, tg, ty = (torch.empty(a.shape, device="cuda") for a in (x, w, b, gates, y))
            row("Triton launch (torch tensors)", triton_empty[grid], tx, tw, tb, tg, ty, B, K, BLOCK=128,
                sync=torch.cuda.synchronize)
            # the generated launcher on them: read by the C++ reader built against this torch, no conversion
            row("layoutgen launcher on torch tensors, compiled path", launcher, tx, tw, tb, tg, ty)
            if torch_cxx_reader.installed()[0] is not None:  # built by the row's warm-up where it builds
                row("the same, read through DLPack's exchange API", launcher, tx, tw, tb, tg, ty)
                rows[-1] = (rows[-1][0], without_reader(rows[-1][1]))
            row("layoutgen launcher on torch, Python path forced", python_path, tx, tw, tb, tg, ty)
            # torch tensors over the CuPy arrays' memory (torch.as_tensor through __cuda_array_interface__)
            sx, sw, sb, sg, sy = (torch.as_tensor(a, device="cuda") for a in (x, w, b, gates, y))
            row("layoutgen launcher on torch.as_tensor(CuPy arrays)", launcher, sx, sw, sb, sg, sy)
        else:
            missing.append((f"Triton unavailable: {TRITON_MISSING}", float("nan")))

        timed = Interleaved(rows, floor.round_us if floor is not None else None)

    print(launch_path_text())  # with torch's tensors' reader, now that torch is in use
    ext = extension()[0]
    fast = empty._fast
    if ext is not None and fast is not None:  # what the compiled rows read at C level, and what they handed over
        kinds = ext.kinds() if hasattr(ext, "kinds") else None  # the test build's (the shipped one is timed here)
        said = f"read at C level: { {k.__name__: v for k, v in kinds.items()} }; " if kinds is not None else ""
        print(f"{said}compiled path: {fast.hits} calls launched, {fast.handovers} handed over to the Python path")
    table = [(name, timed.median_us(name), timed.ratio(name)) for name, _ in rows]
    if floor is not None:
        table.append((FLOOR_ROW, timed.floor_us(), 1.0))
    table += [(name, us, float("nan")) for name, us in missing]  # what could not be timed: no ratio either
    base = next(us for name, us, _ in table if name == "raw CuPy RawKernel call")
    print(f"{'path':<52} {'µs/call':>9} {'vs raw CuPy':>12} {'vs C floor':>11}")
    for name, us, ratio in table:
        print(f"{name:<52} {us:>9.2f} {us / base:>11.2f}× {ratio:>10.2f}×")
    for compiled in ("layoutgen launcher, compiled path (validates 5 arrays)",
                     "the same through the generated function's frame",
                     "compiled path, nothing checked (a program's step)",
                     "layoutgen launcher on torch tensors, compiled path",
                     "the same, read through DLPack's exchange API"):
        print(f"{compiled} / C floor, round by round: {timed.spread(compiled)}")
    print(f"device: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}, N={N}, median of {ROUNDS} "
          f"rounds after {WARM_ROUNDS} not kept, the rows' rounds interleaved; vs C floor: the median of each "
          f"round's ratio to the mean of the floor's rounds just before and after it; "
          + (f"this process and the floor program on CPU {pinned}" if pinned is not None else "not pinned"))


if __name__ == "__main__":
    main()
