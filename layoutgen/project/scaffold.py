"""``layoutgen init [FOLDER]``: a small project that works, to start from.

It writes a spec module with one layout and one kernel bound to a field of
it, the kernel's template, the ``[tool.layoutgen]`` table and a pytest test
that runs ``layoutgen check``; then it generates the spec's files, so that
``layoutgen check --compile`` passes from the start. It never writes over a
file: where one of them is there already, it names them all and writes
nothing. An existing ``pyproject.toml`` without a ``[tool.layoutgen]`` table
gets the table appended; everything else in it is kept.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..schema.diagnostics import Diagnostic, LayoutgenError, display_path
from .config import load_config
from .outlock import output_lock
from .process import process_specs
from .writing import apply

SPEC = "specs/spec.py"
TEMPLATE = "specs/scale.cu.j2"
TEST = "tests/test_layoutgen.py"
OUTPUT = "generated/example"  # the spec's output folder, which generating writes

TABLE = """\
[tool.layoutgen]
specs = ["specs/spec.py"]  # spec modules, relative to this file
out = "generated"          # where `layoutgen generate` writes the views, kernels and launchers
arch = "sm_90"             # what `layoutgen check --compile` compiles for
"""

SPEC_TEXT = '''\
"""The project's layouts and kernels. `layoutgen show specs/spec.py` prints them."""

from layoutgen import Field, In, Kernel, Layout, Out, Spec, dims, f32

B, F = dims("B F")

# One row per sample: 8 features, then 4 columns of context. Kernels never see
# these numbers as literals: the generated views carry every stride and offset.
Sample = Layout("Sample", [B], f32, [Field("features", 8), Field("context", 4)])
Scaled = Layout("Scaled", [B], f32, width=8)

# `x` is the features of a row (row stride 12, not 8); `y` a packed row of 8.
scale = Kernel("scale", "scale.cu.j2", [In("x", [B, F]), Out("y", [B, F])], doc="double every feature")

spec = Spec("example", kernels=[scale.bind(x=Sample.features, y=Scaled)])
'''

TEMPLATE_TEXT = """\
    // One thread per row; `x.at(row, f)` uses the row stride of `Sample`, 12.
    for (int f = 0; f < F; ++f)
        y.at(row, f) = 2.0f * x.at(row, f);
"""

TEST_TEXT = '''\
"""`layoutgen check` passes: the spec's checks hold and the generated files are up to date."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_layoutgen_check_passes() -> None:
    run = subprocess.run([sys.executable, "-m", "layoutgen", "check"], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
'''


class InitError(Exception):
    """``init`` cannot start a project in the folder; nothing was written."""


class _InTheWay(Exception):
    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.name = name


@dataclass(frozen=True)
class Created:
    """What ``init`` did: the files it wrote (paths as shown), and the pyproject.toml it appended to."""

    written: tuple[str, ...]
    appended: str | None
    generated: tuple[str, ...]


def _pyproject_text(folder: Path) -> tuple[str, bool]:
    """The pyproject.toml to write, and whether it is appended to an existing one."""
    path = folder / "pyproject.toml"
    if not path.exists():
        name = "".join(c if c.isalnum() else "-" for c in folder.resolve().name.lower()).strip("-") or "project"
        return f'[project]\nname = "{name}"\nversion = "0.1.0"\nrequires-python = ">=3.11"\n\n{TABLE}', False
    existing = path.read_text(encoding="utf-8")
    try:
        tool = tomllib.loads(existing).get("tool", {})
    except tomllib.TOMLDecodeError as exc:
        raise InitError(f"{display_path(str(path))} is not valid TOML: {exc}") from None
    if isinstance(tool, dict) and "layoutgen" in tool:
        raise _InTheWay(f"{display_path(str(path))} (its [tool.layoutgen] table)")
    text = existing + ("" if existing.endswith("\n") or not existing else "\n") + "\n" + TABLE
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError:  # e.g. `tool = {...}` inline: a table may not be added to it
        raise _InTheWay(f"{display_path(str(path))} (its `tool` table cannot take [tool.layoutgen])") from None
    return text, True


def _in_the_way(names: list[str]) -> InitError:
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return InitError(f"`layoutgen init` must not write over existing files, got {listed}; nothing was written\n"
                     "  hint: run it in a new or empty folder: `layoutgen init FOLDER`")


def init_project(folder: Path) -> Created:
    """Write the starting project into ``folder`` (created if missing) and generate its files.

    Raises :class:`InitError` before writing anything when a file it would
    write is there, and LayoutgenError when generating fails (a bug: the
    spec is layoutgen's own).
    """
    if folder.exists() and not folder.is_dir():
        raise InitError(f"{display_path(str(folder.resolve()))} is a file; `layoutgen init` needs a folder")
    files = {SPEC: SPEC_TEXT, TEMPLATE: TEMPLATE_TEXT, TEST: TEST_TEXT}
    there = [display_path(str((folder / rel).resolve())) for rel in [*files, OUTPUT] if (folder / rel).exists()]
    try:
        pyproject, appended = _pyproject_text(folder)
    except _InTheWay as exc:
        there.insert(0, exc.name)
    if there:  # name every one: a second run should not find another
        raise _in_the_way(there)
    files = {"pyproject.toml": pyproject, **files}
    for rel, text in files.items():
        target = folder / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        with target.open("x" if rel != "pyproject.toml" or not appended else "w", encoding="utf-8") as f:
            f.write(text)
    shown = [display_path(str((folder / rel).resolve())) for rel in files if rel != "pyproject.toml" or not appended]
    return Created(tuple(shown), shown_pyproject(folder) if appended else None, tuple(_generate(folder)))


def shown_pyproject(folder: Path) -> str:
    return display_path(str((folder / "pyproject.toml").resolve()))


def _generate(folder: Path) -> list[str]:
    """``layoutgen generate`` in the new project: the files it wrote, as shown."""
    config = load_config(folder)
    results = process_specs(config, list(config.spec_paths))
    problems: list[Diagnostic] = [d for r in results for d in r.diagnostics]
    if problems or any(r.plan is None for r in results):
        raise LayoutgenError(problems[0]) if problems else RuntimeError("the new spec rendered no plan")
    written: list[str] = []
    with output_lock(config.root, config.out, exclusive=True):
        for result in results:
            if result.plan is not None:
                written += apply(config.root, result.plan)
    return [display_path(str((config.root / rel).resolve())) for rel in written]
