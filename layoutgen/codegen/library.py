"""Which device library generated code builds on: layoutgen's own headers (``layoutgen/include/lg/*.cuh``).

A generated views header includes the library (``lg/lg.cuh``, ``lg/debug.cuh`` for the debug build) and
names its version's namespace in full (``lg::v0_1_0``), so that it binds to the library of the layoutgen
that generated it, whatever else a translation unit includes (lg/version.cuh says why). The namespace is
read from ``__version__`` at each render, not at import, so that a test can render "another version".
"""

from __future__ import annotations

import re

from .. import version

__all__ = ["library_namespace", "library_version_macro"]


def library_namespace() -> str:
    """The library's versioned namespace under ``lg``: ``v0_1_0`` for layoutgen 0.1.0 (every character of the
    version that cannot be in a C++ name is ``_``: ``0.2.0rc1+g1a`` is ``v0_2_0rc1_g1a``)."""
    return "v" + re.sub(r"[^0-9A-Za-z]", "_", version.__version__)


def library_version_macro() -> str:
    """The macro ``lg/version.cuh`` defines, which a views header checks after its ``#include``: ``LG_V0_1_0``."""
    return f"LG_{library_namespace().upper()}"
