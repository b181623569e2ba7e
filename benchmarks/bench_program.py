"""Host overhead per kernel of a 24-launch program: launcher calls, the program runner, graph replay.

Run on a GPU machine from the repository root:

    PYTHONPATH=. python3 benchmarks/bench_program.py

Host overhead is the time the Python call itself takes to enqueue the work,
measured with the GPU idle before each call (a synchronize outside the timed
region), so that a full launch queue never stalls the host. The end-to-end
column is the time per program including the GPU's execution. Prints a
table; no assertion.
"""

from __future__ import annotations

import importlib
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CALLS, ROUNDS = 2000, 5


def host_us(fn: Callable[[], None], sync: Callable[[], None]) -> float:
    """Median over rounds of the mean host time of one call, each call starting with the GPU idle."""
    for _ in range(50):
        fn()
    sync()
    rounds = []
    for _ in range(ROUNDS):
        total = 0.0
        for _ in range(CALLS):
            sync()
            start = time.perf_counter()
            fn()
            total += time.perf_counter() - start
        rounds.append(total / CALLS * 1e6)
    sync()
    return statistics.median(rounds)


def end_to_end_us(fn: Callable[[], None], sync: Callable[[], None]) -> float:
    """Median over rounds of the time per call including the GPU's work, back to back."""
    rounds = []
    for _ in range(ROUNDS):
        sync()
        start = time.perf_counter()
        for _ in range(CALLS):
            fn()
        sync()
        rounds.append((time.perf_counter() - start) / CALLS * 1e6)
    return statistics.median(rounds)


def generated_module(out: Path):  # type: ignore[no-untyped-def]
    from layoutgen.cli import main

    code = main(["generate", "--quiet", "--out", str(out.relative_to(ROOT)), str(ROOT / "benchmarks/program/spec.py")])
    if code:
        sys.exit(code)
    sys.path.insert(0, str(out))
    return importlib.import_module("program_bench")


def main() -> None:
    import cupy

    sys.path.insert(0, str(ROOT / "benchmarks" / "program"))
    from spec import LAUNCHES

    a = cupy.random.standard_normal((256, 64), dtype=cupy.float32)
    b = cupy.random.standard_normal((256, 64), dtype=cupy.float32)
    sync = cupy.cuda.runtime.deviceSynchronize
    with tempfile.TemporaryDirectory(dir=ROOT) as tmp:
        module = generated_module(Path(tmp))

        def launcher_calls() -> None:
            for i in range(LAUNCHES):
                if i % 2 == 0:
                    module.mix(b, a)
                else:
                    module.mix(a, b)

        graph = module.capture_chain(a=a, b=b)
        rows = [
            (f"{LAUNCHES} generated launcher calls", launcher_calls),
            ("program runner (checks 2 buffers once)", lambda: module.chain(a=a, b=b)),
            ("CUDA graph replay", graph.replay),
        ]
        print(f"{'path':<42} {'host µs/program':>16} {'host µs/kernel':>15} {'end-to-end µs/kernel':>21}")
        for name, fn in rows:
            host = host_us(fn, sync)
            e2e = end_to_end_us(fn, sync)
            print(f"{name:<42} {host:>16.2f} {host / LAUNCHES:>15.2f} {e2e / LAUNCHES:>21.2f}")
    print(f"device: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}, {LAUNCHES} launches of a "
          f"256x64 f32 update, {CALLS} calls, median of {ROUNDS} rounds")


if __name__ == "__main__":
    main()
