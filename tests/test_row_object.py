"""A view's row is a row object, not a pointer: the seed bug does not compile, whatever spells its stride.

`x.row(r)` used to be a `T*`, so `x.row(0) + row * x.width` (rows 40 apart in a buffer whose rows are
56 apart) generated, linted and compiled cleanly. Two layers now refuse every spelling before anything
runs, each with the real stride:

- the lint, for a stride it can read: a literal, the kernel's symbol, a body's `constexpr`, a view's
  `x.width` / `x.row_stride` (LG401);
- the types, for one it cannot (`row * K`, bound at launch): arithmetic on a row, `*x.row(r)` and
  `const float* p = x.row(r)` do not compile (LG501, with the view's own message); `x.raw_pointer()`
  compiles only for a parameter declared `contiguous=True`.

The debug build's checked row is run on the GPU (tests/gpu/test_program_gpu.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from layoutgen.codegen.library import library_namespace
from layoutgen.runtime.device_library import LIBRARY_INCLUDE as LIBRARY
from tests.helpers.cli import layoutgen

REPO = Path(__file__).resolve().parent.parent
ROWS = "a row of 'Window.snap' is not a pointer: its rows are 56 elements apart (40 columns each); " \
       "index the row with row(r)[c], or the view with at(r, c)"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[int, str]]]:
    """`check --compile` of tests/specs/rows: each body's LG501s, as (line, first line of the message)."""
    project = tmp_path_factory.mktemp("rows")
    shutil.copytree(REPO / "tests" / "specs" / "rows", project / "rows", ignore=shutil.ignore_patterns("__pycache__"))
    (project / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["rows/spec.py"]\n')
    cache = project / "cache"
    assert layoutgen("generate", "-q", cwd=project, cache=cache).returncode == 0
    run = layoutgen("check", "--compile", "--arch", "sm_90", "--format", "json", cwd=project, cache=cache)
    found: dict[str, list[tuple[int, str]]] = {}
    for d in json.loads(run.stdout)["diagnostics"]:
        assert d["code"] == "LG501", d
        found.setdefault(Path(d["path"]).name.removesuffix(".cu.j2"), []).append((d["line"], d["message"]))
    return found


def first_lines(found: list[tuple[int, str]]) -> list[tuple[int, str]]:
    return [(line, message.split("\n", 1)[0]) for line, message in found]


def test_indexing_a_row_and_the_raw_pointer_of_a_packed_parameter_compile(compiled: dict) -> None:
    assert "indexed" not in compiled and "packed" not in compiled


@pytest.mark.parametrize("body", ["plus", "plus_left", "minus", "step", "deref"])
def test_arithmetic_on_a_row_stops_the_compile_with_the_views_real_stride(compiled: dict, body: str) -> None:
    """One error per line (`*(x.row(0) + n)` reaches the message twice), at the template's line."""
    line = 3 if body == "step" else 2
    ((at, message),) = first_lines(compiled[body])
    assert at == line
    assert message.startswith(f'static assertion failed with "{ROWS}" (in generated/rows/rows.cuh:')
    assert message.endswith(", the view declared at rows/spec.py:13, instantiated here)")


def test_a_row_is_no_pointer(compiled: dict) -> None:
    ((line, message),) = first_lines(compiled["convert"])
    assert line == 2
    lib = f"lg::{library_namespace()}"  # the device library's versioned namespace; the views are the release build's
    assert message.startswith(f'no suitable conversion function from "{lib}::Field<{lib}::release::views::rows::'
                              'Window_snap_view_rows, ')
    assert message.endswith('to "const float *" exists')


def test_a_raw_pointer_needs_the_parameter_declared_contiguous(compiled: dict) -> None:
    ((line, message),) = first_lines(compiled["raw"])
    assert line == 2
    assert message.startswith(
        'static assertion failed with "raw_pointer(): this parameter\'s rows are not declared packed; declare '
        'contiguous=True on it (the binding check then refuses a strided view), or index through the view"')
    # The assertion is the device library's (lg/field.cuh): shown by its include name, at the user's line.
    line_in_library = next(n for n, text in enumerate((LIBRARY / "lg" / "field.cuh").read_text().splitlines(), 1)
                           if "raw_pointer(): this parameter's rows" in text)
    assert message.endswith(f" (in lg/field.cuh:{line_in_library}, instantiated here)")
    assert str(LIBRARY) not in "".join(m for _, m in compiled["raw"])


SEED = {  # the seed bug's four spellings, each in the one form that still compiles: inside a row's subscript
    "literal": ("        y.at(row, f) = x.row(0)[row * 40 + f];\n", "literal 40", "the width"),
    "width": ("        y.at(row, f) = x.row(0)[row * x.width + f];\n", "`x.width` (40)", "the width"),
    "symbol": ("        y.at(row, f) = x.row(0)[row * F + f];\n", "`F` (40)", "the width"),
    "stride": ("        y.at(row, f) = x.row(0)[row * x.row_stride / S + f];\n", "`x.row_stride` (56)",
               "the row stride"),
}


def test_the_seed_bug_in_each_spelling_is_refused_before_anything_runs(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["spec.py"]\n')
    for name, (line, _, _) in SEED.items():
        (tmp_path / f"{name}.cu.j2").write_text(
            "    constexpr int S = 1;\n    for (int f = 0; f < F; ++f)\n" + line, encoding="utf-8")
    (tmp_path / "spec.py").write_text(
        "from layoutgen import Field, Grid, In, Kernel, Layout, Out, Spec, dims, f32\n"
        "B, K, F = dims('B K F')\n"
        "Window = Layout('Window', [B, K], f32, [Field('snap', 40), Field('context', 16)])\n"
        "Features = Layout('Features', [B, K], f32, width=40)\n"
        f"NAMES = {list(SEED)!r}\n"
        "spec = Spec('seed', kernels=[Kernel(f'read_{n}', f'{n}.cu.j2', [In('x', [B, K, F]), Out('y', [B, K, F])],\n"
        "                                    grid=Grid.rows('y')).bind(x=Window.snap, y=Features) for n in NAMES])\n"
    )
    run = layoutgen("check", cwd=tmp_path, cache=tmp_path / "cache")
    assert run.returncode == 1
    expected = [
        f"{name}.cu.j2:3: error[LG401]: {spelled} in index arithmetic of kernel `read_{name}` equals {fact} of "
        "`x` (Window.snap)\n"
        f"  hint: rows of `x` are 56 elements apart: index with `{'x.at(r, c)' if name == 'stride' else 'x.at(row, f)'}`\n"
        for name, (_, spelled, fact) in SEED.items()
    ]
    assert run.stdout == "".join(expected) + "Found 4 errors in 1 spec.\n"
    assert not (tmp_path / "generated").exists()
