"""Reading NVRTC's log: each error with every line NVRTC wrote under it.

NVRTC writes an error as ``file(line): error: message``, then what explains
it: the argument types of a failed call, the source line with a caret under
the place, notes (the candidates that did not match), and the instantiations
that reached it (``detected during instantiation of ... at line 5 of
scale.cu.j2``). A diagnostic keeps all of it: the first line alone seldom
says what to change.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace

from ..schema.diagnostics import Diagnostic, Site
from . import paths

__all__ = ["LogError", "parse_errors", "parse_log"]

# `file(line): error: message`, `file(line): catastrophic error: …`, `error #123-D: …`.
_SITED = re.compile(r"^(?P<file>.+?)\((?P<line>\d+)\): (?:catastrophic )?error(?: #[\w-]+)?: (?P<msg>.*)$")
# Errors with no line: bad options, ptxas, and errors at the end of a source.
_UNSITED = re.compile(
    r"^(?:(?P<tool>nvrtc|ptxas|nvlink):?\s*(?:error|fatal)\s*:\s*"
    r"|At end of source: (?:catastrophic )?error(?: #[\w-]+)?: )(?P<msg>.*)$"
)
_MISSING_HEADER = "open source file"  # "cannot open …", "could not open …"
_HEADER_HINT = (
    f"CUDA headers are searched in `{paths.CUDA_INCLUDE_ENV}` or, where it is unset, the "
    "nvidia-cuda-runtime wheel and the CUDA toolkit of NVRTC's major version (install layoutgen[cuda13], or "
    "layoutgen[cuda12] for NVRTC 12); "
    "other headers must be passed in the request's `headers`"
)


# The lines under an error that say where it was reached from (innermost first, the user's call last):
# "detected during instantiation of "..." at line 5 of scale.cu.j2", or one such line per step of a chain.
_AT_LINE = re.compile(r"\bat line (?P<line>\d+) of (?P<file>.+?)\s*$")
# A note under an error (a candidate function, a final comparison), named like the error: `file(line): note`.
_NOTE = re.compile(r"^(?P<file>.+?)(?P<rest>\(\d+\): (?:note|remark)\b.*)$")
# What ends an error's lines: a warning (skipped, with what it says under it), a line of a tool that is no
# error (ptxas info), and NVRTC's count.
_WARNING = re.compile(r"^(?:.+?\(\d+\): warning\b|(?:nvrtc|ptxas|nvlink)\b)")
_COUNT = re.compile(r"^\d+ errors? detected in the compilation of ")


@dataclass(frozen=True)
class LogError:
    """One error of an NVRTC log: where NVRTC put it, its first line, and every line NVRTC wrote under it
    (argument types, the source line and its caret, notes, the instantiations that reached it)."""

    site: Site | None
    message: str
    detail: tuple[str, ...] = ()
    hint: str | None = None

    @property
    def instantiated_at(self) -> tuple[Site, ...]:
        """The places the detail names as reaching the error, innermost first (the user's call is last)."""
        return tuple(Site(m["file"], int(m["line"])) for ln in self.detail if (m := _AT_LINE.search(ln)))

    def text(self, names: Mapping[str, str] | None = None, note: str = "") -> str:
        """The message (``note`` after it in parentheses), then the detail indented two spaces, its file
        names (notes, instantiations) renamed through ``names`` (a header's include name to its path)."""
        names = names or {}

        def renamed(line: str) -> str:
            if (m := _NOTE.match(line)) and m["file"] in names:
                return names[m["file"]] + m["rest"]
            if (m := _AT_LINE.search(line)) and m["file"] in names:
                return f"{line[: m.start('file')]}{names[m['file']]}"
            return line

        first = f"{self.message} ({note})" if note else self.message
        return "\n".join([first, *(f"  {renamed(ln)}" for ln in self.detail)])

    def diagnostic(self) -> Diagnostic:
        """LG501 at the place NVRTC named, with the whole text."""
        return Diagnostic("LG501", self.text(), self.site, self.hint)


def parse_log(log: str) -> tuple[LogError, ...]:
    """Each error of an NVRTC log with the lines under it, in log order.

    ``file(line): error: msg`` is at ``Site(file, line)``; errors without a place (rejected options,
    ptxas, the end of a source) have no site. An error's lines run to the next blank line, error or
    warning; warnings and what they say are skipped. Raises nothing.
    """
    out: list[LogError] = []
    current: LogError | None = None
    for raw in log.splitlines():
        line = raw.rstrip()
        hint = None
        if m := _SITED.match(line):
            msg, site = m["msg"], Site(m["file"], int(m["line"]))
        elif m := _UNSITED.match(line):
            msg, site = m["msg"], None
            msg = f"{m['tool']}: {msg}" if m["tool"] else f"{msg} (at the end of a source)"
        else:
            if not line.strip() or _WARNING.match(line) or _COUNT.match(line):
                current = None
            elif current is not None:
                current = out[-1] = replace(current, detail=(*current.detail, line))
            continue
        if _MISSING_HEADER in msg:
            hint = _HEADER_HINT
        current = LogError(site, msg, (), hint)
        out.append(current)
    return tuple(out)


def parse_errors(log: str) -> tuple[Diagnostic, ...]:
    """One LG501 diagnostic per error of an NVRTC log (:func:`parse_log`), with its whole text.

    Raises nothing.
    """
    return tuple(e.diagnostic() for e in parse_log(log))
