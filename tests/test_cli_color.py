"""Colour, a bare call and a closed pipe: the command line behaves like ruff's.

Colour: ``--color always|never`` decides; ``--color auto`` (the default)
follows ``NO_COLOR`` (any non-empty value: off), then ``FORCE_COLOR`` (any
non-empty value: on), then whether the stream is a terminal.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from layoutgen.project.colors import use_color

REPO = Path(__file__).resolve().parent.parent
RED = "\x1b[31merror\x1b[0m[\x1b[1mLG201\x1b[0m]"
PLAIN = "error[LG201]"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def layoutgen(*args: str, env: dict[str, str] | None = None, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    return subprocess.run([sys.executable, "-m", "layoutgen", *args], cwd=cwd, capture_output=True, text=True,
                          env={**base, "PYTHONPATH": str(REPO), **(env or {})}, timeout=300)


@pytest.mark.parametrize(("choice", "env", "tty", "expected"), [
    ("auto", {}, False, False),
    ("auto", {}, True, True),
    ("auto", {"NO_COLOR": "1"}, True, False),
    ("auto", {"NO_COLOR": ""}, True, True),  # empty: not set
    ("auto", {"FORCE_COLOR": "1"}, False, True),
    ("auto", {"FORCE_COLOR": ""}, False, False),
    ("auto", {"NO_COLOR": "1", "FORCE_COLOR": "1"}, False, False),  # the user's "no" wins
    ("always", {"NO_COLOR": "1"}, False, True),
    ("never", {"FORCE_COLOR": "1"}, True, False),
])
def test_who_decides_colour(choice: str, env: dict[str, str], tty: bool, expected: bool) -> None:
    stream = Terminal() if tty else io.StringIO()
    assert use_color(choice, stream, env) is expected


def test_an_unknown_choice_is_refused() -> None:
    with pytest.raises(ValueError, match=r"`choice` must be one of auto, always, never, got 'sometimes'"):
        use_color("sometimes", io.StringIO(), {})


@pytest.mark.parametrize(("args", "env", "shown"), [
    ([], {}, PLAIN),  # a pipe: no colour
    ([], {"FORCE_COLOR": "1"}, RED),
    (["--color", "always"], {}, RED),
    (["--color", "always"], {"NO_COLOR": "1"}, RED),
    (["--color", "never"], {"FORCE_COLOR": "1"}, PLAIN),
    (["--color", "auto"], {"NO_COLOR": "1", "FORCE_COLOR": "1"}, PLAIN),
])
def test_check_colours_as_told(args: list[str], env: dict[str, str], shown: str) -> None:
    run = layoutgen("check", *args, "examples/vsn/seed_bug.py", env=env)
    assert run.returncode == 1, run.stderr
    assert shown in run.stdout
    assert (RED in run.stdout) is (shown == RED)


def test_show_colours_the_diagnostics_it_prints(tmp_path: Path) -> None:
    (tmp_path / "spec.py").write_text("raise RuntimeError('boom')\n")
    run = layoutgen("show", "--color", "always", "spec.py", cwd=tmp_path)
    assert run.returncode == 1
    assert run.stderr == ("spec.py:1: \x1b[31merror\x1b[0m[\x1b[1mLG504\x1b[0m]: importing the spec raised "
                          "RuntimeError: boom\n")


def test_every_command_that_prints_diagnostics_takes_color() -> None:
    for verb in ("generate", "check", "show"):
        run = layoutgen(verb, "--help")
        assert "--color {auto,always,never}" in run.stdout, verb


def test_a_bare_call_prints_the_whole_help_and_exits_2() -> None:
    run = layoutgen()
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.startswith("usage: layoutgen [-h] [--version] COMMAND ...\n")
    for verb, line in [("generate", "write the generated files"), ("check", "run every check"),
                       ("show", "print or draw layouts"), ("explain", "print a diagnostic code's documentation"),
                       ("init", "start a small working project")]:
        assert any(row.split() [:1] == [verb] and line in row for row in run.stderr.splitlines()), (verb, run.stderr)
    assert "the following arguments are required" not in run.stderr


def _piped(command: str) -> subprocess.CompletedProcess[str]:
    """``layoutgen ARGS | READER`` in bash; stderr ends with layoutgen's exit status."""
    return subprocess.run(["bash", "-c", f"{sys.executable} -m layoutgen {command}; echo \"status ${{PIPESTATUS[0]}}\" >&2"],
                          cwd=REPO, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_head_of_show_prints_its_line_and_no_traceback() -> None:
    run = _piped("show examples/vsn/spec.py | head -1")
    assert run.stdout == "Market [B, K, 40] f32  (row stride 40 elements, 160 bytes)\n"
    # All of it may fit in the pipe before head closes it (0); otherwise the quiet exit (141).
    assert run.stderr in ("status 0\n", "status 141\n")


@pytest.mark.parametrize("command", ["show examples/vsn/spec.py", "explain", "explain LG201",
                                     "check examples/vsn/seed_bug.py"])
def test_a_reader_that_went_away_ends_it_quietly_with_141(command: str) -> None:
    # `true` has exited long before layoutgen (a Python start-up) writes its first line.
    run = _piped(f"{command} | true")
    assert run.stderr == "status 141\n"
