"""The generated kernel file of an :class:`~layoutgen.declare.existing_kernels.ExistingKernel`, its symbol, and
the launch's list of raw arguments.

The file is the team's ``.cu`` copied whole after the spec's views header (which the debug build's fault
record needs), behind a ``#line`` naming the original, so that NVRTC's errors and ``check --execute`` name its
own lines. Nothing is added after it: the ``__global__`` is launched by its own name. A kernel of C++ linkage
is found in the cubin by its mangled name (Itanium ABI, as NVRTC and nvcc write it on Linux), computed here
from the signature as the file writes it; one whose signature names a type that cannot be mangled without a
compiler (a typedef of the team's own, a template parameter) must be ``extern "C"`` (LG239).

The raw arguments say, per parameter of the ``__global__`` in its order, where its launch value comes from:
("pointer", i) the i-th array, ("scalar", k) the k-th scalar, ("value", 0, coef, symbols, bits, signed, label) a
carried integer, ``coef`` times the layout symbols' sizes, checked against its C type's range at launch.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..checks.cuda_signatures import INTEGER_TYPES, GlobalKernel, GlobalParam, plain_type
from ..checks.existing_kernels import check_signature, find_kernel
from ..declare.existing_kernels import Carried, ExistingKernel, carried_value
from ..declare.kernels import Binding, Param
from ..schema.diagnostics import Diagnostic
from .escape import c_string, cpp_comment
from .existing_debug import debug_copy

#: Itanium codes of the builtin types (LP64: int64_t is `long`, as NVRTC and nvcc on Linux define it).
_BUILTIN = {
    "void": "v", "bool": "b", "char": "c", "signed char": "a", "unsigned char": "h", "short": "s",
    "short int": "s", "unsigned short": "t", "unsigned short int": "t", "int": "i", "signed": "i",
    "signed int": "i", "unsigned": "j", "unsigned int": "j", "long": "l", "long int": "l", "unsigned long": "m",
    "unsigned long int": "m", "long long": "x", "long long int": "x", "unsigned long long": "y",
    "unsigned long long int": "y", "float": "f", "double": "d",
    "int8_t": "a", "uint8_t": "h", "int16_t": "s", "uint16_t": "t", "int32_t": "i", "uint32_t": "j",
    "int64_t": "l", "uint64_t": "m", "size_t": "m", "ptrdiff_t": "l", "intptr_t": "l", "uintptr_t": "m",
}
#: Class types of the CUDA headers a kernel may take (by value or through a pointer): mangled by their name.
_CLASSES = frozenset({
    "__half", "__half2", "__nv_bfloat16", "__nv_bfloat162",
    *(f"{t}{n}" for t in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong",
                          "ulonglong", "float", "double") for n in (1, 2, 3, 4)),
})


def _seq(n: int) -> str:
    """The Itanium substitution ``S<seq>_`` of the n-th candidate: S_, S0_, ..., S9_, SA_, ..."""
    if n == 0:
        return "S_"
    n -= 1
    digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    text = ""
    while True:
        text = digits[n % 36] + text
        n //= 36
        if not n:
            return f"S{text}_"


def mangled_name(kernel: GlobalKernel) -> str | None:
    """The symbol of ``kernel`` in a cubin: its name where ``extern "C"``, else its Itanium mangled name; None
    where a parameter's type is not one this can mangle (a typedef of the file's own, a template)."""
    if kernel.extern_c:
        return kernel.name
    if kernel.template is not None:
        return None
    subs: list[str] = []

    def component(full: str, encoded: str) -> str:
        if full in subs:
            return _seq(subs.index(full))
        subs.append(full)
        return encoded

    if kernel.namespace:
        prefix = ""
        for ns in kernel.namespace:
            prefix += f"{len(ns)}{ns}"
            component(prefix, prefix)
        head = f"_ZN{prefix}{len(kernel.name)}{kernel.name}E"
    else:
        head = f"_Z{len(kernel.name)}{kernel.name}"
    if not kernel.params:
        return head + "v"
    out = []
    for p in kernel.params:
        encoded = _type(p, component)
        if encoded is None:
            return None
        out.append(encoded)
    return head + "".join(out)


def _type(p: GlobalParam, add: Callable[[str, str], str]) -> str | None:
    """``p``'s type mangled; ``add(full, encoded)`` writes a substitution candidate (or its ``S_`` form)."""
    base = plain_type(p.base)
    if base in _BUILTIN:
        full = encoded = _BUILTIN[base]
    elif base in _CLASSES:
        full = f"{len(base)}{base}"
        encoded = add(full, full)
    else:
        return None
    if not p.pointer:  # a value's top-level const is not part of the function's type
        return encoded
    if p.const:
        full = "K" + full
        encoded = add(full, "K" + encoded)
    if p.type_text.count("*") != 1:
        return None
    full = "P" + full
    return add(full, "P" + encoded)


def raw_arguments(binding: Binding, found: GlobalKernel) -> tuple[tuple[object, ...], ...]:
    """Per parameter of the ``__global__``, where its launch value comes from (the module docstring's forms)."""
    kernel = binding.kernel
    assert isinstance(kernel, ExistingKernel)  # noqa: S101 - called for existing kernels only
    arrays = [p.name for p in kernel.params]
    scalars = [s.name for s in kernel.scalars]
    out: list[tuple[object, ...]] = []
    for arg, p in zip(kernel.args, found.params):
        if isinstance(arg, Param):
            out.append(("pointer", arrays.index(arg.name)))
        elif isinstance(arg, Carried):
            value = carried_value(binding, arg)
            bits, signed = INTEGER_TYPES.get(plain_type(p.base), (64, True))
            out.append(("value", 0, value.coef, value.symbols, bits, signed, f"`{p.text}` ({arg.text})"))
        else:
            out.append(("scalar", scalars.index(arg.name)))
    return tuple(out)


def existing_kernel(binding: Binding, text: str | None, shown: str, header: str, *, debug: bool = False
                    ) -> tuple[str, str, tuple[tuple[object, ...], ...]] | list[Diagnostic]:
    """The generated ``.cu`` of ``binding`` (the file's ``text``, shown as ``shown``), the symbol to load and
    the raw arguments; or the diagnostics of a declaration that disagrees with the file (LG232..LG239).
    ``debug``: the debug build's copy, its pointers checked (:mod:`.existing_debug`)."""
    kernel = binding.kernel
    assert isinstance(kernel, ExistingKernel)  # noqa: S101 - called for existing kernels only
    found = find_kernel(kernel, text)
    if isinstance(found, Diagnostic):
        return [found]
    problems = check_signature(binding, found)
    if problems:
        return problems
    symbol = mangled_name(found)
    if symbol is None:
        why = "is a template" if found.template is not None else "names a type layoutgen cannot mangle"
        return [Diagnostic(
            "LG239", f"`{found.qualified}` ({Path(kernel.source_path).name}:{found.line}) {why}, so kernel "
            f"`{kernel.name}` cannot find its symbol in the cubin; it must be `extern \"C\"` or take builtin types",
            kernel.site, hint="declare a non-template `extern \"C\" __global__` that the launcher can name, or write "
            "the parameter with a builtin type (`long long`, not a typedef)")]
    lines = [f"// Kernel `{cpp_comment(binding.name)}`: the existing kernel `{cpp_comment(found.qualified)}` of "
             f"{cpp_comment(shown)}, copied unchanged.", "// Its launch arguments, in the order of its signature:"]
    carried = {id(a): carried_value(binding, a) for a in kernel.args if isinstance(a, Carried)}
    for arg, p in zip(kernel.args, found.params):
        if isinstance(arg, Param):
            view = binding.view(arg.name)
            what = f"the {view.layout.name} array ({arg.access}; `{view.name}`, columns {view.cols})"
        elif isinstance(arg, Carried):
            what = f"{carried[id(arg)]}: {arg.text}"
        else:
            what = f"scalar `{arg.name}` ({arg.described})"
        lines.append(f"//   {cpp_comment(p.text)} <- {cpp_comment(what)}")
    raw = raw_arguments(binding, found)
    copied = debug_copy(binding, found, text or "", shown) if debug else None
    if copied is not None:  # the same kernel, its pointers checked: more arguments, so maybe another symbol
        text, declared, extra = copied
        symbol, raw = mangled_name(declared) or symbol, (*raw, *extra)
        lines.append("// Debug build: each pointer parameter is checked (`lg::checked_ptr`), its rows passed after "
                     "the kernel's own parameters.")
    lines += [f'#include "{header}"', f"#line 1 {c_string(shown)}", text or ""]
    return "\n".join(lines), symbol, raw
