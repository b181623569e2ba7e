"""Layout types for mypy: a layout mix-up is a type error; correct use and the generated modules pass --strict.

Each check runs ``mypy --strict`` in a subprocess from the repository root (so
pyproject's [tool.mypy] applies) with a cache folder of this test session's own.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TYPING = Path("tests") / "typing"
MARK = re.compile(r"#\s*E:\s*([a-z-]+)\s*$")  # a line mypy must reject, with the error code
Mypy = Callable[..., tuple[int, list[str]]]
ERROR = re.compile(r"^(?P<path>[^:\n]+):(?P<line>\d+): error: (?P<message>.*?)  \[(?P<code>[a-z-]+)\]$")


@pytest.fixture(scope="module")
def mypy(tmp_path_factory: pytest.TempPathFactory) -> Mypy:
    cache = tmp_path_factory.mktemp("mypy-cache")

    def run(*targets: str) -> tuple[int, list[str]]:
        proc = subprocess.run(
            [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--no-color-output",
             "--hide-error-context", "--cache-dir", str(cache), *targets],
            cwd=REPO, capture_output=True, text=True, timeout=300,
        )
        assert "Traceback" not in proc.stderr, proc.stderr
        return proc.returncode, [line for line in proc.stdout.splitlines() if line.strip()]

    return run


def errors(lines: list[str]) -> list[tuple[str, int, str, str]]:
    """(path, line, code, message) of each error line; any other output line fails the test."""
    out = []
    for line in lines:
        m = ERROR.match(line)
        assert m, f"unexpected mypy output: {line!r}"
        out.append((m["path"], int(m["line"]), m["code"], m["message"]))
    return out


def test_mypy_rejects_the_layout_mixup_on_its_line_and_nowhere_else(mypy: Mypy) -> None:
    path = str(TYPING / "layout_mixup.py")
    status, lines = mypy(path)
    assert status == 1, lines
    assert errors(lines) == [(
        path, 7, "arg-type",
        'Argument 1 to "variable_selection_fwd" has incompatible type "Array[Features]"; '
        'expected "Array[Window] | DeviceArray"',
    )]
    source = (REPO / path).read_text().splitlines()
    assert "variable_selection_fwd(features," in source[6]  # line 7 is the mix-up, line 8 the fine call
    assert "variable_selection_fwd(window," in source[7]


def test_layouts_of_the_same_shape_are_not_interchangeable(mypy: Mypy) -> None:
    path = str(TYPING / "layout_mixup_same_shape.py")
    marks = (MARK.search(text) for text in (REPO / path).read_text().splitlines())
    marked = {(n, m[1]) for n, m in enumerate(marks, 1) if m}
    assert len(marked) == 3
    status, lines = mypy(path)
    assert status == 1, lines
    found = errors(lines)
    assert {(line, code) for _, line, code, _ in found} == marked
    assert len(found) == len(marked)
    assert any('"Array[Market]"; expected "Array[Features] | DeviceArray"' in m for *_, m in found)


def test_correct_use_passes_strict(mypy: Mypy) -> None:
    status, lines = mypy(str(TYPING / "layout_ok.py"))
    assert (status, lines) == (0, [])


def test_generated_modules_pass_strict(mypy: Mypy) -> None:
    status, lines = mypy("generated")
    assert (status, lines) == (0, [])
