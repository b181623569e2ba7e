"""The lint of an existing kernel's own body: its raw pointers read against the layouts bound to them.

An :class:`~layoutgen.declare.existing_kernels.ExistingKernel`'s pointer parameter (``const float* x``) is
the base of the array of the view bound to it, so its rows are the layout's row stride apart and the field
sits at its offset in each: ``x + row * 56`` and ``window[idx * 56 + 40 + c]`` are right for a field of
``Window [B, K, 56]``; ``x + row * 40`` (the seed bug) is not. A carried integer parameter is the quantity it
is declared to carry: ``x_stride`` declared ``RowStride("x")`` *is* 56, so ``x[row * x_stride + f]`` is read
as the layout's own step, and ``w[row * x_stride]`` as another array's.

The body is the kernel's own lines (from its name to its closing brace), read with the rest of the file in
scope (macros, file-scope constants, helpers read at their calls: :mod:`.flow`, :mod:`.indexing`), the other
``__global__`` functions of the file blanked. What is reported:

- a constant step of a pointer's index at least the field's width that is not a multiple of the row stride
  (a row stepped by the feature count, by another array's stride): LG401, or LG410 where it is spelled as
  another pointer's carried stride; a smaller constant factor is a step within a row (pairs, a sub-array's
  entries), which only the CPU run (``check --execute``) can judge;
- a right row step spelled as a constant in a kernel that takes that stride (``RowStride``, ``Pitch``) as an
  argument and never reads it: the literal does not follow the layout when it changes (LG401).

Every index computed in a way this reading does not follow is the CPU run's and the debug build's to check.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..declare.existing_kernels import Carried, ExistingKernel, carried_value
from ..declare.kernels import Binding, Param
from ..schema.diagnostics import Diagnostic, Site
from ..schema.dims import shape_text
from ..schema.view import View
from .constants import line_constants
from .cuda_signatures import GlobalKernel, plain_type, read_kernels
from .cxx import scan, tokens
from .existing_kernels import check_signature, find_kernel
from .flow import _assigned, read_body
from .indexing import FACTOR, POINTER, SUBSCRIPT, UNIT_BYTES, Base, IndexLiteral, index_literals
from .lint import DIRECTIVE
from .text_offsets import closing, line_at, line_starts

# What a carried integer says of its array's rows: a row stride in elements, or in bytes.
_STRIDES = ("row_stride", "pitch")


@dataclass(frozen=True)
class RawPointer:
    """A pointer parameter of an existing kernel, as its body names it, and the view bound to it."""

    name: str  # as the file writes it
    param: Param
    view: View
    unit_bytes: int | None  # the bytes of one step of the pointer where not an element (`const float4* x`)
    text: str  # `const float* x`
    strides: tuple[tuple[str, str, Carried], ...]  # integer parameters carrying its row step: (name, text, what)


def definition_span(code: Sequence[str], kernel: GlobalKernel) -> tuple[int, int, int, int] | None:
    """(the line of the name, the line and column of the body's ``{``, the line of its ``}``), 0-based, of
    ``kernel``'s definition in ``code`` (comments and literals blanked); None where it cannot be found."""
    text = "\n".join(code)
    starts = line_starts(code)
    if not 0 < kernel.line <= len(code):
        return None
    name = re.compile(rf"(?<![\w]){re.escape(kernel.name)}\s*\(")
    m = name.search(text, starts[kernel.line - 1])
    close = closing(text, m.end() - 1, "()", missing=-1) if m else -1
    if m is None or close < 0:
        return None
    brace = close + 1 + len(text[close + 1 :]) - len(text[close + 1 :].lstrip())
    end = closing(text, brace, "{}", missing=-1) if text[brace : brace + 1] == "{" else -1
    if end < 0:
        return None
    line = line_at(starts, brace)
    return kernel.line - 1, line, brace - starts[line], line_at(starts, end)


def raw_pointers(binding: Binding, found: GlobalKernel) -> dict[str, RawPointer]:
    """Each pointer parameter of ``binding``'s existing kernel by the name its body uses (``found``'s)."""
    kernel = binding.kernel
    assert isinstance(kernel, ExistingKernel)  # noqa: S101 - called for existing kernels only
    strides: dict[str, list[tuple[str, str, Carried]]] = {}
    for arg, p in zip(kernel.args, found.params):
        if isinstance(arg, Carried) and arg.kind in _STRIDES and arg.param is not None and p.name:
            strides.setdefault(arg.param, []).append((p.name, p.text, arg))
    out: dict[str, RawPointer] = {}
    for arg, p in zip(kernel.args, found.params):
        if not isinstance(arg, Param) or not p.name:
            continue
        view = binding.view(arg.name)
        size = UNIT_BYTES.get(plain_type(p.base))
        unit = size if size is not None and size != view.dtype.size else None
        out[p.name] = RawPointer(p.name, arg, view, unit, p.text, tuple(strides.get(arg.name, ())))
    return out


def lint_existing_kernel(binding: Binding) -> list[Diagnostic]:
    """LG401 and LG410 for the raw pointer arithmetic of ``binding``'s existing kernel, at its file's lines.

    Nothing where the file cannot be read or its ``__global__`` disagrees with the declaration: the
    generation reports those (LG232..LG239)."""
    kernel = binding.kernel
    if not isinstance(kernel, ExistingKernel):
        return []
    path = Path(kernel.source_path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    found = find_kernel(kernel, text)
    if isinstance(found, Diagnostic) or check_signature(binding, found):
        return []
    return lint_body(binding, found, text, path)


def lint_body(binding: Binding, found: GlobalKernel, text: str, path: Path) -> list[Diagnostic]:
    """What :func:`lint_existing_kernel` reports, for the kernel ``found`` of the file ``text`` at ``path``."""
    code = list(scan(text, jinja=False).code)
    span = definition_span(code, found)
    if span is None:
        return []
    first, open_line, open_col, last = span
    for other in read_kernels(text):  # another kernel's parameters may share this one's names
        other_span = definition_span(code, other) if other.defined and other.line != found.line else None
        if other_span is not None:
            for n in range(other_span[0], other_span[3] + 1):
                code[n] = ""
    codes = tuple("" if DIRECTIVE.match(line) else line for line in code)
    pointers = raw_pointers(binding, found)
    body = (codes[open_line][open_col:], *codes[open_line + 1 : last + 1])  # after the parameters
    assigned = _assigned(body)
    carried: dict[str, int] = {}  # a carried integer the kernel never assigns is its value
    for arg, p in zip(binding.kernel.args, found.params):  # type: ignore[attr-defined]
        value = carried_value(binding, arg) if isinstance(arg, Carried) else None
        if value is not None and value.is_static and p.name and p.name not in assigned:
            carried[p.name] = value.coef
    names = tuple(pointers)
    reading = read_body(codes, names, tuple(sorted(carried)))
    known = line_constants(reading.lines, carried, {}, reading.definitions)
    bases = [Base(name, row=False, origin=True, unit_bytes=p.unit_bytes, raw=True) for name, p in pointers.items()]
    literals = index_literals(reading.lines, names, known, reading=reading, pointers=bases)
    read = {t.text for line in body for t in tokens(line) if t.kind == "name"}
    others = {name: (ptr, what) for ptr in pointers.values() for name, _, what in ptr.strides}
    out: dict[tuple[int, str], Diagnostic] = {}
    for n in range(first, last + 1):
        for literal in literals[n]:
            pointer = pointers.get(literal.base.view or "")
            if pointer is None:
                continue
            helper = literal.via[1] + 1 if literal.via else 0
            diag = _row_step(binding, found, path, n + 1, literal, pointer, others, read, helper)
            if diag is not None:
                out.setdefault((n + 1, diag.message), diag)
    return list(out.values())


def describe(view: View) -> str:
    """``Window [B, K, 56], snap = columns 0..40``: the layout's rows and where the field is in them."""
    layout = f"{view.layout.name} {shape_text(view.layout.shape)}"
    return f"{layout}, {view.path} = columns {view.cols}" if view.path else layout


def _row_step(binding: Binding, found: GlobalKernel, path: Path, line: int, literal: IndexLiteral,
              pointer: RawPointer, others: dict[str, tuple[RawPointer, Carried]], read: set[str],
              helper: int) -> Diagnostic | None:
    """The diagnostic of one constant factor of an index into ``pointer``, or None where it is right or not a
    step between rows."""
    view = pointer.view
    if literal.role != FACTOR or literal.place not in (SUBSCRIPT, POINTER) or literal.scaled \
            or not view.column_unit.is_static:
        return None  # a step of rows counted by an outer factor is the outer factor's
    unit = literal.unit_bytes or pointer.unit_bytes or view.dtype.size
    if (literal.value * unit) % view.dtype.size:
        return None
    step, stride = literal.value * unit // view.dtype.size, view.row_stride
    if abs(step) < view.width:
        return None  # a step within a row: pairs of columns, a sub-array's entries
    what = f"`{literal.spelled}`" if literal.spelled else f"literal `{literal.value}`"
    if unit != view.dtype.size:
        what += f", {literal.value} steps of {unit} bytes"
    via = f", in helper `{literal.via[0]}` (line {helper}) as this line calls it" if literal.via else ""
    site = Site(str(path), line)
    name, kernel = pointer.name, binding.name
    pitches = {n for n, _, c in pointer.strides if c.kind == "pitch"}
    if literal.spelled in pitches and unit != 1:
        return Diagnostic(
            "LG401", f"`{name}` is indexed at row stride {step} ({what}) in kernel `{kernel}`, but `{literal.spelled}` "
            f"is a pitch in bytes ({stride * view.dtype.size}) and `{name}` steps {unit}-byte elements: its rows are "
            f"{stride} elements apart ({describe(view)}){via}", site, hint=_hint(pointer, stride))
    if step % stride:
        owner = others.get(literal.spelled)
        if owner is not None and owner[0].name != name:
            other, carried = owner
            return Diagnostic(
                "LG410", f"`{literal.spelled}` ({step}) in index arithmetic of kernel `{kernel}` steps the rows of "
                f"`{name}` ({view.name}), which are {stride} elements apart: it is `{carried.text}`, the row "
                f"stride of `{other.name}` ({other.view.name}){via}", site,
                hint=_hint(pointer, stride))
        return Diagnostic(
            "LG401", f"`{name}` is indexed at row stride {step} ({what}) in kernel `{kernel}`, but its rows are "
            f"{stride} elements apart ({describe(view)}){via}", site, hint=_hint(pointer, stride))
    unread = [(n, text, c) for n, text, c in pointer.strides if n not in read]
    if not unread or len(unread) < len(pointer.strides) or literal.spelled in {n for n, _, _ in pointer.strides}:
        return None
    arg, text, carried = unread[0]
    return Diagnostic(
        "LG401", f"`{name}` is indexed at row stride {step} ({what}) in kernel `{kernel}`, which takes that stride "
        f"as `{text}` ({carried.text}, {path.name}:{found.params[[p.name for p in found.params].index(arg)].line}) "
        f"and never reads it{via}", site,
        hint=f"step the rows of `{name}` by `{arg}`: the launcher fills it from the layout ({stride} for "
        f"{describe(view)}), so the kernel follows the layout when it changes")


def _hint(pointer: RawPointer, stride: int) -> str:
    if pointer.strides:
        arg, _, carried = pointer.strides[0]
        if carried.kind == "pitch":
            return (f"step the rows of `{pointer.name}` by `{arg}` bytes (`reinterpret_cast<const char*>("
                    f"{pointer.name}) + r * {arg}`), which the launcher fills with {stride * pointer.view.dtype.size}")
        return (f"step the rows of `{pointer.name}` by `{arg}` ({carried.text}), which the launcher fills with "
                f"{stride}")
    return (f"take the row stride as an `int` parameter declared RowStride(\"{pointer.param.name}\"), which the "
            f"launcher fills with {stride}, and step the rows of `{pointer.name}` by it")
