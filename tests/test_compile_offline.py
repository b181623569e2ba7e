"""Offline compile: `layoutgen check --compile` runs NVRTC to a cubin with no GPU.

These compile real kernels, so they are few: the VSN example once (its
forward and backward kernels take several seconds each), a broken template
once from two working directories (the second run hits the cache), and a
small spec with `--report`. Each test uses its own cache folder.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from layoutgen.project.config import load_config
from tests.helpers.cli import layoutgen

REPO = Path(__file__).resolve().parent.parent


def test_every_example_kernel_compiles_without_a_gpu(tmp_path: Path) -> None:
    run = layoutgen("check", "--compile", "--arch", "sm_90", cwd=REPO, cache=tmp_path / "cache")
    assert run.returncode == 0, run.stdout + run.stderr
    specs = load_config(REPO).specs  # the repository's examples, as its pyproject.toml lists them
    assert run.stdout.strip().endswith(f"All checks passed: {len(specs)} specs, no errors."), run.stdout
    cubins = list((tmp_path / "cache").rglob("*.cubin"))
    kernels = [p for folder in (REPO / "generated").iterdir() if folder.is_dir() for p in folder.iterdir()
               if p.suffix == ".cu"]
    assert len(specs) >= 2 and len({p.parent for p in kernels}) == len(specs), (specs, kernels)
    assert len(cubins) == len(kernels) >= 4, (cubins, kernels)


def test_a_cpp_error_in_a_template_is_lg501_at_the_templates_own_line(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    template = REPO / "tests" / "specs" / "broken" / "broken.cu.j2"
    assert "undeclared_variable" in template.read_text().splitlines()[2]  # line 3
    run = layoutgen("check", "--compile", "--format", "json", "tests/specs/broken/spec.py", cwd=REPO, cache=cache)
    assert run.returncode == 1, run.stdout + run.stderr
    report = json.loads(run.stdout)
    compile_errors = [d for d in report["diagnostics"] if d["code"] == "LG501"]
    assert compile_errors == [{
        "code": "LG501", "name": "compile-error", "severity": "error",
        "message": 'identifier "undeclared_variable" is undefined\n        acc += undeclared_variable;\n               ^',
        "path": "tests/specs/broken/broken.cu.j2", "line": 3, "hint": None,
    }]
    # From another folder the path is shown relative to it, still at line 3 of the template.
    run = layoutgen("check", "--compile", "specs/broken/spec.py", cwd=REPO / "tests", cache=cache)
    assert run.returncode == 1
    assert 'specs/broken/broken.cu.j2:3: error[LG501]: identifier "undeclared_variable" is undefined\n' in run.stdout


def test_report_lists_registers_and_spills_as_notes_from_the_cache(tmp_path: Path) -> None:
    project = tmp_path / "project"
    cache = tmp_path / "cache"
    shutil.copytree(REPO / "tests" / "specs" / "mini", project / "specs" / "mini",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (project / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["specs/mini/spec.py"]\n')
    assert layoutgen("generate", "-q", cwd=project, cache=cache).returncode == 0
    plain = layoutgen("check", "--compile", cwd=project, cache=cache)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    entries = sorted(cache.rglob("*.json"))
    assert len(entries) == 2
    run = layoutgen("check", "--compile", "--report", cwd=project, cache=cache)
    assert run.returncode == 0, run.stdout + run.stderr  # notes only
    assert sorted(cache.rglob("*.json")) == entries  # --report is no part of the key: nothing recompiled
    lines = [ln for ln in run.stdout.splitlines() if "[LG505]" in ln]
    assert len(lines) == 2, run.stdout
    for name in ("scale_snap", "copy_context"):
        line = next(ln for ln in lines if f"generated/mini/{name}.cu:1: note[LG505]: {name}: " in ln)
        assert " registers, 0 bytes spill stores, 0 bytes spill loads, " in line and line.endswith("(sm_90)")
    assert run.stdout.strip().endswith("All checks passed: 1 spec, no errors.")  # notes are not counted


def test_a_last_line_without_semicolon_is_reported_on_the_templates_last_line(tmp_path: Path) -> None:
    """NVRTC finds the missing `;` at the kernel's closing brace: that brace is kept on the template's last
    line, and a `#line` after it gives the generated file back its own numbering."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["spec.py"]\n')
    (project / "open.cu.j2").write_text("    const float v = x.at(row, 0);\n    y.at(row, 0) = 2.0f * v\n")
    (project / "spec.py").write_text(
        "from layoutgen import Layout, dims, f32\n"
        "from layoutgen.declare.kernels import In, Kernel, Out\n"
        "from layoutgen.declare.spec import Spec\n"
        "(N,) = dims('N')\n"
        "Rows = Layout('Rows', [N], f32, width=4)\n"
        "k = Kernel('open_end', 'open.cu.j2', [In('x', [N, 4]), Out('y', [N, 4])])\n"
        "spec = Spec('openend', kernels=[k.bind(x=Rows, y=Rows)])\n"
    )
    assert layoutgen("generate", "-q", cwd=project, cache=tmp_path / "cache").returncode == 0
    run = layoutgen("check", "--compile", cwd=project, cache=tmp_path / "cache")
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.startswith('open.cu.j2:2: error[LG501]: expected a ";"\n'), run.stdout
    lines = (project / "generated" / "openend" / "open_end.cu").read_text().splitlines()
    assert lines[-3:] == ['#line 2 "open.cu.j2"', "}", f'#line {len(lines) + 1} "generated/openend/open_end.cu"']

