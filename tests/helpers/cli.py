"""The ``layoutgen`` command as the tests run it: a subprocess in a project folder, or in-process; and NVRTC."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import subprocess
import sys
from pathlib import Path

from layoutgen.cli import main

REPO = Path(__file__).resolve().parents[2]


def layoutgen(*args: str, cwd: Path, cache: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m layoutgen ARGS`` in ``cwd``, as a user runs it; ``cache``: its own compile cache folder."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    if cache is not None:
        env["LAYOUTGEN_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, "-m", "layoutgen", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=600)


def run_layoutgen(command: str, cwd: Path) -> str:
    """``layoutgen ARGS`` run in-process in ``cwd``: stdout and stderr as one text."""
    words = shlex.split(command)
    assert words[0] == "layoutgen", command
    buffer = io.StringIO()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            main(words[1:])
    finally:
        os.chdir(before)
    return buffer.getvalue()


def nvrtc_missing() -> str | None:
    """Why NVRTC cannot compile here, or None when it can."""
    try:
        from layoutgen.runtime.nvrtc import nvrtc_version

        nvrtc_version()
    except Exception as exc:  # NvrtcUnavailableError, ImportError
        return f"NVRTC is not available: {exc}"
    return None
