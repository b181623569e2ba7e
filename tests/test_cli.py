"""The `layoutgen` command, run as users run it: a subprocess in a project folder.

Each test builds a temporary project with its own ``pyproject.toml``
(``[tool.layoutgen]``) holding a copy of ``tests/specs/mini``; the seed-bug
tests run from the repository root on ``examples/vsn/seed_bug.py``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import io
import json
import multiprocessing
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from layoutgen.cli import main
from layoutgen.codegen.stamp import MARKER, verify

from layoutgen.codegen.library import library_namespace
from tests.helpers.cli import layoutgen

REPO = Path(__file__).resolve().parent.parent
MINI_FILES = ["generated/mini/__init__.py", "generated/mini/copy_context.cu", "generated/mini/mini.cuh",
              "generated/mini/scale_snap.cu"]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    shutil.copytree(REPO / "tests" / "specs" / "mini", root / "specs" / "mini",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "pyproject.toml").write_text(
        '[project]\nname = "demo"\n\n[tool.layoutgen]\nspecs = ["specs/mini/spec.py"]\nout = "generated"\n'
    )
    return root


def files_under(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def generated(root: Path) -> list[str]:
    return [p for p in files_under(root) if p.startswith("generated/")]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new))


# -- help and usage ---------------------------------------------------------------------


@pytest.mark.parametrize(("verb", "expected"), [
    ([], ["usage: layoutgen", "generate", "check", "show", "[tool.layoutgen]"]),
    (["generate"], ["usage: layoutgen generate", "--out DIR", "--check", "SPEC", "--select CODES", "--ignore CODES",
                    "--warnings-as-errors"]),
    (["check"], ["usage: layoutgen check", "--compile", "--arch ARCH", "--format {text,json,github}",
                 "--select CODES", "--ignore CODES", "--warnings-as-errors"]),
    (["show"], ["usage: layoutgen show", "SPEC[:NAME]", "--svg FILE", "--png FILE"]),
])
def test_help_for_the_command_and_every_verb(project: Path, verb: list[str], expected: list[str]) -> None:
    run = layoutgen(*verb, "--help", cwd=project)
    assert run.returncode == 0, run.stderr
    for text in expected:
        assert text in run.stdout, (text, run.stdout)


def test_version(project: Path) -> None:
    run = layoutgen("--version", cwd=project)
    assert (run.returncode, run.stdout) == (0, "layoutgen 0.1.0\n")


@pytest.mark.parametrize("args", [["check", "--bogus"], ["generate", "--format", "json"], ["frobnicate"], []])
def test_usage_errors_exit_2(project: Path, args: list[str]) -> None:
    run = layoutgen(*args, cwd=project)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "usage: layoutgen" in run.stderr


@pytest.mark.parametrize(("table", "message"), [
    ('arch = "90"', '`[tool.layoutgen].arch` must be a string like "sm_90", got "90" (pyproject.toml)'),
    ('specz = ["a.py"]', "`[tool.layoutgen]` has no key `specz` (pyproject.toml); did you mean `specs`?"),
    ('out = "../elsewhere"', '`[tool.layoutgen].out` must be a folder inside the project, like "generated", '
                             'got "../elsewhere" (pyproject.toml)'),
])
def test_a_bad_config_exits_2_naming_the_key(project: Path, table: str, message: str) -> None:
    (project / "pyproject.toml").write_text(f"[tool.layoutgen]\n{table}\n")
    for verb in ("check", "generate"):
        run = layoutgen(verb, cwd=project)
        assert run.returncode == 2, run.stdout + run.stderr
        assert run.stderr == f"layoutgen: error: {message}\n"


def test_a_bad_command_line_override_exits_2(project: Path) -> None:
    run = layoutgen("check", "--arch", "ampere", cwd=project)
    assert run.returncode == 2
    assert run.stderr == 'layoutgen: error: `arch` must be a string like "sm_90", got "ampere" (override)\n'


# -- what is reported: --select, --ignore, --warnings-as-errors ------------------------------

LITERAL_STRIDE = "        x.row(0)[row * 56 + f] *= 2.0f;\n"


def test_ignore_and_select_turn_the_lint_off_for_check_and_generate(project: Path) -> None:
    edit(project / "specs/mini/scale_snap.cu.j2", "        x.at(row, f) *= 2.0f;\n", LITERAL_STRIDE)
    refused = layoutgen("generate", "-q", cwd=project)
    assert refused.returncode == 1 and "error[LG401]: literal 56" in refused.stdout
    assert generated(project) == []
    ignored = layoutgen("generate", "-q", "--ignore", "LG401", cwd=project)
    assert (ignored.returncode, ignored.stdout) == (0, "4 files changed in 1 spec.\n")
    for args in (["--ignore", "LG401"], ["--ignore", "LG303,LG401"], ["--select", "LG3, LG5"]):
        run = layoutgen("check", *args, cwd=project)
        assert (run.returncode, run.stdout) == (0, "All checks passed: 1 spec, no errors.\n"), args
    # In the file; the command line replaces the file's list.
    (project / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["specs/mini/spec.py"]\nignore = ["LG4"]\n')
    assert layoutgen("check", cwd=project).returncode == 0
    again = layoutgen("check", "--ignore", "LG303", cwd=project)
    assert again.returncode == 1 and "error[LG401]" in again.stdout


def test_an_error_that_stops_generation_cannot_be_ignored(project: Path) -> None:
    run = layoutgen("check", "--ignore", "LG502", cwd=project)
    assert run.returncode == 2, run.stdout + run.stderr
    assert run.stderr == (
        "layoutgen: error: `ignore` must be a list of codes that can be ignored (LG303, LG306, LG401, LG403, LG404, "
        'LG406, LG407, LG505, LG627) or their prefixes, got "LG502": LG502 (stale-generated) is an error that stops generation (override)\n'
    )
    # A selection that leaves the error out still reports it.
    assert "error[LG502]" in layoutgen("check", "--select", "LG4", cwd=project).stdout


def test_warnings_as_errors(project: Path) -> None:
    edit(project / "specs/mini/scale_snap.cu.j2", "        x.at(row, f) *= 2.0f;\n",
         "        x.at(row, f) *= 2.0f;  // layoutgen: ignore[LG401]\n")
    warned = layoutgen("generate", "-q", cwd=project)
    assert warned.returncode == 0, warned.stdout + warned.stderr
    assert warned.stdout.endswith("warning[LG404]: `// layoutgen: ignore[LG401]` suppresses nothing: no LG401 is "
                                  "reported on this line\n  hint: remove the comment: left in place, it would hide "
                                  "the next finding on this line\nFound no errors, 1 warning in 1 spec.\n")
    strict = layoutgen("check", "--warnings-as-errors", cwd=project)
    assert strict.returncode == 1
    assert strict.stdout == warned.stdout.split("\n", 1)[1].replace("warning[LG404]", "error[LG404]").replace(
        "Found no errors, 1 warning", "Found 1 error")
    (project / "specs/mini/scale_snap.cu.j2").write_text("    x.at(row, 0) *= 3.0f;  // layoutgen: ignore\n")
    before = {p: (project / p).read_text() for p in generated(project)}
    refused = layoutgen("generate", "--warnings-as-errors", cwd=project)
    assert refused.returncode == 1 and "error[LG404]" in refused.stdout
    assert {p: (project / p).read_text() for p in generated(project)} == before  # nothing written
    (project / "pyproject.toml").write_text(
        '[tool.layoutgen]\nspecs = ["specs/mini/spec.py"]\nwarnings_as_errors = true\n')
    assert layoutgen("generate", "-q", cwd=project).returncode == 1
    assert layoutgen("generate", "-q", "--no-warnings-as-errors", cwd=project).returncode == 0


# -- check --------------------------------------------------------------------------------


def test_check_exit_codes_clean_and_stale(project: Path) -> None:
    stale = layoutgen("check", cwd=project)
    assert stale.returncode == 1
    assert stale.stdout == (  # one cause (the spec changed), one diagnostic listing its files
        "specs/mini/spec.py:1: error[LG502]: 4 files of `generated/mini/` are not what spec `mini` generates now:\n"
        "  generated/mini/__init__.py is missing\n"
        "  generated/mini/copy_context.cu is missing\n"
        "  generated/mini/mini.cuh is missing\n"
        "  generated/mini/scale_snap.cu is missing\n"
        "  hint: run `layoutgen generate` and commit the result\n"
        "Found 1 error in 1 spec.\n"
    )
    assert layoutgen("generate", "-q", cwd=project).returncode == 0
    clean = layoutgen("check", cwd=project)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout == "All checks passed: 1 spec, no errors.\n"
    # From a sub-folder the project (and its config) is found above.
    assert layoutgen("check", cwd=project / "specs").returncode == 0


def test_a_spec_given_from_outside_its_project_is_checked_in_its_project(project: Path, tmp_path: Path) -> None:
    """As ruff and mypy find their settings: from the spec's folder upward, not from the working folder; the
    root used is said where it is not the working folder's."""
    assert layoutgen("generate", "-q", cwd=project).returncode == 0
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "pyproject.toml").write_text('[project]\nname = "other"\n')  # a project of no layoutgen
    spec = project / "specs" / "mini" / "spec.py"
    for verb in (["check"], ["generate", "--check"]):
        run = layoutgen(*verb, str(spec), cwd=outside)
        assert (run.returncode, run.stderr) == (0, f"layoutgen: project {project} (found from the spec; the "
                                                   "working folder is outside it)\n"), (verb, run.stdout, run.stderr)
    assert layoutgen("check", str(spec), cwd=outside).stdout == "All checks passed: 1 spec, no errors.\n"
    # A project's pyproject.toml without [tool.layoutgen] (a package of its own inside it) is looked past.
    (project / "specs" / "pyproject.toml").write_text('[project]\nname = "inner"\n')
    run = layoutgen("check", "mini/spec.py", cwd=project / "specs")
    assert (run.returncode, run.stdout, run.stderr) == (0, "All checks passed: 1 spec, no errors.\n", "")


def test_specs_of_two_projects_are_refused_naming_both(project: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(project, other)
    run = layoutgen("check", str(project / "specs/mini/spec.py"), str(other / "specs/mini/spec.py"), cwd=tmp_path)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == (
        f"layoutgen: error: the specs given belong to two projects: {project / 'specs/mini/spec.py'} to {project} "
        f"and {other / 'specs/mini/spec.py'} to {other}; run layoutgen once for each\n")


def test_check_on_the_seed_bug_exits_1_naming_both_strides() -> None:
    run = layoutgen("check", "examples/vsn/seed_bug.py", cwd=REPO)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "error[LG201]" in run.stdout
    assert "stride 56" in run.stdout and "stride 40" in run.stdout
    assert "`variable_selection_fwd.x`" in run.stdout and "`Window.snap`" in run.stdout
    assert run.stdout.splitlines()[-1] == "Found 1 error in 1 spec."


def test_check_format_json(tmp_path: Path) -> None:
    run = layoutgen("check", "--format", "json", "examples/vsn/seed_bug.py", cwd=REPO)
    assert run.returncode == 1
    report = json.loads(run.stdout)  # the whole output is one JSON document
    seed = (REPO / "examples" / "vsn" / "seed_bug.py").read_text().splitlines()
    line = next(n for n, text in enumerate(seed, 1) if ".bind(" in text)
    assert report["version"] == 1
    assert report["summary"] == {"errors": 1, "warnings": 0}
    (diag,) = report["diagnostics"]
    assert {k: diag[k] for k in ("code", "name", "severity", "path", "line")} == {
        "code": "LG201", "name": "not-contiguous", "severity": "error", "path": "examples/vsn/seed_bug.py",
        "line": line,
    }
    assert "stride 40" in diag["message"] and "row stride 56" in diag["message"]
    assert diag["hint"].startswith("drop contiguous=True")


def test_check_format_github(project: Path) -> None:
    pattern = re.compile(r"^::(error|warning) file=[^,:]+,line=\d+,title=LG\d{3} [a-z-]+::")
    run = layoutgen("check", "--format", "github", "examples/vsn/seed_bug.py", cwd=REPO)
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    assert len(lines) == 1 and all(pattern.match(ln) for ln in lines), run.stdout
    assert lines[0].startswith("::error file=examples/vsn/seed_bug.py,line=")
    assert ",title=LG201 not-contiguous::" in lines[0] and "%0Ahint: drop contiguous=True" in lines[0]
    stale = layoutgen("check", "--format", "github", cwd=project)  # one LG502 for the spec, its files listed
    lines = stale.stdout.splitlines()
    assert len(lines) == 1 and pattern.match(lines[0]), stale.stdout
    assert "title=LG502 stale-generated::4 files of `generated/mini/`" in lines[0]
    assert "%0A  generated/mini/mini.cuh is missing%0A" in lines[0]


# -- generate -----------------------------------------------------------------------------


def test_generate_then_generate_check_is_clean(project: Path) -> None:
    run = layoutgen("generate", cwd=project)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == "".join(f"wrote {p}\n" for p in MINI_FILES) + "4 files changed in 1 spec.\n"
    assert generated(project) == MINI_FILES
    for path in MINI_FILES:
        assert MARKER in (project / path).read_text().split("\n")[1]
    check = layoutgen("generate", "--check", cwd=project)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout == "Generated code is up to date (1 spec).\n"


def test_generate_out_and_spec_on_the_command_line_override_the_config(project: Path) -> None:
    (project / "pyproject.toml").write_text("[tool.layoutgen]\n")  # no specs configured
    run = layoutgen("generate", "--out", "build/gen", "specs/mini/spec.py", cwd=project)
    assert run.returncode == 0, run.stdout + run.stderr
    assert generated(project) == []
    assert "build/gen/mini/mini.cuh" in files_under(project)


def test_a_changed_field_width_makes_generate_check_exit_1_with_a_diff(project: Path) -> None:
    assert layoutgen("generate", "-q", cwd=project).returncode == 0
    before = {p: (project / p).read_bytes() for p in MINI_FILES}
    spec = project / "specs" / "mini" / "spec.py"
    edit(spec, 'Field("snap", 40),', 'Field("snap", 38), Pad(2),')
    edit(spec, "from layoutgen import Field, Layout,", "from layoutgen import Field, Layout, Pad,")
    run = layoutgen("generate", "--check", cwd=project)
    assert run.returncode == 1, run.stdout + run.stderr
    out = run.stdout
    assert "--- a/generated/mini/mini.cuh\n+++ b/generated/mini/mini.cuh\n" in out
    assert "--- a/generated/mini/scale_snap.cu\n+++ b/generated/mini/scale_snap.cu\n" in out
    assert f"-struct Window_snap_view : lg::{library_namespace()}::Field<Window_snap_view_rows, T, 40, 56, 0, VectorBytes, Pack, long long> {{\n" in out
    assert f"+struct Window_snap_view : lg::{library_namespace()}::Field<Window_snap_view_rows, T, 38, 56, 0, VectorBytes, Pack, long long> {{\n" in out
    assert "-    [[maybe_unused]] constexpr int F = 40;\n+    [[maybe_unused]] constexpr int F = 38;\n" in out
    assert "a/generated/mini/copy_context.cu" not in out  # the context did not move
    assert re.search(r"^\d+ generated files? would change; run `layoutgen generate`\.$", out, re.M)
    assert {p: (project / p).read_bytes() for p in MINI_FILES} == before  # --check writes nothing
    assert layoutgen("check", cwd=project).returncode == 1  # and check reports the drift (LG502)


def test_a_foreign_file_in_the_way_fails_with_lg503_and_nothing_is_written(project: Path) -> None:
    foreign = project / "generated" / "mini" / "scale_snap.cu"
    foreign.parent.mkdir(parents=True)
    foreign.write_text("// my own kernel, not generated\n")
    run = layoutgen("generate", cwd=project)
    assert run.returncode == 1, run.stdout + run.stderr
    assert re.search(
        r"^generated/mini/scale_snap\.cu:1: error\[LG503\]: layoutgen did not generate `generated/mini/scale_snap\.cu` "
        r"\(it has no `layoutgen-hash:` line\) and will not overwrite it$", run.stdout, re.M,
    ), run.stdout
    assert generated(project) == ["generated/mini/scale_snap.cu"]
    assert foreign.read_text() == "// my own kernel, not generated\n"
    check = layoutgen("generate", "--check", cwd=project)
    assert check.returncode == 1 and "LG503" in check.stdout


def test_a_removed_kernel_has_its_file_deleted_and_foreign_files_are_kept(project: Path) -> None:
    assert layoutgen("generate", "-q", cwd=project).returncode == 0
    mine = project / "generated" / "mini" / "notes.txt"
    mine.write_text("kept: layoutgen did not write this\n")
    spec = project / "specs" / "mini" / "spec.py"
    edit(spec, "    copy_context.bind(ctx=Context, dst=Window.context),\n", "")
    check = layoutgen("generate", "--check", cwd=project)
    assert check.returncode == 1
    assert "--- a/generated/mini/copy_context.cu\n+++ /dev/null\n" in check.stdout
    run = layoutgen("generate", cwd=project)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "deleted generated/mini/copy_context.cu\n" in run.stdout
    assert generated(project) == ["generated/mini/__init__.py", "generated/mini/mini.cuh",
                                  "generated/mini/notes.txt", "generated/mini/scale_snap.cu"]
    assert mine.read_text() == "kept: layoutgen did not write this\n"


def test_regenerating_unchanged_input_rewrites_no_file(project: Path) -> None:
    assert layoutgen("generate", "-q", cwd=project).returncode == 0
    old = 1_000_000_000  # 2001: any write would move the mtime to now
    for path in MINI_FILES:
        os.utime(project / path, (old, old))
    inodes = {p: (project / p).stat().st_ino for p in MINI_FILES}
    run = layoutgen("generate", cwd=project)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == "No files changed in 1 spec.\n"
    for path in MINI_FILES:
        stat = (project / path).stat()
        assert (stat.st_mtime, stat.st_ino) == (old, inodes[path]), path
    assert not [p for p in files_under(project) if p.endswith(".tmp")]


def test_a_hand_edited_generated_file_is_kept_and_named_unless_forced(project: Path) -> None:
    assert layoutgen("generate", "-q", cwd=project).returncode == 0
    header = project / "generated" / "mini" / "mini.cuh"
    pristine = header.read_text()
    edited = pristine + "// a quick fix, typed into the generated file\n"
    header.write_text(edited)
    named = ("generated/mini/mini.cuh:1: error[LG509]: `generated/mini/mini.cuh` was edited by hand after layoutgen "
             "generated it (its `layoutgen-hash:` line no longer matches); layoutgen keeps the edit\n"
             "  hint: move the change into the spec or its template, or run `layoutgen generate --force` to "
             "overwrite it\n")
    run = layoutgen("generate", cwd=project)
    assert (run.returncode, run.stdout) == (1, named + "Found 1 error in 1 spec.\n"), run.stdout + run.stderr
    assert header.read_text() == edited  # kept
    check = layoutgen("check", cwd=project)  # drift, named as an edit
    assert (check.returncode, check.stdout) == (1, named + "Found 1 error in 1 spec.\n"), check.stdout
    diff = layoutgen("generate", "--check", cwd=project)
    assert diff.returncode == 1
    assert diff.stdout.startswith("--- a/generated/mini/mini.cuh\n+++ b/generated/mini/mini.cuh\n")
    assert "\n-// a quick fix, typed into the generated file\n" in diff.stdout
    forced = layoutgen("generate", "--force", cwd=project)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert forced.stdout == "wrote generated/mini/mini.cuh\n1 file changed in 1 spec.\n"
    assert header.read_text() == pristine


def test_generate_refuses_a_spec_with_binding_errors_and_writes_nothing(project: Path) -> None:
    spec = project / "specs" / "mini" / "spec.py"
    edit(spec, 'InOut("x", [B, K, F]),', 'InOut("x", [B, K, F], contiguous=True),')
    run = layoutgen("generate", cwd=project)
    assert run.returncode == 1
    assert "error[LG201]: `scale_snap.x` needs contiguous rows (stride 40) but is bound to `Window.snap`, " \
           "row stride 56" in run.stdout
    assert generated(project) == []


def test_a_spec_that_fails_to_import_is_lg504_at_its_line(project: Path) -> None:
    spec = project / "specs" / "mini" / "spec.py"
    edit(spec, "Context = Layout(", "Context = Layuot(")
    line = next(n for n, text in enumerate(spec.read_text().splitlines(), 1) if "Layuot(" in text)
    run = layoutgen("check", cwd=project)
    assert run.returncode == 1
    assert run.stdout.startswith(
        f"specs/mini/spec.py:{line}: error[LG504]: importing the spec raised NameError: name 'Layuot' is not defined"
    ), run.stdout


# -- nothing to process ---------------------------------------------------------------


@pytest.mark.parametrize("table", ["", "specs = []\n"])
def test_a_project_without_specs_fails_instead_of_passing_silently(tmp_path: Path, table: str) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "demo"\n\n[tool.layoutgen]\n' + table)
    expected = ("pyproject.toml:4: error[LG506]: no spec modules to process: `[tool.layoutgen].specs` is missing "
                "or empty and no SPEC was given\n")
    for verb in (["check"], ["check", "--compile"], ["generate"], ["generate", "--check"]):
        run = layoutgen(*verb, cwd=tmp_path)
        assert run.returncode == 1, (verb, run.stdout, run.stderr)
        assert run.stdout.startswith(expected), run.stdout
        assert run.stdout.endswith("Found 1 error; no spec was checked.\n"), run.stdout
    run = layoutgen("check", "--format", "json", cwd=tmp_path)
    assert run.returncode == 1
    assert [d["code"] for d in json.loads(run.stdout)["diagnostics"]] == ["LG506"]
    assert not (tmp_path / "generated").exists()


# -- show ---------------------------------------------------------------------------------


def test_show_prints_the_layout_tables_and_bindings(project: Path) -> None:
    run = layoutgen("show", "specs/mini/spec.py", cwd=project)
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert "Window [B, K, 56] f32  (row stride 56 elements, 224 bytes)" in out
    assert re.search(r"^  snap\s+0\.\.40\s+40\s+0\s+\(K\*56, 56, 1\)\s+32 B$", out, re.M), out
    assert re.search(r"^  context\s+40\.\.56\s+16\s+40\s+\(K\*56, 56, 1\)\s+32 B$", out, re.M), out
    assert "Context [B, 16] f32" in out
    assert "kernel scale_snap (scale_snap.cu.j2), bound at specs/mini/spec.py:31" in out
    assert ("  x          inout [B, K, F]    <- `Window.snap` (`Window` [B, K, 56] f32, columns 0..40), "
            "strides (K*56, 56, 1), offset 0") in out
    assert "  symbols: B = B, K = K, F = 40" in out


def test_show_of_a_refused_binding_shows_every_value_of_a_conflicting_symbol(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "spec.py").write_text(
        "from layoutgen import Field, In, Kernel, Layout, Out, Spec, dims\n"
        "B, F = dims('B F')\n"
        "L = Layout('L', [B], 'f32', [Field('a', 4), Field('b', 6), Field('c', 6)])\n"
        "k = Kernel('k', 'k.cu.j2', [In('x', [B, F]), Out('y', [B, F]), Out('z', [B, F])])\n"
        "spec = Spec('refused', kernels=[k.bind(x=L.a, y=L.b, z=L.c)])\n")
    monkeypatch.chdir(tmp_path)
    assert main(["show", "spec.py"]) == 0
    assert "  symbols: B = B, F = 4 from `x` but 6 from `y`, 6 from `z`\n" in capsys.readouterr().out


def test_show_one_layout(project: Path) -> None:
    run = layoutgen("show", "specs/mini/spec.py:Window", cwd=project)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("Window [B, K, 56] f32")
    assert "snap" in run.stdout and "Context [B" not in run.stdout and "kernel " not in run.stdout
    missing = layoutgen("show", "specs/mini/spec.py:Nope", cwd=project)
    assert missing.returncode == 2  # a usage error, on stderr like every error of the CLI
    assert missing.stdout == ""
    assert missing.stderr == ("layoutgen: error: spec `mini` has no layout, kernel or program `Nope` "
                              "(its layouts: Window, Context; its kernels: scale_snap, copy_context)\n")


def test_show_errors_go_to_stderr(project: Path) -> None:
    """A spec that does not load: its diagnostics on stderr, exit 1, nothing on stdout."""
    run = layoutgen("show", "specs/mini/nope.py", cwd=project)
    assert run.returncode == 1
    assert run.stdout == ""
    assert run.stderr.startswith("error[LG504]: spec module specs/mini/nope.py does not exist"), run.stderr


# -- specs that confuse the project (issue 13, item 4) --------------------------------------


def spec_line(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def test_two_specs_of_one_name_are_refused_naming_both_files(project: Path) -> None:
    shutil.copytree(project / "specs" / "mini", project / "specs" / "other")
    (project / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["specs/mini/spec.py", "specs/other/spec.py"]\n')
    line = spec_line(project / "specs" / "mini" / "spec.py", 'Spec("mini"')
    message = ("error[LG507]: spec modules `specs/mini/spec.py` and `specs/other/spec.py` both define the spec "
               "`mini`, so both would write `generated/mini/`\n"
               '  hint: give each spec a name of its own: Spec("...", ...)\n')
    expected = f"specs/mini/spec.py:{line}: {message}specs/other/spec.py:{line}: {message}Found 2 errors in 2 specs.\n"
    for verb in ("generate", "check"):
        run = layoutgen(verb, cwd=project)
        assert (run.returncode, run.stdout) == (1, expected), run.stdout + run.stderr
    assert generated(project) == []


@pytest.mark.parametrize(("call", "shown"), [("sys.exit(0)", "SystemExit(0)"), ("sys.exit()", "SystemExit(None)"),
                                             ('raise SystemExit("bye")', "SystemExit('bye')")])
def test_a_spec_that_exits_while_imported_is_lg504_at_its_line(project: Path, call: str, shown: str) -> None:
    spec = project / "specs" / "mini" / "spec.py"
    edit(spec, "B, K, F, C = dims(", f"import sys\n{call}\nB, K, F, C = dims(")
    line = spec_line(spec, call)
    run = layoutgen("check", cwd=project)
    assert (run.returncode, run.stdout) == (1, (
        f"specs/mini/spec.py:{line}: error[LG504]: importing the spec raised {shown}: a spec module must not exit "
        "while layoutgen imports it\n"
        '  hint: put what runs the module as a script under `if __name__ == "__main__":`\n'
        "Found 1 error in 1 spec.\n")), run.stdout + run.stderr


@pytest.mark.parametrize(("call", "shown"), [
    ("os._exit(0)", "os._exit(0)"), ("os._exit(3)", "os._exit(3)"), ("posix._exit(0)", "os._exit(0)"),
    ('os.execv("/bin/true", ["true"])', "os.execv"), ('os.execlp("true", "true")', "os.execv"),
    ('posix.execve("/bin/true", ["true"], {})', "os.execve"),
])
def test_a_spec_that_ends_the_process_while_imported_is_lg504_at_its_line(project: Path, call: str,
                                                                          shown: str) -> None:
    """os._exit and exec end the process with no exception: the import runs with them refused, so `check`
    reports the spec instead of exiting 0 having checked nothing."""
    spec = project / "specs" / "mini" / "spec.py"
    edit(spec, "B, K, F, C = dims(", f"import os, posix\n{call}\nB, K, F, C = dims(")
    line = spec_line(spec, call)
    run = layoutgen("check", cwd=project)
    assert (run.returncode, run.stdout) == (1, (
        f"specs/mini/spec.py:{line}: error[LG504]: importing the spec called {shown}: a spec module must not end "
        "the process while layoutgen imports it\n"
        '  hint: put what runs the module as a script under `if __name__ == "__main__":`\n'
        "Found 1 error in 1 spec.\n")), run.stdout + run.stderr


def test_the_functions_that_end_the_process_are_restored_after_a_spec_is_imported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import posix

    from layoutgen.project.specload import load_spec

    def reached(*args: object) -> None:  # stands for the real one: a spec that reaches it would end pytest
        raise AssertionError("the spec's os._exit reached the process")

    monkeypatch.setattr(os, "_exit", reached)
    monkeypatch.setattr(posix, "_exit", reached)
    before = (os._exit, os.execv, os.execve, posix._exit, posix.execv, posix.execve)
    spec = tmp_path / "spec.py"
    spec.write_text("import os\nos._exit(0)\n")
    (diag,) = load_spec(spec).diagnostics
    assert diag.code == "LG504" and diag.message.startswith("importing the spec called os._exit(0)")
    assert (os._exit, os.execv, os.execve, posix._exit, posix.execv, posix.execve) == before


def test_an_internal_error_exits_2_with_the_traceback_and_asks_for_a_report(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def broken(*args: Any) -> Any:
        raise RuntimeError("a bug")

    monkeypatch.chdir(project)
    monkeypatch.setattr("layoutgen.project.process.check_spec", broken)
    assert main(["check"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("layoutgen: internal error: RuntimeError: a bug\nTraceback (most recent call last):\n"), err
    assert err.endswith("RuntimeError: a bug\nThis is a bug in layoutgen 0.1.0, not in your project: please report "
                        "it with the traceback above and the command that ran.\n"), err


# -- the output folder: locks, leftovers, failures, links (issue 13, items 12, 13, 15) ----------


def _generate_in_child(root: str, barrier: Any, queue: Any, first_debug: int) -> None:
    os.chdir(root)
    barrier.wait()
    codes: list[object] = []
    for i in range(10):  # the debug build differs in every file: each run rewrites them all
        args = ["generate", "-q"] + (["--debug"] if (i + first_debug) % 2 else [])
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                codes.append(main(args))
        except BaseException as exc:  # noqa: BLE001 - the test reports whatever escaped
            codes.append(f"{type(exc).__name__}: {exc}")
    queue.put(codes)


def test_generates_running_at_once_take_turns(project: Path) -> None:
    ctx = multiprocessing.get_context("fork")
    barrier, queue = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_generate_in_child, args=(str(project), barrier, queue, n % 2)) for n in range(4)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=240) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert results == [[0] * 10] * 4
    assert generated(project) == MINI_FILES  # no temporary file of anyone's left behind
    assert all(verify((project / p).read_text()) for p in MINI_FILES)
    checks = [layoutgen("check", *flag, cwd=project).returncode for flag in ([], ["--debug"])]
    assert sorted(checks) == [0, 1]  # one whole build, the last one's


def test_temporary_files_of_a_killed_generate_are_reported_and_removed(project: Path) -> None:
    assert layoutgen("generate", "-q", cwd=project).returncode == 0
    folder = project / "generated" / "mini"
    (folder / ".mini.cuh.0badc0de.tmp").write_text("")  # killed right after creating it
    (folder / ".scale_snap.cu.12345678.tmp").write_text((folder / "scale_snap.cu").read_text()[:100])
    (folder / ".notes.tmp").write_text("mine\n")  # not layoutgen's name for a temporary file
    leftover = "is a temporary file left by an interrupted `layoutgen generate`"
    run = layoutgen("check", cwd=project)
    assert (run.returncode, run.stdout) == (1, (
        "specs/mini/spec.py:1: error[LG502]: 2 files of `generated/mini/` are not what spec `mini` generates now:\n"
        f"  generated/mini/.mini.cuh.0badc0de.tmp {leftover}\n"
        f"  generated/mini/.scale_snap.cu.12345678.tmp {leftover}\n"
        "  hint: run `layoutgen generate`: it removes them\n"
        "Found 1 error in 1 spec.\n")), run.stdout
    would = layoutgen("generate", "--check", cwd=project)
    assert (would.returncode, would.stdout) == (1, "2 generated files would change; run `layoutgen generate`.\n")
    run = layoutgen("generate", cwd=project)
    assert (run.returncode, run.stdout) == (0, "removed generated/mini/.mini.cuh.0badc0de.tmp\n"
                                               "removed generated/mini/.scale_snap.cu.12345678.tmp\n"
                                               "2 files changed in 1 spec.\n"), run.stdout + run.stderr
    assert generated(project) == sorted([*MINI_FILES, "generated/mini/.notes.tmp"])


def _fail_on(n: int, monkeypatch: pytest.MonkeyPatch, error: int) -> None:
    """Make the ``n``th temporary output file fail to open, as a full disk or a read-only folder would."""
    real_open, seen = os.open, []

    def failing_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if str(path).endswith(".tmp") and flags & os.O_EXCL and "generated" in str(path):
            seen.append(path)
            if len(seen) == n:
                raise OSError(error, os.strerror(error), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", failing_open)


def _run(args: list[str]) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(args)
    return code, out.getvalue()


def test_a_failure_part_way_leaves_the_previous_files(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    assert _run(["generate", "-q"])[0] == 0
    spec = project / "specs" / "mini" / "spec.py"
    edit(spec, "    copy_context.bind(ctx=Context, dst=Window.context),\n",
         "    copy_context.bind(ctx=Context, dst=Window.context),\n"
         '    copy_context.bind(name="copy_again", ctx=Context, dst=Window.context),\n')
    before = {p: (project / p).read_bytes() for p in files_under(project)}
    for n in (1, 2):  # the new kernel file, then the module that names it
        with monkeypatch.context() as patch:
            _fail_on(n, patch, errno.ENOSPC)
            code, out = _run(["generate", "-q"])
        assert code == 1 and "error[LG511]: cannot write `generated/mini/" in out, out
        assert out.endswith("`: No space left on device\n  hint: make room on the disk, or choose another output "
                            "folder (`--out`)\nFound 1 error in 1 spec.\n"), out
        assert {p: (project / p).read_bytes() for p in files_under(project)} == before
    assert _run(["generate", "-q"])[0] == 0
    assert "generated/mini/copy_again.cu" in files_under(project)


def test_a_read_only_output_folder_is_lg511(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    _fail_on(1, monkeypatch, errno.EACCES)
    code, out = _run(["generate", "-q"])
    assert (code, out) == (1, "error[LG511]: cannot write `generated/mini/copy_context.cu`: Permission denied\n"
                              "  hint: make `generated/mini` writable, or choose another output folder (`--out`)\n"
                              "Found 1 error in 1 spec.\n")
    assert generated(project) == []


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes into read-only folders")
def test_a_read_only_output_folder_is_lg511_for_real(project: Path) -> None:
    (project / "generated" / "mini").mkdir(parents=True)
    (project / "generated" / "mini").chmod(0o555)
    run = layoutgen("generate", cwd=project)
    assert run.returncode == 1 and run.stderr == "", run.stderr
    assert "error[LG511]: cannot write `generated/mini/copy_context.cu`: Permission denied\n" in run.stdout


def test_generate_waits_for_the_output_lock_then_gives_up_with_lg508(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from layoutgen.project import outlock

    monkeypatch.chdir(project)
    monkeypatch.setattr(outlock, "LOCK_TIMEOUT_S", 0.3)
    (project / "generated").mkdir()
    holder = os.open(project / "generated", os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)  # another layoutgen, writing
    try:
        for verb in (["generate"], ["check"]):
            code, out = _run(verb)
            assert (code, out) == (1, (
                "layoutgen: waiting for another layoutgen process to finish with `generated` ...\n"
                "error[LG508]: the output folder `generated` is locked by another layoutgen process; gave up after "
                "0.3 s\n"
                "  hint: let the other `layoutgen generate` or `layoutgen check` finish, then run this again\n"
                "Found 1 error in 1 spec.\n")), (verb, out)
    finally:
        os.close(holder)
    assert generated(project) == []
    assert _run(["generate", "-q"])[0] == 0


@pytest.mark.parametrize("link", ["generated", "generated/mini"])
def test_an_output_folder_that_links_out_of_the_project_is_refused(project: Path, tmp_path: Path, link: str) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (project / link).parent.mkdir(parents=True, exist_ok=True)
    (project / link).symlink_to(elsewhere)
    expected = (f"error[LG510]: `{link}` leads through a symbolic link to `../elsewhere`, which is not inside "
                "the project; layoutgen writes only inside it\n"
                f"  hint: make `{link}` a folder inside the project, or choose another output folder (`--out`)\n"
                "Found 1 error in 1 spec.\n")
    for verb in ("generate", "check"):
        run = layoutgen(verb, cwd=project)
        assert (run.returncode, run.stdout) == (1, expected), run.stdout + run.stderr
    assert list(elsewhere.iterdir()) == []


def test_an_out_with_a_backslash_is_a_usage_error(project: Path) -> None:
    run = layoutgen("generate", "--out", "a\\b", cwd=project)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr == ('layoutgen: error: `out` must be a folder inside the project with "/" between its parts, '
                          'like "generated", got "a\\\\b" (override)\n')


# -- the compile cache, from the command line (issue 13, item 13) -----------------------------


def test_check_compile_reports_an_unusable_cache_and_rebuilds_a_damaged_one(project: Path, tmp_path: Path) -> None:
    assert layoutgen("generate", "-q", cwd=project).returncode == 0
    file = tmp_path / "cache-file"
    file.write_text("not a folder\n")
    env = {**os.environ, "PYTHONPATH": str(REPO), "LAYOUTGEN_CACHE_DIR": str(file)}

    def check_compile() -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "layoutgen", "check", "--compile", "-q"], cwd=project, env=env,
                              capture_output=True, text=True, timeout=300)

    run = check_compile()
    assert (run.returncode, run.stdout, run.stderr) == (1, (
        f"error[LG513]: the compile cache `{file}` cannot be used: `{file}` is not a folder\n"
        "  hint: point LAYOUTGEN_CACHE_DIR (or `cache_dir`) at a folder\n"
        "Found 1 error in 1 spec.\n"), "")
    env["LAYOUTGEN_CACHE_DIR"] = str(tmp_path / "cache")
    assert check_compile().returncode == 0
    sidecars = sorted((tmp_path / "cache").rglob("*.json"))
    assert len(sidecars) == 2
    for sidecar in sidecars:  # json's decoder raised RecursionError on these
        sidecar.write_bytes(b"[" * 200_000 + b"]" * 200_000)
    run = check_compile()
    assert (run.returncode, run.stdout) == (0, "All checks passed: 1 spec, no errors.\n"), run.stdout + run.stderr
    cubin = sorted((tmp_path / "cache").rglob("*.cubin"))[0]
    cubin.unlink()
    cubin.mkdir()
    run = check_compile()
    assert (run.returncode, run.stdout, run.stderr) == (1, (
        f"error[LG513]: `{cubin}` in the compile cache is a folder, where layoutgen keeps a file\n"
        f"  hint: remove it (`rm -r {cubin}`)\nFound 1 error in 1 spec.\n"), "")


def test_a_generate_that_writes_nothing_leaves_no_empty_output_folder(project: Path) -> None:
    spec = project / "specs" / "mini" / "spec.py"
    edit(spec, 'InOut("x", [B, K, F]),', 'InOut("x", [B, K, F], contiguous=True),')  # LG201: nothing is written
    run = layoutgen("generate", "--out", "build/gen", cwd=project)
    assert run.returncode == 1
    assert not (project / "build").exists()


def test_check_reports_a_template_that_is_not_utf8_as_lg402_not_a_traceback(tmp_path: Path) -> None:
    # The lint and the suppression reader read templates too: each leaves a non-UTF-8 one to the renderer.
    (tmp_path / "spec.py").write_text(
        "from layoutgen import Field, Grid, In, Kernel, Layout, Out, Spec, dims, f32\n"
        "B, = dims('B')\n"
        "L = Layout('L', [B], f32, [Field('a', 4)])\n"
        "k = Kernel('k', 'k.cu.j2', [In('x', [B, 4]), Out('y', [B, 4])], grid=Grid.rows('x'))\n"
        "spec = Spec('nu', kernels=[k.bind(x=L.a, y=L.a.layout.view)])\n"
    )
    (tmp_path / "k.cu.j2").write_bytes(b"    y.at(row, 0) = x.at(row, 0);  // caf\xe9\n")
    run = layoutgen("check", "spec.py", cwd=tmp_path)
    assert (run.returncode, run.stderr) == (1, ""), run.stderr
    assert run.stdout == (
        "k.cu.j2:1: error[LG402]: template of kernel `k` failed to render: `k.cu.j2` is not UTF-8 text: byte 0xe9 "
        "at line 1, column 41\n"
        "  hint: save the template as UTF-8\n"
        "Found 1 error in 1 spec.\n"
    )


def test_a_spec_imports_its_neighbours_afresh_in_one_process(tmp_path: Path) -> None:
    """A neighbour module imported earlier in the process (a notebook, an earlier command) is not reused:
    the spec sees the file as it is now, and what was imported before is put back."""
    import sys

    from layoutgen.project.specload import load_spec

    (tmp_path / "shapes.py").write_text("WIDTH = 4\n")
    (tmp_path / "spec.py").write_text(
        "from layoutgen import Layout, Spec, dims, f32\nfrom shapes import WIDTH\n(N,) = dims('N')\n"
        "spec = Spec('fresh', layouts=[Layout('Rows', [N], f32, width=WIDTH)])\n")
    sys.path.insert(0, str(tmp_path))
    try:
        import shapes  # type: ignore[import-not-found]

        (tmp_path / "shapes.py").write_text("WIDTH = 8\n")
        loaded = load_spec(tmp_path / "spec.py")
        assert loaded.spec is not None, loaded.diagnostics
        assert loaded.spec.layouts[0].width == 8
        assert sys.modules["shapes"] is shapes and shapes.WIDTH == 4
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("shapes", None)
