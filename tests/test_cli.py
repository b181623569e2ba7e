"""The `layoutgen` command, run as users run it: a subprocess in a project folder.

Each test builds a temporary project with its own ``pyproject.toml``
(``[tool.layoutgen]``) holding a copy of ``tests/specs/mini``; the seed-bug
tests run from the repository root on ``examples/vsn/seed_bug.py``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from layoutgen.codegen.stamp import MARKER

REPO = Path(__file__).resolve().parent.parent
MINI_FILES = ["generated/mini/__init__.py", "generated/mini/copy_context.cu", "generated/mini/mini.cuh",
              "generated/mini/scale_snap.cu"]


def layoutgen(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "layoutgen", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


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
    (["generate"], ["usage: layoutgen generate", "--out DIR", "--check", "SPEC"]),
    (["check"], ["usage: layoutgen check", "--compile", "--arch ARCH", "--format {text,json,github}"]),
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


# -- check --------------------------------------------------------------------------------


def test_check_exit_codes_clean_and_stale(project: Path) -> None:
    stale = layoutgen("check", cwd=project)
    assert stale.returncode == 1
    assert "error[LG502]: generated/mini/mini.cuh is missing (spec specs/mini/spec.py)" in stale.stdout
    assert layoutgen("generate", "-q", cwd=project).returncode == 0
    clean = layoutgen("check", cwd=project)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert clean.stdout == "All checks passed: 1 spec, no errors.\n"
    # From a sub-folder the project (and its config) is found above.
    assert layoutgen("check", cwd=project / "specs").returncode == 0


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
    stale = layoutgen("check", "--format", "github", cwd=project)  # four LG502, one per missing file
    lines = stale.stdout.splitlines()
    assert len(lines) == 4 and all(pattern.match(ln) for ln in lines), stale.stdout
    assert all("title=LG502 stale-generated::" in ln for ln in lines)


# -- generate -----------------------------------------------------------------------------


def test_generate_then_generate_check_is_clean(project: Path) -> None:
    run = layoutgen("generate", cwd=project)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout == "".join(f"wrote {p}\n" for p in MINI_FILES) + "4 file(s) changed in 1 spec(s).\n"
    assert generated(project) == MINI_FILES
    for path in MINI_FILES:
        assert MARKER in (project / path).read_text().split("\n")[1]
    check = layoutgen("generate", "--check", cwd=project)
    assert check.returncode == 0, check.stdout + check.stderr
    assert check.stdout == "Generated code is up to date (1 spec(s)).\n"


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
    assert "-struct Window_snap : lg::Field<T, 40, 56, 0, 16, long long> {\n" in out
    assert "+struct Window_snap : lg::Field<T, 38, 56, 0, 8, long long> {\n" in out
    assert "-    [[maybe_unused]] constexpr int F = 40;\n+    [[maybe_unused]] constexpr int F = 38;\n" in out
    assert "a/generated/mini/copy_context.cu" not in out  # the context did not move
    assert re.search(r"^\d+ generated file\(s\) would change; run `layoutgen generate`\.$", out, re.M)
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
    assert run.stdout == "0 file(s) changed in 1 spec(s).\n"
    for path in MINI_FILES:
        stat = (project / path).stat()
        assert (stat.st_mtime, stat.st_ino) == (old, inodes[path]), path
    assert not [p for p in files_under(project) if p.endswith(".tmp")]


def test_a_hand_edited_generated_file_is_restored(project: Path) -> None:
    assert layoutgen("generate", "-q", cwd=project).returncode == 0
    header = project / "generated" / "mini" / "mini.cuh"
    pristine = header.read_text()
    header.write_text(pristine.replace("lg::Field<T, 40, 56, 0,", "lg::Field<T, 40, 40, 0,"))
    check = layoutgen("generate", "--check", cwd=project)
    assert check.returncode == 1
    assert "-struct Window_snap : lg::Field<T, 40, 40, 0, 16, long long> {\n" in check.stdout
    assert "+struct Window_snap : lg::Field<T, 40, 56, 0, 16, long long> {\n" in check.stdout
    assert layoutgen("generate", "-q", cwd=project).returncode == 0
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
        assert run.stdout.endswith("Found 1 error in 0 specs.\n"), run.stdout
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
