"""An existing kernel's declaration against its ``__global__`` as the ``.cu`` file writes it (LG232..LG238).

Each entry of ``ExistingKernel(args=...)`` says what one parameter of the ``__global__`` is. This compares
the two lists: the function exists once (LG232), takes as many parameters (LG233), a pointer where an array
is declared and an integer where a value is carried (LG234), a ``const`` pointer for an ``In`` and a
writable one for an ``Out``/``InOut`` (LG235), an integer wide enough for the value it carries (LG236), a
pointer to the layout's element type (LG237), a scalar of the declared C type (LG238). Each diagnostic is
placed at the spec's line that declared the entry, and names the parameter as the file writes it, with its
line: the file is the team's, unchanged; the declaration is what the check can ask them to fix.
"""

from __future__ import annotations

from pathlib import Path

from ..declare.existing_kernels import Carried, ExistingKernel, carried_value
from ..declare.kernels import Binding, Param, Scalar
from ..schema.diagnostics import Diagnostic
from ..schema.dims import Size
from ..schema.dtypes import DType
from ..schema.words import plural
from .cuda_signatures import FLOAT_TYPES, INTEGER_TYPES, GlobalKernel, GlobalParam, plain_type, read_kernels

#: Element types of a pointer that may address an array of any layout (raw bytes, or nothing in particular).
_ANY_ELEMENT = frozenset({"void", "char", "unsigned char", "signed char", "uint8_t", "int8_t"})
#: C names of each layoutgen dtype's element (a typedef of it counts as unknown, and is not compared).
_ELEMENT_NAMES = {
    "f32": {"float", "float1", "float2", "float3", "float4"},
    "f64": {"double", "double1", "double2", "double3", "double4"},
    "f16": {"__half", "half", "__half2", "half2"},
    "bf16": {"__nv_bfloat16", "nv_bfloat16", "__nv_bfloat162", "nv_bfloat162"},
    "i32": {"int", "int32_t", "signed", "signed int", "int1", "int2", "int3", "int4"},
    "u32": {"unsigned", "unsigned int", "uint32_t", "uint1", "uint2", "uint3", "uint4"},
    "i64": {"long long", "long long int", "int64_t", "long", "longlong2"},
    "u64": {"unsigned long long", "uint64_t", "unsigned long", "size_t"},
    "i16": {"short", "int16_t", "short2", "short4"},
    "u16": {"unsigned short", "uint16_t", "ushort2", "ushort4"},
    "i8": {"signed char", "int8_t", "char", "char2", "char4"},
    "u8": {"unsigned char", "uint8_t", "uchar2", "uchar4"},
    "bool": {"bool"},
}
_KNOWN = frozenset(INTEGER_TYPES) | FLOAT_TYPES | {n for names in _ELEMENT_NAMES.values() for n in names} | _ANY_ELEMENT


def find_kernel(kernel: ExistingKernel, text: str | None) -> GlobalKernel | Diagnostic:
    """The ``__global__`` that ``kernel`` declares, read from ``text`` (None: the file could not be read):
    LG232 where it is missing or defined twice (overloads cannot be launched by name)."""
    path = Path(kernel.source_path)
    if text is None:
        return Diagnostic("LG232", f"the source file of kernel `{kernel.name}` must exist, got no file at {path}",
                          kernel.site, hint="the path is relative to the file that declares the kernel")
    found = read_kernels(text)
    named = [k for k in found if k.qualified == kernel.function or k.name == kernel.function]
    if len(named) == 1:
        return named[0]
    listed = ", ".join(f"`{k.qualified}`" for k in found) or "none"
    if not named:
        return Diagnostic("LG232", f"`{path.name}` must define the `__global__` function `{kernel.function}` of kernel "
                          f"`{kernel.name}`, got {listed}", kernel.site,
                          hint="`function=` names the `__global__` as the file writes it")
    lines = ", ".join(str(k.line) for k in named)
    return Diagnostic("LG232", f"`{path.name}` must define one `__global__` named `{kernel.function}`, got "
                      f"{len(named)} (lines {lines})", kernel.site, hint="name it qualified (`ns::k`) or rename one")


def _same_integer(base: str, dtype: DType) -> bool:
    """Whether the C type ``base`` is an integer of ``dtype``'s width and signedness, however it is spelled
    (``unsigned long int``, ``uint64_t``, ``size_t`` for u64)."""
    limits = INTEGER_TYPES.get(base)
    return limits is not None and dtype.kind in ("int", "uint") and limits == (dtype.size * 8, dtype.kind == "int")


def _where(path: Path, p: GlobalParam, number: int) -> str:
    return f"parameter {number} `{p.text}` ({path.name}:{p.line})"


def check_signature(binding: Binding, found: GlobalKernel) -> list[Diagnostic]:
    """Every disagreement between ``binding``'s existing kernel and the ``__global__`` ``found`` (LG233..LG238)."""
    kernel = binding.kernel
    if not isinstance(kernel, ExistingKernel):
        return []
    path = Path(kernel.source_path)
    if len(found.params) != len(kernel.args):
        return [Diagnostic(
            "LG233", f"`{kernel.function}` ({path.name}:{found.line}) takes {plural(len(found.params), 'parameter')}, "
            f"so kernel `{kernel.name}` must declare as many arguments, got {len(kernel.args)}", kernel.site,
            hint="give one entry per parameter of the `__global__`, in its order: "
            + ", ".join(p.text for p in found.params))]
    out: list[Diagnostic] = []
    for number, (arg, p) in enumerate(zip(kernel.args, found.params), start=1):
        problem = _check_one(binding, arg, p, _where(path, p, number))
        if problem is not None:
            out.append(problem)
    return out


def _check_one(binding: Binding, arg: Param | Scalar | Carried, p: GlobalParam, where: str) -> Diagnostic | None:
    base = plain_type(p.base)
    if isinstance(arg, Param):
        if not p.pointer:
            return Diagnostic("LG234", f"{where} must be a pointer to carry array `{arg.name}`, got `{p.type_text}`",
                              arg.site, hint="declare the entry for this position, or fix the order")
        if arg.access == "in" and not p.const:
            return Diagnostic("LG235", f"{where} must point to `const` elements to carry In `{arg.name}`, got "
                              f"`{p.type_text}`", arg.site,
                              hint="declare it InOut if the kernel writes it; else add `const` to the kernel's parameter")
        if arg.access != "in" and p.const:
            return Diagnostic("LG235", f"{where} points to `const` elements, so `{arg.name}` must be In, got "
                              f"{'Out' if arg.access == 'out' else 'InOut'}", arg.site,
                              hint="the kernel cannot write through it: declare In")
        dtype = binding.view(arg.name).dtype
        if base in _KNOWN and base not in _ANY_ELEMENT and base not in _ELEMENT_NAMES.get(dtype.name, ()) \
                and not _same_integer(base, dtype):
            return Diagnostic("LG237", f"{where} must point to {dtype.c_type} elements: `{arg.name}` is bound to "
                              f"`{binding.view(arg.name).name}` of {dtype}, got `{base}`", arg.site,
                              hint="bind a view of the kernel's element type")
        return None
    if p.pointer:
        what = f"scalar `{arg.name}`" if isinstance(arg, Scalar) else f"`{arg.text}`"
        return Diagnostic("LG234", f"{where} must be a value to carry {what}, got the pointer `{p.type_text}`",
                          arg.site, hint="declare In/Out/InOut for a pointer, or fix the order")
    if isinstance(arg, Scalar):
        if base in _KNOWN and base != arg.dtype.c_type and not _same_integer(base, arg.dtype):
            return Diagnostic("LG238", f"{where} must be `{arg.dtype.c_type}` to carry scalar `{arg.name}` "
                              f"({arg.described}), got `{base}`", arg.site,
                              hint=f"declare Scalar(\"{arg.name}\", ...) with the kernel's type")
        return None
    value = carried_value(binding, arg)
    if base in FLOAT_TYPES:
        return Diagnostic("LG234", f"{where} must be an integer to carry `{arg.text}` ({value}), got `{base}`",
                          arg.site, hint="an integer parameter carries a dim, stride, pitch or offset")
    limits = INTEGER_TYPES.get(base)
    if limits is None:  # a typedef or template parameter: the launch checks the value's range (LG641)
        return None
    bits, signed = limits
    return _too_narrow(arg, value, bits, signed, base, where)


def _too_narrow(arg: Carried, value: Size, bits: int, signed: bool, base: str, where: str) -> Diagnostic | None:
    """LG236: a static value past the type's range, or a symbolic one in a type under 32 bits."""
    top = (1 << (bits - 1 if signed else bits)) - 1
    if value.is_static and value.coef > top:
        return Diagnostic("LG236", f"{where} must hold {value.coef} to carry `{arg.text}`, but `{base}` holds at most "
                          f"{top}", arg.site, hint="widen the kernel's parameter")
    if not value.is_static and bits < 32:
        return Diagnostic("LG236", f"{where} must hold `{arg.text}` = {value}, set at launch, but `{base}` holds at "
                          f"most {top}", arg.site, hint="declare it `int` or wider (the launcher refuses a value "
                          "past the type's range, LG641)")
    return None
