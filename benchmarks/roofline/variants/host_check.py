"""Every variant of registry.py run on the host, its blocks emulated, against float64 and the kernels by hand.

    .venv/bin/python benchmarks/roofline/variants/host_check.py [name ...]

Each kernel is built with g++ on tests/host/cuda_block_shim.h (a block's threads are host threads meeting at
real barriers, the warp's m16n8k8 TF32 mma emulated); cp.async copies happen at once.
Shapes give last tiles of 1 and of 127 rows, a single tile and many tiles; persistent kernels run on 1 to 3
blocks, so that every block loops over several tiles and every stage of the ring is used. Inputs are random,
outputs poisoned with NaN, grad_W and grad_b start non-zero. Tolerances are those of tests/test_vsn_host.py:
relative error (norm) 1e-5 for gates, y and grad_x, 1e-4 for grad_W and grad_b; variants that name a baseline
must also equal it bit for bit. Exit status 1 if any check failed.
"""

from __future__ import annotations

import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from registry import HAND, HERE, INCLUDE, VARIANTS, Variant

REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))
from examples.vsn import reference as ref  # noqa: E402
from tests.test_vsn_host import BWD, FWD, cooperative, launch  # noqa: E402

SHAPES = [(1, 129), (3, 85), (4, 25), (7, 300)]  # B * K = 129, 255, 100, 2100 rows
Arr = np.ndarray[Any, Any]


def build(variant: Variant, folder: Path) -> Any:
    """The variant compiled for the host, as tests/test_vsn_host.py builds the kernels: ``fn(*pointers, B, K,
    grid, block)``."""
    shared = "smem" if variant.file.parent == HAND else "vsn_smem"
    return cooperative(folder, variant.file, variant.name, FWD if variant.kind == "fwd" else BWD, shared,
                       (HERE, INCLUDE))


def f32(a: Arr) -> Arr:
    return np.ascontiguousarray(a, dtype=np.float32)


def grids(variant: Variant, rows: int) -> list[int]:
    tiles = -(-rows // variant.tile)
    return sorted({1, 2, 3, tiles} if variant.persistent else {tiles})


def check_fwd(variant: Variant, fn: Any, hand: Any, baseline: Variant | None, rng: np.random.Generator) -> list[str]:
    failures = []
    for b, k in SHAPES:
        window = rng.normal(size=(b, k, 56))
        window[..., ref.CONTEXT] *= 50.0  # a wrong stride would read these
        w, bias = rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
        want_gates, want_y = ref.vsn_forward(window[..., ref.SNAP], w, bias)
        inputs = [f32(window), f32(w), f32(bias)]
        hand_out = [np.full((b, k, 40), np.nan, np.float32) for _ in range(2)]
        if baseline is not None:
            launch(hand, inputs + hand_out, b, k, grids(baseline, b * k)[-1], baseline.block)
        for grid in grids(variant, b * k):
            gates, y = (np.full((b, k, 40), np.nan, np.float32) for _ in range(2))
            launch(fn, inputs + [gates, y], b, k, grid, variant.block)
            errors = ref.relative_error(gates, want_gates), ref.relative_error(y, want_y)
            if max(errors) >= 1e-5:
                failures.append(f"[{b},{k}] grid {grid}: relative errors gates {errors[0]:.2e}, y {errors[1]:.2e}")
            elif baseline is not None and not (np.array_equal(gates, hand_out[0]) and np.array_equal(y, hand_out[1])):
                failures.append(f"[{b},{k}] grid {grid}: not bitwise {baseline.name}'s")
    return failures


def check_bwd(variant: Variant, fn: Any, hand: Any, baseline: Variant | None, rng: np.random.Generator) -> list[str]:
    failures = []
    for b, k in SHAPES:
        window = rng.normal(size=(b, k, 56))
        window[..., ref.CONTEXT] *= 50.0
        w, bias = rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
        gates, _ = ref.vsn_forward(window[..., ref.SNAP], w, bias)
        grad_y = rng.normal(size=(b, k, 40))
        want_x, want_w, want_b = ref.vsn_backward(window[..., ref.SNAP], w, gates, grad_y)
        w0, b0 = f32(rng.normal(size=(40, 40))), f32(rng.normal(size=40))  # accumulators start non-zero
        inputs = [f32(window), f32(w), f32(gates), f32(grad_y)]
        hand_x = np.full((b, k, 40), np.nan, np.float32)
        if baseline is not None:
            launch(hand, inputs + [hand_x, w0.copy(), b0.copy()], b, k, 2, baseline.block)
        for grid in grids(variant, b * k):
            grad_x, grad_w, grad_b = np.full((b, k, 40), np.nan, np.float32), w0.copy(), b0.copy()
            launch(fn, inputs + [grad_x, grad_w, grad_b], b, k, grid, variant.block)
            ex = ref.relative_error(grad_x, want_x)
            ew = ref.relative_error(grad_w.astype(np.float64) - w0, want_w)
            eb = ref.relative_error(grad_b.astype(np.float64) - b0, want_b)
            if ex >= 1e-5 or ew >= 1e-4 or eb >= 1e-4:
                failures.append(f"[{b},{k}] grid {grid}: relative errors grad_x {ex:.2e}, grad_W {ew:.2e}, "
                                f"grad_b {eb:.2e}")
            elif baseline is not None and not np.array_equal(grad_x, hand_x):
                failures.append(f"[{b},{k}] grid {grid}: grad_x not bitwise {baseline.name}'s")
    return failures


def main(names: list[str]) -> int:
    chosen = [v for v in VARIANTS if v.file.exists() and (not names or v.name in names or v.name[4:] in names)]
    baselines = {v.name: next(b for b in VARIANTS if b.name == v.baseline) for v in chosen if v.baseline}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        with ThreadPoolExecutor(max_workers=2) as pool:  # g++ runs in parallel; the kernels run one at a time
            built = {v.name: pool.submit(build, v, folder) for v in {*chosen, *baselines.values()}}
        status = 0
        for variant in chosen:
            try:
                fn = built[variant.name].result()
                baseline = baselines.get(variant.name)
                hand = built[baseline.name].result() if baseline is not None else None
                check = check_fwd if variant.kind == "fwd" else check_bwd
                failures = check(variant, fn, hand, baseline, np.random.default_rng())
            except Exception as exc:  # noqa: BLE001 - one variant's failure must not hide the others
                failures = [f"{type(exc).__name__}: {exc}"]
            print(f"{variant.name:<24} {'PASS' if not failures else 'FAIL'}")
            for failure in failures:
                print(f"    {failure}")
            status |= bool(failures)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
