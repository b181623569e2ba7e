"""The lint follows where a stride comes from, not how it is spelled (issue 30 item 5).

A value that flows from a view's own `row_stride` (`x.row_stride`, `X::row_stride` of `using X = decltype(x);`,
`decltype(x)::row_stride`) is that view's stride wherever it goes: through locals of any integer type, `auto`,
`constexpr`, casts, object-like macros, a helper's parameter its call binds to it, an offset assigned over
several statements. Stepping the view's rows by it is the layout's own distance and passes. The same chain
carrying the view's width or a number typed by hand (96, or 136: the stride typed by hand is refused by design,
docs/diagnostics.md LG401) is LG401; carrying another view's row stride is LG410.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen import Field, Layout, dims, f32
from layoutgen.checks.lint import lint_template
from layoutgen.declare.kernels import In, Kernel, Out
from layoutgen.schema.diagnostics import Diagnostic

B, K, F, C = dims("B K F C")
Wide = Layout("Wide", [B, K], f32, [Field("feat", 96), Field("ctx", 40)])  # feat: 96 wide, rows 136 apart
Narrow = Layout("Narrow", [B, K], f32, width=40)


def lint(preamble: list[str], body: list[str]) -> list[Diagnostic]:
    with tempfile.TemporaryDirectory() as folder:
        template = Path(folder) / "t.cu.j2"
        text = "\n".join(["{% block preamble %}", *preamble, "{% endblock %}", *body]) + "\n"
        template.write_text(text)
        k = Kernel("spelled", str(template), [In("x", [B, K, F]), Out("dst", [B, K, C])])
        return lint_template(k.bind(x=Wide.feat, dst=Narrow), template)


#: Where the chain starts: (its text, what it is: "stride" x's own row stride, "width", "other" dst's row stride,
#: "typed" a number typed by hand that equals x's row stride, "literal" the width typed by hand).
SOURCES = [("x.row_stride", "stride"), ("X::row_stride", "stride"), ("decltype(x)::row_stride", "stride"),
           ("x.width", "width"), ("X::width", "width"), ("dst.row_stride", "other"), ("136", "typed"),
           ("96", "literal")]
#: One link of the chain: a local of any integer type, a cast, a macro (`{p}`: the value so far, `{n}` the name).
LINKS = ["const int {n} = {p};", "int {n} = {p};", "auto {n} = {p};", "constexpr int {n} = {p};",
         "long long {n}({p});", "const unsigned {n} = static_cast<unsigned>({p});", "#define {n} ({p})",
         "const int {n} = (int){p};"]
#: How the last value indexes `x`: a subscript of a pointer from it, pointer arithmetic, an offset split over
#: statements, a helper's parameter bound to it at the call.
USES = ["subscript", "pointer", "split", "helper"]


def _expected(kind: str, spelled: str) -> list[tuple[str, str]]:
    """(code, the start of the message) the chain must give, the index spelling it ``spelled``."""
    said = f"literal {spelled}" if spelled.isdigit() else f"`{spelled}` ({136 if kind == 'typed' else 96})"
    if kind == "stride":
        return []
    if kind == "other":
        return [("LG410", f"`{spelled}` (40) in index arithmetic of kernel `spelled` steps the rows of `x` "
                          "(Wide.feat), which are 136 elements apart: it is the row stride of `dst` (Narrow)")]
    fact = "row stride" if kind == "typed" else "width"
    return [("LG401", f"{said} in index arithmetic of kernel `spelled` equals the {fact} of `x` (Wide.feat)")]


def _chain(source: str, links: list[str]) -> tuple[list[str], str]:
    """The body's lines that carry ``source`` through ``links``, and the name (or text) holding it last."""
    body = ["    using X = decltype(x);"]
    value = source
    for n, link in enumerate(links):
        name = f"S{n}" if link.startswith("#") else f"s{n}"
        body.append(link.format(n=name, p=value) if link.startswith("#") else "    " + link.format(n=name, p=value))
        value = name
    return body, value


@settings(max_examples=150, deadline=None)
@given(source=st.sampled_from(SOURCES), links=st.lists(st.sampled_from(LINKS), max_size=4),
       use=st.sampled_from(USES))
def test_a_value_is_the_stride_it_flows_from_through_any_chain(source: tuple[str, str], links: list[str],
                                                                use: str) -> None:
    text, kind = source
    preamble: list[str] = []
    body, value = _chain(text, links)
    # how the index spells it: the lint reads `X::width` as `x.width`; a helper's argument or an assigned
    # offset is parenthesized unless it is a name or a number
    shown = value.replace("X::", "x.").replace("decltype(x)::", "x.")
    wrapped = shown if shown.isidentifier() or shown.isdigit() else f"({shown})"
    if use == "helper":
        preamble += ["__device__ float at_row(const float* p, long long r, int step, int c) {",
                     "    return p[r * step + c];", "}"]
        body.append(f"    dst.at(row, 0) = at_row(&x.at(0, 0), row, {value}, c);")
        spelled = wrapped
    elif use == "subscript":
        body += ["    const float* base = &x.at(0, 0);", f"    dst.at(row, 0) = base[row * {value} + c];"]
        spelled = shown
    elif use == "pointer":
        body.append(f"    const float* in = x.raw_pointer() + row * {value};")
        spelled = shown
    else:
        body += ["    const float* base = &x.at(0, 0);", "    long long off = row;", f"    off *= {value};",
                 "    dst.at(row, 0) = base[off + c];"]
        spelled = shown if shown.isdigit() else f"({shown})"
    diags = lint(preamble, body)
    line = len(preamble) + 2 + len(body)  # the last line indexes
    expected = _expected(kind, spelled)
    assert [(d.code, d.site.line if d.site else 0) for d in diags] == [(c, line) for c, _ in expected], \
        (preamble, body, diags)
    for diag, (_, message) in zip(diags, expected):
        assert diag.message.startswith(message), (preamble, body, diag.message)
        if use == "helper":
            assert diag.message.endswith(", in helper `at_row` (line 2) as this line calls it")


@settings(max_examples=60, deadline=None)
@given(links=st.lists(st.sampled_from(LINKS), max_size=3), other=st.sampled_from(["x.row_stride", "x.width", "F"]))
def test_a_column_counted_back_by_any_stride_is_no_row_step(links: list[str], other: str) -> None:
    """`dst.at(row, i - row * s)` (a flattened loop rebased to its row) subtracts in a column of `dst`: it steps
    no rows of `dst`, whatever `s` carries (the CPU run checks the column it lands on)."""
    body, value = _chain(other, links)
    body += ["    const float* p = &x.at(0, 0);",
             f"    for (long long i = row * x.row_stride; i < row * x.row_stride + F; ++i) "
             f"dst.at(row, i - row * {value}) = p[i];"]
    assert lint([], body) == [], body


@settings(max_examples=80, deadline=None)
@given(steps=st.lists(st.sampled_from(["off += c;", "off = off + 1;", "off -= 2;", "off = off + c * 2;"]),
                      max_size=3), at=st.integers(0, 3),
       guard=st.sampled_from(["{a}", "if (c > 0) {{ {a} }}", "if (c > 0) {a}", "for (int k = 0; k < 2; ++k) {{ {a} }}",
                              "while (c-- > 0) {a}", "{{ {a} }}", "switch (c) {{ case 1: {a} }}"]),
       source=st.sampled_from(["96", "x.width"]))
def test_an_offset_assigned_in_straight_line_code_is_read_as_what_it_became(steps: list[str], at: int, guard: str,
                                                                            source: str) -> None:
    """Each statement of its own in the block that declares `off` runs once, in order: `off` is its definition
    with them applied, so a row step of 96 multiplied in at any point is LG401. One inside a branch may not run:
    `off` is then no longer followed (left to the CPU run), and nothing is reported."""
    assigned = [*steps[:at], f"off *= {source};", *steps[at:]]
    body = ["    const float* base = &x.at(0, 0);", "    long long off = row;"]
    body += ["    " + guard.format(a=a) for a in assigned]
    body.append("    dst.at(row, 0) = base[off + c];")
    diags = lint([], body)
    if guard != "{a}":  # in a branch, a loop or a block of its own: it may not run, or run again
        assert diags == [], (body, diags)
        return
    spelled = "literal 96" if source == "96" else "`(x.width)` (96)"
    assert [(d.code, d.site.line if d.site else 0) for d in diags] == [("LG401", len(body) + 2)], (body, diags)
    assert diags[0].message.startswith(f"{spelled} in index arithmetic of kernel `spelled` equals the width of `x`")


def test_an_inner_declaration_that_shadows_the_name_is_not_folded_into_the_outer_one() -> None:
    """`off` of the inner block is 96; the outer `off` that indexes is `row`, whatever the inner one became."""
    body = ["    const float* base = &x.at(0, 0);", "    long long off = row;",
            "    {", "        long long off = 0;", "        off += 96;", "        dst.at(row, 0) = off;", "    }",
            "    dst.at(row, 0) = base[off * x.row_stride + c];"]
    assert lint([], body) == []


@settings(max_examples=80, deadline=None)
@given(row=st.sampled_from(["row", "(row)", "(row + r)", "((blockIdx.x * blockDim.x + threadIdx.x) / 32) + r",
                            "static_cast<long long>((row + 1) * (2))", "min(row, (long long)(B * K) - 1)"]),
       use=st.sampled_from(["x.at({r}, c)", "x.row({r})[c]", "x.vec<16>({r}, c)"]), bound=st.sampled_from([96, 136]))
def test_a_loop_past_the_width_is_lg409_whatever_the_row_argument_holds(row: str, use: str, bound: int) -> None:
    """A hand-written entry's row is its local's definition, parentheses and all: the column is still the loop's
    counter, and the loop is read against the width however the row was computed."""
    index = use.format(r=row)
    vectors = bound // 4 if "vec" in use else bound
    body = [f"    for (int c = 0; c < {vectors}; ++c) dst.at(row, 0) += {index};"]
    with tempfile.TemporaryDirectory() as folder:
        template = Path(folder) / "t.cu.j2"
        template.write_text("\n".join(body) + "\n")
        k = Kernel("spelled", str(template), [In("x", [B, K, F], vector=16), Out("dst", [B, K, C])])
        diags = lint_template(k.bind(x=Wide.feat, dst=Narrow), template)
    past = bound > 96
    assert [d.code for d in diags] == (["LG409"] if past else []), (body, diags)
    if past:
        assert f"in `{index}`, which has " in diags[0].message
