"""``layoutgen explain``, ``layoutgen init`` and what SPEC may be (a folder; a file that is not a spec)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from layoutgen.project.explain import sections
from layoutgen.schema.diagnostics import CODES
from tests.helpers.cli import nvrtc_missing

REPO = Path(__file__).resolve().parent.parent


def layoutgen(*args: str, cwd: Path, pythonpath: Path = REPO) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath)}
    return subprocess.run([sys.executable, "-m", "layoutgen", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


# -- explain -------------------------------------------------------------------------------------------

def test_explain_prints_the_codes_section_of_the_page(tmp_path: Path) -> None:
    run = layoutgen("explain", "LG201", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    page = (REPO / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    start = page.index("## LG201 not-contiguous\n")
    assert run.stdout == page[start:page.index("\n## LG202 ", start)].strip() + "\n"
    assert "**Severity:** error" in run.stdout and "```console" in run.stdout


@pytest.mark.parametrize("name", ["lg201", "not-contiguous"])
def test_explain_takes_a_code_in_any_case_or_its_name(tmp_path: Path, name: str) -> None:
    assert layoutgen("explain", name, cwd=tmp_path).stdout.startswith("## LG201 not-contiguous\n")


def test_every_code_has_its_section_to_explain() -> None:
    text = (REPO / "layoutgen" / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    page = sections(text)
    # (tests/test_docs.py checks that every registered code has its heading)
    assert list(page) == re.findall(r"^## (LG\d{3}) [\w-]+\s*$", text, flags=re.M)
    assert all(section.startswith(f"## {code} {CODES[code].name}\n") for code, section in page.items())
    # A `# comment` in a code block is not a heading: LG625's section runs to the end of the page.
    assert page["LG625"].rstrip().endswith("registers a thread.") or "**Fix:**" in page["LG625"]


@pytest.mark.parametrize(("given", "message"), [
    ("LG21", "`LG21` is not a diagnostic code; the closest: LG201 (not-contiguous), LG210 (symbolic-grid), "
             "LG211 (unusable-file-name); `layoutgen explain` lists every code"),
    ("not-contigous", "`not-contigous` is not a diagnostic code; the closest: LG201 (not-contiguous); "
                      "`layoutgen explain` lists every code"),
    ("LG999", "`LG999` is not a diagnostic code; `layoutgen explain` lists every code"),
])
def test_explain_an_unknown_code_names_the_closest(tmp_path: Path, given: str, message: str) -> None:
    run = layoutgen("explain", given, cwd=tmp_path)
    assert (run.returncode, run.stdout, run.stderr) == (2, "", f"layoutgen: error: {message}\n")


def test_explain_without_a_code_lists_every_code(tmp_path: Path) -> None:
    run = layoutgen("explain", cwd=tmp_path)
    assert run.returncode == 0
    lines = run.stdout.splitlines()
    assert [line.split()[0] for line in lines] == list(CODES)
    first = CODES["LG101"]
    assert lines[0].split(None, 3) == [first.code, first.name, "error", first.summary]


def test_explain_works_from_an_installed_copy_without_the_repository(tmp_path: Path) -> None:
    # What a wheel installs: the package with its data files as files (the link to docs/ copied).
    site = tmp_path / "site"
    shutil.copytree(REPO / "layoutgen", site / "layoutgen", symlinks=False,
                    ignore=shutil.ignore_patterns("__pycache__"))
    assert not (site / "layoutgen" / "docs" / "diagnostics.md").is_symlink()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    run = layoutgen("explain", "LG504", cwd=elsewhere, pythonpath=site)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("## LG504 spec-error\n\n**Severity:** error.")


def test_the_page_ships_as_package_data() -> None:
    link = REPO / "layoutgen" / "docs" / "diagnostics.md"
    assert link.resolve() == (REPO / "docs" / "diagnostics.md").resolve()
    pyproject = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert '"docs/*.md"' in pyproject.split("[tool.setuptools.package-data]", 1)[1].split("\n[", 1)[0]


# -- init ----------------------------------------------------------------------------------------------

def test_init_writes_a_project_that_passes_check_compile_and_its_own_test(tmp_path: Path) -> None:
    run = layoutgen("init", "new", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert run.stdout == (
        "wrote new/pyproject.toml\nwrote new/specs/spec.py\nwrote new/specs/scale.cu.j2\n"
        "wrote new/tests/test_layoutgen.py\nwrote new/generated/example/__init__.py\n"
        "wrote new/generated/example/example.cuh\nwrote new/generated/example/scale.cu\n"
        "Created a layoutgen project; next: `cd new && layoutgen check --compile`, then `pytest`.\n")
    project = tmp_path / "new"
    assert '[tool.layoutgen]\nspecs = ["specs/spec.py"]' in (project / "pyproject.toml").read_text()
    check = layoutgen("check", cwd=project)
    assert (check.returncode, check.stdout) == (0, "All checks passed: 1 spec, no errors.\n")
    reason = nvrtc_missing()
    if reason is None:
        compiled = layoutgen("check", "--compile", "-q", cwd=project)
        assert (compiled.returncode, compiled.stdout) == (0, "All checks passed: 1 spec, no errors.\n"), compiled.stderr
    test = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"], cwd=project,
                          capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=300)
    assert test.returncode == 0, test.stdout + test.stderr
    if reason is not None:
        pytest.skip(f"checked all but --compile: {reason}")


def test_init_refuses_to_write_over_files_and_names_them_all(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "spec.py").write_text("# mine\n")
    (tmp_path / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["specs/spec.py"]\n')
    run = layoutgen("init", cwd=tmp_path)
    assert (run.returncode, run.stdout) == (1, "")
    assert run.stderr == (
        "layoutgen: error: `layoutgen init` must not write over existing files, got pyproject.toml (its "
        "[tool.layoutgen] table) and specs/spec.py; nothing was written\n"
        "  hint: run it in a new or empty folder: `layoutgen init FOLDER`\n")
    assert (tmp_path / "specs" / "spec.py").read_text() == "# mine\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["pyproject.toml", "spec.py", "specs"]


def test_init_adds_its_table_to_an_existing_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\n\n[tool.ruff]\nline-length = 100\n')
    run = layoutgen("init", cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert "added [tool.layoutgen] to pyproject.toml\n" in run.stdout
    assert "wrote pyproject.toml" not in run.stdout
    text = (tmp_path / "pyproject.toml").read_text()
    assert text.startswith('[project]\nname = "mine"\n\n[tool.ruff]\nline-length = 100\n\n[tool.layoutgen]\n')
    assert layoutgen("check", cwd=tmp_path).returncode == 0


# -- what SPEC may be ----------------------------------------------------------------------------------

# The examples' spec modules, one `spec.py` per example folder: the tests below follow the folder as it grows.
EXAMPLE_SPECS = sorted(p.relative_to(REPO).as_posix() for p in (REPO / "examples").glob("*/spec.py"))


def test_a_folder_stands_for_the_spec_modules_under_it() -> None:
    run = layoutgen("check", "examples", cwd=REPO)
    assert len(EXAMPLE_SPECS) >= 2  # a folder of several spec modules, else this tests nothing of folders
    assert (run.returncode, run.stdout) == (0, f"All checks passed: {len(EXAMPLE_SPECS)} specs, no errors.\n"), (
        run.stdout + run.stderr)
    one = layoutgen("check", "examples/vsn", cwd=REPO)
    assert (one.returncode, one.stdout) == (0, "All checks passed: 1 spec, no errors.\n")


def test_a_folder_without_spec_modules_is_lg504_saying_so(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "empty").mkdir()
    run = layoutgen("check", "empty", cwd=tmp_path)
    assert (run.returncode, run.stdout) == (1, (
        "error[LG504]: empty is a folder and holds no spec module\n"
        "  hint: give a spec module (a .py file that defines a `Spec(...)`), or a folder that holds one named "
        "spec.py\nFound 1 error in 1 spec.\n"))


def test_show_of_a_folder_names_the_spec_modules_in_it() -> None:
    run = layoutgen("show", "examples", cwd=REPO)
    assert run.returncode == 1
    assert run.stderr == ("error[LG504]: examples is a folder, not a spec module\n"
                          f"  hint: give one of the spec modules in it: {', '.join(EXAMPLE_SPECS)}\n")


def test_a_file_that_is_not_a_spec_is_named(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "notes.txt").write_text("hello\n")
    (tmp_path / "helpers.py").write_text("X = 1\n")
    run = layoutgen("check", "notes.txt", "helpers.py", cwd=tmp_path)
    assert run.returncode == 1
    assert run.stdout == (
        "error[LG504]: notes.txt is not a Python module\n"
        "  hint: give a spec module: a .py file that defines a `Spec(...)`\n"
        "helpers.py:1: error[LG504]: a spec module must define exactly one `Spec(...)`, helpers.py defines none\n"
        '  hint: add spec = Spec("name", kernels=[...]) at module level\n'
        "Found 2 errors in 2 specs.\n")
