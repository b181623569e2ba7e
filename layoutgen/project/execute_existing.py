"""An existing kernel's call in the host program of ``check --execute``: its ``__global__``, in its own order.

Every other kernel's generated signature takes the arrays, the scalars, then the layout symbols. An
:class:`~layoutgen.declare.existing_kernels.ExistingKernel` is the team's ``__global__`` as written, so its
host program calls it as its launcher does (:func:`~layoutgen.codegen.existing_kernel.raw_arguments`): per
parameter of the signature, a pointer to the base of that array's own allocation (where everything outside
the field's footprint is poisoned for AddressSanitizer), the value a carried integer takes at the sizes the
run chose (``Rows``, ``RowStride``, ``Pitch``, ``Offset``, a dim), or a scalar's value. So the unmodified
raw-pointer body runs with every access checked against the footprint of the parameter it came from, and a
read at the wrong row stride is found where it happens (LG650), whatever the spelling. The kernel is the debug
build's copy (:mod:`layoutgen.codegen.existing_debug`): its checked pointers take their rows last.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from ..checks.cuda_signatures import GlobalKernel
from ..checks.existing_kernels import find_kernel
from ..codegen.existing_debug import checked_pointers
from ..declare.existing_kernels import Carried, ExistingKernel, carried_value
from ..declare.kernels import Binding, Param
from .execute_harness import SCALAR_VALUES


def existing_call(binding: Binding, sizes: Mapping[str, int]) -> str | None:
    """The C++ call of ``binding``'s ``__global__`` over the host program's regions (``lg_regions[i].base``, one
    per array parameter in declaration order) at ``sizes``; None for a kernel that is no existing kernel, or
    whose file does not define it (generation reports that, LG232)."""
    kernel = binding.kernel
    if not isinstance(kernel, ExistingKernel):
        return None
    try:
        text = Path(kernel.source_path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    found = find_kernel(kernel, text)
    if not isinstance(found, GlobalKernel):
        return None
    arrays = [p.name for p in kernel.params]
    args = []
    for arg, p in zip(kernel.args, found.params):
        c_type = " ".join(t for t in p.base.split() if t != "const")
        if isinstance(arg, Param):
            args.append(f"reinterpret_cast<{'const ' if p.const else ''}{c_type}*>"
                        f"(lg_regions[{arrays.index(arg.name)}].base)")
        elif isinstance(arg, Carried):
            args.append(f"static_cast<{c_type}>({carried_value(binding, arg).evaluate(sizes)}LL)")
        else:
            args.append(f"static_cast<{c_type}>({SCALAR_VALUES.get(arg.dtype.kind, '1')})")
    # The debug build's copy takes each checked pointer's rows after the kernel's own parameters.
    args += [f"{p.rows.evaluate(sizes)}LL" for p in checked_pointers(binding, found)]
    return f"{found.qualified}({', '.join(args)})"
