"""Every variant of registry.py compiled with NVRTC to an sm_90 cubin, no GPU needed: registers and spills.

    .venv/bin/python benchmarks/roofline/variants/offline_compile.py [--arch sm_90]

The same compile as bench_variants.py's (layoutgen's compile_cubin: NVRTC, cubin, ptxas -v), so what it
reports is what the GPU run will load, compiled by the NVRTC installed here.
"""

from __future__ import annotations

import argparse
import sys
import time

from registry import HERE, VARIANTS, compile_request

sys.path.insert(0, str(HERE.parents[2]))
from layoutgen.runtime.nvrtc import CompileError, compile_cubin, nvrtc_version  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args()
    print(f"NVRTC {'.'.join(map(str, nvrtc_version()))}, {args.arch}")
    print(f"{'variant':<24} {'regs':>5} {'spill st':>9} {'spill ld':>9} {'stack':>6} {'block':>6} {'shared B':>9} "
          f"{'compile s':>10}")
    status = 0
    for v in VARIANTS:
        if not v.file.exists():
            continue
        started = time.perf_counter()
        try:
            result = compile_cubin(compile_request(v.file, args.arch))
        except CompileError as exc:
            print(f"{v.name:<24} FAILED: {exc.log.strip()[-2000:]}")
            status = 1
            continue
        r = {k.kernel: k for k in result.resources}[v.name]
        print(f"{v.name:<24} {r.registers:>5} {r.spill_stores:>9} {r.spill_loads:>9} {r.stack_frame:>6} "
              f"{v.block:>6} {v.shared:>9} {time.perf_counter() - started:>10.1f}")
    return status


if __name__ == "__main__":
    sys.exit(main())
