"""Rendering diagnostics as text, JSON and GitHub annotations; summary lines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from layoutgen.project.report import (
    FORMATS,
    counts,
    format_github,
    format_json,
    format_text,
    render,
    summary_line,
)
from layoutgen.project.selection import Selection
from layoutgen.schema.diagnostics import Diagnostic, Severity, Site

MESSAGE = (
    "variable_selection_fwd.x needs contiguous rows (stride 40) but is bound to Window.snap,"
    " row stride 56 (Window [B, K, 56], snap = columns 0..40)"
)
HINT = "drop contiguous=True to read the strided view, or copy the field out first"


@pytest.fixture
def diags(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Diagnostic]:
    """An error with site and hint, a note with neither, an error with a site only."""
    monkeypatch.chdir(tmp_path)
    return [
        Diagnostic("LG201", MESSAGE, Site(str(tmp_path / "examples/vsn/spec.py"), 42), HINT),
        Diagnostic("LG505", "kernel `vsn_fwd`: 40 registers, 0 spills"),
        Diagnostic("LG503", "layoutgen did not generate `g/x.cu`", Site(str(tmp_path / "g/x.cu"), 1)),
    ]


def test_text(diags: list[Diagnostic]) -> None:
    assert format_text(diags) == (
        f"examples/vsn/spec.py:42: error[LG201]: {MESSAGE}\n"
        f"  hint: {HINT}\n"
        "note[LG505]: kernel `vsn_fwd`: 40 registers, 0 spills\n"
        "g/x.cu:1: error[LG503]: layoutgen did not generate `g/x.cu`\n"
    )


def test_text_matches_diagnostic_str(diags: list[Diagnostic]) -> None:
    assert format_text(diags) == "".join(f"{d}\n" for d in diags)


def test_text_color(diags: list[Diagnostic]) -> None:
    assert format_text(diags[:2], color=True) == (
        f"examples/vsn/spec.py:42: \x1b[31merror\x1b[0m[\x1b[1mLG201\x1b[0m]: {MESSAGE}\n"
        f"  hint: {HINT}\n"
        "\x1b[36mnote\x1b[0m[\x1b[1mLG505\x1b[0m]: kernel `vsn_fwd`: 40 registers, 0 spills\n"
    )
    assert "\x1b" not in format_text(diags)


def test_absolute_path_outside_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    outside = str(tmp_path / "spec.py")
    d = Diagnostic("LG201", "m", Site(outside, 3))
    assert format_text([d]) == f"{outside}:3: error[LG201]: m\n"
    assert json.loads(format_json([d]))["diagnostics"][0]["path"] == outside


def test_json(diags: list[Diagnostic]) -> None:
    assert format_json(diags[:2]) == (
        "{\n"
        '  "diagnostics": [\n'
        "    {\n"
        '      "code": "LG201",\n'
        f'      "hint": "{HINT}",\n'
        '      "line": 42,\n'
        f'      "message": "{MESSAGE}",\n'
        '      "name": "not-contiguous",\n'
        '      "path": "examples/vsn/spec.py",\n'
        '      "severity": "error"\n'
        "    },\n"
        "    {\n"
        '      "code": "LG505",\n'
        '      "hint": null,\n'
        '      "line": null,\n'
        '      "message": "kernel `vsn_fwd`: 40 registers, 0 spills",\n'
        '      "name": "compile-report",\n'
        '      "path": null,\n'
        '      "severity": "note"\n'
        "    }\n"
        "  ],\n"
        '  "summary": {\n'
        '    "errors": 1,\n'
        '    "warnings": 0\n'
        "  },\n"
        '  "version": 1\n'
        "}\n"
    )


def test_json_of_nothing() -> None:
    assert json.loads(format_json([])) == {"version": 1, "diagnostics": [], "summary": {"errors": 0, "warnings": 0}}


def test_json_escapes_what_json_must() -> None:
    d = Diagnostic("LG501", 'nvrtc: "x.cu"(3): error\n\tbad')
    assert json.loads(format_json([d]))["diagnostics"][0]["message"] == 'nvrtc: "x.cu"(3): error\n\tbad'


def test_github(diags: list[Diagnostic]) -> None:
    assert format_github(diags) == (
        "::error file=examples/vsn/spec.py,line=42,title=LG201 not-contiguous::"
        f"{MESSAGE}%0Ahint: {HINT}\n"
        "::notice title=LG505 compile-report::kernel `vsn_fwd`: 40 registers, 0 spills\n"
        "::error file=g/x.cu,line=1,title=LG503 foreign-file::layoutgen did not generate `g/x.cu`\n"
    )


def test_notes_are_shown_but_not_counted() -> None:
    """LG505 is information: a note (GitHub's `::notice`), never a warning or an error in the summary."""
    note = Diagnostic("LG505", "scale: 32 registers")
    warning = Diagnostic("LG303", "nothing reads `y`")
    assert note.severity is Severity.NOTE and str(note) == "note[LG505]: scale: 32 registers"
    assert counts([note, warning, note]) == (0, 1)
    assert summary_line(*counts([note]), 1) == "All checks passed: 1 spec, no errors."
    assert format_github([note, warning]) == (
        "::notice title=LG505 compile-report::scale: 32 registers\n"
        "::warning title=LG303 unread-output::nothing reads `y`\n"
    )
    assert json.loads(format_json([note]))["summary"] == {"errors": 0, "warnings": 0}


def test_github_escaping(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    d = Diagnostic(
        "LG501",
        "100% wrong: a, b\r\nnext line",
        Site(str(tmp_path / "odd,name:100%.py"), 7),
        "fix: 50%, then\nretry",
    )
    assert format_github([d]) == (
        "::error file=odd%2Cname%3A100%25.py,line=7,title=LG501 compile-error::"
        "100%25 wrong: a, b%0D%0Anext line%0Ahint: fix: 50%25, then%0Aretry\n"
    )


def test_empty_renders_nothing() -> None:
    assert format_text([]) == ""
    assert format_github([]) == ""


@pytest.mark.parametrize(
    ("errors", "warnings", "specs", "line"),
    [
        (2, 1, 3, "Found 2 errors, 1 warning in 3 specs."),
        (1, 0, 1, "Found 1 error in 1 spec."),
        (0, 0, 3, "All checks passed: 3 specs, no errors."),
        (0, 0, 1, "All checks passed: 1 spec, no errors."),
        (0, 0, 0, "All checks passed: 0 specs, no errors."),
        (0, 2, 1, "Found no errors, 2 warnings in 1 spec."),
        (0, 1, 2, "Found no errors, 1 warning in 2 specs."),
        (3, 2, 0, "Found 3 errors, 2 warnings; no spec was checked."),
    ],
)
def test_summary_line(errors: int, warnings: int, specs: int, line: str) -> None:
    assert summary_line(errors, warnings, specs) == line


def test_summary_line_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="counts must be 0 or more, got -1, 0, 1"):
        summary_line(-1, 0, 1)


def test_counts(diags: list[Diagnostic]) -> None:
    assert counts(diags) == (2, 0)  # the LG505 note is not a warning
    assert counts(iter(diags)) == (2, 0)


def test_render_dispatches(diags: list[Diagnostic]) -> None:
    assert FORMATS == ("text", "json", "github")
    assert render(diags, "text") == format_text(diags)
    assert render(diags, "text", color=True) == format_text(diags, color=True)
    assert render(iter(diags), "json") == format_json(diags)
    assert render(diags, "github") == format_github(diags)


def test_render_unknown_format() -> None:
    with pytest.raises(ValueError) as caught:
        render([], "xml")
    assert str(caught.value) == "`fmt` must be one of text, json, github, got 'xml'"


# -- select, ignore, warnings as errors ---------------------------------------------------


def selection_diags() -> list[Diagnostic]:
    return [
        Diagnostic("LG201", MESSAGE, hint=HINT),
        Diagnostic("LG303", "nothing reads `y`"),
        Diagnostic("LG401", "literal 40 in index arithmetic of kernel `k` equals the width of `x` (Window.snap)"),
        Diagnostic("LG404", "`// layoutgen: ignore` suppresses nothing: no diagnostic is reported on this line"),
        Diagnostic("LG505", "scale: 32 registers"),
    ]


@pytest.mark.parametrize(("select", "ignore", "reported"), [
    ((), (), ["LG201", "LG303", "LG401", "LG404", "LG505"]),
    (("LG4",), (), ["LG201", "LG401", "LG404"]),  # LG201 cannot be turned off: always reported
    (("LG4",), ("LG404",), ["LG201", "LG401"]),  # ignore wins over select
    ((), ("LG3", "LG505"), ["LG201", "LG401", "LG404"]),
    ((), ("LG",), ["LG201"]),  # a prefix of errors too ignores only what can be ignored
    (("LG40",), ("LG401",), ["LG201", "LG404"]),
])
def test_select_and_ignore_turn_off_only_what_can_be_turned_off(select: tuple[str, ...], ignore: tuple[str, ...],
                                                                reported: list[str]) -> None:
    assert [d.code for d in Selection(select, ignore).apply(selection_diags())] == reported


def test_warnings_as_errors_count_and_print_as_errors() -> None:
    selected = Selection(warnings_as_errors=True).apply(selection_diags())
    assert [d.severity.value for d in selected] == ["error", "error", "error", "error", "note"]
    assert counts(selected) == (4, 0)
    assert summary_line(*counts(selected), 1) == "Found 4 errors in 1 spec."
    assert format_text(selected[1:2]) == "error[LG303]: nothing reads `y`\n"
    assert json.loads(format_json(selected[1:2]))["diagnostics"][0]["severity"] == "error"
    assert format_github(selected[1:2]) == "::error title=LG303 unread-output::nothing reads `y`\n"
    # Without it, and on what is not a warning, the flag changes nothing.
    assert counts(Selection().apply(selection_diags())) == (2, 2)
    assert Diagnostic("LG505", "x", as_error=True).severity is Severity.NOTE
    assert Selection(ignore=("LG303",), warnings_as_errors=True).apply(selection_diags()[1:2]) == []
