"""LG217: a kernel's dynamic shared memory, where its size is static, against its target arch.

What a grid's own arguments can get wrong is refused where the grid is declared
(:mod:`layoutgen.declare.grids`: LG208, LG216, LG218); what the shared arrays name, where the kernel is
(:mod:`layoutgen.declare.shared`: LG219). What depends on the binding is here: once the kernel's
symbols are unified with the views, a shared memory whose size is a number is compared with what a
block may have on the arch the project compiles for. A size bound at launch is checked by the
launcher against the device it runs on (LG624).
"""

from __future__ import annotations

import re

from ..declare.grids import launch_dims
from ..declare.kernels import Binding
from ..declare.shared import SHARED_ALIGN, Tile
from ..declare.tiles import shared_arrays
from ..declare.unify import Unified
from ..schema.diagnostics import Diagnostic
from ..schema.dims import Size, shape_text

KIB = 1024
#: Shared memory a block may have once the kernel opts in (the driver's
#: MaxSharedMemoryPerBlockOptin), by compute capability: the CUDA C++ Programming Guide, "Technical
#: Specifications per Compute Capability". An arch not listed is checked at launch only.
SHARED_OPT_IN: dict[str, int] = {
    "sm_70": 96 * KIB, "sm_72": 96 * KIB, "sm_75": 64 * KIB, "sm_80": 163 * KIB, "sm_86": 99 * KIB,
    "sm_87": 163 * KIB, "sm_89": 99 * KIB, "sm_90": 227 * KIB, "sm_100": 227 * KIB, "sm_120": 99 * KIB,
}


def arch_shared_limit(arch: str) -> int | None:
    """The shared memory a block may opt in to on ``arch`` (``sm_90a`` as ``sm_90``); None when not known."""
    m = re.fullmatch(r"(sm_\d+)[a-z]?", arch)
    return SHARED_OPT_IN.get(m.group(1)) if m else None


def static_shared_bytes(binding: Binding, unified: Unified) -> int | None:
    """The bytes of the binding's shared arrays, laid out as the launcher lays them out, when every dim is a
    number once the kernel's symbols are unified; None when one is bound at launch."""
    values = dict(unified.values)
    end = 0
    for array in shared_arrays(binding):
        size = Size.product(launch_dims(array.shape, values), array.dtype.size)
        if not size.is_static:
            return None
        end = -(-end // SHARED_ALIGN) * SHARED_ALIGN + size.coef
    return -(-end // SHARED_ALIGN) * SHARED_ALIGN


def check_tiles(binding: Binding) -> list[Diagnostic]:
    """LG219 for a shared tile of a field whose columns are counted in a symbol: its width is known at launch
    only, and a tile's width is a compile-time number."""
    out = []
    for array in binding.kernel.shared:
        if isinstance(array, Tile) and not (view := binding.view(array.param)).column_unit.is_static:
            out.append(Diagnostic(
                "LG219", f"shared tile `{array.name}` of `{binding.name}` holds rows of `{array.param}`, bound to "
                f"{view.name}, whose columns count `{view.column_unit}` elements each: a tile's width must be a "
                "number", array.site or binding.site,
                hint="stage such rows in a Shared array sized by the symbol, or tile a field of static width"))
    return out


def check_shared_memory(binding: Binding, unified: Unified, arch: str) -> list[Diagnostic]:
    """LG217 when the binding's static shared memory is more than a block may have on ``arch``; LG219 for a
    tile that cannot be laid out (:func:`check_tiles`)."""
    tiles = check_tiles(binding)
    if tiles:
        return tiles
    arrays = shared_arrays(binding)
    limit = arch_shared_limit(arch)
    total = static_shared_bytes(binding, unified) if arrays else None
    if limit is None or total is None or total <= limit:
        return []
    statics = unified.static
    each = ", ".join(f"`{a.name}` {shape_text(a.shape)} {a.dtype} = {a.nbytes.evaluate(statics)} bytes" for a in arrays)
    named = sorted({s for a in arrays for s in a.symbols})
    values = "".join(f"; `{s}` = {statics[s]}" for s in named)
    return [Diagnostic(
        "LG217", f"`{binding.name}` needs {total} bytes of dynamic shared memory ({each}{values}), but a block on "
        f"{arch} may have at most {limit} bytes ({limit // KIB} KiB)", binding.site,
        hint="make the arrays smaller (fewer rows a tile), or compile for an arch with more shared memory "
        "(`arch` in [tool.layoutgen], `--arch`)",
    )]

