"""SASS of two kernels side by side: instruction counts by opcode, and where the instruction streams differ.

    .venv/bin/python benchmarks/roofline/variants/sass_diff.py            # generated fwd vs vsn_fwd_hand
    .venv/bin/python benchmarks/roofline/variants/sass_diff.py bwd        # generated bwd vs vsn_bwd_hand

Both are compiled as the launchers compile them (layoutgen's compile_cubin: NVRTC, sm_90), then disassembled
with cuobjdump -sass ($CUOBJDUMP, else the one on PATH; `pip install --target DIR nvidia-cuda-cuobjdump` has
one). compile_cubin hands back the whole cubin (layoutgen/runtime/elf.py puts back the last byte that
CuPy's nvrtc.getCUBIN drops, which cuobjdump would refuse the image without).
"""

from __future__ import annotations

import collections
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from registry import HAND, HERE, INCLUDE

REPO = HERE.parents[2]
sys.path.insert(0, str(REPO))
from layoutgen.runtime.nvrtc import CompileRequest, compile_cubin  # noqa: E402

INSTRUCTION = re.compile(r"^\s+/\*[0-9a-f]{4,}\*/\s+(.*?);")


def sass(source: Path, headers: tuple[tuple[str, str], ...], folder: Path, cuobjdump: str) -> list[str]:
    """The kernel's instructions, without addresses (predicates and operands kept)."""
    result = compile_cubin(CompileRequest(source=source.read_text(), name=source.name, headers=headers,
                                          arch="sm_90", report=True, include_dirs=(str(INCLUDE),)))
    cubin = folder / f"{source.stem}.cubin"
    cubin.write_bytes(result.cubin)  # whole: compile_cubin restores the byte CuPy's getCUBIN drops
    text = subprocess.run([cuobjdump, "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    print(f"{source.name}: {result.resources[0]}")
    return [m.group(1).strip() for line in text.splitlines() if (m := INSTRUCTION.match(line))]


def opcode(instruction: str) -> str:
    words = instruction.split()
    word = words[1] if words[0].startswith("@") else words[0]
    return word.split(".")[0]


def main() -> int:
    kind = sys.argv[1] if len(sys.argv) > 1 else "fwd"
    cuobjdump = os.environ.get("CUOBJDUMP") or shutil.which("cuobjdump")
    if cuobjdump is None:
        print("no cuobjdump: set CUOBJDUMP or put one on PATH")
        return 1
    folder = REPO / "generated" / "vsn"
    generated = folder / f"variable_selection_{kind}.cu"
    header = (("vsn.cuh", (folder / "vsn.cuh").read_text()),)
    with tempfile.TemporaryDirectory() as tmp:
        a = sass(generated, header, Path(tmp), cuobjdump)
        b = sass(HAND / f"vsn_{kind}_hand.cu", (), Path(tmp), cuobjdump)
    counts_a, counts_b = collections.Counter(map(opcode, a)), collections.Counter(map(opcode, b))
    print(f"{'opcode':<10} {'generated':>10} {'by hand':>10} {'diff':>6}")
    for op in sorted(counts_a.keys() | counts_b.keys(), key=lambda o: -(counts_a[o] + counts_b[o])):
        diff = counts_a[op] - counts_b[op]
        print(f"{op:<10} {counts_a[op]:>10} {counts_b[op]:>10} {diff:>+6}")
    print(f"{'total':<10} {len(a):>10} {len(b):>10} {len(a) - len(b):>+6}")
    # Branch targets are addresses: compare the streams without them.
    def without_targets(stream: list[str]) -> list[str]:
        return [re.sub(r"0x[0-9a-f]+", "ADDR", i) if opcode(i) in ("BRA", "BSSY", "CALL", "MOV") else i for i in stream]

    matcher = difflib.SequenceMatcher(a=without_targets(a), b=without_targets(b), autojunk=False)
    spans: list[list[int]] = []  # differing ranges of the generated stream, merged where < 64 apart
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if spans and i1 - spans[-1][1] < 64:
            spans[-1][1], spans[-1][3] = i2, j2
        else:
            spans.append([i1, i2, j1, j2])
    same = sum(i2 - i1 for tag, i1, i2, _, _ in matcher.get_opcodes() if tag == "equal")
    print(f"{same} of {len(a)} instructions identical, registers and all; where they differ "
          "(instruction indices, generated | by hand):")
    for i1, i2, j1, j2 in spans:
        print(f"  {i1}..{i2} | {j1}..{j2}: {collections.Counter(map(opcode, a[i1:i2])).most_common(6)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
