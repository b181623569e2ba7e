"""Every VSN kernel variant of this folder: its source, launch shape and what it promises.

Shared by bench_variants.py (on the GPU) and host_check.py (host emulation, no GPU). The shared-memory
sizes repeat the C++ formulas of fwd_rows.cuh, bwd_split.cuh, fwd_tc.cuh and bwd_tc.cuh (each kernel of this
folder also traps when given less than it carves, or another block size, so a mismatch shows at once).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
HAND = HERE.parent  # benchmarks/roofline: vsn_fwd_hand.cu, vsn_bwd_hand.cu
INCLUDE = HERE.parents[2] / "examples" / "vsn" / "include"  # vsn_tf32.cuh, which the kernels by hand include
ROW = 44 * 4  # bytes of one row of a shared tile


@dataclass(frozen=True)
class Variant:
    """One kernel: `name` is its extern "C" symbol, in `file`; `kind` "fwd" or "bwd" (the hand kernels' arguments).

    `tile` rows a block works on at once; a persistent kernel is launched on at most the resident blocks and
    loops over tiles, any other one block a tile. `baseline` names the kernel whose gates and y (fwd) or grad_x
    (bwd) it must equal bit for bit (the f32 kernels: vsn_*_f32, the f32 design the kernels by hand had before
    the tensor-core one; the tensor-core kernels by hand have none here: bench_roofline.py compares the
    generated kernels with them); `tensor_cores` that it uses mma.sync (3xTF32).
    """

    name: str
    file: Path
    kind: str
    block: int
    shared: int
    tile: int
    persistent: bool
    baseline: str | None
    tensor_cores: bool
    idea: str


def _fwd_rows(name: str, r: int, t: int, stages: int, idea: str) -> Variant:
    return Variant(f"vsn_{name}", HERE / f"{name}.cu", "fwd", t, 40 * ROW + 176 + stages * r * t * ROW, r * t,
                   stages > 1, "vsn_fwd_f32", False, idea)


def _bwd_split(name: str, tr: int, stages: int, idea: str) -> Variant:
    return Variant(f"vsn_{name}", HERE / f"{name}.cu", "bwd", 5 * tr // 4, 40 * ROW + stages * 3 * tr * ROW, tr,
                   True, "vsn_bwd_f32", False, idea)


TC_FWD, TC_BWD = 4 * 4 * 32 * ROW, 4 * 3 * 32 * ROW + (4 * 40 * 40 + 4 * 40) * 4  # the kernels by hand's shared bytes

VARIANTS: tuple[Variant, ...] = (
    Variant("vsn_fwd_hand", HAND / "vsn_fwd_hand.cu", "fwd", 128, TC_FWD, 128, True, None, True,
            "baseline: the generated forward by hand; persistent warps, 3xTF32 mma.sync, a ring of 3 x tiles a warp"),
    Variant("vsn_fwd_f32", HERE / "fwd_f32.cu", "fwd", 128, 40 * ROW + 176 + 128 * ROW, 128, False, None, False,
            "the f32 design before: a thread a row, W broadcast from shared memory per FMA"),
    Variant("vsn_fwd_onetrip", HERE / "fwd_onetrip.cu", "fwd", 128, 40 * ROW + 176 + 128 * ROW, 128, False,
            "vsn_fwd_f32", False, "vsn_fwd_f32 with W, b and x in one cp.async round trip"),
    _fwd_rows("fwd_r2_tiles", 2, 64, 1, "2 rows a thread, 64 threads, tiles of 128"),
    _fwd_rows("fwd_r4_tiles", 4, 32, 1, "4 rows a thread, 32 threads, tiles of 128"),
    _fwd_rows("fwd_r2_pipe", 2, 128, 2, "persistent, 2 rows a thread, tiles of 256, next tile in flight"),
    _fwd_rows("fwd_r4_pipe", 4, 32, 2, "persistent, 4 rows a thread, tiles of 128, next tile in flight"),
    _fwd_rows("fwd_r4_pipe64", 4, 64, 2, "persistent, 4 rows a thread, tiles of 256, next tile in flight"),
    Variant("vsn_fwd_tc", HERE / "fwd_tc.cu", "fwd", 128, 4 * 4 * 32 * ROW, 128, True, None, True,
            "persistent warps, 3xTF32 mma.sync, W in registers, 3 stages of 32 rows a warp"),
    Variant("vsn_fwd_tc_s2", HERE / "fwd_tc_s2.cu", "fwd", 128, 4 * 3 * 32 * ROW, 128, True, None, True,
            "fwd_tc with 2 stages (less shared memory a block)"),
    Variant("vsn_fwd_tc_fast", HERE / "fwd_tc_fast.cu", "fwd", 128, 4 * 4 * 32 * ROW, 128, True, None, True,
            "fwd_tc with the fast split of x (truncation: 2 instructions, not about 10)"),
    Variant("vsn_bwd_hand", HAND / "vsn_bwd_hand.cu", "bwd", 128, TC_BWD, 128, True, None, True,
            "baseline: the generated backward by hand; persistent warps, 3xTF32 mma.sync for both products"),
    Variant("vsn_bwd_f32", HERE / "bwd_f32.cu", "bwd", 128, 40 * ROW + 3 * 128 * ROW, 128, True, None, False,
            "the f32 design before: a thread a row for grad_x, 4x4 grad_W blocks on 100 threads"),
    _bwd_split("bwd_split128", 128, 1, "grad_x 4x8 a thread, grad_W 8x8 in 6 row groups, tiles of 128"),
    _bwd_split("bwd_split128_pipe", 128, 2, "bwd_split128 with the next tile in flight"),
    _bwd_split("bwd_split64_pipe", 64, 2, "tiles of 64, 3 row groups, the next tile in flight"),
    _bwd_split("bwd_split64_pipe3", 64, 3, "tiles of 64, the next two tiles in flight"),
    Variant("vsn_bwd_tc", HERE / "bwd_tc.cu", "bwd", 64, 2 * 2 * 3 * 32 * ROW, 64, True, None, True,
            "persistent warps, 3xTF32 mma.sync for both GEMMs, W in registers, 2 warps x 2 stages of 32 rows"),
    Variant("vsn_bwd_tc_w4", HERE / "bwd_tc_w4.cu", "bwd", 128, 4 * 1 * 3 * 32 * ROW, 128, True, None, True,
            "bwd_tc with 4 warps a block, one stage each"),
    Variant("vsn_bwd_tc_fast", HERE / "bwd_tc_fast.cu", "bwd", 64, 2 * 2 * 3 * 32 * ROW, 64, True, None, True,
            "bwd_tc with the fast split of dz and x (truncation: 2 instructions, not about 10)"),
)

QUICK = ("vsn_fwd_hand", "vsn_fwd_f32", "vsn_fwd_r4_tiles", "vsn_fwd_tc", "vsn_fwd_tc_fast", "vsn_bwd_hand",
         "vsn_bwd_f32", "vsn_bwd_split128", "vsn_bwd_tc_w4", "vsn_bwd_tc_fast")


def compile_request(source: Path, arch: str) -> Any:
    """The NVRTC request (layoutgen.runtime.nvrtc) of one kernel file of this folder or a kernel by hand: its
    text, the headers of this folder, and the VSN project's include folder; with the compile report."""
    from layoutgen.runtime.nvrtc import CompileRequest  # the tree is on sys.path by the time this is asked

    headers = tuple((p.name, p.read_text()) for p in sorted(HERE.glob("*.cuh")))
    return CompileRequest(source=source.read_text(), name=source.name, headers=headers, arch=arch, report=True,
                          include_dirs=(str(INCLUDE),))
