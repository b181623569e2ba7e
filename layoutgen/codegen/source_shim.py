"""The generated kernel of a :class:`SourceKernel`: the user's ``.cu`` file, then a checked call of its entry.

The generated ``extern "C" __global__`` kernel is the one every binding has (views built from the launch
arguments, the scalars, the grid's prologue); its body is made here instead of by a template. It asks
the compiler whether the entry takes exactly the bound types (``static_assert``s whose messages carry
LG225 and LG226 and the parameter's number) and calls the entry only where it does, so that a mismatch
is those errors and no cascade of failed conversions. ``layoutgen check --compile`` turns them into
diagnostics at the entry's lines (:func:`entry_diagnostics`), naming the parameter and both types: the
one bound, and the one the user wrote, read from the source here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from ..checks.cxx import scan
from ..checks.text_offsets import closing, split_params
from ..declare.kernels import Binding, Param
from ..declare.source_kernels import SourceKernel
from ..schema.diagnostics import Diagnostic, Site
from .escape import c_string
from .model import KernelModel, param_vector_bytes

#: The file-scope skeleton the call needs (layoutgen/templates/entry_check.cuh.j2).
ENTRY_HELPER = "entry_check.cuh.j2"
# What a static_assert of the generated call says, as NVRTC reports it: the code and the parameter's number.
_MARK = re.compile(r"(LG22[56]) entry check (?:parameter (\d+)|arity)\b")


@dataclass(frozen=True)
class EntryParam:
    """One parameter of the entry as the source writes it: its type (the name dropped) and its line."""

    type_text: str
    line: int


@dataclass(frozen=True)
class Entry:
    """Where the source defines the entry, and its parameters."""

    line: int
    params: tuple[EntryParam, ...]


_NAME_AT_END = re.compile(r"(?<=[\s*&>])([A-Za-z_]\w*)\s*$")
_TYPE_WORDS = frozenset("int float double char bool long short unsigned signed const volatile void".split())


def _entry_params(text: str, offset: int, whole: str) -> tuple[EntryParam, ...]:
    """The parameters between the parentheses: split at commas outside ``<>``, ``()``, ``[]`` and ``{}`` (each
    ``>`` closing a template's arguments: an entry's parameters are views, `Foo<Bar<int>>`, not shifts)."""
    out = []
    for part, at in split_params(text, shifts=False):
        stripped = part.split("=", 1)[0].strip()
        if not stripped or stripped == "void":
            continue
        lead = at + len(part) - len(part.lstrip())
        m = _NAME_AT_END.search(stripped)
        if m and m.group(1) not in _TYPE_WORDS:
            stripped = stripped[: m.start()].strip()
        line = whole.count("\n", 0, offset + lead) + 1
        out.append(EntryParam(" ".join(stripped.split()), line))
    return tuple(out)


def find_entry(kernel: SourceKernel, text: str) -> Entry | Diagnostic:
    """The entry's definition in the source ``text``, or LG224 saying why it is not there or not usable."""
    path = str(kernel.template_path)
    code = "\n".join(scan(text, jinja=False).code)  # comments and literals blanked, columns kept
    found: Entry | None = None
    for m in re.finditer(rf"(?<![\w:.>]){re.escape(kernel.entry)}\s*\(", code):
        close = closing(code, m.end() - 1, "()", missing=-1)
        if close < 0:
            continue
        after = code[close + 1:].lstrip()
        if not after.startswith("{"):  # a call or a declaration, not the definition
            continue
        line = code.count("\n", 0, m.start()) + 1
        before = code[max(code.rfind(";", 0, m.start()), code.rfind("}", 0, m.start()), 0): m.start()]
        if "__global__" in before.split():
            return Diagnostic(
                "LG224", f"entry `{kernel.entry}` of kernel `{kernel.name}` must be a `__device__` function, got a "
                "`__global__` one", Site(path, line),
                hint="write `__device__` instead: layoutgen generates the kernel, which builds the views and calls "
                     "the entry (docs/own-kernels.md says why)")
        if "__device__" not in before.split():
            return Diagnostic(
                "LG224", f"entry `{kernel.entry}` of kernel `{kernel.name}` must be a `__device__` function, got "
                "one without `__device__`", Site(path, line), hint=f"declare it `__device__ void {kernel.entry}(...)`")
        found = Entry(line, _entry_params(code[m.end(): close], m.end(), code))
        break
    if found is None:
        return Diagnostic(
            "LG224", f"source `{kernel.template}` of kernel `{kernel.name}` defines no function `{kernel.entry}`",
            kernel.site, hint=f"define `__device__ void {kernel.entry}(...)` in it, taking the views and scalars "
                              "in declaration order, or fix `entry=`")
    return found


def expected_types(binding: Binding, spec: str, structs: Mapping[str, str]) -> list[tuple[str, str]]:
    """(parameter name, the C++ type the entry must take) in declaration order: the view type each array's
    view is built as in the generated kernel (kernel.cu.j2), and each scalar's C type. ``structs`` maps each
    view's name to its struct's in the views header of spec ``spec``."""
    views = binding.views_by_param()
    out = []
    for p in binding.kernel.signature:
        if isinstance(p, Param):
            view = views[p.name]
            c_type = view.dtype.c_type if p.writes else f"const {view.dtype.c_type}"
            packing = "lg::Packing::contiguous" if p.contiguous else "lg::Packing::strided"
            out.append((p.name, f"lg::views::{spec}::{structs[view.name]}<{c_type}, "
                                f"{param_vector_bytes(binding, p, view)}, {packing}>"))
        else:
            out.append((p.name, p.dtype.c_type))
    return out


def source_parts(spec: str, structs: Mapping[str, str], binding: Binding, source: str,
                 shown_path: str) -> tuple[str, str]:
    """(the preamble: the user's file after a ``#line``, the body: the checked call of the entry)."""
    entry = binding.kernel.entry if isinstance(binding.kernel, SourceKernel) else binding.kernel.name
    wanted = expected_types(binding, spec, structs)
    preamble = f"#line 1 {c_string(shown_path)}\n{source.rstrip()}"
    lines = [f"    // The entry `{entry}` of {shown_path}, called with the views and scalars in declaration order;",
             "    // it is called only where it takes exactly these types, so that a mismatch is these errors.",
             f"    using lg_entry_type = decltype(&{entry});",
             f"    static_assert(lg::entry::arity<lg_entry_type>() == {len(wanted)}, "
             + c_string(f"LG225 entry check arity: '{entry}' must take {len(wanted)} parameters") + ");"]
    for n, (name, c_type) in enumerate(wanted):
        lines.append(f"    static_assert(lg::entry::takes<lg_entry_type, {n}, {c_type}>(), "
                     + c_string(f"LG226 entry check parameter {n + 1}: parameter {n + 1} of '{entry}' ('{name}') "
                                f"must be '{c_type}'") + ");")
    fits = " && ".join([f"lg::entry::arity<lg_entry_type>() == {len(wanted)}",
                        *(f"lg::entry::takes<lg_entry_type, {n}, {t}>()" for n, (_, t) in enumerate(wanted))])
    lines.append(f"    constexpr bool lg_entry_fits = {fits};")
    lines.append(f"    lg::entry::call<lg_entry_fits, &{entry}>({', '.join(name for name, _ in wanted)});")
    return preamble, "\n".join(lines)


def entry_diagnostics(binding: Binding, messages: Sequence[str], spec: str,
                      structs: Mapping[str, str]) -> list[Diagnostic]:
    """LG225 or LG226 for the entry checks that failed among an NVRTC log's error ``messages``, at the entry's
    line (LG226: the parameter's), naming the parameter and both types. Empty where none failed."""
    kernel = binding.kernel
    if not isinstance(kernel, SourceKernel):
        return []
    marks = [m for msg in messages if (m := _MARK.search(msg))]
    if not marks:
        return []
    path = kernel.template_path
    found = find_entry(kernel, path.read_text(encoding="utf-8"))
    if isinstance(found, Diagnostic):
        return [found]
    wanted = expected_types(binding, spec, structs)
    where = f"`{binding.name}` (kernel `{kernel.name}`)" if binding.name != kernel.name else f"`{kernel.name}`"
    if any(m.group(1) == "LG225" for m in marks):
        listed = ", ".join(f"`{n}`" for n, _ in wanted)
        return [Diagnostic(
            "LG225", f"entry `{kernel.entry}` of {where} must take {len(wanted)} parameters ({listed}), got "
            f"{len(found.params)}", Site(str(path), found.line),
            hint="one parameter per declared parameter, in declaration order: a view for each array, a value for "
                 "each scalar")]
    out = []
    for m in marks:
        n = int(m.group(2)) - 1
        name, c_type = wanted[n]
        got = found.params[n] if n < len(found.params) else None
        out.append(Diagnostic(
            "LG226", f"parameter {n + 1} of entry `{kernel.entry}` (`{name}` of {where}) must be `{c_type}`, got "
            f"`{got.type_text if got else '?'}`", Site(str(path), got.line if got else found.line),
            hint="take the view by value (or by const reference) with the template arguments shown: the element "
                 "type (const for In), the vector width the launcher checks, and the packing"))
    return out


def source_kernel(binding: Binding, k: KernelModel, spec: str, structs: Mapping[str, str], shown_path: str) -> tuple[KernelModel, str, str] | Diagnostic:
    """(the kernel's model with the entry check's helper, the preamble, the body) of a source kernel's binding,
    or LG224 where its file or entry is missing or unusable. ``shown_path``: the file as generated text names it."""
    kernel = binding.kernel
    if not isinstance(kernel, SourceKernel):
        raise TypeError(f"{kernel!r} is no SourceKernel")
    path = kernel.template_path
    if not path.is_file():
        return Diagnostic("LG224", f"source `{kernel.template}` of kernel `{kernel.name}` does not exist (looked for "
                          f"{shown_path})", kernel.site, hint="source paths are relative to the file that declares "
                          "the kernel, or to its `source_root`")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        return Diagnostic("LG224", f"source `{kernel.template}` of kernel `{kernel.name}` must be UTF-8 text, got a "
                          f"byte it cannot decode at offset {exc.start}", kernel.site, hint="save the file as UTF-8")
    found = find_entry(kernel, text)
    if isinstance(found, Diagnostic):
        return found
    if kernel.entry == binding.name:  # `extern "C"` kernel and the entry would be one name
        return Diagnostic("LG224", f"entry `{kernel.entry}` of kernel `{kernel.name}` must not be named like the "
                          f"kernel layoutgen generates for it (`{binding.name}`)", Site(str(path), found.line),
                          hint=f"rename the function, or name the binding: {kernel.name}.bind(name=\"...\", ...)")
    preamble, body = source_parts(spec, structs, binding, text, shown_path)
    return replace(k, helpers=(*k.helpers, ENTRY_HELPER)), preamble, body
