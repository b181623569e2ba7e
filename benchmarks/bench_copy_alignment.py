"""Why the context copies stop short of the copy ceiling: the 64-byte alignment of each row's field.

Run on a GPU machine from the repository root:

    PYTHONPATH=. python3 benchmarks/bench_copy_alignment.py

The same 64-byte field (16 f32 columns) is gathered into packed rows and
scattered back, in [4096, 512] rows of three geometries (see
benchmarks/copy_alignment/spec.py). The model column is what a gather would
reach if memory were read in whole 64-byte blocks: a field that straddles a
block boundary reads 128 bytes for its 64. (Measured on an H200, gathers
follow it; scatters do not, and stay near 60% in every geometry: see
docs/performance.md.) Prints a table; no assertion.
"""

from __future__ import annotations

import importlib
import sys
import tempfile
from pathlib import Path

from bench_copies import B, K, time_ms

ROOT = Path(__file__).resolve().parent.parent

# Share of rows whose field straddles a 64-byte block, per layout.
STRADDLE = {"Rows56": 0.5, "Rows64": 0.0, "Rows64Late": 1.0}
WIDTH = {"Rows56": 56, "Rows64": 64, "Rows64Late": 64}


def gather_model(layout: str) -> float:
    """Bytes counted (64 read + 64 written a row) over the bytes moved when reads take whole 64-byte blocks."""
    return 128 / (64 * (1 + STRADDLE[layout]) + 64)


def main() -> None:
    import cupy
    import numpy as np

    from layoutgen.cli import main as layoutgen

    with tempfile.TemporaryDirectory(dir=ROOT) as tmp:
        out = Path(tmp)
        code = layoutgen(["generate", "--quiet", "--out", str(out.relative_to(ROOT)),
                          str(ROOT / "benchmarks/copy_alignment/spec.py")])
        if code:
            sys.exit(code)
        sys.path.insert(0, str(out))
        module = importlib.import_module("copy_alignment")
        packed = cupy.empty((B, K, 16), cupy.float32)
        nbytes = packed.nbytes
        src, dst = cupy.empty(nbytes // 4, cupy.float32), cupy.empty(nbytes // 4, cupy.float32)
        ceiling_ms = time_ms(lambda: cupy.cuda.runtime.memcpyAsync(
            dst.data.ptr, src.data.ptr, nbytes, cupy.cuda.runtime.memcpyDeviceToDevice, 0))
        ceiling = 2 * nbytes / ceiling_ms / 1e6
        name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
        print(f"64-byte field copies, [{B}, {K}] rows on {name}; copy ceiling {ceiling:.0f} GB/s")
        print(f"{'layout':<12} {'row':>6} {'field at':>9} {'op':<8} {'GB/s':>7} {'% ceiling':>10} {'model':>7}")
        for layout in ("Rows56", "Rows64", "Rows64Late"):
            width = WIDTH[layout]
            rows = cupy.random.standard_normal((B, K, width), dtype=cupy.float32)
            offset = {"Rows56": 40, "Rows64": 48, "Rows64Late": 40}[layout]
            gather, scatter = getattr(module, f"gather_{layout}_context"), getattr(module, f"scatter_{layout}_context")
            gather(rows, packed)
            assert np.array_equal(packed.get(), rows.get()[..., offset:offset + 16])
            for op, fn in (("gather", lambda: gather(rows, packed)), ("scatter", lambda: scatter(packed, rows))):
                bw = 2 * nbytes / time_ms(fn) / 1e6
                shown = f"{100 * gather_model(layout):>6.1f}%" if op == "gather" else f"{'-':>7}"
                print(f"{layout:<12} {width * 4:>5}B {offset * 4:>8}B {op:<8} {bw:>7.0f} {100 * bw / ceiling:>9.1f}% "
                      f"{shown}")


if __name__ == "__main__":
    main()
