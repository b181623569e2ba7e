"""Which diagnostics a run reports, and how it counts them: ``select``, ``ignore``, warnings as errors.

One :class:`Selection` (from ``[tool.layoutgen]`` and the command line) is applied to every
diagnostic of ``check`` and ``generate``. It only turns off what may be turned off
(:func:`~layoutgen.checks.suppress.can_ignore`: warnings, notes, the lint's LG401/LG403); every
other error is always reported, whatever ``select`` and ``ignore`` say, because ignoring it would let
wrong code be written.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..checks.suppress import can_ignore
from ..schema.diagnostics import Diagnostic, Severity


@dataclass(frozen=True)
class Selection:
    """Codes and prefixes (``"LG401"``, ``"LG4"``) to report and to leave out, and whether a warning
    counts as an error. An empty ``select`` selects every code; ``ignore`` wins over ``select``."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    warnings_as_errors: bool = False

    def reports(self, code: str) -> bool:
        """Whether a diagnostic of ``code`` is reported."""
        if not can_ignore(code):
            return True
        selected = not self.select or any(code.startswith(p) for p in self.select)
        return selected and not any(code.startswith(p) for p in self.ignore)

    def apply(self, diags: Iterable[Diagnostic]) -> list[Diagnostic]:
        """The diagnostics reported, in order, each warning made an error when warnings are errors."""
        out = [d for d in diags if self.reports(d.code)]
        if self.warnings_as_errors:
            out = [replace(d, as_error=True) if d.severity is Severity.WARNING else d for d in out]
        return out
