"""The whole cubin from CuPy's NVRTC binding, whose ``getCUBIN`` drops the image's last byte.

CuPy's ``nvrtc.getCUBIN`` returns the first ``nvrtcGetCUBINSize() - 1`` bytes of the cubin, as if it were
NUL-terminated text like the PTX and the log it strips the same way (cupy_backends/cuda/libs/nvrtc.pyx). A
cubin is an ELF image, not text: the driver still loads the short copy (the last byte is the top byte of the
last program header's alignment, a zero it does not read), but ``cuobjdump`` and ``nvdisasm`` refuse it, and
``layoutgen build`` would ship it. NVRTC's cubins end with their program header table, so the missing byte
is known to be that zero; :func:`whole_cubin` restores it only where the headers prove that, and changes
nothing otherwise (a binding that returns the whole image, or an image of another shape).
"""

from __future__ import annotations

import struct

__all__ = ["elf_extent", "whole_cubin"]

_MAGIC = b"\x7fELF"
_HEADER = struct.Struct("<16sHHIQQQIHHHHHH")  # the ELF64 little-endian file header
_SECTION = struct.Struct("<IIQQQQIIQQ")  # sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, ...
_PROGRAM = struct.Struct("<IIQQQQQQ")  # p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align
_NOBITS = 8  # a section that occupies no bytes of the file (.bss, .nv.shared.*)


def elf_extent(image: bytes) -> tuple[int, int] | None:
    """``(bytes the ELF64 image spans, where its program header table ends)``, read from its headers, or
    None where ``image`` is not a little-endian ELF64 image whose headers can be read."""
    if len(image) < _HEADER.size or image[:4] != _MAGIC or image[4] != 2 or image[5] != 1:
        return None
    fields = _HEADER.unpack_from(image)
    phoff, shoff, phentsize, phnum, shentsize, shnum = fields[5], fields[6], fields[9], fields[10], fields[11], fields[12]
    program_end = phoff + phentsize * phnum
    extent = max(_HEADER.size, program_end, shoff + shentsize * shnum)
    try:
        for k in range(shnum):
            section = _SECTION.unpack_from(image, shoff + k * shentsize)
            if section[1] != _NOBITS:
                extent = max(extent, section[4] + section[5])
        for k in range(phnum):
            # the last program header may be the one cut short: its offset and file size come first
            header = image[phoff + k * phentsize: phoff + (k + 1) * phentsize].ljust(_PROGRAM.size, b"\0")
            segment = _PROGRAM.unpack(header[:_PROGRAM.size])
            extent = max(extent, segment[2] + segment[5])
    except struct.error:  # a header table past the end of the image by more than the lost byte
        return None
    return extent, program_end


def whole_cubin(image: bytes) -> bytes:
    """``image`` with the byte CuPy's ``getCUBIN`` dropped put back, where its headers prove it a zero."""
    extent = elf_extent(image)
    if extent is None or extent[0] != len(image) + 1 or extent[1] != extent[0]:
        return image  # whole already, or cut somewhere its headers do not account for
    # The lost byte is the top byte of the last program header's p_align. An alignment is 0 or a power of
    # two: where the seven bytes left hold one (or none), the top byte is a zero; else leave the image be.
    low = int.from_bytes(image[-7:], "little")
    if low & (low - 1):
        return image
    return image + b"\0"
