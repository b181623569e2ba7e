"""The error a malformed kernel declaration raises: its parameters, grid, shared memory or binding."""

from __future__ import annotations

from ..schema.diagnostics import Diagnostic, LayoutgenError, Site


class KernelError(LayoutgenError):
    """A kernel, grid, shared array or binding declaration is malformed (LG207, LG208, LG211, LG216, LG218,
    LG219; LG114 for a view too wide)."""


def kernel_error(code: str, message: str, site: Site | None, hint: str | None = None) -> KernelError:
    return KernelError(Diagnostic(code, message, site, hint))
