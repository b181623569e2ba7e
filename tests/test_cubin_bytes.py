"""Cubins are whole ELF images: CuPy's getCUBIN drops the last byte, layoutgen.runtime.elf puts it back.

The driver loads the short image, so no launch shows the loss; cuobjdump and nvdisasm refuse it, and
`layoutgen build` ships the bytes. Every cubin compile_cubin returns must span exactly what its headers
say, and the repair must never change an image it cannot prove was cut by that one byte.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen.runtime.elf import elf_extent, whole_cubin
from tests.helpers.cli import nvrtc_missing

needs_nvrtc = pytest.mark.skipif(nvrtc_missing() is not None, reason=str(nvrtc_missing()))

KERNELS = {
    "store": 'extern "C" __global__ void k(float* x) { x[threadIdx.x] = 1.0f; }',
    "shared": 'extern "C" __global__ void k(float* x) { __shared__ float s[256]; s[threadIdx.x] = x[0];'
              " __syncthreads(); x[threadIdx.x] = s[255 - threadIdx.x]; }",
    "constant": '__constant__ float c[64]; extern "C" __global__ void k(float* x) { x[threadIdx.x] = c[threadIdx.x % 64]; }',
}


def _cubin(source: str) -> bytes:
    from layoutgen.runtime.nvrtc import CompileRequest, compile_cubin

    return compile_cubin(CompileRequest(source=source, name="k.cu", arch="sm_90")).cubin


@needs_nvrtc
@pytest.mark.parametrize("kernel", sorted(KERNELS))
def test_a_compiled_cubin_spans_exactly_its_elf_extent(kernel: str) -> None:
    image = _cubin(KERNELS[kernel])
    extent = elf_extent(image)
    assert extent is not None
    assert extent[0] == len(image)


@needs_nvrtc
def test_the_example_kernels_cubins_are_whole() -> None:
    import importlib

    from layoutgen.runtime.launch import KernelLauncher
    from layoutgen.runtime.nvrtc import compile_cubin

    module = importlib.import_module("generated.vsn")
    launchers = [v for v in vars(module).values() if isinstance(v, KernelLauncher)]
    assert len(launchers) >= 10
    for launcher in launchers:
        image = compile_cubin(launcher.compile_request("sm_90")).cubin
        assert elf_extent(image) == (len(image), len(image)), launcher.spec.name


@needs_nvrtc
@settings(max_examples=60, deadline=None)
@given(cut=st.integers(min_value=0, max_value=64))
def test_only_the_one_byte_cut_is_restored(cut: int) -> None:
    whole = _cubin(KERNELS["store"])
    image = whole[: len(whole) - cut]
    repaired = whole_cubin(image)
    assert repaired == (whole if cut <= 1 else image)


@given(st.binary(max_size=200).filter(lambda data: not data.startswith(b"\x7fELF")))
def test_bytes_that_are_no_elf_image_are_left_alone(data: bytes) -> None:
    assert elf_extent(data) is None
    assert whole_cubin(data) == data


def test_a_cut_byte_that_cannot_be_a_zero_is_not_guessed() -> None:
    """Seven bytes of p_align left that are no power of two: the top byte is not known to be 0."""
    header = bytearray(64)
    header[:6] = b"\x7fELF\x02\x01"
    header[0x20:0x28] = (64).to_bytes(8, "little")  # e_phoff: one program header right after this one
    header[0x36:0x38] = (56).to_bytes(2, "little")  # e_phentsize
    header[0x38:0x3A] = (1).to_bytes(2, "little")  # e_phnum
    program = bytearray(56)
    program[48:55] = (3).to_bytes(7, "little")  # p_align of 3: no alignment
    image = bytes(header + program[:55])
    assert elf_extent(image) == (120, 120)
    assert whole_cubin(image) == image
    program[48:55] = (8).to_bytes(7, "little")
    aligned = bytes(header + program[:55])
    assert whole_cubin(aligned) == aligned + b"\0"
