"""Messages agree with their numbers and their names: "1 column", "2 columns", "an f32 view".

Each case renders a message (a summary line, a closing line, a layout table, a
diagram, a diagnostic) with counts 0, 1 and 2 where the count can take them, and
the grammar checker below refuses a plural after 1, a singular after any other
number, ``(s)``, and ``a``/``an`` before a word that takes the other one.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from layoutgen import Field, In, Kernel, Layout, Out, dims
from layoutgen.checks import check_binding
from layoutgen.checks.lint import lint_template
from layoutgen.declare.errors import KernelError
from layoutgen.declare.kernels import Scalar
from layoutgen.declare.program import Buffer, Launch, Value
from layoutgen.diagrams.drawing import layout_svg
from layoutgen.project.report import changed_line, summary_line, up_to_date_line, would_change_line
from layoutgen.runtime.errors import LaunchError
from layoutgen.runtime.launch import KernelLauncher, KernelSpec, LayoutSpec, ParamSpec, ScalarSpec
from layoutgen.schema.diagnostics import LayoutgenError
from layoutgen.schema.words import article, plural

B, K = dims("B K")

#: The nouns messages count.
NOUNS = ("column", "element", "byte", "spec", "file", "error", "warning", "row", "array", "scalar", "value",
         "thread", "block", "register", "kernel", "vector", "entry", "launch", "argument", "dim", "character")
_PLURALS = "|".join(plural(2, n).split(" ", 1)[1] for n in NOUNS)
_SINGULARS = "|".join(NOUNS)


def grammar_errors(text: str) -> list[str]:
    """What is wrong with ``text``: a plural after 1, a singular after another number, ``(s)``, a wrong article."""
    wrong = [m.group(0) for m in re.finditer(rf"(?<![\w.*-])1 (?:{_PLURALS})\b", text)]
    wrong += [m.group(0) for m in re.finditer(rf"(?<![\w.*-])(?:0|[2-9]|[1-9]\d+) (?:{_SINGULARS})\b", text)]
    wrong += re.findall(r"\w+\(s\)", text)
    wrong += [m.group(0) for m in re.finditer(r"\b(?:a|an) `?[\w-]+", text, flags=re.I)
              if m.group(0).split(" ", 1)[0].lower() != article(m.group(0).split(" ", 1)[1])]
    return wrong


def test_the_checker_finds_each_kind_of_mistake() -> None:
    assert grammar_errors("Found 1 error in 0 specs; one row: 1 columns; 2 column; bind a f32 view; 3 file(s)") == [
        "1 columns", "2 column", "3 file", "file(s)", "a f32"]
    assert grammar_errors("1 column, 0 columns, 2 entries, an f32, a bf16, a u8, an 8-byte, a 16-byte, D*1 elements") == []


@given(st.integers(min_value=0, max_value=10**6), st.sampled_from(NOUNS))
def test_plural_agrees_with_any_count(count: int, noun: str) -> None:
    assert grammar_errors(plural(count, noun)) == []


@pytest.mark.parametrize("word", ["f32", "f16", "f64", "bf16", "i8", "i32", "i64", "u8", "u32", "u64", "bool",
                                  "8-byte", "11-byte", "16-byte", "output", "unit", "Obs", "Window", "x", "W"])
def test_article(word: str) -> None:
    expected = {"f32": "an", "f16": "an", "f64": "an", "i8": "an", "i32": "an", "i64": "an", "8-byte": "an",
                "11-byte": "an", "output": "an", "Obs": "an", "x": "an"}.get(word, "a")
    assert article(word) == expected


# -- messages rendered with counts 0, 1 and 2 -------------------------------------------------------------

COUNTS = (0, 1, 2)


def _table(width: int) -> str:
    return str(Layout("Rows", [B], "u8", width=width))


def _diagram(width: int) -> str:
    return layout_svg(Layout("Rows", [B], "f32", width=width))


def _dtype_hint(dtype: str) -> str:
    """LG203's hint: `bind an f32 view, ...`."""
    other = "i32" if dtype != "i32" else "f32"
    kernel = Kernel("k", "k.cu.j2", [In("x", [B, K], dtype=dtype), Out("y", [B, K], dtype=dtype)])
    rows = Layout("Rows", [B], other, width=4)
    wanted = Layout("Wanted", [B], dtype, width=4)
    (diag,) = [d for d in check_binding(kernel.bind(x=rows, y=wanted)) if d.code == "LG203"]
    return f"{diag.message}\n{diag.hint}"


def _lint_width(width: int, tmp: Path) -> str:
    """LG405 for column 5 of a field of ``width`` columns."""
    template = tmp / f"k{width}.cu.j2"
    template.write_text("    y.at(row, 0) = x.at(row, 5);\n")
    rows = Layout("Rows", [B], "f32", [Field("a", width), Field("b", 8)])
    kernel = Kernel("k", template.name, [In("x", [B, K]), Out("y", [B, K])])
    binding = kernel.bind(x=rows.a, y=Layout("Out", [B], "f32", width=1))
    return "\n".join(f"{d.message}\n{d.hint}" for d in lint_template(binding, template) if d.code == "LG405")


def _launcher(n_params: int, n_scalars: int) -> KernelLauncher:
    rows = LayoutSpec("Rows", ("B",), 4, "f32", 4)
    params = tuple(ParamSpec(f"p{i}", "out" if i == 0 else "in", rows, "Rows", 4) for i in range(max(n_params, 1)))
    scalars = tuple(ScalarSpec(f"s{i}", "f32") for i in range(n_scalars))
    return KernelLauncher(KernelSpec("k", "k.cu", params, symbols=("B",), grid_param=0, per_row=1, block=256,
                                     scalars=scalars), Path(), "")


def _arity(n_params: int, given_count: int) -> str:
    """LG601 for the wrong number of arrays, checked and called."""
    launcher = _launcher(n_params, 0)
    with pytest.raises(LaunchError) as checked:
        launcher.check(tuple(object() for _ in range(given_count)), device=0)
    return str(checked.value)


def _arity_with_scalars(n_scalars: int, given_count: int) -> str:
    launcher = _launcher(1, n_scalars)
    with pytest.raises(LaunchError) as called:
        launcher.scalar_values(tuple(object() for _ in range(given_count)))
    return str(called.value)


def _value_dtype(dtype: str) -> str:
    """LG305: a scalar given a Value of another dtype."""
    kernel = Kernel("k", "k.cu.j2", [Out("y", [B, K]), Scalar("lr", dtype)])
    rows = Layout("Rows", [B], "f32", width=4)
    wrong = "i32" if dtype != "i32" else "f32"
    with pytest.raises(LayoutgenError) as info:
        Launch(kernel, y=Buffer("y", rows, output=True), lr=Value("lr", wrong))
    return str(info.value)


def _finite_integer(dtype: str) -> str:
    with pytest.raises(KernelError) as info:
        Scalar("n", dtype, finite=True)
    return str(info.value)


CASES: list[tuple[str, Callable[[Path], str]]] = [
    *[(f"summary-{e}-{w}-{s}", lambda _, e=e, w=w, s=s: summary_line(e, w, s))
      for e in COUNTS for w in COUNTS for s in COUNTS],
    *[(f"changed-{f}-{s}", lambda _, f=f, s=s: changed_line(f, s)) for f in COUNTS for s in COUNTS],
    *[(f"would-change-{f}", lambda _, f=f: would_change_line(f)) for f in COUNTS],
    *[(f"up-to-date-{s}", lambda _, s=s: up_to_date_line(s)) for s in COUNTS],
    *[(f"table-{w}", lambda _, w=w: _table(w)) for w in (1, 2)],
    *[(f"diagram-{w}", lambda _, w=w: _diagram(w)) for w in (1, 2)],
    *[(f"LG203-{d}", lambda _, d=d: _dtype_hint(d)) for d in ("f32", "bf16", "u8", "i64")],
    *[(f"LG405-{w}", lambda tmp, w=w: _lint_width(w, tmp)) for w in (1, 2)],
    *[(f"LG601-arrays-{n}-{g}", lambda _, n=n, g=g: _arity(n, g)) for n in (1, 2) for g in COUNTS if g != n],
    *[(f"LG601-scalars-{n}-{g}", lambda _, n=n, g=g: _arity_with_scalars(n, g))
      for n in COUNTS for g in COUNTS if g != n + 1],
    *[(f"LG305-{d}", lambda _, d=d: _value_dtype(d)) for d in ("f32", "i64", "u32")],
    *[(f"LG208-finite-{d}", lambda _, d=d: _finite_integer(d)) for d in ("i32", "u64")],
]


@pytest.mark.parametrize("render", [c for _, c in CASES], ids=[name for name, _ in CASES])
def test_messages_agree_with_their_counts(render: Callable[[Path], str], tmp_path: Path) -> None:
    text = render(tmp_path)
    assert text
    assert grammar_errors(text) == [], text


@pytest.mark.parametrize(("counts", "line"), [
    ((0, 0, 1), "All checks passed: 1 spec, no errors."),
    ((1, 0, 0), "Found 1 error; no spec was checked."),
    ((1, 1, 1), "Found 1 error, 1 warning in 1 spec."),
    ((2, 0, 2), "Found 2 errors in 2 specs."),
    ((0, 2, 1), "Found no errors, 2 warnings in 1 spec."),
])
def test_summary_line_wording(counts: tuple[int, int, int], line: str) -> None:
    assert summary_line(*counts) == line


def test_closing_lines_wording() -> None:
    assert [changed_line(0, 1), changed_line(1, 1), changed_line(4, 2)] == [
        "No files changed in 1 spec.", "1 file changed in 1 spec.", "4 files changed in 2 specs."]
    assert [would_change_line(1), would_change_line(3)] == [
        "1 generated file would change; run `layoutgen generate`.",
        "3 generated files would change; run `layoutgen generate`."]
    assert [up_to_date_line(1), up_to_date_line(2)] == [
        "Generated code is up to date (1 spec).", "Generated code is up to date (2 specs)."]
