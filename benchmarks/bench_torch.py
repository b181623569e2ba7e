"""Per-call host cost of the generated torch operators, beside the launcher, torch's floor and Triton.

Run on a GPU machine with torch (and, for its row, Triton) from the repository root:

    PYTHONPATH=. python3 benchmarks/bench_torch.py

Each row calls an empty kernel with the VSN forward's five arrays (torch tensors), N times back to
back, and reports the host time per call (median of several rounds):

- the generated launcher called directly (validates the five arrays);
- the mutating operator `ops.empty.mutating(x, W, b, gates, y)` (the launcher behind torch's dispatcher);
- the functional operator `ops.empty(x, W, b)`, which also allocates `gates` and `y`;
- `torch.empty` of the two output shapes alone: what the functional operator's allocations cost;
- an empty operator defined with `Library.define`/`impl` whose Python kernel does nothing: the least a
  Python-implemented torch operator costs (what the mutating operator adds to the launcher, at best);
- a `define`/`impl` operator of the functional schema whose kernel allocates the two outputs with
  `new_empty` and returns them: the least a functional Python operator costs (its allocations and what
  torch's dispatcher does with returned tensors);
- an empty Triton kernel with the same arguments.

Then the bound of issue 33, item 4: the functional operator within the mutating one plus the allocations
alone, plus 10 %. benchmarks/bench_torch_cpu.py measures the same pieces without a GPU.
Prints a table; no assertion.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The per-call timer and Triton's empty kernel are bench_launch.py's: the same measurement, beside it.
from bench_launch import N, ROUNDS, per_call_us, triton_empty  # noqa: E402  (benchmarks/ is this script's folder)


def generated_package(out: Path):  # type: ignore[no-untyped-def]
    """Generate benchmarks/torch/spec.py into ``out``; the package and its torch module, imported."""
    from layoutgen.cli import main

    code = main(["generate", "--quiet", "--out", str(out.relative_to(ROOT)), str(ROOT / "benchmarks/torch/spec.py")])
    if code:
        sys.exit(code)
    sys.path.insert(0, str(out))
    return importlib.import_module("torch_bench"), importlib.import_module("torch_bench.torch_ops")


def main() -> None:
    import torch

    B, K = 64, 32
    x = torch.randn(B, K, 56, device="cuda")
    w = torch.randn(40, 40, device="cuda")
    b = torch.randn(40, device="cuda")
    gates = torch.empty(B, K, 40, device="cuda")
    y = torch.empty(B, K, 40, device="cuda")
    sync = torch.cuda.synchronize

    # torch's floor: an operator of the same schema whose kernel does nothing
    floor = torch.library.Library("layoutgen_bench_floor", "DEF")
    floor.define("noop(Tensor x, Tensor W, Tensor b, Tensor(a!) gates, Tensor(b!) y) -> ()")
    floor.impl("noop", lambda x, W, b, gates, y: None, "CUDA")
    noop = torch.ops.layoutgen_bench_floor.noop.default
    # the least a functional operator costs: the same schema's allocations, returned through the dispatcher
    floor.define("alloc(Tensor x, Tensor W, Tensor b) -> (Tensor gates, Tensor y)")
    floor.impl("alloc", lambda x, W, b: (x.new_empty((B, K, 40)), x.new_empty((B, K, 40))), "CUDA")
    alloc = torch.ops.layoutgen_bench_floor.alloc.default

    rows: list[tuple[str, float]] = []
    with tempfile.TemporaryDirectory(dir=ROOT) as tmp:
        package, torch_module = generated_package(Path(tmp))
        ops = torch_module.ops
        mutating, functional = ops.empty.mutating, ops.empty.default
        rows.append(("layoutgen launcher (torch tensors)", per_call_us(lambda: package.empty(x, w, b, gates, y), sync)))
        rows.append(("mutating operator (.mutating)", per_call_us(lambda: mutating(x, w, b, gates, y), sync)))
        rows.append(("functional operator (allocates 2 outputs)", per_call_us(lambda: functional(x, w, b), sync)))
        rows.append(("torch.empty of the 2 output shapes alone", per_call_us(
            lambda: (torch.empty((B, K, 40), device="cuda"), torch.empty((B, K, 40), device="cuda")), sync)))
        rows.append(("empty define/impl operator (torch's floor)", per_call_us(lambda: noop(x, w, b, gates, y), sync)))
        rows.append(("define/impl allocating 2 (functional floor)", per_call_us(lambda: alloc(x, w, b), sync)))
        print(f"launch path: {type(package._lg_kernel_empty.function(0, 'sm_90')).__name__}")

    if triton_empty is not None:
        grid = ((B * K + 127) // 128,)
        rows.append(("Triton launch (torch tensors)",
                     per_call_us(lambda: triton_empty[grid](x, w, b, gates, y, B, K, BLOCK=128), sync)))
    else:
        import bench_launch

        rows.append((f"Triton unavailable: {bench_launch.TRITON_MISSING}", float("nan")))

    base = rows[0][1]
    print(f"{'path':<44} {'µs/call':>9} {'vs launcher':>12}")
    for name, us in rows:
        print(f"{name:<44} {us:>9.2f} {us / base:>11.2f}×")
    us = dict(rows)
    bound = (us["mutating operator (.mutating)"] + us["torch.empty of the 2 output shapes alone"]) * 1.1
    functional_us = us["functional operator (allocates 2 outputs)"]
    print(f"issue 33 item 4: functional {functional_us:.2f} µs, bound (mutating + allocations) x 1.1 = {bound:.2f} µs: "
          f"{'within' if functional_us <= bound else 'over'}")
    print(f"device: {torch.cuda.get_device_name(0)}, torch {torch.__version__}, N={N}, median of {ROUNDS} rounds")


if __name__ == "__main__":
    main()
