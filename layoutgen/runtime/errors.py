"""The error a refused launch raises, and how each part of the runtime builds one."""

from __future__ import annotations

from ..schema.diagnostics import Diagnostic, LayoutgenError


class LaunchError(LayoutgenError, ValueError):
    """A launch was refused and the kernel did not run (LG6xx).

    LG601..LG608 and LG610: an argument does not match its layout; LG614:
    a written argument shares memory with another; LG616: ``stream`` is no
    stream; LG617: the grid is larger than CUDA allows; LG618: a written
    torch tensor requires grad; LG613: a program run got one array for two
    buffers; all found before the launch, and LG615 (no CUDA device) only
    after all of them. LG609: the CUDA driver refused the launch itself. The
    debug build's reports (LG611, LG612) are subclasses, raised after the
    launch.
    """


def launch_error(code: str, message: str, hint: str | None = None) -> LaunchError:
    """A LaunchError carrying one diagnostic with no declaration site (the caller is the array's owner)."""
    return LaunchError(Diagnostic(code, message, None, hint))
