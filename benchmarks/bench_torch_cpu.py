"""What the torch operator layer costs around the launcher, measured on a machine without a GPU.

Run from the repository root (torch needed; no GPU, no CuPy):

    PYTHONPATH=. python3 benchmarks/bench_torch_cpu.py

The operators of ``variable_selection_fwd`` (five arrays: x, W, b in; gates, y out) are registered from the
generated launcher's plan in a namespace of their own, with a launcher that launches nothing: each row is
torch's dispatcher, layoutgen's Python around the launch and the allocations, on CPU tensors of a small batch
(B=4, K=4: the two outputs stay under the C allocator's mmap threshold, as the CUDA caching allocator keeps
blocks). Beside them, the pieces the functional form is held to (issue 33, item 4: at most the mutating form
plus its allocations alone, plus 10 %): ``torch.empty`` of the two output shapes alone, an empty
``define``/``impl`` operator of the mutating schema (torch's floor) and one of the functional schema that
allocates the two outputs and returns them (what torch's dispatcher adds to returned tensors). Rows are timed
in interleaved rounds (timeit, the minimum of ROUNDS rounds of N calls: the machine may be shared); the GPU
figures are bench_torch.py's. Prints a table; no assertion.
"""

from __future__ import annotations

import sys
import timeit
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

N, ROUNDS = 2000, 60
B, K = 4, 4


class _NoLaunch:
    """The generated launcher's plan, launching nothing."""

    def __init__(self, real: Any) -> None:
        self.spec = real.spec

    def __call__(self, *arguments: Any, stream: Any = None) -> None:
        pass


def rows() -> dict[str, Any]:
    import torch

    import generated.vsn as vsn
    from layoutgen.runtime import driver, torch_ops

    driver.find_device = lambda: None  # type: ignore[assignment]  # no GPU: what the stand-in device answers
    spec = torch_ops.TorchOpSpec(
        "fwd", _NoLaunch(vsn._lg_kernel_variable_selection_fwd),  # type: ignore[arg-type]
        "(Tensor x, Tensor W, Tensor b, Tensor(a!) gates, Tensor(b!) y) -> ()", (0, 1, 2, 3, 4),
        functional="(Tensor x, Tensor W, Tensor b) -> (Tensor gates, Tensor y)", inputs=(0, 1, 2), outputs=(3, 4))
    library = torch_ops.register("layoutgen_bench_cpu", "bench", str(ROOT / "benchmarks" / "bench.py"), (spec,))
    ops = torch.ops.layoutgen_bench_cpu
    x, W, b = torch.randn(B, K, 56), torch.randn(40, 40), torch.randn(40)
    gates, y = torch.empty(B, K, 40), torch.empty(B, K, 40)
    floor = torch.library.Library("layoutgen_bench_cpu_floor", "DEF")
    floor.define("noop(Tensor x, Tensor W, Tensor b, Tensor(a!) gates, Tensor(b!) y) -> ()")
    floor.impl("noop", lambda x, W, b, gates, y: None, "CPU")
    floor.define("alloc(Tensor x, Tensor W, Tensor b) -> (Tensor gates, Tensor y)")
    floor.impl("alloc", lambda x, W, b: (x.new_empty((B, K, 40)), x.new_empty((B, K, 40))), "CPU")
    noop, alloc = torch.ops.layoutgen_bench_cpu_floor.noop.default, torch.ops.layoutgen_bench_cpu_floor.alloc.default
    mutating = getattr(ops.fwd, "mutating", None) or ops.fwd.default  # before issue 29: an overload of `fwd`
    functional = ops.fwd.default
    shape = (B, K, 40)
    made = {
        "mutating operator (launch stubbed)": lambda: mutating(x, W, b, gates, y),
        "functional operator (launch stubbed)": lambda: functional(x, W, b),
        "torch.empty of the 2 output shapes alone": lambda: (torch.empty(shape), torch.empty(shape)),
        "empty define/impl, mutating schema (floor)": lambda: noop(x, W, b, gates, y),
        "define/impl allocating 2, functional schema": lambda: alloc(x, W, b),
    }
    made["_keep"] = (library, floor)
    return made


def main() -> None:
    import torch

    timed = rows()
    keep = timed.pop("_keep")  # the libraries: their operators live as long as they do  # noqa: F841
    best = {name: float("inf") for name in timed}
    for fn in timed.values():
        fn()
    for _ in range(ROUNDS):  # interleaved: a busy moment of the machine falls on every row alike
        for name, fn in timed.items():
            best[name] = min(best[name], timeit.timeit(fn, number=N) / N * 1e6)
    print(f"{'path (CPU, launch stubbed)':<46} {'µs/call':>8}")
    for name, us in best.items():
        print(f"{name:<46} {us:>8.2f}")
    bound = (best["mutating operator (launch stubbed)"] + best["torch.empty of the 2 output shapes alone"]) * 1.1
    print(f"{'bound: (mutating + allocations) x 1.1':<46} {bound:>8.2f}")
    print(f"torch {torch.__version__}, B={B}, K={K}, min of {ROUNDS} rounds of N={N} (timeit)")


if __name__ == "__main__":
    main()
