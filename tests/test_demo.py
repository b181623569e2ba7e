"""`make demo` tells the story in about 40 lines; `--verbose` adds the details."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def demo(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "examples.vsn.demo", *args], cwd=REPO, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO)})


@pytest.fixture(scope="module")
def nvrtc() -> None:
    try:
        from layoutgen.runtime.nvrtc import nvrtc_version

        nvrtc_version()
    except Exception as exc:  # NvrtcUnavailableError, ImportError
        pytest.skip(f"the demo compiles every kernel: NVRTC is not available: {exc}")


def test_the_demo_tells_the_story_in_about_40_lines(nvrtc: None) -> None:
    run = demo()
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert len(lines) <= 48, run.stdout  # 35 without a GPU; the results add a dozen
    steps = [line for line in lines if line.startswith("== ")]
    assert [s[:5] for s in steps] == ["== 1.", "== 2.", "== 3.", "== 4."]
    assert "$ layoutgen show examples/vsn/spec.py:Window" in lines
    assert any(re.match(r"examples/vsn/seed_bug.py:\d+: error\[LG201\]: `variable_selection_fwd.x` needs contiguous "
                        r"rows \(stride 40\)", line) for line in lines), run.stdout
    assert "$ layoutgen check --compile -q examples/vsn/spec.py" in lines
    assert lines.count("All checks passed: 1 spec, no errors.") == 1
    for noise in ("file(s)", "spec(s)", "files changed", "note[LG505]", "kernel variable_selection_fwd"):
        assert noise not in run.stdout, noise


def test_verbose_shows_the_details(nvrtc: None) -> None:
    run = demo("--verbose")
    assert run.returncode == 0, run.stdout + run.stderr
    assert "$ layoutgen show examples/vsn/spec.py\n" in run.stdout  # every layout, binding and program
    assert "kernel variable_selection_fwd (variable_selection_fwd.cu.j2)" in run.stdout
    assert "$ layoutgen generate\n" in run.stdout
    assert "note[LG505]: variable_selection_fwd: " in run.stdout


def test_make_demo_passes_args_to_the_demo() -> None:
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    recipe = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    assert "$(PY) -m examples.vsn.demo $(ARGS)" in recipe
