"""Where the generated launcher's per-call time goes: the compiled hot path and its pieces, timed alone.

Run on a GPU machine from the repository root:

    PYTHONPATH=. python3 benchmarks/bench_launch_parts.py

Same arrays and kernel as bench_launch.py (an empty kernel, five arrays and
two sizes). Each row repeats one step N times, timed as bench_launch.py
times a call. The compiled path's own floor is a one-launch ``Steps`` (what a
program runner launches with): a call from Python, the stream read and
``cuLaunchKernel``, nothing checked; the whole call less that floor is what
reading, matching and checking the arrays costs. The rows after it time, from
Python (so each with ~30 ns of call overhead), what the compiled path calls of
CuPy's and torch's own, and the reads the Python path makes. Prints a table;
no assertion. It runs the extension's test build (tests/helpers/fastlaunch_build.py:
the shipped sources with ``read_cost`` and ``kinds``, which time and list the
reads at C level).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench_launch import N, ROOT, ROUNDS, generated_module, interleaved, one_round, warm_up


def main() -> None:
    import cupy

    from layoutgen.runtime import fastpath, launch
    from layoutgen.runtime.driver import stream_handle
    from layoutgen.runtime.paths import PYTHON_LAUNCH_ENV
    from layoutgen.runtime.typed import Array
    from tests.helpers.fastlaunch_build import install

    install()  # before any launcher is built: read_cost and kinds are the test build's

    B, K = 64, 32
    arrays = (cupy.zeros((B, K, 56), cupy.float32), cupy.zeros((40, 40), cupy.float32), cupy.zeros(40, cupy.float32),
              cupy.zeros((B, K, 40), cupy.float32), cupy.zeros((B, K, 40), cupy.float32))
    x, w, b, g, y = arrays
    sync = cupy.cuda.runtime.deviceSynchronize
    rows: list[tuple[str, Callable[[], object]]] = []
    with tempfile.TemporaryDirectory(dir=ROOT) as tmp:
        module = generated_module(Path(tmp))
        launcher = module._lg_kernel_empty
        module.empty(*arrays)  # compile, load, plan (and teach the compiled path)
        device = launch.current_device()
        plan = next(iter(launcher._plans.values()))
        checked = plan.checked
        pointers = tuple(a.data.ptr for a in arrays)
        values = [*pointers, *checked.symbols]
        steps = fastpath.program_steps("empty", 5, [(plan.launch, checked.blocks, checked.block, (0, 1, 2, 3, 4),
                                                     checked.symbols)])
        os.environ[PYTHON_LAUNCH_ENV] = "1"  # read when a launcher is built
        python_path = launch.KernelLauncher(launcher.spec, launcher.folder, launcher.header)
        os.environ[PYTHON_LAUNCH_ENV] = "0"  # back to the compiled path
        typed = tuple(Array(a) for a in arrays)
        entry = launcher.entry
        null = cupy.cuda.Stream.null
        rows += [
            ("generated function, compiled path", lambda: module.empty(x, w, b, g, y)),
            ("launcher.entry(...) directly", lambda: entry(x, w, b, g, y)),
            ("launcher.entry(...) on typed Arrays", lambda: entry(*typed)),
            ("launcher.entry(..., stream=Stream.null)", lambda: entry(x, w, b, g, y, stream=null)),
            ("Python path forced", lambda: python_path(x, w, b, g, y)),
        ]
        if steps is not None:
            rows += [
                ("floor: Steps.launch, current stream", lambda: steps.launch(pointers, None)),
                ("floor: Steps.launch, Stream.null", lambda: steps.launch(pointers, null)),
            ]
        rows += [
            ("cupy getDevice() (Python path's)", cupy.cuda.runtime.getDevice),
            ("stream_handle(None) (Python path's)", lambda: stream_handle(None)),
            ("PackedLaunch via cuda.bindings", lambda: plan.launch(checked.blocks, checked.block, values, None)),
            ("a.shape of one array", lambda: x.shape),
            ("a.strides of one array", lambda: x.strides),
            ("a.data.ptr of one array", lambda: x.data.ptr),
        ]
        torch_tensors: list[object] = []
        rows += torch_rows(module, B, K, torch_tensors)
        ext = fastpath.extension()[0]
        print(fastpath.launch_path_text())
        if ext is not None:
            print(f"current stream: {ext.current_stream()}; read at C level: "
                  f"{ {k.__name__: v for k, v in ext.kinds().items()} }")
        for _, step in rows:
            warm_up(step, sync)
        timed = interleaved([(name, lambda step=step: one_round(step, sync)) for name, step in rows])
        print(f"{'step':<44} {'µs/call':>9}")
        for name, us in timed:
            print(f"{name:<44} {us:>9.3f}")
        if launcher._fast is not None:
            print(f"compiled path: {launcher._fast.hits} calls launched, {launcher._fast.handovers} handed over")
        if ext is not None:  # one array's read as a launch makes it, timed in C (torch: the C++ reader)
            for name, array in (("a CuPy array", x), *(("a torch tensor", t) for t in torch_tensors[:1])):
                try:
                    ns, how = ext.read_cost(array, 100000)
                    print(f"C read of {name}: {ns:.0f} ns ({how})")
                except ValueError as exc:
                    print(f"C read of {name}: none ({exc})")
    print(f"device {device}: {cupy.cuda.runtime.getDeviceProperties(device)['name'].decode()}, N={N}, "
          f"median of {ROUNDS} rounds, the rows' rounds interleaved")


def torch_rows(module: object, nb: int, nk: int, made: list[object]) -> list[tuple[str, Callable[[], object]]]:
    """The same launch on torch tensors (put in ``made``), and the torch calls the compiled path makes for them
    where the C++ reader (runtime/torch_cxx_reader.py) cannot be built, or is turned off."""
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    tx, tw, tb, tg, ty = (torch.zeros(s, device="cuda") for s in ((nb, nk, 56), (40, 40), (40,), (nb, nk, 40),
                                                                 (nb, nk, 40)))
    made += [tx, tw, tb, tg, ty]
    entry = module._lg_kernel_empty.entry  # type: ignore[attr-defined]
    entry(tx, tw, tb, tg, ty)  # plan, teach
    bump = torch._C._increment_version
    return [
        ("torch: launcher.entry on 5 tensors", lambda: entry(tx, tw, tb, tg, ty)),
        ("torch: t.is_neg() (one per tensor)", tx.is_neg),
        ("torch: t.requires_grad (one per written)", lambda: tg.requires_grad),
        ("torch: torch.is_grad_enabled()", torch.is_grad_enabled),
        ("torch: _increment_version((g, y))", lambda: bump((tg, ty))),
        ("torch: _is_torch_function_mode_enabled()", torch._C._is_torch_function_mode_enabled),
    ]


if __name__ == "__main__":
    main()
