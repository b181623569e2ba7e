"""Rendering diagnostics: one small renderer per output format.

``text`` is for people (``path:line: error[LG201]: message`` and a hint),
``json`` for tools, ``github`` for GitHub Actions annotations. Each renderer
takes diagnostics in the order given and returns text that ends with a
newline, or the empty string for none (json always renders a document).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable

from ..schema.diagnostics import CODES, Diagnostic, Severity, display_path
from ..schema.words import plural

#: The names :func:`render` accepts, the first the default.
FORMATS = ("text", "json", "github")

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_SEVERITY_COLOR = {  # red, yellow, cyan
    Severity.ERROR: "\x1b[31m", Severity.WARNING: "\x1b[33m", Severity.NOTE: "\x1b[36m",
}
#: GitHub's workflow command for each severity (it calls a note a notice).
_GITHUB_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.NOTE: "notice"}


def counts(diags: Iterable[Diagnostic]) -> tuple[int, int]:
    """The number of errors and of warnings among ``diags`` (notes are not counted)."""
    severities = [d.severity for d in diags]
    return severities.count(Severity.ERROR), severities.count(Severity.WARNING)


def format_text(diags: Iterable[Diagnostic], *, color: bool = False) -> str:
    """``path:line: error[LG201]: message`` per diagnostic, then ``  hint: ...``.

    With ``color``, the severity is red (error), yellow (warning) or cyan (note) and the
    code bold, as ANSI escapes; without, the text is plain.
    """
    out: list[str] = []
    for d in diags:
        where = f"{d.site}: " if d.site else ""
        severity, code = d.severity.value, d.code
        if color:
            severity = f"{_SEVERITY_COLOR[d.severity]}{severity}{_RESET}"
            code = f"{_BOLD}{code}{_RESET}"
        out.append(f"{where}{severity}[{code}]: {d.message}\n")
        if d.hint:
            out.append(f"  hint: {d.hint}\n")
    return "".join(out)


def format_json(diags: Iterable[Diagnostic]) -> str:
    """A JSON document (version 1) of every diagnostic and a summary of counts.

    ``path`` is shown as in the text format (relative to the working
    directory where it lies under it); ``path``, ``line`` and ``hint`` are
    null when absent. Keys are sorted, so output is stable.
    """
    items = list(diags)
    errors, warnings = counts(items)
    document = {
        "version": 1,
        "diagnostics": [
            {
                "code": d.code,
                "name": CODES[d.code].name,
                "severity": d.severity.value,
                "message": d.message,
                "path": display_path(d.site.path) if d.site else None,
                "line": d.site.line if d.site else None,
                "hint": d.hint,
            }
            for d in items
        ],
        "summary": {"errors": errors, "warnings": warnings},
    }
    return json.dumps(document, indent=2, sort_keys=True) + "\n"


def _escape_data(text: str) -> str:
    # GitHub's rules for a workflow command's message.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    # A property value also ends at ":" (the message) and "," (the next property).
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def format_github(diags: Iterable[Diagnostic]) -> str:
    """GitHub Actions workflow commands: ``::error file=...,line=...,title=...::message``.

    Errors become ``::error``, warnings ``::warning`` and notes ``::notice``.
    The hint follows the message on a new line; without a site, ``file`` and
    ``line`` are left out.
    """
    out: list[str] = []
    for d in diags:
        properties = []
        if d.site:
            properties.append(f"file={_escape_property(display_path(d.site.path))}")
            properties.append(f"line={d.site.line}")
        properties.append(f"title={_escape_property(f'{d.code} {CODES[d.code].name}')}")
        message = d.message + (f"\nhint: {d.hint}" if d.hint else "")
        out.append(f"::{_GITHUB_COMMAND[d.severity]} {','.join(properties)}::{_escape_data(message)}\n")
    return "".join(out)


def summary_line(n_errors: int, n_warnings: int, n_specs: int) -> str:
    """The closing line of a check, like "Found 2 errors, 1 warning in 3 specs."."""
    if min(n_errors, n_warnings, n_specs) < 0:
        raise ValueError(f"counts must be 0 or more, got {n_errors}, {n_warnings}, {n_specs}")
    specs = plural(n_specs, "spec")
    if n_errors == 0 and n_warnings == 0:
        return f"All checks passed: {specs}, no errors."
    found = plural(n_errors, "error") if n_errors else "no errors"
    if n_warnings:
        found += f", {plural(n_warnings, 'warning')}"
    # Without a spec the problem is the project's (LG506): "in 0 specs" would say it lies in none.
    return f"Found {found}; no spec was checked." if n_specs == 0 else f"Found {found} in {specs}."


def changed_line(n_files: int, n_specs: int) -> str:
    """The closing line of ``generate``: "3 files changed in 1 spec.", "No files changed in 2 specs."."""
    files = plural(n_files, "file") if n_files else "No files"
    return f"{files} changed in {plural(n_specs, 'spec')}."


def would_change_line(n_files: int) -> str:
    """The closing line of ``generate --check`` when files would change."""
    return f"{plural(n_files, 'generated file')} would change; run `layoutgen generate`."


def up_to_date_line(n_specs: int) -> str:
    """The closing line of ``generate --check`` when nothing would change."""
    return f"Generated code is up to date ({plural(n_specs, 'spec')})."


def render(diags: Iterable[Diagnostic], fmt: str, *, color: bool = False) -> str:
    """Render ``diags`` in the format named ``fmt`` (one of :data:`FORMATS`).

    ``color`` applies to the text format only. Raises ValueError for a format
    that is not in :data:`FORMATS`.
    """
    renderers: dict[str, Callable[[Iterable[Diagnostic]], str]] = {
        "text": lambda items: format_text(items, color=color),
        "json": format_json,
        "github": format_github,
    }
    if fmt not in renderers:
        raise ValueError(f"`fmt` must be one of {', '.join(FORMATS)}, got {fmt!r}")
    return renderers[fmt](diags)
