"""Every VSN kernel variant of registry.py on the GPU: accuracy against float64, time against the roofline.

Run on a GPU machine from the repository root (about a minute; --quick for a subset):

    PYTHONPATH=. python3 benchmarks/roofline/variants/bench_variants.py [--quick] [name ...]

Each variant runs in a child process of its own (a kernel that faults poisons its CUDA context, and must not
take the others with it): it is compiled with NVRTC to a cubin for this GPU (layoutgen's compile_cubin, which
also gives ptxas' spill report; CuPy's RawModule(code=...) where layoutgen cannot be imported), on fresh random
inputs ([B, K] = [4096, 512] rows), outputs first poisoned with NaN (grad_W and grad_b start random, the
kernel adds to them), compared with examples/vsn/reference.py in float64 on the GPU (relative error, norm,
and max abs error; pass = the tolerances of tests/gpu/test_vsn_kernels_gpu.py: 1e-5 for gates, y, grad_x,
1e-4 for grad_W, grad_b), compared bit for bit with its baseline where it names one (registry.py), then
timed with CUDA events: the median over 20 intervals of 5 back-to-back launches, after warm-up. The parent
measures the copy ceiling (a 1 GiB device-to-device copy, read + written) and prints one table: % of roofline
is (bytes a row: fwd 160 read + 320 written, bwd 480 + 160) * rows / time / ceiling. The generated kernels
(generated/vsn, through their launchers) are timed the same way for comparison.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from registry import HERE, QUICK, VARIANTS, Variant, compile_request

REPO = HERE.parents[2]
sys.path[:0] = [str(REPO), str(REPO / "benchmarks")]

from bench_roofline import copy_ceiling, time_ms  # noqa: E402  (the same timer and ceiling as the roofline table)
B, K = 4096, 512
ROWS = B * K
BYTES = {"fwd": ROWS * (160 + 320), "bwd": ROWS * (480 + 160)}
GENERATED = {"generated_fwd": "fwd", "generated_bwd": "bwd"}  # pseudo-variants: the generated launchers


def compile_kernel(variant: Variant, folder: Path) -> tuple[Any, dict[str, Any]]:
    """(CuPy kernel, {registers, spills, compile_s}) of `variant` for this GPU."""
    import cupy

    arch = f"sm_{cupy.cuda.Device().compute_capability}"
    started = time.perf_counter()
    from layoutgen.runtime.nvrtc import compile_cubin

    result = compile_cubin(compile_request(variant.file, arch))
    cubin = folder / f"{variant.name}.cubin"
    cubin.write_bytes(result.cubin)
    kernel = cupy.RawModule(path=str(cubin)).get_function(variant.name)
    # The registers are the loaded kernel's; the spills only ptxas' report says. On the H200 the report of a
    # second compile in one process once named no kernel (a KeyError here, so the bitwise variants never ran):
    # a report without this kernel gives no spill count instead of failing the variant.
    resources = {r.kernel: r for r in result.resources}.get(variant.name)
    spills = None if resources is None else resources.spill_stores + resources.spill_loads
    kernel.max_dynamic_shared_size_bytes = variant.shared
    return kernel, {"registers": kernel.attributes["num_regs"], "spills": spills,
                    "compile_s": time.perf_counter() - started}


def inputs(kind: str) -> dict[str, Any]:
    """Fresh random inputs of `kind` on the GPU, and the float64 reference of its outputs."""
    import cupy

    from examples.vsn import reference as ref

    rng = cupy.random.default_rng()
    f32 = cupy.float32
    window = rng.standard_normal((B, K, 56), dtype=f32)
    window[..., ref.CONTEXT] *= 50.0  # a wrong stride would read these
    w = rng.standard_normal((40, 40), dtype=f32) * 0.3
    b = rng.standard_normal(40, dtype=f32)
    if kind == "fwd":
        want = ref.vsn_forward(window[..., ref.SNAP], w, b)
        return {"args": (window, w, b), "want": want}
    gates64, _ = ref.vsn_forward(window[..., ref.SNAP], w, b)
    gates = gates64.astype(f32)
    grad_y = rng.standard_normal((B, K, 40), dtype=f32)
    want_bwd = ref.vsn_backward(window[..., ref.SNAP], w, gates, grad_y)
    return {"args": (window, w, gates, grad_y), "want": want_bwd,
            "grad_w0": rng.standard_normal((40, 40), dtype=f32), "grad_b0": rng.standard_normal(40, dtype=f32)}


def outputs(kind: str, data: dict[str, Any]) -> list[Any]:
    """Fresh outputs: NaN where the kernel writes, the starting sums where it adds."""
    import cupy

    nan = [cupy.full((B, K, 40), cupy.nan, cupy.float32) for _ in range(2 if kind == "fwd" else 1)]
    return nan if kind == "fwd" else nan + [data["grad_w0"].copy(), data["grad_b0"].copy()]


def errors(kind: str, outs: list[Any], data: dict[str, Any]) -> tuple[float, float, bool]:
    """(max relative error (norm), max abs error, within tolerance) of `outs` against float64."""
    import cupy

    got = outs if kind == "fwd" else [outs[0], outs[1].astype(cupy.float64) - data["grad_w0"],
                                      outs[2].astype(cupy.float64) - data["grad_b0"]]
    tolerances = (1e-5, 1e-5) if kind == "fwd" else (1e-5, 1e-4, 1e-4)
    rel, worst, ok = 0.0, 0.0, True
    for g, want, tol in zip(got, data["want"], tolerances):
        g64 = g.astype(cupy.float64)
        if not bool(cupy.isfinite(g64).all()):
            return float("inf"), float("inf"), False
        r = float(cupy.linalg.norm(g64 - want) / cupy.linalg.norm(want))
        rel, worst, ok = max(rel, r), max(worst, float(cupy.abs(g64 - want).max())), ok and r < tol
    return rel, worst, ok


def launcher(variant: Variant, kernel: Any, data: dict[str, Any]) -> tuple[Callable[[list[Any]], None], str]:
    """A launch of `variant` on given outputs, and its grid in words."""
    import cupy
    import numpy as np

    tiles = -(-ROWS // variant.tile)
    grid = tiles
    if variant.persistent:
        per_sm = cupy.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(kernel.kernel.ptr, variant.block,
                                                                            variant.shared)
        if per_sm < 1:
            raise RuntimeError(f"no block of {variant.block} threads and {variant.shared} B of shared memory fits")
        grid = min(tiles, per_sm * cupy.cuda.Device().attributes["MultiProcessorCount"])
    shape = np.int64(B), np.int64(K)

    def launch(outs: list[Any]) -> None:
        kernel((grid,), (variant.block,), (*data["args"], *outs, *shape), shared_mem=variant.shared)

    return launch, f"{grid}x{variant.block}"


def run_one(name: str) -> dict[str, Any]:
    """Everything measured of one variant (or generated kernel), in this process."""
    import cupy

    if name in GENERATED:
        import generated.vsn as vsn

        kind = GENERATED[name]
        data = inputs(kind)
        fn = vsn.variable_selection_fwd if kind == "fwd" else vsn.variable_selection_bwd

        def launch_generated(outs: list[Any]) -> None:
            fn(*data["args"], *outs)

        outs = outputs(kind, data)
        launch_generated(outs)
        cupy.cuda.runtime.deviceSynchronize()
        rel, worst, ok = errors(kind, outs, data)
        return {"name": name, "kind": kind, "ms": time_ms(lambda: launch_generated(outs)), "rel": rel, "abs": worst,
                "ok": ok, "bitwise": None, "registers": None, "spills": None, "grid": "launcher"}
    variant = next(v for v in VARIANTS if v.name == name)
    hand = next((v for v in VARIANTS if v.name == variant.baseline), None)
    with tempfile.TemporaryDirectory() as tmp:
        kernel, report = compile_kernel(variant, Path(tmp))
        hand_kernel = compile_kernel(hand, Path(tmp))[0] if hand is not None else None
    data = inputs(variant.kind)
    launch, grid = launcher(variant, kernel, data)
    outs = outputs(variant.kind, data)
    launch(outs)
    cupy.cuda.runtime.deviceSynchronize()
    rel, worst, ok = errors(variant.kind, outs, data)
    bitwise = None
    if hand is not None and hand_kernel is not None:
        hand_launch, _ = launcher(hand, hand_kernel, data)
        hand_outs = outputs(variant.kind, data)
        hand_launch(hand_outs)
        compared = (0, 1) if variant.kind == "fwd" else (0,)  # grad_W, grad_b: atomics in varying order
        bitwise = all(bool(cupy.array_equal(outs[i], hand_outs[i])) for i in compared)
    return {"name": name, "kind": variant.kind, "ms": time_ms(lambda: launch(outs)), "rel": rel, "abs": worst,
            "ok": ok, "bitwise": bitwise, "grid": grid, **report}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="variants to run (default: all)")
    parser.add_argument("--quick", action="store_true", help=f"only {', '.join(QUICK)}")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # a child: run one variant, print its result
    args = parser.parse_args()
    if args.one:
        print("RESULT " + json.dumps(run_one(args.one)))
        return 0
    import cupy

    known = [v.name for v in VARIANTS if v.file.exists()] + list(GENERATED)
    wanted = args.names or (list(QUICK) if args.quick else known)
    names = [n for n in known if n in wanted or n.removeprefix("vsn_") in wanted]
    device = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    ceiling = copy_ceiling()
    print(f"{device}: copy ceiling {ceiling / 1e12:.2f} TB/s (1 GiB device-to-device, read + written); "
          f"[B, K] = [{B}, {K}], roofline fwd {BYTES['fwd'] / ceiling * 1e3:.4f} ms, "
          f"bwd {BYTES['bwd'] / ceiling * 1e3:.4f} ms")
    header = (f"{'variant':<24} {'ms':>8} {'roofline':>9} {'regs':>5} {'spill':>5} {'grid':>10} {'rel err':>9} "
              f"{'max abs':>9} {'ok':>4} {'bitwise':>7}")
    print(header)
    failed = 0
    for name in names:
        started = time.perf_counter()
        child = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--one", name], capture_output=True,
                               text=True, timeout=300, cwd=REPO)
        lines = [ln for ln in child.stdout.splitlines() if ln.startswith("RESULT ")]
        if child.returncode != 0 or not lines:
            failed += 1
            tail = (child.stderr or child.stdout).strip().splitlines()[-6:]
            print(f"{name:<24} FAILED (exit {child.returncode}, {time.perf_counter() - started:.1f} s):")
            for line in tail:
                print(f"    {line}")
            continue
        r = json.loads(lines[-1].removeprefix("RESULT "))
        share = BYTES[r["kind"]] / (r["ms"] * 1e-3) / ceiling
        bitwise = "-" if r["bitwise"] is None else ("yes" if r["bitwise"] else "NO")
        regs = "-" if r["registers"] is None else str(r["registers"])
        spills = "-" if r["spills"] is None else str(r["spills"])
        print(f"{name:<24} {r['ms']:>8.4f} {share:>8.1%} {regs:>5} {spills:>5} {r['grid']:>10} {r['rel']:>9.2e} "
              f"{r['abs']:>9.2e} {'yes' if r['ok'] else 'NO':>4} {bitwise:>7}")
        failed += not r["ok"] or r["bitwise"] is False
    print(f"copy ceiling again: {copy_ceiling() / 1e12:.2f} TB/s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
