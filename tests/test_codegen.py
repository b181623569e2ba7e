"""The CUDA generator: golden files, strides from the schema, `#line` mapping, determinism.

Golden files live in ``tests/golden/``; regenerate them with
``LAYOUTGEN_UPDATE_GOLDEN=1 pytest tests/test_codegen.py`` and review the diff.
The VSN example is compared with the committed ``generated/vsn/`` (refresh
that with ``layoutgen generate``).
"""

from __future__ import annotations

import difflib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jinja2
import pytest

from layoutgen import Field, Layout, Site, dims, f16, f32
from layoutgen.codegen.env import c_float, c_int, c_string, environment, mark_lines, split_marks
from layoutgen.codegen.model import view_model
from layoutgen.codegen.render import render_spec
from layoutgen.codegen.stamp import MARKER, is_generated, verify
from layoutgen.declare.kernels import In, InOut, Kernel, Out
from layoutgen.declare.spec import Spec

from tests.helpers.golden import REPO, check_golden, render

B, K, F = dims("B K F")


def line_map(text: str) -> list[tuple[str | None, int | None, str]]:
    """Each line of a generated file with the (file, line) its `#line` directives give it."""
    out: list[tuple[str | None, int | None, str]] = []
    current: tuple[str | None, int | None] = (None, None)
    for raw in text.split("\n"):
        m = re.fullmatch(r'#line (\d+) "([^"]+)"', raw)
        if m:
            current = (m[2], int(m[1]))
            continue
        out.append((current[0], current[1], raw))
        if current[1] is not None:
            current = (current[0], current[1] + 1)
    return out


# -- golden files -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["mini.cuh", "scale_snap.cu", "copy_context.cu"])
def test_golden_mini(name: str) -> None:
    rendered = render("tests/specs/mini/spec.py")
    assert sorted(rendered.files) == ["mini/__init__.py", "mini/copy_context.cu", "mini/mini.cuh",
                                      "mini/scale_snap.cu"]
    check_golden(f"mini/{name}", rendered.files[f"mini/{name}"])


def test_golden_unrolled_template() -> None:
    check_golden("lines/unrolled.cu", render("tests/specs/lines/spec.py").files["lines/unrolled.cu"])


def test_vsn_renders_exactly_the_committed_generated_code() -> None:
    rendered = render("examples/vsn/spec.py", project=True)
    folder = REPO / "generated" / "vsn"
    on_disk = {
        p.relative_to(REPO / "generated").as_posix(): p.read_text(encoding="utf-8")
        for p in sorted(folder.iterdir()) if p.is_file() and is_generated(p.read_text(encoding="utf-8"))
    }
    assert sorted(rendered.files) == sorted(on_disk), "run `layoutgen generate`: the set of files differs"
    for path, text in rendered.files.items():
        if text != on_disk[path]:
            diff = "".join(difflib.unified_diff(
                on_disk[path].splitlines(keepends=True), text.splitlines(keepends=True), path, "rendered"
            ))
            pytest.fail(f"generated/{path} is stale (run `layoutgen generate`):\n{diff}")
    assert {"vsn/vsn.cuh", "vsn/variable_selection_fwd.cu", "vsn/variable_selection_bwd.cu"} <= set(rendered.files)


# -- strides come from the schema ------------------------------------------------------


def test_a_plain_param_bound_to_window_snap_reads_at_row_stride_56() -> None:
    """The fix of the motivating bug: the same kernel, not contiguous, gets a view 56 apart, offset 0."""
    files = render("examples/vsn/spec.py", project=True).files
    header, fwd = files["vsn/vsn.cuh"], files["vsn/variable_selection_fwd.cu"]
    # lg::Field<Rows, T, Width, RowStride, Offset, VectorBytes, Pack, Index>: VectorBytes is the kernel's to give
    assert "struct Window_snap_view : lg::v0_1_0::Field<Window_snap_view_rows, T, 40, 56, 0, VectorBytes, Pack, long long> {" in header
    assert "struct Window_context_view : lg::v0_1_0::Field<Window_context_view_rows, T, 16, 56, 40, VectorBytes, Pack, long long> {" in header
    # Static views scale by lg::Unscaled (1) and map rows by lg::AllRows (the identity).
    field = (REPO / "layoutgen" / "include" / "lg" / "field.cuh").read_text(encoding="utf-8")  # the device library's
    assert "return Row(base + RowMap::map(r) * (RowStride * scale.value()) + Offset * scale.value());" in field
    assert "#include <lg/lg.cuh>\n" in header
    assert "    const lg::views::vsn::Window_snap_view<const float, 16, lg::Packing::strided> x{ {lg_arg_x}, lg_dim_B, lg_dim_K };\n" in fwd
    assert "//   x: in [B, K, F] <- `Window.snap`, columns 0..40 of Window [B, K, 56], strides (K*56, 56, 1)\n" in fwd
    assert "    [[maybe_unused]] constexpr int F = 40;\n" in fwd
    # The template reads x only through the view (its warp's shared tiles are filled by the view): no literal stride.
    body = fwd[fwd.index('#line 4 "examples/vsn/variable_selection_fwd.cu.j2"'):]
    assert "xs.stage(s).load_async(x, tiles.nth(s));" in body and not re.search(r"\b(40|56)\b", body)


def test_the_same_template_bound_twice_generates_two_kernels_with_their_own_views() -> None:
    window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)], width=56)
    packed = Layout("Packed", [B, K], f32, width=40)
    scale = Kernel("scale", "specs/mini/scale_snap.cu.j2", [InOut("x", [B, K, F])])
    spec = Spec("twice", kernels=[scale.bind(name="scale_window", x=window.snap),
                                  scale.bind(name="scale_packed", x=packed)])
    files = render_spec(spec, REPO, "tests/test_codegen.py").files
    assert sorted(files) == ["twice/__init__.py", "twice/scale_packed.cu", "twice/scale_window.cu", "twice/twice.cuh"]
    assert "struct Window_snap_view : lg::v0_1_0::Field<Window_snap_view_rows, T, 40, 56, 0, VectorBytes, Pack, long long>" in files["twice/twice.cuh"]
    assert "struct Packed_view : lg::v0_1_0::Field<Packed_view_rows, T, 40, 40, 0, VectorBytes, Pack, long long>" in files["twice/twice.cuh"]
    assert "lg::views::twice::Window_snap_view<float, 4, lg::Packing::strided> x{" in files["twice/scale_window.cu"]
    assert "lg::views::twice::Packed_view<float, 4, lg::Packing::strided> x{" in files["twice/scale_packed.cu"]
    assert "void __launch_bounds__(128) scale_window(" in files["twice/scale_window.cu"]


def test_index_math_is_64_bit_only_where_the_dims_can_pass_2_to_the_31() -> None:
    small = Layout("Small", [40], f32, width=2)
    huge = Layout("Huge", [65536, 32768], f32, width=1)  # 2^31 elements
    symbolic = Layout("Sym", [B], f32, width=4)
    assert view_model(small.view, "").index_type == "int"
    assert view_model(huge.view, "").index_type == "long long"
    assert view_model(symbolic.view, "").index_type == "long long"
    assert view_model(small.view, "").rows_expr == "40"


def test_half_precision_layouts_include_the_fp16_header() -> None:
    halves = Layout("Halves", [B], f16, width=8)
    k = Kernel("halve", "specs/mini/scale_snap.cu.j2", [InOut("x", [B, F])])
    files = render_spec(Spec("h", kernels=[k.bind(x=halves)]), REPO, "tests/test_codegen.py").files
    assert "#include <cuda_fp16.h>\n" in files["h/h.cuh"]
    assert "lg::views::h::Halves_view<__half, 2, lg::Packing::strided> x{" in files["h/halve.cu"]


# -- #line maps to the template, through loops and conditionals ---------------------------------


def test_line_directives_follow_the_template_through_for_and_if() -> None:
    template = REPO / "tests" / "specs" / "lines" / "loop.cu.j2"
    source = template.read_text().split("\n")
    text = render("tests/specs/lines/spec.py").files["lines/unrolled.cu"]
    mapped = [(f, n, t) for f, n, t in line_map(text) if f is not None]
    assert mapped, "no #line directive in the kernel"
    # The generated closing brace (and the file's last newline) follow the body; they are not template lines.
    while mapped and mapped[-1][2] in ("}", ""):
        mapped.pop()
    assert {f for f, _, _ in mapped} == {"tests/specs/lines/loop.cu.j2"}
    by_text = {}
    for _, n, t in mapped:
        by_text.setdefault(t.strip(), []).append(n)
    # The loop body appears three times, each time at template line 3; the `if` body once, at line 5.
    assert by_text["float v0 = x.at(row, 0);"] == [3]
    assert by_text["float v1 = x.at(row, 1);"] == [3]
    assert by_text["float v2 = x.at(row, 2);"] == [3]
    assert by_text["v1 *= 2.0f;  // line 5: only when i == 1"] == [5]
    assert "v0 *= 2.0f;  // line 5: only when i == 1" not in by_text
    # Every line that says which template line it is must sit at that line.
    for _, n, t in mapped:
        if m := re.search(r"// line (\d+)", t):
            assert n == int(m[1]), (n, t)
        # A line without Jinja expressions is the template line itself, character for character.
        assert n is not None and 1 <= n <= len(source)
        if "{{" not in source[n - 1]:
            assert t == source[n - 1], (n, t, source[n - 1])
    assert [n for _, n, _ in mapped] == [1, 3, 3, 5, 3, 9, 11, 13]


def test_the_nearest_preceding_line_directive_names_the_template_line() -> None:
    text = render("tests/specs/lines/spec.py").files["lines/unrolled.cu"]
    lines = text.split("\n")
    target = lines.index("    x.at(row, 0) = total;  // line 13")
    directive = next(lines[i] for i in range(target - 1, -1, -1) if lines[i].startswith("#line"))
    m = re.fullmatch(r'#line (\d+) "(.+)"', directive)
    assert m is not None
    gap = target - 1 - lines.index(directive)  # lines between the directive and the target
    assert (int(m[1]) + gap, m[2]) == (13, "tests/specs/lines/loop.cu.j2")


def test_mark_and_split_round_trip_plain_lines() -> None:
    source = "a\n{% if x %}\nb {{ y }}\n{% endif %}\n{# c\nd #}\ne"
    marked = mark_lines(source)
    assert [n for n, _ in split_marks(marked)][:1] == [1]
    rendered = environment(REPO).from_string(marked).render(x=True, y="Y")
    assert split_marks(rendered) == [(1, "a"), (3, "b Y"), (7, "e")]


# -- the environment ------------------------------------------------------------------------------


def test_one_cached_strict_environment() -> None:
    env = environment(REPO)
    assert environment(REPO) is env
    assert env.undefined is jinja2.StrictUndefined
    assert (env.trim_blocks, env.lstrip_blocks, env.keep_trailing_newline, env.autoescape) == (
        True, True, True, False
    )
    with pytest.raises(jinja2.UndefinedError):
        env.from_string("{{ nope }}").render()
    assert env.from_string("{{ 1.5 | c_float }} {{ (2**40) | c_int }} {{ 'a\"b' | c_string }}").render() == (
        '1.5f 1099511627776LL "a\\"b"'
    )


def test_c_literal_filters() -> None:
    assert [c_float(1), c_float(0.1), c_float(1e-30)] == ["1.0f", "0.1f", "1e-30f"]
    with pytest.raises(ValueError):
        c_float(float("nan"))
    assert [c_int(7), c_int(2**31 - 1), c_int(2**31), c_int(-(2**31) - 1)] == [
        "7", "2147483647", "2147483648LL", "-2147483649LL"
    ]
    assert c_string('say "hi"\n\\') == '"say \\"hi\\"\\n\\\\"'


# -- stamps and paths -------------------------------------------------------------------------------


@pytest.mark.parametrize("spec_rel", ["tests/specs/mini/spec.py", "examples/vsn/spec.py"])
def test_every_file_is_stamped_and_free_of_absolute_paths(spec_rel: str) -> None:
    rendered = render(spec_rel)
    for path, text in rendered.files.items():
        head = text.split("\n")[:2]
        comment = "#" if path.endswith(".py") else "//"
        assert head[0] == f"{comment} Generated by layoutgen 0.1.0 from {spec_rel}. Do not edit.", path
        assert head[1].startswith(f"{comment} {MARKER} sha256:"), path
        assert verify(text), path
        assert str(REPO) not in text and "/home/" not in text and "/tmp/" not in text, path
        assert text.endswith("\n") and "\r" not in text, path
        for m in re.finditer(r'#line \d+ "([^"]+)"', text):
            # a template, or the file itself (the `#line` after the body), by its path under the root
            assert not Path(m[1]).is_absolute() and ((REPO / m[1]).is_file() or m[1] == f"generated/{path}"), m[1]


# -- template failures are LG402 at the template's own line --------------------------------------------


def lg402(template: str) -> list[tuple[str, Site | None, str]]:
    k = Kernel("failing", template, [InOut("x", [B, K, F])])
    window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)], width=56)
    rendered = render_spec(Spec("bad", kernels=[k.bind(x=window.snap)]), REPO, "tests/test_codegen.py")
    assert rendered.files == {}, "a spec whose template fails generates nothing"
    return [(d.code, d.site, d.message) for d in rendered.diagnostics]


def test_a_template_syntax_error_is_lg402_at_its_line() -> None:
    template = REPO / "tests" / "specs" / "template_errors" / "syntax.cu.j2"
    assert lg402("specs/template_errors/syntax.cu.j2") == [(
        "LG402", Site(str(template), 3),
        "template of kernel `failing` failed to render: Expected an expression, got 'end of statement block'",
    )]


def test_an_undefined_variable_is_lg402_at_its_line_inside_a_loop() -> None:
    template = REPO / "tests" / "specs" / "template_errors" / "undefined.cu.j2"
    assert lg402("specs/template_errors/undefined.cu.j2") == [(
        "LG402", Site(str(template), 4), "template of kernel `failing` failed to render: 'f_width' is undefined",
    )]


def test_a_missing_template_is_lg402_at_the_kernel_declaration() -> None:
    (code, site, message), = lg402("specs/template_errors/no_such.cu.j2")
    assert code == "LG402"
    assert message == (
        "template `specs/template_errors/no_such.cu.j2` of kernel `failing` does not exist "
        "(looked for tests/specs/template_errors/no_such.cu.j2)"
    )
    assert site is not None and site.path == __file__


# -- determinism: the CLI under two hash seeds, in two places -------------------------------------------


def make_project(root: Path) -> Path:
    """A project holding copies of the VSN example and the mini spec, configured in pyproject.toml."""
    (root / "examples" / "vsn").mkdir(parents=True)
    for src in (REPO / "examples" / "vsn").iterdir():
        if src.suffix == ".j2" or src.name == "spec.py":
            shutil.copy(src, root / "examples" / "vsn" / src.name)
    shutil.copytree(REPO / "examples" / "vsn" / "include", root / "examples" / "vsn" / "include")
    shutil.copytree(REPO / "tests" / "specs" / "mini", root / "specs" / "mini",
                    ignore=shutil.ignore_patterns("__pycache__"))
    (root / "pyproject.toml").write_text(
        '[tool.layoutgen]\nspecs = ["examples/vsn/spec.py", "specs/mini/spec.py"]\nout = "generated"\n'
        'include = ["examples/vsn/include"]\n'
    )
    return root


def run_cli(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(REPO), **env}
    return subprocess.run([sys.executable, "-m", "layoutgen", *args], cwd=cwd, env=environ, capture_output=True,
                          text=True, timeout=300)


def tree(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_output_is_byte_identical_under_two_hash_seeds_and_two_locations(tmp_path: Path) -> None:
    one = make_project(tmp_path / "one")
    two = make_project(tmp_path / "elsewhere" / "two")
    for project, seed in ((one, "1"), (two, "2")):
        run = run_cli(["generate"], project, PYTHONHASHSEED=seed)
        assert run.returncode == 0, run.stdout + run.stderr
    first, second = tree(one / "generated"), tree(two / "generated")
    assert "vsn/vsn.cuh" in first and "mini/scale_snap.cu" in first
    assert sorted(first) == sorted(second)
    for path in first:
        assert first[path] == second[path], f"{path} differs between PYTHONHASHSEED=1 and 2"
        text = first[path].decode()
        assert str(tmp_path) not in text, f"{path} holds an absolute path"
        assert MARKER in text.split("\n")[1]
    # The same bytes as the committed output of the example: nothing depends on where it ran.
    committed = tree(REPO / "generated" / "vsn")
    assert {p: b for p, b in first.items() if p.startswith("vsn/")} == {
        f"vsn/{p}": b for p, b in committed.items() if "__pycache__" not in p
    }


def _failing_render(tmp_path: Path, template: str) -> list[tuple[str, Site | None, str]]:
    k = Kernel("failing", template, [InOut("x", [B, F])], template_root=tmp_path)
    rows = Layout("Rows", [B], f32, width=4)
    rendered = render_spec(Spec("bad", kernels=[k.bind(x=rows)]), tmp_path, "spec.py")
    assert rendered.files == {}
    if "latin" in rendered.diagnostics[0].message:
        assert rendered.diagnostics[0].hint == "save the template as UTF-8"
    return [(d.code, d.site, d.message) for d in rendered.diagnostics]


def test_a_template_that_is_not_utf8_is_lg402_at_the_byte(tmp_path: Path) -> None:
    (tmp_path / "latin.cu.j2").write_bytes(b"    // one\n    x.at(row, 0) = 1.0f;  // caf\xe9\n")
    assert _failing_render(tmp_path, "latin.cu.j2") == [(
        "LG402", Site(str(tmp_path / "latin.cu.j2"), 2),
        "template of kernel `failing` failed to render: `latin.cu.j2` is not UTF-8 text: byte 0xe9 at line 2, "
        "column 33",
    )]
    # The same in a template it includes: reported there.
    (tmp_path / "outer.cu.j2").write_text('    // outer\n{% include "latin.cu.j2" %}\n', encoding="utf-8")
    assert _failing_render(tmp_path, "outer.cu.j2")[0][1] == Site(str(tmp_path / "latin.cu.j2"), 2)


def test_templates_that_include_each_other_are_lg402_at_the_first_include(tmp_path: Path) -> None:
    (tmp_path / "a.cu.j2").write_text('    // a\n{% include "b.cu.j2" %}\n', encoding="utf-8")
    (tmp_path / "b.cu.j2").write_text('{% include "a.cu.j2" %}\n', encoding="utf-8")
    assert _failing_render(tmp_path, "a.cu.j2") == [(
        "LG402", Site(str(tmp_path / "a.cu.j2"), 2),
        "template of kernel `failing` failed to render: it recurses without end (a.cu.j2:2 -> b.cu.j2:1 -> a.cu.j2:2)",
    )]


def test_an_error_in_an_included_template_is_reported_at_its_own_line(tmp_path: Path) -> None:
    (tmp_path / "outer.cu.j2").write_text('    // outer\n{% include "inner.cu.j2" %}\n', encoding="utf-8")
    (tmp_path / "inner.cu.j2").write_text("    // inner\n    x.at(row, 0) = {{ nope }};\n", encoding="utf-8")
    assert _failing_render(tmp_path, "outer.cu.j2") == [(
        "LG402", Site(str(tmp_path / "inner.cu.j2"), 2), "template of kernel `failing` failed to render: 'nope' is undefined",
    )]
