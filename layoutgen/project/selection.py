"""Which diagnostics a run reports, and how it counts them: ``select``, ``ignore``, warnings as errors.

One :class:`Selection` (from ``[tool.layoutgen]`` and the command line) is applied to every
diagnostic of ``check`` and ``generate``. It only turns off what may be turned off
(:func:`~layoutgen.checks.suppress.can_ignore`: warnings, notes, the lint's LG401/LG403); every
other error is always reported, whatever ``select`` and ``ignore`` say, because ignoring it would let
wrong code be written, or a kernel pass unchecked (LG531, which only a comment on its own line that says why
may turn off: the registry's :attr:`~layoutgen.schema.diagnostics.Code.turned_off`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from ..checks.suppress import can_ignore
from ..schema.diagnostics import CODES, Diagnostic, Off, Severity


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


def why_not_ignored(prefix: str) -> str | None:
    """Why ``ignore`` may not name ``prefix`` (a code, or a prefix of codes) for a project or a run: none of the
    codes it covers may be turned off there. None where one may."""
    covered = [code for code in CODES if code.startswith(prefix)]
    if any(can_ignore(code) for code in covered):
        return None
    if prefix not in CODES:
        return f"every code starting with {prefix} is an error that stops generation"
    code = CODES[prefix]
    if code.turned_off is Off.LINE:
        return (f"{prefix} ({code.name}) may be turned off only on the line it is reported at, by a comment that "
                f"says why (`# layoutgen: ignore[{prefix}]: why`)")
    return f"{prefix} ({code.name}) is an error that stops generation"
