"""The runtime: compile kernels to cubins with NVRTC and cache them on disk.

Importing it is cheap: CuPy is imported only when something is compiled.
"""

from .cache import CubinCache
from .nvrtc import (
    CompileError,
    CompileRequest,
    CompileResult,
    KernelResources,
    NvrtcUnavailableError,
    compile_cubin,
    nvrtc_version,
)
from .paths import cache_dir, cubin_cache_dir, cuda_include_dirs

__all__ = [
    "CompileError", "CompileRequest", "CompileResult", "CubinCache", "KernelResources",
    "NvrtcUnavailableError", "cache_dir", "compile_cubin", "cubin_cache_dir", "cuda_include_dirs",
    "nvrtc_version",
]
