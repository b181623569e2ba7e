"""The host runtime's 16-bit floats (layoutgen/include/lg/host/float16.h, behind its cuda_fp16.h and cuda_bf16.h):
over random floats, every bit pattern included (subnormals, ties, overflow, Inf, NaN), the conversions round as
the device does, to nearest, ties to even: f16 against NumPy's float16, bf16 against the rounding of a float's
top 16 bits; and back to float exactly."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen.project.execute_harness import CUDA_STAND_INS, FLAGS, INCLUDE_ROOT, find_compiler

pytestmark = pytest.mark.skipif(find_compiler() is None, reason="no host C++ compiler here")

PROBE = r"""
#include "lg/host/runtime.h"
#include <cuda_fp16.h>
#include <cuda_bf16.h>
#include <cstdio>
int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        const unsigned bits = static_cast<unsigned>(std::strtoul(argv[i], nullptr, 16));
        float f;
        std::memcpy(&f, &bits, 4);
        const __half h = __float2half(f);
        const __nv_bfloat16 b = __float2bfloat16(f);
        const float hf = __half2float(h), bf = __bfloat162float(b);
        unsigned hb, bb;
        std::memcpy(&hb, &hf, 4);
        std::memcpy(&bb, &bf, 4);
        std::printf("%04x %04x %08x %08x\n", __half_as_ushort(h), __bfloat16_as_ushort(b), hb, bb);
    }
    return 0;
}
"""


@pytest.fixture(scope="module")
def probe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("float16")
    (folder / "probe.cpp").write_text(PROBE, encoding="utf-8")
    compiler = find_compiler()
    assert compiler is not None
    run = subprocess.run([compiler, *FLAGS, "-I", str(CUDA_STAND_INS), "-I", str(INCLUDE_ROOT), str(folder / "probe.cpp"),
                          "-o", str(folder / "probe")], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return folder / "probe"


def _bf16(bits: int) -> int:
    """A float's bfloat16, rounded to nearest, ties to even (a NaN stays a quiet NaN of its sign)."""
    if bits & 0x7FFFFFFF > 0x7F800000:
        return (bits >> 16) | 0x40
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) & 0xFFFF


def _float(bits: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", bits))[0])


#: Any bit pattern, any float, and the edges: f16's subnormals and the rounding to its largest value or Inf.
BITS = st.one_of(st.integers(0, 2**32 - 1), st.floats(width=32).map(lambda f: struct.unpack("<I", struct.pack("<f", f))[0]),
                 st.integers(0x33000000, 0x38800000), st.integers(0x477FE000, 0x47800000)).map(
    lambda b: b | (0x80000000 if b & 1 else 0))


@settings(max_examples=25, deadline=None)
@given(st.lists(BITS, min_size=1, max_size=200))
def test_16_bit_conversions_round_as_the_device(probe: Path, floats: list[int]) -> None:
    run = subprocess.run([str(probe), *(f"{b:08x}" for b in floats)], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    for bits, line in zip(floats, run.stdout.splitlines(), strict=True):
        h, b, hf, bf = (int(part, 16) for part in line.split())
        value = np.array([bits], np.uint32).view(np.float32)
        with np.errstate(over="ignore"):
            want = int(value.astype(np.float16).view(np.uint16)[0])
        if np.isnan(value[0]):  # any NaN is a NaN: NumPy keeps more of the payload than the device does
            assert h & 0x7C00 == 0x7C00 and h & 0x3FF, (hex(bits), hex(h))
        else:
            assert h == want, (hex(bits), hex(h), hex(want))
        assert b == _bf16(bits), (hex(bits), hex(b))
        back = np.array([want if not np.isnan(value[0]) else h], np.uint16).view(np.float16).astype(np.float32)
        assert _float(hf) == float(back[0]) or (np.isnan(back[0]) and hf & 0x7FFFFFFF > 0x7F800000)
        assert bf == b << 16
