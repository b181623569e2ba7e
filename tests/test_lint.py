"""Template lint, LG401: literal strides and widths in a template's index arithmetic.

The motivating bug was ``x + row * 40`` in a kernel whose rows are 56 apart.
A literal that equals a bound view's row stride, width or offset, used in
index math, is reported at the template's own file and line; literals in
comments, strings, Jinja tags, ``#pragma`` lines and unrelated numbers are not.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from layoutgen import Field, Layout, Site, dims, f32
from layoutgen.checks.lint import lint_template
from layoutgen.declare.kernels import In, Kernel, Out

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
    assert diags[0].message == (
        "literal 56 in index arithmetic of kernel `stride_literal` equals the row stride of `x` (Window.snap); "
        "use `x.row(r)` or `x.at(r, c)`; and the row stride of `dst` (Window.context); use `dst.row(r)` or "
        "`dst.at(r, c)`"
    )
    assert diags[2].message == (
        "literal 40 in index arithmetic of kernel `stride_literal` equals the width of `x` (Window.snap); "
        "use `x.width`; and the offset of `dst` (Window.context) in its rows; use `dst.at(r, c)`"
    )
    assert diags[0].hint == "index through the generated view so the stride follows the layout"
    assert all(d.severity.value == "error" for d in diags)


def test_a_literal_is_only_reported_when_it_means_something_for_this_binding() -> None:
    # Bound to packed 40-wide layouts, 56 is not a stride of anything: only the 40s are reported.
    binding = stride_literal.bind(name="packed", x=Features, dst=Features)
    diags = lint_template(binding, stride_literal.template_path)
    assert [d.message.split(" ")[1] for d in diags] == ["40", "40"]
    assert "the row stride of `x` (Features)" in diags[0].message


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
    "    x.at(row, 40);",  # an argument, not arithmetic
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
        "    // lg_x in a comment is fine\n"
        "    const float v = lg_x[row];\n"
        "    dst.at(row, 0) = v * lg_B + lg_made_up;\n"
    )
    k = Kernel("raw", str(template), [In("x", [B, K, F]), Out("dst", [B, K, C])])
    diags = lint_template(k.bind(x=Window.snap, dst=Window.context), template)
    assert [(d.code, d.site.line if d.site else 0) for d in diags] == [("LG403", 2), ("LG403", 3), ("LG403", 3)]
    assert diags[0].message == (
        "`lg_x` in the body of kernel `raw` is the raw pointer behind view `x` (Window.snap); index through `x` "
        "(`x.at(r, c)`, `x.row(r)`)"
    )
    assert diags[1].message == "`lg_B` in the body of kernel `raw` is the launch value of `B`; use `B`"
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
    found = rendered_lint(tmp_path, "    {% set p = 'lg_' ~ 'x' %}\n    dst.at(row, 0) = {{ p }}[row];\n")
    assert [(code, n) for code, n, _ in found] == [("LG403", 2)]
    assert "`lg_x` in the body of kernel `sneaky` is the raw pointer behind view `x`" in found[0][2]


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
    assert diag.code == "LG401" and "equals the width of `q` (QKV.q); use the kernel's `Hq`" in diag.message
