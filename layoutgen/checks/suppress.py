"""Turning diagnostics off: which codes may be, and per-line suppression comments in templates.

A template line that ends in ``// layoutgen: ignore[LG401]`` (or ``// layoutgen: ignore`` for every
code) does not report those codes; a comment that suppresses nothing is LG404, so that a stale one
cannot hide the next finding on its line. The comment is a C++ comment of the template's own text:
Jinja comments do not survive rendering, and the template's text is where its line numbers are.

Only findings that leave correct output possible may be turned off, by a comment or by
``select``/``ignore``: warnings, notes, and the lint's errors about how a template is written
(:data:`LINT_ERRORS`). Every other error means the generated code would be wrong or cannot be made.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..schema.diagnostics import CODES, Diagnostic, Off, Severity, Site
from .cxx import scan

#: Errors that may be turned off (the registry says which: the lint's findings about how a template spells its
#: indexing).
LINT_ERRORS = frozenset(c.code for c in CODES.values() if c.severity is Severity.ERROR and c.turned_off is Off.ANYWHERE)

_DIRECTIVE = re.compile(r"\s*layoutgen:")
# `ignore[CODES]` then any text (`: why`, ` why`), or a bare `ignore` then any text that does not make it a
# longer word (`ignored`) or open a list (`ignore [LG401`, unclosed): that would suppress every code unasked.
_SUPPRESSION = re.compile(r"\s*layoutgen:\s*ignore(?:\s*\[([^\]]*)\].*|(?!\s*\[)(?!\w).*)")
_CODE = re.compile(r"LG\d{3}")
_HINT = "write `// layoutgen: ignore[LG401]` (codes separated by commas) or `// layoutgen: ignore` (every code)"


def named_codes(text: str) -> tuple[tuple[str, ...], str] | None:
    """The codes a ``layoutgen: ignore[...]`` comment names (``text``: what follows its ``//`` or ``#``), and the
    text after its ``]`` (the reason); None where it is no such comment or names no list. One reading for the
    templates' comments and a spec's (LG531 accepted on a binding's line)."""
    m = _SUPPRESSION.fullmatch(text)
    if m is None or m.group(1) is None:
        return None
    after = text[text.index("]", text.index("[")) + 1:]
    return tuple(c.strip() for c in m.group(1).split(",") if c.strip()), after


def can_ignore(code: str) -> bool:
    """Whether diagnostics of ``code`` may be turned off without letting broken output be written."""
    return CODES[code].turned_off is Off.ANYWHERE


# What the lint reports on a template's lines, which a comment there can suppress.
_ON_TEMPLATE_LINES = "a comment suppresses what the lint reports on its line: " + ", ".join(sorted(LINT_ERRORS))


@dataclass(frozen=True)
class Suppression:
    """One ``// layoutgen: ignore[...]`` comment."""

    site: Site  # the template and line it is on
    comment: str  # as written, from its `//`
    codes: tuple[str, ...]  # the codes it names, each one that may be turned off; () for every code


@dataclass(frozen=True)
class Suppressions:
    """The suppression comments of a spec's templates, and LG404 for each one that cannot work."""

    entries: tuple[Suppression, ...]
    problems: tuple[Diagnostic, ...]

    def apply(self, diags: Iterable[Diagnostic]) -> tuple[list[Diagnostic], frozenset[tuple[int, str]]]:
        """``diags`` less those a comment on their line suppresses, and which (entry, code) did."""
        by_site = {entry.site: n for n, entry in enumerate(self.entries)}
        kept: list[Diagnostic] = []
        used: set[tuple[int, str]] = set()
        for diag in diags:
            n = by_site.get(diag.site) if diag.site else None
            if n is not None and can_ignore(diag.code) and (not self.entries[n].codes or diag.code in
                                                             self.entries[n].codes):
                used.add((n, diag.code))
            else:
                kept.append(diag)
        return kept, frozenset(used)

    def unused(self, used: Iterable[tuple[int, str]]) -> list[Diagnostic]:
        """LG404 for every comment (or code of one) that suppressed nothing, then :attr:`problems`."""
        done = set(used)
        out: list[Diagnostic] = []
        for n, entry in enumerate(self.entries):
            if not entry.codes and not any(m == n for m, _ in done):
                out.append(Diagnostic(
                    "LG404", f"`{entry.comment}` suppresses nothing: no diagnostic is reported on this line",
                    entry.site, hint="remove the comment: left in place, it would hide the next finding on this line",
                ))
            for code in (c for c in entry.codes if (n, c) not in done):
                subject = f"`{entry.comment}`" if len(entry.codes) == 1 else f"`{code}` of `{entry.comment}`"
                out.append(Diagnostic(
                    "LG404", f"{subject} suppresses nothing: no {code} is reported on this line", entry.site,
                    hint=f"remove {'the comment' if len(entry.codes) == 1 else f'`{code}`'}: left in place, it "
                         "would hide the next finding on this line",
                ))
        return [*sorted(out, key=_order), *self.problems]


def _order(diag: Diagnostic) -> tuple[str, int]:
    return (diag.site.path, diag.site.line) if diag.site else ("", 0)


def read_suppressions(templates: Sequence[Path]) -> Suppressions:
    """Every ``// layoutgen:`` comment of ``templates`` (each read once; one that cannot be read has none)."""
    entries: list[Suppression] = []
    problems: list[Diagnostic] = []
    for template in dict.fromkeys(templates):
        try:
            comments = scan(template.read_text(encoding="utf-8")).comments
        except (OSError, UnicodeDecodeError):
            continue  # a missing or non-UTF-8 template is reported by the renderer (LG402)
        for line, text in enumerate(comments, start=1):
            if text is None or not _DIRECTIVE.match(text):
                continue
            site, comment = Site(str(template), line), "//" + text.rstrip()
            entry, bad = _parse(site, comment, text)
            problems.extend(bad)
            if entry is not None:
                entries.append(entry)
    return Suppressions(tuple(entries), tuple(problems))


def _parse(site: Site, comment: str, text: str) -> tuple[Suppression | None, list[Diagnostic]]:
    m = _SUPPRESSION.fullmatch(text)
    if m is None:
        return None, [Diagnostic("LG404", f"`{comment}` is not a suppression comment", site, hint=_HINT)]
    if m.group(1) is None:
        return Suppression(site, comment, ()), []
    named = [c.strip() for c in m.group(1).split(",") if c.strip()]
    if not named:
        return None, [Diagnostic("LG404", f"`{comment}` names no code", site, hint=_HINT)]
    codes: list[str] = []
    problems: list[Diagnostic] = []
    for code in named:
        if not _CODE.fullmatch(code) or code not in CODES:
            problems.append(Diagnostic("LG404", f"`{code}` of `{comment}` is not a diagnostic code", site,
                                       hint=f"{_HINT}; {_ON_TEMPLATE_LINES}"))
        elif not can_ignore(code):
            problems.append(Diagnostic(
                "LG404", f"`{code}` of `{comment}` cannot be suppressed: {code} ({CODES[code].name}) is an error "
                         "that stops generation", site,
                hint=f"fix what it reports; {_ON_TEMPLATE_LINES}",
            ))
        elif code not in codes:
            codes.append(code)
    return (Suppression(site, comment, tuple(codes)) if codes else None), problems
