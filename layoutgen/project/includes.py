"""``layoutgen includes``: the include folder of layoutgen's device library, for compilers layoutgen does not run.

layoutgen's own compiles (NVRTC in ``check --compile``, ``build`` and the launchers; the host compiler of
``check --execute``) put the folder on the include path themselves. A team that compiles the generated
headers with nvcc, or includes them in its own sources, passes the flag this prints, as ``pybind11
--includes`` prints Python's: ``nvcc $(layoutgen includes) -c kernels.cu``.
"""

from __future__ import annotations

import shlex

from ..runtime.device_library import LIBRARY_INCLUDE

__all__ = ["include_flags"]


def include_flags() -> str:
    """``-I<folder>``: the folder holding ``lg/lg.cuh``, quoted for a POSIX shell where it needs it."""
    return shlex.quote(f"-I{LIBRARY_INCLUDE}")
