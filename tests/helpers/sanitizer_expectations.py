"""What the footprint sanitizer says of each test kernel of tests/specs/sanitizer (bad.py, pointers.py): the one place
the CPU run's test (tests/test_execute_host.py) and the GPU's debug build's (tests/gpu/test_sanitizer_gpu.py) read.

Each expectation is `site: code: message` as `layoutgen check --execute` reports it; `<N>` stands for a number that
depends on which thread meets the finding first (and, for a loop, on its column). On the GPU the same finding has
the debug build's code (:data:`GPU_CODES`) and the same site and message, but for the block: the CPU runs the blocks
one after another, the GPU all at once, so there the block is whichever recorded first (:func:`on_the_gpu`).
"""

from __future__ import annotations

import re

# `<N>`: a number that depends on which thread meets the finding first (and, for a loop, on its column).
T = "in block 0, thread <N>"
LG650 = ("LG650: `{k}` read `x` (Window.snap) at row <N>, column <N>, outside the field's columns 0..96 "
         "(rows 136 elements apart), " + T)
EXPECTED = {
    "const_stride": "tests/specs/sanitizer/const_stride.cu.j2:3: " + LG650,
    "offset_variable": "tests/specs/sanitizer/offset_variable.cu.j2:4: " + LG650,
    "helper_pointer": "tests/specs/sanitizer/helper_pointer.cu.j2:4: " + LG650,  # the helper's own line
    "macro_stride": "tests/specs/sanitizer/macro_stride.cu.j2:4: " + LG650,
    "float4_cast": "tests/specs/sanitizer/float4_cast.cu.j2:3: " + LG650,
    "other_view_stride": "tests/specs/sanitizer/other_view_stride.cu.j2:2: " + LG650,
    "entry_pitch": "tests/specs/sanitizer/entry_pitch.cu:13: " + LG650,
    # The last of 6 tiles of 32 rows holds 183 - 160 = 23: the loop to the capacity reads row 23 first.
    "tile_capacity_loop": ("tests/specs/sanitizer/tile_capacity_loop.cu.j2:6: LG655: `tile_capacity_loop` read shared "
                           "`xs` (a tile of x) at row 23, column <N>, past the 23 rows it holds (capacity 32), in "
                           "block 5, thread <N>: the NaN it read reached `y` (Packed) at row 160, column <N>"),
    # One persistent block over the 6 tiles: the last one's rows 23.. held the tile before's rows (finite) until
    # the copy left them all-ones; read through a raw pointer, the NaN shows without the read's line.
    "persistent_capacity_loop": ("tests/specs/sanitizer/persistent_capacity_loop.cu.j2:6: LG655: "
                                 "`persistent_capacity_loop` read shared `xs` (a tile of x) at row 23, column <N>, past "
                                 "the 23 rows it holds (capacity 32), in block 0, thread <N>: the NaN it read reached "
                                 "`y` (Packed) at row 160, column <N>"),
    "persistent_capacity_raw": ("tests/specs/sanitizer/bad.py:<N>: LG654: `persistent_capacity_raw` wrote NaN to `y` "
                                "(Packed) at row 160, column <N> although every input was finite: it computed with "
                                "memory nothing wrote"),
    # A static __shared__ array is one per block (it was each thread's own), all-ones before each block.
    "static_shared_block": ("tests/specs/sanitizer/bad.py:<N>: LG654: `static_shared_block` wrote NaN to `y` (Packed) "
                            "at row <N>, column <N> although every input was finite: it computed with memory nothing "
                            "wrote"),
    # The GPU's debug build says the same of these (LG611, layoutgen/runtime/debug.py's field_fault).
    "narrow_fill": ("tests/specs/sanitizer/narrow_fill.cu.j2:1: LG651: `narrow_fill` indexed `n` (Narrow) at row <N>, "
                    "column <N>, outside the field (183 rows, 40 columns), " + T
                    + "; the thread stopped before the access"),
    "lane_loop": ("tests/specs/sanitizer/lane_loop.cu.j2:3: LG651: `lane_loop` indexed `x` (Window.snap) at row <N>, "
                  "column <N>, outside the field (183 rows, 96 columns), " + T + "; the thread stopped before the access"),
    "barrier_branch": ("tests/specs/sanitizer/barrier_branch.cu.j2:3: LG652: `barrier_branch`: block 0, thread <N> "
                       "returned while other threads wait at __syncthreads(): a barrier that some threads never "
                       "reach"),
    "barrier_two": ("tests/specs/sanitizer/barrier_two.cu.j2:<N>: LG652: `barrier_two`: block 0, thread <N> "
                    "reached another __syncthreads() than the threads waiting at one: a barrier that some "
                    "threads never reach"),
}

# Checked pointers (the debug build's `&x.at(r, c)`, kept in `auto` or a template helper): the CPU run
# reports them at the access, as AddressSanitizer would, and sees the column before a field at an odd f32
# column, which AddressSanitizer cannot (its granules are 8 bytes, poisoned from their end).
LG650_AT = ("LG650: `{k}` {verb} `x` (Window.snap) at row <N>, column <N>, outside the field's columns 0..96 "
            "(rows 136 elements apart), " + T)
POINTERS = {
    "auto_pointer": "tests/specs/sanitizer/auto_pointer.cu.j2:2: " + LG650_AT.replace("{verb}", "read"),
    "template_helper": "tests/specs/sanitizer/template_helper.cu.j2:5: " + LG650_AT.replace("{verb}", "read"),
    "auto_float4": "tests/specs/sanitizer/auto_float4.cu.j2:3: " + LG650_AT.replace("{verb}", "read"),
    "column_before": ("tests/specs/sanitizer/column_before.cu.j2:2: LG650: `column_before` read `x` (Odd.snap) at "
                      "row <N>, column 0, outside the field's columns 1..96 (rows 96 elements apart), " + T),
}

#: The debug build's code on the GPU for each code of the CPU run: LG611 for an access outside a field or footprint
#: (layoutgen/runtime/debug.py: footprint_fault, field_fault), LG642 for a barrier (barrier_fault), LG612 for a NaN
#: the kernel wrote (unheld_fault, nan_fault).
GPU_CODES = {"LG650": "LG611", "LG651": "LG611", "LG652": "LG642", "LG654": "LG612", "LG655": "LG612"}


def pattern(expected: str, kernel: str) -> str:
    """The regular expression of ``expected`` (an entry of :data:`EXPECTED` or :data:`POINTERS`) for ``kernel``."""
    return re.escape(expected.replace("{k}", kernel)).replace("<N>", r"\d+")


#: Where the GPU's debug build makes another finding than the CPU run (`code: message`, the site in GPU_SITES), and
#: why. A pointer taken from a shared tile (`const float* column = &xs(0, c)`) is a checked pointer with the tile's
#: footprint on the GPU, stopped at its first read past the rows the tile holds (LG611, in layoutgen/runtime/debug.py's
#: tile_fault words); the CPU run, whose shared buffer AddressSanitizer guards by its pitch's padding alone, finds the
#: NaN that read carries into an output (LG654).
GPU_FINDINGS = {
    "persistent_capacity_raw": ("LG611: `persistent_capacity_raw` read shared `xs` (a tile of x) at row 23, column "
                                "<N>, outside the 23 rows it holds (capacity 32), in block <N>, thread <N>"),
}

#: Where the GPU's debug build names another line than the CPU run, and why. A checked pointer's fault names the
#: line where the pointer was taken from its view (`&x.at(0, 0)`, kept in a `const float*` or handed to a helper,
#: or from a shared tile, `&xs(0, c)`):
#: on the GPU the access itself has no line to give (an operator takes no default argument), while the CPU run
#: reads the access's line from its return address. A NaN the kernel computed from memory nothing wrote, with no
#: read's line of its own, is named at the binding on the CPU (its harness knows the spec's lines) and at no line
#: on the GPU: generated modules never depend on the spec's line numbers (docs/architecture.md, "Generated code").
GPU_SITES = {
    "const_stride": "tests/specs/sanitizer/const_stride.cu.j2:2",
    "offset_variable": "tests/specs/sanitizer/offset_variable.cu.j2:3",
    "helper_pointer": "tests/specs/sanitizer/helper_pointer.cu.j2:7",
    "float4_cast": "tests/specs/sanitizer/float4_cast.cu.j2:1",
    "other_view_stride": "tests/specs/sanitizer/other_view_stride.cu.j2:1",
    "entry_pitch": "tests/specs/sanitizer/entry_pitch.cu:12",
    "auto_pointer": "tests/specs/sanitizer/auto_pointer.cu.j2:1",
    "template_helper": "tests/specs/sanitizer/template_helper.cu.j2:8",
    "auto_float4": "tests/specs/sanitizer/auto_float4.cu.j2:1",
    "column_before": "tests/specs/sanitizer/column_before.cu.j2:1",
    "persistent_capacity_raw": "tests/specs/sanitizer/persistent_capacity_raw.cu.j2:5",
    "static_shared_block": "None",
}


def on_the_gpu(expected: str, kernel: str | None = None) -> str:
    """``expected`` as the GPU's debug build reports it: the debug build's code for the CPU run's, any block
    (blocks run at once there: the finding is whichever block's recorded first, the CPU run's the first block's),
    ``kernel``'s own finding where :data:`GPU_FINDINGS` has one (its code is the GPU's already), and its site on
    the GPU where :data:`GPU_SITES` has one."""
    site, code, message = expected.split(": ", 2)
    if kernel in GPU_FINDINGS:
        code, message = GPU_FINDINGS[kernel].split(": ", 1)
        return f"{GPU_SITES.get(kernel, site)}: {code}: {message}"
    message = re.sub(r"\bblock \d+", "block <N>", message)
    return f"{GPU_SITES.get(kernel or '', site)}: {GPU_CODES[code]}: {message}"
