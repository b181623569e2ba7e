"""layoutgen's device library: the C++ headers every generated views header includes (``lg/lg.cuh``).

They are real headers the package ships (``layoutgen/include/lg/*.cuh``), on NVRTC's include path for every
compile (:class:`~layoutgen.runtime.nvrtc.CompileRequest`), on the host compiler's for the CPU run (the
include root, ``project/execute_harness.py``), and printed for nvcc users by ``layoutgen includes``. The
compile cache's key holds their digest, so a cubin compiled against other library headers (an edited
checkout, another layoutgen) is never loaded. The host runtime under ``lg/host/`` is not the device
library: no GPU compile includes it, so it takes no part in the digest.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

__all__ = ["LIBRARY_INCLUDE", "library_digest", "library_headers", "library_names"]

#: The folder to put on the include path: ``#include <lg/lg.cuh>`` finds the library there.
LIBRARY_INCLUDE = Path(__file__).resolve().parent.parent / "include"


def library_headers(root: Path = LIBRARY_INCLUDE) -> tuple[Path, ...]:
    """Every file of the device library under ``root``: ``lg/`` and its folders but ``lg/host/``, sorted."""
    library = root / "lg"
    return tuple(sorted(p for p in library.rglob("*") if p.is_file() and "host" not in p.relative_to(library).parts[:1]))


def library_names(root: Path = LIBRARY_INCLUDE) -> dict[str, str]:
    """Each file of the device library as NVRTC names it in a log (the -I folder joined with its name) to its
    include name, ``lg/field.cuh``: an error NVRTC places in the library is shown by that name at the user's
    call that reached it, never at the installed path. Raises nothing."""
    return {str(path): path.relative_to(root).as_posix() for path in library_headers(root)}


def library_digest(root: Path = LIBRARY_INCLUDE) -> str:
    """sha256 (hex) of the device library's files: each one's path under ``root`` and its bytes.

    Read once per process and root: the package's headers do not change under a running program (a test
    that edits a copy passes its own ``root``). Raises nothing; a file that cannot be read counts as such.
    """
    return _digest(str(root))


@functools.cache
def _digest(root: str) -> str:
    digest = hashlib.sha256()
    for path in library_headers(Path(root)):
        try:
            data = b"\x01" + path.read_bytes()
        except OSError:
            data = b"\x00"
        name = path.relative_to(root).as_posix()
        # The length first: no file's bytes can run into the next file's name.
        digest.update(f"{name}\0{len(data)}\0".encode("utf-8", "surrogateescape") + data)
    return digest.hexdigest()
