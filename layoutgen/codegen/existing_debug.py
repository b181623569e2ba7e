"""The debug build's copy of an existing kernel: every access through its pointer parameters checked.

The release build is the team's ``.cu`` unchanged. In the debug build (the GPU's ``--debug`` and the CPU run of
``check --execute``) the copy differs from the file in three places of the kernel's own definition, each on
its own line, so that every line keeps its number behind the ``#line`` directive:

- each pointer parameter ``const float* x`` is renamed ``lg_raw_x`` in the signature (its type, and so the
  kernel's ABI and what the launcher passes, stay as written), and the body's ``{`` is followed by
  ``lg::checked_ptr<const float> x(lg_raw_x, <footprint>);``: the unmodified body reads and writes ``x`` through
  a checked pointer (``lg/checked.cuh``), which behaves as the raw pointer for arithmetic, subscripts
  and casts and reports the first access outside the field's footprint (LG611 on the GPU, LG650 on the CPU);
- each checked pointer's row count is one more ``long long`` parameter at the end of the signature
  (``lg_rows_x``, default 0), which the launcher fills from the layouts as it fills a ``Rows`` argument;
- a ``__shared__`` array declared in the file becomes ``static __shared__`` (the same on the GPU, where shared
  variables are static already): the CPU run's threads of a block are host threads, and share only statics.

Then the file's pointer types over element types are checked pointers too (:mod:`.checked_types`: the body's
``const float* xr = x + ...``, a ``__device__`` helper's ``const float*`` parameter, ``(const float4*)x``), so that
a pointer stored or passed on from ``x`` stays checked; the ``__global__``'s signature is not rewritten.

A pointer is left raw where its footprint is not known before the launch beyond its rows (a field counted in
a symbolic column unit, a named range whose rows are symbolic): it is unchecked on the GPU, and the CPU run's
AddressSanitizer still checks it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from ..checks.cuda_signatures import GlobalKernel, GlobalParam
from ..checks.cxx import scan
from ..checks.raw_kernels import definition_span
from ..declare.existing_kernels import ExistingKernel
from ..declare.kernels import Binding, Param
from ..schema.dims import Size
from .checked_types import checked_pointer_types
from .escape import c_string

_SHARED = re.compile(r"(?<![\w])__shared__\b")
_STORAGE = re.compile(r"\b(static|extern)\b")  # among a declaration's specifiers: `extern __align__(16) __shared__`


@dataclass(frozen=True)
class CheckedPointer:
    """A pointer parameter the debug build checks: its name in the file, its array, the footprint's numbers."""

    name: str
    element: str  # `const float`
    index: int  # among the kernel's arrays (the fault record's parameter)
    rows: Size  # the field's rows, set at launch
    row_stride: int
    offset: int
    width: int
    axis: tuple[int, int, int, int]  # (start, len, size, inner) of a named range of rows; len 0: every row
    where: str  # `vsn_forward.x (Window.snap)`
    line: int  # the parameter's line in the file


def checked_pointers(binding: Binding, found: GlobalKernel) -> tuple[CheckedPointer, ...]:
    """The pointer parameters of ``binding``'s existing kernel that its debug build checks, in signature order."""
    kernel = binding.kernel
    assert isinstance(kernel, ExistingKernel)  # noqa: S101 - called for existing kernels only
    arrays = [p.name for p in kernel.params]
    out = []
    for arg, p in zip(kernel.args, found.params):
        if not isinstance(arg, Param) or not p.name:
            continue
        view = binding.view(arg.name)
        if not view.column_unit.is_static:
            continue
        axis = (0, 0, 0, 1)
        if view.axis_rows is not None:
            which, start, stop = view.axis_rows
            size, inner = view.layout.dims[which].size, Size.product(view.layout.dims[which + 1 :])
            if size is None or not inner.is_static:
                continue
            axis = (start, stop - start, size, inner.coef)
        out.append(CheckedPointer(p.name, ("const " if p.const else "") + p.base, arrays.index(arg.name),
                                  view.rows, view.row_stride, view.offset, view.width, axis,
                                  f"{binding.name}.{arg.name} ({view.name})", p.line))
    return tuple(out)


def rows_parameter(pointer: CheckedPointer) -> GlobalParam:
    """The parameter that carries ``pointer``'s rows into the debug build's kernel."""
    return GlobalParam("long long", f"lg_rows_{pointer.name}", False, False, "long long", "0", 0)


def debug_copy(binding: Binding, found: GlobalKernel, text: str, shown: str
               ) -> tuple[str, GlobalKernel, tuple[tuple[object, ...], ...]] | None:
    """The debug build's text of the file ``text`` (shown as ``shown``), the kernel as the copy declares it, and
    the raw arguments it takes after the file's own; None where the definition cannot be found."""
    code = scan(text, jinja=False).code
    span = definition_span(code, found)
    if span is None:
        return None
    starts = [0]
    for line in code:
        starts.append(starts[-1] + len(line) + 1)
    first, open_line, open_col, _ = span
    joined = "\n".join(code)
    edits: list[tuple[int, int, str]] = []  # (offset, characters replaced, text), applied from the last
    for m in _SHARED.finditer(joined):
        start = max(joined.rfind(c, 0, m.start()) for c in ";{}") + 1  # the declaration's specifiers
        specifiers = (line for line in joined[start : m.start()].split("\n") if not line.lstrip().startswith("#"))
        if not any(_STORAGE.search(line) for line in specifiers):
            edits.append((m.start(), 0, "static "))
    pointers = checked_pointers(binding, found)
    brace = starts[open_line] + open_col
    close = joined.rfind(")", starts[first], brace)
    names = {p.name for p in pointers}
    params = joined[joined.index("(", starts[first]) + 1 : close]
    at = close - len(params)
    for m in re.finditer(r"(?<![\w])([A-Za-z_]\w*)(?=\s*(?:\[[^\]]*\]\s*)*(?:=[^,]*)?(?:,|$))", params):
        if m.group(1) in names:  # the parameter's name: the last word before its `,`, array bounds or default
            edits.append((at + m.start(), len(m.group(1)), f"lg_raw_{m.group(1)}"))
    if not pointers:
        return None  # no pointer to check: the file as it is
    edits.append((close, 0, "".join(f", long long lg_rows_{p.name} = 0" for p in pointers)))
    edits.append((brace + 1, 0, " ".join(_prologue(p, shown) for p in pointers)))
    out = text
    for offset, length, insert in sorted(edits, reverse=True):
        out = out[:offset] + insert + out[offset + length :]
    out = checked_pointer_types(out)  # a pointer the body stores or passes on stays checked (its signature stays)
    declared = replace(found, params=(*found.params, *(rows_parameter(p) for p in pointers)))
    raw = tuple(("value", 0, p.rows.coef, p.rows.symbols, 64, True, f"the rows of `{p.name}` (debug build)")
                for p in pointers)
    return out, declared, raw


def _prologue(p: CheckedPointer, shown: str) -> str:
    start, length, size, inner = p.axis
    return (f"lg::checked_ptr<{p.element}> {p.name}(lg_raw_{p.name}, lg::footprint{{"
            f"reinterpret_cast<const unsigned char*>(lg_raw_{p.name}), lg_rows_{p.name}, {p.row_stride}LL, "
            f"{p.offset}LL, {p.width}LL, {start}LL, {length}LL, {size}LL, {inner}LL, "
            f"static_cast<int>(sizeof({p.element})), {p.index}, {c_string(p.where)}, "
            f"lg::site{{{c_string(shown)}, {p.line}}}}});")
