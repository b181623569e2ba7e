"""Which names may become identifiers in generated code.

Generated code keeps its own identifiers out of every scope that user names
land in: each one is in namespace ``lg`` or starts with ``lg_`` (C++) or
``_lg_`` (Python), and no user name may take those (``lg`` itself, and names
starting with ``lg_``, ``LG_`` or ``_lg_``). What is left to refuse is what
C, C++, CUDA and Python give a meaning of their own: keywords, names kept for
the implementation, CUDA's macros everywhere, and, for kernels (whose
``extern "C"`` names are global), the names NVRTC declares at global scope.
"""

from __future__ import annotations

import keyword
import re

from .cuda_names import CUDA_GLOBALS, CUDA_MACROS, NVRTC_CRASHES

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_LAYOUTGEN = re.compile(r"lg\Z|lg_|LG_|_lg_")  # the namespace, C++ names and macros, Python privates

#: The prefixes of generated identifiers, one per role, so that no two roles can make the same name and no
#: user name can be one: a kernel's pointer argument (`lg_arg_x`), a layout symbol passed at launch and
#: stored in views (`lg_dim_B`), and the generated Python module's private names (`_lg_kernel_fwd`).
CPP_ARGUMENT = "lg_arg_"
CPP_DIM = "lg_dim_"
PY_PRIVATE = "_lg_"

#: The longest name of a kernel or spec: each names files (``<kernel>.cu``, ``<spec>.cuh``, and the
#: writer's temporary files beside them), which must fit the 255 bytes most file systems allow.
MAX_FILE_NAME = 200

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
    if _LAYOUTGEN.match(name):
        if name.startswith(("lg_", "LG_")):
            return "LG106", f"starts with `lg_`, which layoutgen reserves for generated names, got `{name}`"
        return "LG106", f"is `lg` or starts with `_lg_`, which layoutgen reserves for generated names, got `{name}`"
    if name in CUDA_MACROS:
        return "LG106", f"is a macro in CUDA C++, which would replace it wherever it is written, got `{name}`"
    return None


def kernel_name_problem(name: object) -> tuple[str, str] | None:
    """Why ``name`` cannot name a generated kernel: the checks of :func:`name_problem`, then those of a
    global ``extern "C"`` function that names a file."""
    problem = name_problem(name)
    if problem is not None or not isinstance(name, str):
        return problem
    if name in NVRTC_CRASHES:
        return "LG106", f"crashes NVRTC, or makes it hang, when it names a kernel, got `{name}`"
    if name in CUDA_GLOBALS:
        return "LG106", (f"is a name that CUDA C++ declares at global scope or PTX refuses, so no kernel can "
                         f"have it, got `{name}`")
    return file_name_problem(name)


# Windows keeps these names (with any extension, in any case) for devices: `con.cu` is no file there.
_DEVICE_NAMES = re.compile(r"(con|prn|aux|nul|com[0-9]|lpt[0-9])\Z", re.IGNORECASE)


def file_name_problem(name: str) -> tuple[str, str] | None:
    """Why ``name`` cannot name generated files (LG211), or None."""
    if len(name) > MAX_FILE_NAME:
        return "LG211", (f"must be at most {MAX_FILE_NAME} characters, to name its generated files, got "
                         f"{len(name)} (`{name[:24]}...`)")
    if _DEVICE_NAMES.match(name):
        return "LG211", f"is a device name on Windows, where `{name}.cu` could not be a file, got `{name}`"
    return None
