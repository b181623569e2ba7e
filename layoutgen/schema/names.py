"""Which names may become C++ identifiers in generated code."""

from __future__ import annotations

import keyword
import re

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

# C and C++ keywords, CUDA's execution-space and memory qualifiers, and the
# built-in variables every kernel sees: a field named after any of these
# would not compile, or would silently shadow something a template relies on.
RESERVED: frozenset[str] = frozenset(
    """
    alignas alignof and and_eq asm auto bitand bitor bool break case catch char
    char8_t char16_t char32_t class compl concept const consteval constexpr
    constinit const_cast continue co_await co_return co_yield decltype default
    delete do double dynamic_cast else enum explicit export extern false float
    for friend goto if inline int long mutable namespace new noexcept not not_eq
    nullptr operator or or_eq private protected public register
    reinterpret_cast requires restrict return short signed sizeof static
    static_assert static_cast struct switch template this thread_local throw
    true try typedef typeid typename union unsigned using virtual void volatile
    wchar_t while xor xor_eq _Bool _Complex _Imaginary
    __global__ __device__ __host__ __shared__ __constant__ __managed__
    __restrict__ __forceinline__ __noinline__ __launch_bounds__ __grid_constant__
    threadIdx blockIdx blockDim gridDim warpSize
    """.split()
)


def name_problem(name: object) -> tuple[str, str] | None:
    """Why ``name`` cannot be a generated identifier: ``(code, reason)`` or None."""
    if not isinstance(name, str):
        return "LG105", f"must be a string, got {type(name).__name__} {name!r}"
    if not _IDENTIFIER.match(name):
        return "LG105", f"must be a C identifier (letters, digits, `_`; not starting with a digit), got {name!r}"
    if name in RESERVED or keyword.iskeyword(name):
        return "LG106", f"is a reserved word in C++, CUDA or Python, got `{name}`"
    if name.startswith("__") or (name.startswith("_") and name[1:2].isupper()):
        return "LG106", f"is reserved for the implementation (leading `__` or `_` and a capital), got `{name}`"
    if name.startswith("lg_") or name.startswith("LG_"):
        return "LG106", f"starts with `lg_`, which layoutgen reserves for generated names, got `{name}`"
    return None
