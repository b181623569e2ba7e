"""Template lint, LG401: literal strides and widths in a template's index arithmetic.

The motivating bug was ``x + row * 40`` in a kernel whose rows are 56 apart.
A literal that equals a bound view's row stride, width or offset, used in
index math, is reported at the template's own file and line; literals in
comments, strings, Jinja tags, ``#pragma`` lines and unrelated numbers are not.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen import Field, Layout, Site, dims, f32
from layoutgen.schema.diagnostics import Diagnostic
from layoutgen.checks.lint import lint_template
from layoutgen.declare.kernels import Grid, In, Kernel, Out
from layoutgen.declare.unify import unify

HERE = Path(__file__).resolve().parent
SPECS = HERE / "specs" / "lint"

B, K, F, C = dims("B K F C")
Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)], width=56)
Features = Layout("Features", [B, K], f32, width=40)

stride_literal = Kernel("stride_literal", "specs/lint/stride_literal.cu.j2", [
    In("x", [B, K, F]),
    Out("dst", [B, K, C]),
])
clean = Kernel("clean", "specs/lint/clean.cu.j2", [In("x", [B, K, F]), Out("dst", [B, K, C])])


def template_line(path: Path, text: str) -> int:
    lines = [n for n, line in enumerate(path.read_text().splitlines(), 1) if text in line]
    assert len(lines) == 1, (text, lines)
    return lines[0]


def test_literal_stride_and_offset_are_reported_at_the_templates_line() -> None:
    template = SPECS / "stride_literal.cu.j2"
    binding = stride_literal.bind(x=Window.snap, dst=Window.context)
    diags = lint_template(binding, stride_literal.template_path)
    found = [(d.code, d.site, d.message.split(" ")[1]) for d in diags]
    read = template_line(template, "x_ptr[row * 56 + f]")
    write = template_line(template, "[idx * 56 + 40]")
    packed = template_line(template, "x_ptr[row * 40 + f]")
    assert found == [
        ("LG401", Site(str(template), read), "56"),
        ("LG401", Site(str(template), write), "56"),
        ("LG401", Site(str(template), write), "40"),
        ("LG401", Site(str(template), packed), "40"),
    ]
    # Each literal is read against the view it indexes: `x_ptr` came from `x`, line 4 indexes `dst`.
    assert [(d.message.split(" equals ")[1], d.hint) for d in diags] == [
        ("the row stride of `x` (Window.snap)", "rows of `x` are 56 elements apart: index with `x.at(row, f)`"),
        ("the row stride of `dst` (Window.context)",
         "rows of `dst` are 56 elements apart: index with `dst.at(idx, 0)`"),
        ("the offset of `dst` (Window.context)",
         "the accessors of `dst` add its offset (40) themselves: index with `dst.at(r, c)`"),
        ("the width of `x` (Window.snap)", "rows of `x` are 56 elements apart: index with `x.at(row, f)`"),
    ]
    assert diags[0].message == (
        "literal 56 in index arithmetic of kernel `stride_literal` equals the row stride of `x` (Window.snap)"
    )
    assert not any("width`" in d.message + (d.hint or "") for d in diags)  # never `x.width` as a multiplier
    assert all(d.severity.value == "error" for d in diags)


def test_a_literal_is_only_reported_when_it_means_something_for_this_binding() -> None:
    # Bound to packed 40-wide layouts, 56 is not a stride of anything: only the 40s are reported.
    binding = stride_literal.bind(name="packed", x=Features, dst=Features)
    diags = lint_template(binding, stride_literal.template_path)
    assert [d.message.split(" ")[1] for d in diags] == ["40", "40"]
    assert diags[0].message.endswith("equals the row stride and the width of `dst` (Features)")
    assert diags[1].message.endswith("equals the row stride and the width of `x` (Features)")
    assert diags[1].hint == "rows of `x` are 40 elements apart: index with `x.at(row, f)`"


def test_comments_strings_jinja_pragmas_and_unrelated_numbers_are_not_reported() -> None:
    binding = clean.bind(x=Window.snap, dst=Window.context)
    text = (SPECS / "clean.cu.j2").read_text()
    # The template does hold the literals, in every place the lint must skip.
    for needle in ("row * 56 + f", "row * 56 + 40", "{{ 56 }}", "#pragma unroll 4", "7 * 3 + 100", '"row * 56'):
        assert needle in text
    assert lint_template(binding, clean.template_path) == []


def test_a_macro_with_a_literal_stride_is_reported(tmp_path: Path) -> None:
    template = tmp_path / "macro.cu.j2"
    template.write_text("#define AT(r, c) x_ptr[(r) * 56 + (c)]\n    float v = AT(row, 0);\n")
    k = Kernel("macro", str(template), [In("x", [B, K, F])])
    diags = lint_template(k.bind(x=Window.snap), template)
    assert [(d.code, d.site) for d in diags] == [("LG401", Site(str(template), 1))]


@pytest.mark.parametrize("line", [
    "    y[i] = x[row * 56];",
    "    y[i] = x[56 * row];",
    "    y[i] = x[56];",
    "    y[i] = x[base + 56];",
])
def test_index_arithmetic_forms(tmp_path: Path, line: str) -> None:
    template = tmp_path / "t.cu.j2"
    template.write_text(line + "\n")
    k = Kernel("forms", str(template), [In("x", [B, K, F])])
    assert [d.code for d in lint_template(k.bind(x=Window.snap), template)] == ["LG401"]


@pytest.mark.parametrize("line", [
    "    x.at(40, 0);",  # an argument, not arithmetic (a column 40 of a 40-wide field is LG405, below)
    "    const int n = 56;",  # a plain constant
    "    y = row * 560 + 4.0f * 56.0f;",  # other numbers, floats
    "    y = row * 1;",  # 1 is every width-1 field's width: never reported
    "    // y = row * 56;",
    "    /* y = row * 56; */",
    "    {{ 'row * 56' }}",
])
def test_not_index_arithmetic(tmp_path: Path, line: str) -> None:
    template = tmp_path / "t.cu.j2"
    template.write_text(line + "\n")
    k = Kernel("forms", str(template), [In("x", [B, K, F])])
    assert lint_template(k.bind(x=Window.snap), template) == []


# -- LG403: the raw `lg_` names behind the views ------------------------------------------


def test_raw_lg_names_in_a_template_are_reported(tmp_path: Path) -> None:
    template = tmp_path / "raw.cu.j2"
    template.write_text(
        "    // lg_arg_x in a comment is fine\n"
        "    const float v = lg_arg_x[row];\n"
        "    dst.at(row, 0) = v * lg_dim_B + lg_made_up;\n"
    )
    k = Kernel("raw", str(template), [In("x", [B, K, F]), Out("dst", [B, K, C])])
    diags = lint_template(k.bind(x=Window.snap, dst=Window.context), template)
    assert [(d.code, d.site.line if d.site else 0) for d in diags] == [("LG403", 2), ("LG403", 3), ("LG403", 3)]
    assert diags[0].message == (
        "`lg_arg_x` in the body of kernel `raw` is the raw pointer behind view `x` (Window.snap); index through `x` "
        "(`x.at(r, c)`, `x.row(r)[c]`)"
    )
    assert diags[1].message == "`lg_dim_B` in the body of kernel `raw` is the launch value of `B`; use `B`"
    assert diags[2].message == "`lg_made_up` in the body of kernel `raw` is a name reserved for generated code"
    assert diags[0].hint and "generated prologue" in diags[0].hint


# -- the rendered body: what `{{ }}` expressions produce -----------------------------------


def rendered_lint(tmp_path: Path, body: str) -> list[tuple[str, int, str]]:
    """Lint of ``body`` as `layoutgen check` runs it (source, then rendered): (code, line, message)."""
    from layoutgen.project.config import Config
    from layoutgen.project.process import process_spec

    (tmp_path / "t.cu.j2").write_text(body)
    (tmp_path / "spec.py").write_text(
        "from layoutgen import Field, Layout, dims, f32\n"
        "from layoutgen.declare.kernels import In, Kernel, Out\n"
        "from layoutgen.declare.spec import Spec\n"
        "B, K, F, C = dims('B K F C')\n"
        "W = Layout('Window', [B, K], f32, [Field('snap', 40), Field('context', 16)])\n"
        "k = Kernel('sneaky', 't.cu.j2', [In('x', [B, K, F]), Out('dst', [B, K, C])])\n"
        "spec = Spec('lint', kernels=[k.bind(x=W.snap, dst=W.context)])\n"
    )
    result = process_spec(Config(tmp_path, specs=("spec.py",)), tmp_path / "spec.py")
    assert not result.files or result.ok
    return [(d.code, d.site.line if d.site else 0, d.message) for d in result.diagnostics
            if d.site and d.site.path == str(tmp_path / "t.cu.j2")]


@pytest.mark.parametrize(("line", "value"), [
    ("    dst.at(row, 0) = x.row(0)[row * {{ 56 }}];", 56),
    ("    dst.at(row, 0) = x.row(0)[row * {{ params.x.view.row_stride }}];", 56),
    ("    dst.at(row, 0) = x.row(0)[row * {{ 7 * 8 }} + {{ F }}];", 56),
    ("    dst.at(row, 0) = x.row(0)[{{ params.dst.view.offset }} + row];", 40),
])
def test_strides_computed_by_jinja_are_reported_at_the_templates_line(tmp_path: Path, line: str,
                                                                     value: int) -> None:
    template = tmp_path / "t.cu.j2"
    template.write_text("    // two lines before\n    float unused = 0.0f;\n" + line + "\n")
    k = Kernel("sneaky", str(template), [In("x", [B, K, F]), Out("dst", [B, K, C])])
    assert lint_template(k.bind(x=Window.snap, dst=Window.context), template) == []  # the text hides it
    found = rendered_lint(tmp_path, "    // two lines before\n    float unused = 0.0f;\n" + line + "\n")
    assert found and all(code == "LG401" and n == 3 for code, n, _ in found), found
    assert found[0][2].startswith(f"literal {value} in index arithmetic of kernel `sneaky` equals ")


def test_raw_names_produced_by_jinja_are_reported(tmp_path: Path) -> None:
    found = rendered_lint(tmp_path, "    {% set p = 'lg_arg_' ~ 'x' %}\n    dst.at(row, 0) = {{ p }}[row];\n")
    assert [(code, n) for code, n, _ in found] == [("LG403", 2)]
    assert "`lg_arg_x` in the body of kernel `sneaky` is the raw pointer behind view `x`" in found[0][2]


def test_a_clean_rendered_body_passes_and_a_source_hit_is_reported_once(tmp_path: Path) -> None:
    assert rendered_lint(tmp_path, "{% for i in range(2) %}\n    dst.at(row, {{ i }}) = x.at(row, {{ i }});\n"
                                   "{% endfor %}\n") == []
    found = rendered_lint(tmp_path, "    dst.at(row, 0) = x.row(0)[row * 56];\n")
    assert [(code, n) for code, n, _ in found] == [("LG401", 1)]


def test_a_missing_template_is_left_to_the_renderer(tmp_path: Path) -> None:
    k = Kernel("gone", str(tmp_path / "gone.cu.j2"), [In("x", [B, K, F])])
    assert lint_template(k.bind(x=Window.snap), tmp_path / "gone.cu.j2") == []


def test_lint_runs_as_part_of_check(tmp_path: Path) -> None:
    """`layoutgen check` reports LG401 at the template path and line, and exits 1."""
    import subprocess
    import sys

    (tmp_path / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["spec.py"]\n')
    (tmp_path / "bad.cu.j2").write_text("    // reads rows\n    float v = x.row(0)[row * 56 + 1];\n")
    (tmp_path / "spec.py").write_text(
        "from layoutgen import Field, Layout, dims, f32\n"
        "from layoutgen.declare.kernels import In, Kernel\n"
        "from layoutgen.declare.spec import Spec\n"
        "B, K, F = dims('B K F')\n"
        "W = Layout('Window', [B, K], f32, [Field('snap', 40), Field('context', 16)])\n"
        "k = Kernel('bad', 'bad.cu.j2', [In('x', [B, K, F])])\n"
        "spec = Spec('lint', kernels=[k.bind(x=W.snap)])\n"
    )
    run = subprocess.run([sys.executable, "-m", "layoutgen", "check"], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert run.stdout.startswith("bad.cu.j2:2: error[LG401]: literal 56 in index arithmetic of kernel `bad`")


def test_the_width_of_a_view_counted_in_d_points_at_the_kernels_symbol(tmp_path: Path) -> None:
    from examples.qkv.spec import QKV, Positions, rope
    from layoutgen.checks.lint import lint_template

    template = tmp_path / "rope_literal.cu.j2"
    template.write_text("    q(0, 0, 0, 0) = q.at(row, 32 * 4);\n")
    (diag,) = lint_template(rope.bind(q=QKV.q, k=QKV.k, pos=Positions), template)
    assert diag.code == "LG401"
    assert diag.message == ("literal 32 in index arithmetic of kernel `rope` equals the width of `q` (QKV.q) "
                            "in columns of `D` elements")
    assert diag.hint == "rows of `q` are D*48 elements apart: index with `q(b, s, hq, d)`"


# -- only index arithmetic that addresses a view's memory ----------------------------------

Pose = Layout("Pose", [B, K], f32, [Field("pos", 4), Field("twist", 6)])  # twist: offset 4, width 6, rows 10 apart
Moments = Layout("Moments", [B, K], f32, width=2)  # rows 2 apart
Record = Layout("Record", [B, K], f32, [Field("a", 8), Field("b", 24)])  # a: 8 wide; rows 32 apart
T, M = dims("T M")


def lint(tmp_path: Path, body: str, **views: Any) -> list[Diagnostic]:
    """LG401/LG403 of ``body`` (a template's text) for a kernel with one parameter per view, `dst` an output."""
    template = tmp_path / "t.cu.j2"
    template.write_text(body)
    params = [Out(n, [B, K, C]) if n == "dst" else In(n, [B, K, F]) for n in views]
    k = Kernel("forms", str(template), params)
    return lint_template(k.bind(**views), template)


def test_an_array_size_is_not_index_arithmetic(tmp_path: Path) -> None:
    body = "    __shared__ float scratch[2];\n    float acc[40];\n    scratch[0] = mean.at(row, 0);\n"
    assert lint(tmp_path, body, mean=Moments, x=Window.snap) == []


def test_a_literal_column_of_a_row_is_not_an_offset(tmp_path: Path) -> None:
    # 4 is the offset of `twist` in its rows, and here a column of the row (twist is 6 wide).
    assert lint(tmp_path, "    dst.at(row, 0) = twist.row(row)[4] + twist.at(row, 4);\n",
                twist=Pose.twist, dst=Window.context) == []


def test_arithmetic_that_indexes_no_view_is_not_reported(tmp_path: Path) -> None:
    body = ("    dst.at(row, 0) = acc / (8 * 32 * 5);\n"
            "    const int lanes = 8 * row + 32;\n"
            "    __shared__ float tile[64];\n"
            "    float* mine = tile + 32 * lanes;\n"
            "    mine[8 * lanes] = x.at(row, 0);\n")
    assert lint(tmp_path, body, x=Record.a, dst=Record.b) == []


def test_a_literal_that_means_something_only_for_another_view_is_not_reported(tmp_path: Path) -> None:
    # 16 is the width of `dst`, not a fact of `x`, whose row is indexed here.
    body = "    dst.at(row, 0) = x.at(row, 16 * i + j) + x.row(row)[16 + j];\n"
    assert lint(tmp_path, body, x=Window.snap, dst=Window.context) == []


def test_each_cause_is_reported_once_per_line(tmp_path: Path) -> None:
    body = "    dst.at(row, 0) = x.row(0)[row * 56] + x.row(0)[row * 56 + 1] + dst.row(0)[row * 56];\n"
    diags = lint(tmp_path, body, x=Window.snap, dst=Window.context)
    assert [(d.code, d.message) for d in diags] == [
        ("LG401", "literal 56 in index arithmetic of kernel `forms` equals the row stride of `x` (Window.snap)"),
        ("LG401", "literal 56 in index arithmetic of kernel `forms` equals the row stride of `dst` (Window.context)"),
    ]


def test_a_literal_row_multiplier_says_how_far_apart_the_rows_are(tmp_path: Path) -> None:
    (diag,) = lint(tmp_path, "    dst.at(row, 0) = x.row(0)[row * 40 + f];\n", x=Window.snap, dst=Window.context)
    assert diag.message == "literal 40 in index arithmetic of kernel `forms` equals the width of `x` (Window.snap)"
    assert diag.hint == "rows of `x` are 56 elements apart: index with `x.at(row, f)`"


@pytest.mark.parametrize(("body", "message", "hint"), [
    ("    const float* p = x.row(0) + 40 * r;\n",
     "equals the width of `x` (Window.snap)", "rows of `x` are 56 elements apart: index with `x.row(r)`"),
    ("    const float v = *(x.row(0) + row * 56 + f);\n",
     "equals the row stride of `x` (Window.snap)", "rows of `x` are 56 elements apart: index with `x.at(row, f)`"),
    ("    const float v = x.at(r * 40 + c, 0);\n",
     "equals the width of `x` (Window.snap)", "rows of `x` are 56 elements apart: index with `x.at(r, c)`"),
    ("    const float v = x.at(0, r * 40 + c);\n",
     "equals the width of `x` (Window.snap)", "rows of `x` are 56 elements apart: index with `x.at(r, c)`"),
    ("    const float* ptr = x.row(0);\n    const float v = ptr[r * 56 + c];\n",
     "equals the row stride of `x` (Window.snap)", "rows of `x` are 56 elements apart: index with `x.at(r, c)`"),
    ("    auto* ptr = &x.at(0, 0);\n    ptr += r * 40;\n",
     "equals the width of `x` (Window.snap)", "rows of `x` are 56 elements apart: index with `x.row(r)`"),
    ("    dst.row(row)[c + 40] = 0.0f;\n",
     "equals the offset of `dst` (Window.context)",
     "the accessors of `dst` add its offset (40) themselves: index with `dst.at(r, c)`"),
    ("    const float v = reinterpret_cast<const float4*>(x.row(0) + row * 56)->x;\n",
     "equals the row stride of `x` (Window.snap)", "rows of `x` are 56 elements apart: index with `x.row(row)`"),
])
def test_literals_in_arithmetic_that_addresses_a_view(tmp_path: Path, body: str, message: str, hint: str) -> None:
    diags = lint(tmp_path, body, x=Window.snap, dst=Window.context)
    assert [(d.code, d.message.split(" equals ")[1:], d.hint) for d in diags] == [
        ("LG401", [message.removeprefix("equals ")], hint)]
    assert diags[0].site == Site(str(tmp_path / "t.cu.j2"), body.count("\n"))


def test_a_view_counted_in_d_gives_its_row_stride_in_elements(tmp_path: Path) -> None:
    from examples.qkv.spec import QKV, Positions, rope

    template = tmp_path / "rope_rows.cu.j2"
    template.write_text("    const float v = q.row(0)[row * 32 + i];\n")
    (diag,) = lint_template(rope.bind(q=QKV.q, k=QKV.k, pos=Positions), template)
    assert diag.message == ("literal 32 in index arithmetic of kernel `rope` equals the width of `q` (QKV.q) "
                            "in columns of `D` elements")
    assert diag.hint == "rows of `q` are D*48 elements apart: index with `q(b, s, hq, d)`"


# -- suppression comments: `// layoutgen: ignore[LG401]` -----------------------------------

TWICE = "spec = Spec('lint', kernels=[k.bind(x=W.snap, dst=W.context), k.bind(name='packed', x=P, dst=P)])\n"


def checked(tmp_path: Path, body: str, bindings: str | None = None) -> tuple[bool, list[tuple[str, int, str]]]:
    """``body`` as `layoutgen check` processes it: (spec ok, [(code, line, message)] at the template)."""
    from layoutgen.project.config import Config
    from layoutgen.project.process import process_spec

    (tmp_path / "t.cu.j2").write_text(body)
    (tmp_path / "spec.py").write_text(
        "from layoutgen import Field, Layout, dims, f32\n"
        "from layoutgen.declare.kernels import In, Kernel, Out\n"
        "from layoutgen.declare.spec import Spec\n"
        "B, K, F, C = dims('B K F C')\n"
        "W = Layout('Window', [B, K], f32, [Field('snap', 40), Field('context', 16)])\n"
        "P = Layout('Packed', [B, K], f32, width=40)\n"
        "k = Kernel('sneaky', 't.cu.j2', [In('x', [B, K, F]), Out('dst', [B, K, C])])\n"
        + (bindings or "spec = Spec('lint', kernels=[k.bind(x=W.snap, dst=W.context)])\n")
    )
    result = process_spec(Config(tmp_path, specs=("spec.py",)), tmp_path / "spec.py")
    return result.ok, [(d.code, d.site.line if d.site else 0, d.message) for d in result.diagnostics
                       if d.site and d.site.path == str(tmp_path / "t.cu.j2")]


def test_a_suppression_comment_silences_its_line_in_the_text_and_the_rendered_body(tmp_path: Path) -> None:
    body = ("    dst.at(row, 0) = x.row(0)[row * 56];  // layoutgen: ignore[LG401]\n"
            "    dst.at(row, 1) = x.row(0)[row * {{ 56 }}];  // layoutgen: ignore[LG401] a rendered stride\n"
            "{% for i in range(2) %}\n"
            "    dst.at(row, {{ i }}) = x.row(0)[row * 56 + {{ i }}] + lg_arg_x[row];  //layoutgen: ignore\n"
            "{% endfor %}\n"
            "    dst.at(row, 2) = lg_arg_x[row];  // layoutgen: ignore[LG403]\n")
    assert checked(tmp_path, body) == (True, [])
    # Without the comments, each line reports.
    bare = "\n".join(line.split("  //")[0] for line in body.split("\n"))
    assert sorted({(code, n) for code, n, _ in checked(tmp_path, bare)[1]}) == [
        ("LG401", 1), ("LG401", 4), ("LG403", 4), ("LG403", 6)]


def test_an_unused_suppression_is_lg404_at_its_line(tmp_path: Path) -> None:
    body = ("    float a = x.at(row, 0);  // layoutgen: ignore[LG401]\n"
            "    dst.at(row, 0) = x.row(0)[row * 56];  // layoutgen: ignore[LG401, LG403]\n"
            "    dst.at(row, 1) = a;  // layoutgen: ignore  nothing here\n")
    assert checked(tmp_path, body) == (True, [
        ("LG404", 1, "`// layoutgen: ignore[LG401]` suppresses nothing: no LG401 is reported on this line"),
        ("LG404", 2, "`LG403` of `// layoutgen: ignore[LG401, LG403]` suppresses nothing: no LG403 is reported on "
                     "this line"),
        ("LG404", 3, "`// layoutgen: ignore  nothing here` suppresses nothing: no diagnostic is reported on this "
                     "line"),
    ])


def test_a_suppression_used_by_one_binding_of_a_template_is_used(tmp_path: Path) -> None:
    # Bound to `Packed` (rows 40 apart) the 56 is nothing; bound to `Window` it is the row stride.
    assert checked(tmp_path, "    dst.at(row, 0) = x.row(0)[row * 56];  // layoutgen: ignore[LG401]\n",
                   TWICE) == (True, [])


def test_a_comment_that_cannot_suppress_is_lg404(tmp_path: Path) -> None:
    from layoutgen.project.config import Config
    from layoutgen.project.process import process_spec

    body = ("    float a = x.at(row, 0);  // layoutgen: ignroe[LG401]\n"
            "    float b = x.at(row, 1);  // layoutgen: ignore[LG201, LG999, nope]\n"
            "    dst.at(row, 0) = a + b;  // layoutgen: ignore[]\n")
    ok, found = checked(tmp_path, body)
    assert ok and found == [
        ("LG404", 1, "`// layoutgen: ignroe[LG401]` is not a suppression comment"),
        ("LG404", 2, "`LG201` of `// layoutgen: ignore[LG201, LG999, nope]` cannot be suppressed: LG201 "
                     "(not-contiguous) is an error that stops generation"),
        ("LG404", 2, "`LG999` of `// layoutgen: ignore[LG201, LG999, nope]` is not a diagnostic code"),
        ("LG404", 2, "`nope` of `// layoutgen: ignore[LG201, LG999, nope]` is not a diagnostic code"),
        ("LG404", 3, "`// layoutgen: ignore[]` names no code"),
    ]
    hints = [d.hint for d in process_spec(Config(tmp_path, specs=("spec.py",)), tmp_path / "spec.py").diagnostics]
    assert hints[0] == ("write `// layoutgen: ignore[LG401]` (codes separated by commas) or `// layoutgen: ignore` "
                        "(every code)")
    assert hints[1] == "fix what it reports; a comment suppresses what the lint reports on its line: LG401, LG403"


@pytest.mark.parametrize("body", [
    "    dst.at(row, 0) = x.row(0)[row * 56]; {# // layoutgen: ignore[LG401] #}\n",  # gone once rendered
    "    dst.at(row, 0) = x.row(0)[row * 56]; /* layoutgen: ignore[LG401] */\n",
    '    dst.at(row, 0) = x.row(0)[row * 56]; printf("// layoutgen: ignore");\n',
    "    // layoutgen: ignore[LG401]\n    dst.at(row, 0) = x.row(0)[row * 56];\n",  # the line above
])
def test_only_a_comment_on_the_line_itself_suppresses(tmp_path: Path, body: str) -> None:
    ok, found = checked(tmp_path, body)
    assert not ok and [(code, n) for code, n, _ in found] == [("LG401", body.count("\n"))]


# -- the class, not only the instances ------------------------------------------------------

VIEWS = [Window.snap, Window.context, Features.view, Pose.twist, Record.a, Record.b, Moments.view]
SETTINGS = settings(max_examples=60, deadline=None)


def lint_text(body: str, x: Any) -> list[Diagnostic]:
    with tempfile.TemporaryDirectory() as folder:
        return lint(Path(folder), body, x=x, dst=Features)


@st.composite
def row_multipliers(draw: st.DrawFn) -> tuple[Any, int, str, str]:
    """A view, a literal that is its row stride or width, a spelling of rows that far apart, the accessor."""
    view = draw(st.sampled_from([v for v in VIEWS if max(v.row_stride, v.width) > 1]))
    literal = draw(st.sampled_from([n for n in (view.row_stride, view.width) if n > 1]))
    product = draw(st.sampled_from([f"r * {literal}", f"{literal} * r"]))
    spelled = draw(st.sampled_from([
        (f"    const float v = x.row(0)[{product} + c];\n", "x.at(r, c)"),
        (f"    const float v = x.row(0)[{product}];\n", "x.at(r, 0)"),
        (f"    const float* p = &x.at(0, 0);\n    const float v = p[c + {product}];\n", "x.at(r, c)"),
        (f"    const float* p = x.row(0) + {product};\n", "x.row(r)"),
        (f"    auto p = x.row(0);\n    p += {product};\n", "x.row(r)"),
        (f"    const float v = x[{product} + c];\n", "x.at(r, c)"),
        (f"    const float v = *(x.row(0) + ({product}) + c);\n", "x.at(r, c)"),
    ]))
    return view, literal, *spelled


@SETTINGS
@given(case=row_multipliers())
def test_every_spelling_of_a_literal_row_stride_is_reported_with_the_real_one(case: tuple[Any, int, str, str]) -> None:
    view, literal, body, accessor = case
    (diag,) = lint_text(body, view)
    assert diag.code == "LG401" and diag.site is not None and diag.site.line == body.count("\n")
    assert diag.message.startswith(f"literal {literal} in index arithmetic of kernel `forms` equals the ")
    assert diag.message.endswith(f"of `x` ({view.name})")
    assert diag.hint == f"rows of `x` are {view.row_stride} elements apart: index with `{accessor}`"


@st.composite
def named_row_multipliers(draw: st.DrawFn) -> tuple[Any, int, str, str, str]:
    """A view, a row stride or width spelled with a name (the view's own fact, the kernel's symbol, the
    body's constexpr), a body reading rows that far apart off row 0, and the accessor to use."""
    view = draw(st.sampled_from([v for v in VIEWS if max(v.row_stride, v.width) > 1]))
    names = [("x.row_stride", view.row_stride, ""), ("x.width", view.width, ""),
             ("S", view.row_stride, f"    constexpr int S = {view.row_stride};\n"),
             ("S", view.width, f"    constexpr int S = {view.width};\n")]
    symbol = unify(Kernel("forms", "t.cu.j2", [In("x", [B, K, F])]).bind(x=view)).static.get("F")
    if symbol is not None:
        names.append(("F", symbol, ""))
    name, value, prelude = draw(st.sampled_from([n for n in names if n[1] > 1]))
    product = draw(st.sampled_from([f"r * {name}", f"{name} * r"]))
    body, accessor = draw(st.sampled_from([
        (f"    const float v = x.row(0)[{product} + c];\n", "x.at(r, c)"),
        (f"    const float v = x.row(0)[c + {product}];\n", "x.at(r, c)"),
        (f"    const float v = x.row(0)[{product}];\n", "x.at(r, 0)"),
        (f"    const float v = *(x.row(0) + {product} + c);\n", "x.at(r, c)"),
        (f"    const float* p = &x.at(0, 0);\n    const float v = p[{product} + c];\n", "x.at(r, c)"),
    ]))
    return view, value, name, prelude + body, accessor


@SETTINGS
@given(case=named_row_multipliers())
def test_a_row_stride_spelled_with_a_name_is_reported_with_the_real_one(case: tuple[Any, int, str, str, str]) -> None:
    """The seed bug is the same bug whatever names its stride: `x.width`, the kernel's `F`, a constexpr."""
    view, value, name, body, accessor = case
    if name == "x.row_stride" and "&x.at(0, 0)" in body:  # a raw pointer at its own row stride is the layout's
        assert lint_text(body, view) == []
        return
    (diag,) = lint_text(body, view)
    assert diag.code == "LG401" and diag.site is not None and diag.site.line == body.count("\n")
    assert diag.message.startswith(f"`{name}` ({value}) in index arithmetic of kernel `forms` equals the ")
    assert diag.message.endswith(f"of `x` ({view.name})")
    assert diag.hint == f"rows of `x` are {view.row_stride} elements apart: index with `{accessor}`"


def test_a_raw_pointer_stepped_by_its_own_views_row_stride_follows_the_layout(tmp_path: Path) -> None:
    """`first[row * x.row_stride + c]` off `&x.at(0, 0)` or `x.raw_pointer()` is the layout's own distance (a
    hand-written kernel's pointer code); a row object stepped past its row, or another spelling, is not."""
    body = ("    const float* first = &x.at(0, 0);\n"
            "    dst.at(row, 0) = first[row * x.row_stride + c] + x.raw_pointer()[x.row_stride * row];\n")
    assert lint(tmp_path, body, x=Window.snap, dst=Window.context) == []
    (diag,) = lint(tmp_path, "    dst.at(row, 0) = x.row(0)[row * x.row_stride + c];\n", x=Window.snap,
                   dst=Window.context)
    assert diag.message == ("`x.row_stride` (56) in index arithmetic of kernel `forms` equals the row stride of `x` "
                            "(Window.snap)")


def test_names_that_say_what_they_mean_are_not_strides(tmp_path: Path) -> None:
    """A named constant is a stride claim only where it multiplies an index off a row: the last column
    (`F - 1`), a flattened leading index and a loop bound are what names are for."""
    body = ("    for (int f = 0; f < F; ++f) dst.at(row, f % C) = x.at(row, F - 1) + x.at(row, f);\n"
            "    dst.at(row, 0) = x.at(row / K * K + row % K, x.width - 1) + x.row(row)[x.width - 1];\n"
            "    constexpr int S = 56;\n"
            "    float tile[S * 2];\n"
            "    tile[row * S] = x.row(row)[F - 1];\n")
    assert lint(tmp_path, body, x=Window.snap, dst=Window.context) == []


def expressions() -> st.SearchStrategy[str]:
    facts = sorted({n for v in VIEWS for n in (v.row_stride, v.width, v.offset)} | {2, 3, 8})
    leaves = st.one_of(st.sampled_from([str(n) for n in facts]), st.sampled_from(["i", "j", "row", "acc", "K"]))
    return st.recursive(leaves, lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from([" + ", " * ", " - ", " / ", " % "]), inner).map("".join),
        inner.map(lambda e: f"({e})"),
    ), max_leaves=6)


@SETTINGS
@given(view=st.sampled_from(VIEWS), size=st.sampled_from(["2", "8", "40", "56", "16 * 8"]),
       a=expressions(), b=expressions())
def test_arithmetic_outside_an_index_into_a_view_is_never_reported(view: Any, size: str, a: str, b: str) -> None:
    body = (f"    __shared__ float tile[{size}];\n"
            f"    float acc = {a};\n"
            f"    tile[{a}] = {b};\n"
            f"    float* mine = tile + {a};\n"
            f"    mine[{b}] = acc / ({b});\n"
            f"    for (int i = 0; i < {a}; i += {b}) acc += i * {b};\n"
            f"    dst.at(row, 0) = x.at(row, 0) * ({a}) + {b};\n")
    assert lint_text(body, view) == []


@SETTINGS
@given(line=st.text(alphabet="xpr0145()[]{}<>*+-/&.,;=:?#\"' \n_lgatowdefin", max_size=80))
def test_the_lint_reads_any_text_without_failing(line: str) -> None:
    for diag in lint_text(line, Window.snap):
        assert diag.code in ("LG401", "LG403", "LG405", "LG409", "LG410", "LG411") and diag.site is not None


# -- LG405: a constant index past a field's own width ---------------------------------------

Step = Layout("Step", [T, M], f32, [Field("obs", 1), Field("reward", 1), Field("done", 1)])


def test_a_constant_column_past_a_one_column_field_is_lg405_naming_the_field_it_reads(tmp_path: Path) -> None:
    template = tmp_path / "t.cu.j2"
    template.write_text("    // the reward of the step\n    const float r = reward(t, e, 1);\n")
    k = Kernel("returns", str(template), [In("reward", [T, M, 1]), In("done", [T, M, 1])])
    (diag,) = lint_template(k.bind(reward=Step.reward, done=Step.done), template)
    assert (diag.code, diag.site) == ("LG405", Site(str(template), 2))
    assert diag.message == (
        "`reward(t, e, 1)` in kernel `returns` reads column 1 of `reward` (Step.reward), which has 1 column "
        "(columns 1..2 of Step [T, M, 3]): a constant index must be less than the width of the field")
    assert diag.hint == ("column 1 of `reward` is column 2 of a Step row, in `Step.done`: index that field "
                         "through its own view, `done`")
    assert diag.severity.value == "error"


@pytest.mark.parametrize(("body", "read", "hint"), [
    ("    dst.at(row, 0) = x.at(row, 40);\n", "`x.at(row, 40)` in kernel `forms` reads column 40",
     "column 40 of `x` is column 40 of a Window row, in `Window.context`: index that field through its own "
     "view, `dst`"),
    ("    dst.at(row, 0) = x.row(row)[F];\n", "`x.row(row)[F]` in kernel `forms` reads column 40",
     "column 40 of `x` is column 40 of a Window row, in `Window.context`: index that field through its own "
     "view, `dst`"),
    ("    constexpr int LAST = 41;\n    dst.at(row, 0) = x.at(row, (LAST));\n",
     "`x.at(row, (LAST))` in kernel `forms` reads column 41", None),
])
def test_a_literal_or_constexpr_column_at_or_past_the_width_is_lg405(tmp_path: Path, body: str, read: str,
                                                                    hint: str | None) -> None:
    diags = lint(tmp_path, body, x=Window.snap, dst=Window.context)  # F: the static symbol bound to 40
    assert [(d.code, d.site) for d in diags] == [("LG405", Site(str(tmp_path / "t.cu.j2"), body.count("\n")))]
    assert diags[0].message == (f"{read} of `x` (Window.snap), which has 40 columns (columns 0..40 of Window "
                                "[B, K, 56]): a constant index must be less than the width of the field")
    assert diags[0].hint == (hint or "column 41 of `x` is column 41 of a Window row, in `Window.context`: index "
                                     "that field through its own view, `dst`")


def test_a_negative_constant_column_is_lg405(tmp_path: Path) -> None:
    (diag,) = lint(tmp_path, "    dst.at(row, 0) = x.at(row, 0) - dst.at(row, -1);\n", x=Window.snap,
                   dst=Window.context)
    assert diag.message == (
        "`dst.at(row, -1)` in kernel `forms` reads column -1 of `dst` (Window.context), which has 16 columns "
        "(columns 40..56 of Window [B, K, 56]): a constant index must not be negative")
    assert diag.hint == ("column -1 of `dst` is column 39 of a Window row, in `Window.snap`: index that field "
                         "through its own view, `x`")


def test_a_constant_vector_index_past_the_field_is_lg405(tmp_path: Path) -> None:
    (diag,) = lint(tmp_path, "    const auto v = x.vec<16>(row, 9), w = x.template vec<16>(row, 10);\n",
                   x=Window.snap, dst=Window.context)
    assert diag.message == (
        "`x.template vec<16>(row, 10)` in kernel `forms` reads 16-byte vector 10 of `x` (Window.snap), which has "
        "10 such vectors (columns 0..40 of Window [B, K, 56]): a constant index must be less than the width in "
        "vectors")


def test_a_constant_head_past_a_sub_array_fields_axis_is_lg405(tmp_path: Path) -> None:
    from examples.qkv.spec import QKV, Positions, rope

    template = tmp_path / "rope_heads.cu.j2"
    template.write_text("    q(b, s, 31, d) = q(b, s, 32, d) + k(b, s, 7, 0) + pos(b, s, 0);\n")
    (diag,) = lint_template(rope.bind(q=QKV.q, k=QKV.k, pos=Positions), template)
    assert (diag.code, diag.site) == ("LG405", Site(str(template), 1))
    assert diag.message == ("`q(b, s, 32, d)` in kernel `rope` reads entry 32 of axis `Hq` of `q` (QKV.q "
                            "[B, S, 32, D]), which has 32 entries: a constant index must be less than the extent")
    assert diag.hint == "the entries of axis `Hq` are 0 to 31"


@pytest.mark.parametrize("body", [
    "    dst.at(row, 15) = x.at(row, 39) + x.row(row)[0] + x.vec<16>(row, 9).v[0];\n",  # the last of each
    "    dst.at(row, 0) = x.at(row, F - 1) + x.at(row, c) + x.row(row)[c + 40];\n",  # not a constant
    "    float acc[56];\n    acc[40] = x.at(40, 0);\n    dst.at(row, 0) = acc[55];\n",  # a local array, a row
    "    dst.at(row, 0) = x.at(row, 0);  // x.at(row, 40)\n",
])
def test_an_index_in_range_or_not_constant_is_not_lg405(tmp_path: Path, body: str) -> None:
    assert [d for d in lint(tmp_path, body, x=Window.snap, dst=Window.context) if d.code == "LG405"] == []


def test_a_column_past_the_width_produced_by_jinja_is_lg405_at_the_templates_line(tmp_path: Path) -> None:
    found = rendered_lint(tmp_path, "    // first\n    dst.at(row, 0) = x.at(row, {{ F }});\n")
    assert [(code, n) for code, n, _ in found] == [("LG405", 2)]
    assert found[0][2].startswith("`x.at(row, 40)` in kernel `sneaky` reads column 40 of `x` (Window.snap)")


def test_lg405_cannot_be_suppressed(tmp_path: Path) -> None:
    ok, found = checked(tmp_path, "    dst.at(row, 0) = x.at(row, 40);  // layoutgen: ignore[LG405]\n")
    # The comment's own LG404 waits for the rendered body, which the error stops before.
    assert not ok and [(code, n) for code, n, _ in found] == [("LG405", 1)]


def test_the_kernels_shared_arrays_are_its_own_memory(tmp_path: Path) -> None:
    """`w[i * F + j]` indexes a Shared array the prologue declares, not a view: no stride claim."""
    from layoutgen import Shared

    template = tmp_path / "t.cu.j2"
    template.write_text("    w[row * F + 1] = x.at(row, 0);\n    tmp[row * 40] = 0.0f;\n")
    k = Kernel("forms", str(template), [In("x", [B, K, F])], shared=[Shared("w", f32, [F, F]), Shared("tmp", f32, [F])])
    assert lint_template(k.bind(x=Window.snap), template) == []


@pytest.mark.parametrize(("grid", "said"), [
    (lambda: Grid.rows("x"), "Grid.rows returns the threads past the last row"),
    (lambda: Grid.elements("x"), "Grid.elements returns the threads past the last element"),
])
def test_a_barrier_in_a_grid_that_returns_threads_is_lg406(tmp_path: Path, grid: Any, said: str) -> None:
    template = tmp_path / "t.cu.j2"
    template.write_text("    __syncthreads();\n    __syncwarp();\n    // __syncthreads() in a comment\n")
    k = Kernel("forms", str(template), [In("x", [B, K, F])], grid=grid())
    (diag,) = lint_template(k.bind(x=Window.snap), template)
    assert (diag.code, diag.severity.value, diag.site) == ("LG406", "warning", Site(str(template), 1))
    assert diag.message == (f"`__syncthreads()` in kernel `forms`, whose {said} before the body: the barrier is "
                            "not reached by every thread of the block")


def test_a_barrier_in_grid_warps_is_an_error_lg408(tmp_path: Path) -> None:
    """Warps of Grid.warps work alone and those with no rows have returned: a block barrier is undefined."""
    template = tmp_path / "t.cu.j2"
    template.write_text("    __syncwarp();\n    if (lane == 0) __syncthreads();\n")
    k = Kernel("forms", str(template), [In("x", [B, K, F])], grid=Grid.warps("x", rows_per_warp=2, block=64))
    (diag,) = lint_template(k.bind(x=Window.snap), template)
    assert (diag.code, diag.severity.value, diag.site) == ("LG408", "error", Site(str(template), 2))
    assert diag.message == ("`__syncthreads()` in kernel `forms`, whose Grid.warps returns each warp with no rows "
                            "before the body: the barrier is not reached by every thread of the block, which is "
                            "undefined behaviour")
    assert diag.hint == ("a warp of Grid.warps orders its own work with __syncwarp(); for a barrier of the whole "
                         "block, declare Grid.tiles or Grid.persistent, where every thread runs the whole body")


def test_a_barrier_in_grid_warps_stops_generation(tmp_path: Path) -> None:
    from layoutgen.project.config import Config
    from layoutgen.project.process import process_spec

    (tmp_path / "t.cu.j2").write_text("    __syncthreads();\n")
    (tmp_path / "spec.py").write_text(
        "from layoutgen import Field, Grid, Layout, dims, f32\n"
        "from layoutgen.declare.kernels import In, Kernel\n"
        "from layoutgen.declare.spec import Spec\n"
        "B, K, F = dims('B K F')\n"
        "W = Layout('Window', [B, K], f32, [Field('snap', 40), Field('context', 16)])\n"
        "k = Kernel('warped', 't.cu.j2', [In('x', [B, K, F])], grid=Grid.warps('x', rows_per_warp=2, block=64))\n"
        "spec = Spec('lint', kernels=[k.bind(x=W.snap)])\n"
    )
    result = process_spec(Config(tmp_path, specs=("spec.py",)), tmp_path / "spec.py")
    assert not result.ok and result.files == {}
    assert [d.code for d in result.diagnostics] == ["LG408"]


@pytest.mark.parametrize("grid", [lambda: Grid.tiles("x", rows=64), lambda: Grid.persistent("x", rows=64)])
def test_a_barrier_in_a_grid_that_keeps_every_thread_is_fine(tmp_path: Path, grid: Any) -> None:
    template = tmp_path / "t.cu.j2"
    template.write_text("    __syncthreads();\n")
    k = Kernel("forms", str(template), [In("x", [B, K, F])], grid=grid())
    assert lint_template(k.bind(x=Window.snap), template) == []


def test_a_scalars_raw_argument_is_named_as_the_scalar(tmp_path: Path) -> None:
    from layoutgen import Scalar

    template = tmp_path / "raw.cu.j2"
    template.write_text("    dst.at(row, 0) = lg_arg_lr * x.at(row, 0);\n")
    k = Kernel("raw", str(template), [In("x", [B, K, F]), Scalar("lr", f32), Out("dst", [B, K, C])])
    (diag,) = lint_template(k.bind(x=Window.snap, dst=Window.context), template)
    assert diag.message == "`lg_arg_lr` in the body of kernel `raw` is the argument behind scalar `lr`; use `lr`"


# -- suppression comments: any text after the codes (issue 29 item 11) ----------------------


def test_a_suppression_followed_by_a_colon_and_a_reason_suppresses(tmp_path: Path) -> None:
    """`// layoutgen: ignore[LG401]: reason` was read as no suppression at all, silently."""
    body = ("    dst.at(row, 0) = x.row(0)[row * 56];  // layoutgen: ignore[LG401]: rows of the table are 56 apart\n"
            "    dst.at(row, 1) = x.row(0)[row * 56];  // layoutgen: ignore: checked by hand\n")
    assert checked(tmp_path, body) == (True, [])


_TRAILING = st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), max_size=30)
_SPACE = st.sampled_from(["", " ", "  ", "\t"])


@SETTINGS
@given(codes=st.lists(st.sampled_from(["LG401", "LG403", "LG406"]), min_size=1, max_size=3, unique=True),
       before=_SPACE, inner=_SPACE, after=_TRAILING)
def test_any_text_after_the_codes_of_a_suppression_is_free(codes: list[str], before: str, inner: str,
                                                          after: str) -> None:
    from layoutgen.checks.suppress import _parse

    text = f"{before}layoutgen:{before}ignore{inner}[{(',' + inner).join(codes)}]{after}"
    entry, problems = _parse(Site("t.cu.j2", 1), "//" + text, text)
    assert problems == [] and entry is not None and entry.codes == tuple(codes)


@SETTINGS
@given(before=_SPACE, after=_TRAILING.filter(lambda t: not t.lstrip().startswith("[")
                                              and not (t[:1].isalnum() or t[:1] == "_")))
def test_any_text_after_a_bare_ignore_is_free_and_suppresses_every_code(before: str, after: str) -> None:
    from layoutgen.checks.suppress import _parse

    text = f"{before}layoutgen:{before}ignore{after}"
    entry, problems = _parse(Site("t.cu.j2", 1), "//" + text, text)
    assert problems == [] and entry is not None and entry.codes == ()


@pytest.mark.parametrize("text", [" layoutgen: ignore[LG401", " layoutgen: ignored", " layoutgen: ignore_all"])
def test_a_suppression_with_an_unclosed_list_or_a_longer_word_is_not_one(text: str) -> None:
    from layoutgen.checks.suppress import _parse

    entry, problems = _parse(Site("t.cu.j2", 1), "//" + text, text)
    assert entry is None and [p.message for p in problems] == [f"`//{text}` is not a suppression comment"]
