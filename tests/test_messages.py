"""Messages that lead into the bug (issue 14, item 4 and 5): every use, both sides, the user's line, one cause once.

The specs are in ``tests/specs/messages``; `# <-` marks each line a diagnostic must name. `layoutgen` runs
in-process in a copy of that folder, as users run it; the exact output is asserted.
"""

from __future__ import annotations

import contextlib
import io
import os
import runpy
import shutil
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen.cli import main
from layoutgen.runtime.nvrtc import CompileError, CompileRequest, compile_cubin, nvrtc_version
from layoutgen.schema.diagnostics import Diagnostic, Site, UnknownFieldError

MESSAGES = Path(__file__).resolve().parent / "specs" / "messages"


def marked_lines(spec: str) -> list[int]:
    """The lines of ``spec`` that carry the ``# <-`` marker."""
    lines = (MESSAGES / spec).read_text().splitlines()
    return [n for n, text in enumerate(lines, start=1) if "  # <-" in text]


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty project (every setting its default) holding a copy of the message specs under `specs/`."""
    root = tmp_path / "project"
    shutil.copytree(MESSAGES, root / "specs", ignore=shutil.ignore_patterns("__pycache__"))
    (root / "pyproject.toml").write_text("")
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(tmp_path / "cache"))
    return root


def renamed_as_it_should_be(project: Path) -> None:
    """``specs/renamed.py`` with its uses renamed too: three kernels that generate and compile."""
    spec = project / "specs" / "renamed.py"
    spec.write_text(spec.read_text().replace(".snap", ".features").replace('["snap"]', '["features"]'))


def layoutgen(cwd: Path, *args: str) -> tuple[int, str]:
    """``layoutgen ARGS`` in-process in ``cwd``: the exit status, and stdout and stderr as one text."""
    buffer = io.StringIO()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            status = main(list(args))
    finally:
        os.chdir(before)
    return status, buffer.getvalue()


# -- LG111: every use of a renamed field, each with its kernel or launch -----------------------------------


def test_every_use_of_an_unknown_field_is_reported_with_its_kernel_or_launch(project: Path) -> None:
    twice, snap, thrice = marked_lines("renamed.py")
    fields = "`Window` has no field `snap` (its fields: `features`, `context`)"
    hint = "  hint: `Window` is declared at specs/renamed.py:9\n"
    assert layoutgen(project, "check", "specs/renamed.py") == (1, (
        f"specs/renamed.py:{twice}: error[LG111]: {fields}; used by `twice.x` (bound at specs/renamed.py:{twice})\n"
        + hint
        + f"specs/renamed.py:{snap}: error[LG111]: {fields}; used by `halved.x` (bound at specs/renamed.py:{snap + 1})\n"
        + hint
        + f"specs/renamed.py:{thrice}: error[LG111]: {fields}; used by `thrice.x` in launch 1 of program `step` "
        f"(specs/renamed.py:{thrice})\n"
        + hint
        + "Found 3 errors in 1 spec.\n"
    ))


def test_a_plain_import_of_the_spec_still_raises_at_the_first_unknown_field(project: Path) -> None:
    with pytest.raises(UnknownFieldError) as info:
        runpy.run_path(str(project / "specs" / "renamed.py"))
    assert info.value.code == "LG111"
    assert info.value.site == Site(str(project / "specs" / "renamed.py"), marked_lines("renamed.py")[0])
    assert info.value.diagnostic.message == "`Window` has no field `snap` (its fields: `features`, `context`)"


def test_a_field_of_an_unknown_field_is_not_reported_again(project: Path) -> None:
    spec = project / "specs" / "nested.py"
    spec.write_text(
        "from layoutgen import Field, Layout, Spec, dims, f32\n"
        "(B,) = dims('B')\n"
        "Row = Layout('Row', [B], f32, [Field('head', 8), Field('tail', 8)])\n"
        "Row.snap.head.width\n"
        "Row['nope.tail']\n"
        "spec = Spec('nested')\n"
    )
    status, out = layoutgen(project, "check", "specs/nested.py")
    assert (status, out) == (1, (
        "specs/nested.py:4: error[LG111]: `Row` has no field `snap` (its fields: `head`, `tail`)\n"
        "  hint: `Row` is declared at specs/nested.py:3\n"
        "specs/nested.py:5: error[LG111]: `Row` has no field `nope` (its fields: `head`, `tail`)\n"
        "  hint: `Row` is declared at specs/nested.py:3\n"
        "Found 2 errors in 1 spec.\n"
    ))


# -- LG304: both geometries ---------------------------------------------------------------------------------


def test_a_buffer_of_another_pitch_names_both_geometries(project: Path) -> None:
    (line,) = marked_lines("pitch.py")
    assert layoutgen(project, "check", "specs/pitch.py") == (1, (
        f"specs/pitch.py:{line}: error[LG304]: `read.src` is bound to Pitched.pixels (layout Pitched [N, 512] f32, "
        "row stride 512, columns 0..128) but program `blur` gives it buffer `image` of layout Image ([N, 128] f32, "
        "row stride 128, columns 0..128)\n"
        "  hint: give it a buffer of layout Pitched, or launch the kernel itself so that it is bound to the "
        "buffer's view\n"
        "Found 1 error in 1 spec.\n"
    ))


# -- LG504: the line of a syntax error; which two specs ------------------------------------------------------


def test_a_syntax_error_in_a_spec_is_reported_at_its_own_line(project: Path) -> None:
    (line,) = marked_lines("syntax_error.py")
    assert layoutgen(project, "check", "specs/syntax_error.py") == (1, (
        f"specs/syntax_error.py:{line}: error[LG504]: importing the spec raised SyntaxError: '(' was never closed\n"
        "    Image = Layout(\"Image\", [N], f32, width=128  # <-\n"
        "                  ^\n"
        "Found 1 error in 1 spec.\n"
    ))


def test_two_specs_in_one_module_are_named_with_their_lines(project: Path) -> None:
    (line,) = marked_lines("two_specs.py")
    assert layoutgen(project, "check", "specs/two_specs.py") == (1, (
        f"specs/two_specs.py:{line}: error[LG504]: a spec module must define exactly one `Spec(...)`, "
        f"specs/two_specs.py defines 2: `forward` (specs/two_specs.py:{line - 1}) and `backward` "
        f"(specs/two_specs.py:{line})\n"
        "  hint: move each spec but one into a module of its own, and list every module in "
        "`[tool.layoutgen].specs`\n"
        "Found 1 error in 1 spec.\n"
    ))


# -- LG306: a program the spec does not list -----------------------------------------------------------------


def test_a_program_declared_but_not_listed_is_a_warning_at_its_line(project: Path) -> None:
    (line,) = marked_lines("unlisted.py")
    assert layoutgen(project, "generate", "-q", "specs/unlisted.py") == (0, (
        "3 files changed in 1 spec.\n"
        f"specs/unlisted.py:{line}: warning[LG306]: program `backward` is declared in specs/unlisted.py but not "
        "listed in its spec `unlisted`, so nothing checks or generates it\n"
        "  hint: list it: Spec(\"unlisted\", ..., programs=[..., backward]), or delete it\n"
        "Found no errors, 1 warning in 1 spec.\n"
    ))


# -- LG502: one per spec --------------------------------------------------------------------------------------


def test_a_stale_tree_is_one_lg502_per_spec_listing_its_files(project: Path) -> None:
    (project / "specs" / "pitch.py").write_text((project / "specs" / "pitch.py").read_text().replace(
        "Launch(read, src=image, dst=result),  # <-", "Launch(copy, name='reread', src=image, dst=result),"))
    assert layoutgen(project, "check", "specs/pitch.py") == (1, (
        "specs/pitch.py:1: error[LG502]: 5 files of `generated/pitch/` are not what spec `pitch` generates now:\n"
        "  generated/pitch/__init__.py is missing\n"
        "  generated/pitch/pitch.cuh is missing\n"
        "  generated/pitch/read.cu is missing\n"
        "  generated/pitch/reread.cu is missing\n"
        "  generated/pitch/write.cu is missing\n"
        "  hint: run `layoutgen generate` and commit the result\n"
        "Found 1 error in 1 spec.\n"
    ))


# -- LG402: `{{` of brace initialisation -----------------------------------------------------------------------


def test_brace_initialisation_in_a_template_gets_the_raw_hint(project: Path) -> None:
    assert layoutgen(project, "check", "specs/brace.py") == (1, (
        "specs/brace.cu.j2:3: error[LG402]: template of kernel `halve` failed to render: expected token "
        "'end of print statement', got 'f'\n"
        "  hint: the `{{` at line 2 opens a Jinja expression; if it is C++ brace initialisation (`Vec{{1, 2}}`), "
        "write `Vec{ {1, 2} }` or put the lines between `{% raw %}` and `{% endraw %}`\n"
        "Found 1 error in 1 spec.\n"
    ))


# -- LG501: NVRTC's whole message, at the user's line, once ----------------------------------------------------

def _nvrtc_missing() -> str | None:
    try:
        nvrtc_version()
    except Exception as exc:  # NvrtcUnavailableError
        return f"NVRTC is not available: {exc}"
    return None


nvrtc = pytest.mark.skipif(_nvrtc_missing() is not None, reason=_nvrtc_missing() or "")


@nvrtc
def test_nvrtc_keeps_its_whole_message_argument_types_and_caret() -> None:
    src = (
        "__device__ float f(int a, int b) { return a; }\n"
        "__device__ float f(float a, int b) { return a; }\n"
        'extern "C" __global__ void k(float* p) {\n'
        "    p[0] = f(1.0, 2.0f, 3);\n"
        "}\n"
    )
    with pytest.raises(CompileError) as info:
        compile_cubin(CompileRequest(src, "generated/k.cu"))
    assert [(d.site, d.message) for d in info.value.diagnostics] == [(Site("generated/k.cu", 4), (
        'no instance of overloaded function "f" matches the argument list\n'
        "              argument types are: (double, float, int)\n"
        "        p[0] = f(1.0, 2.0f, 3);\n"
        "               ^\n"
        '  generated/k.cu(2): note #3322-D: number of parameters of function "f(float, int)" does not match the '
        "call\n"
        "    __device__ float f(float a, int b) { return a; }\n"
        "                     ^\n"
        '  generated/k.cu(1): note #3322-D: number of parameters of function "f(int, int)" does not match the call\n'
        "    __device__ float f(int a, int b) { return a; }\n"
        "                     ^"
    ))]


#: A captured NVRTC log: an error in the views header, inside the view of `Window.snap`, reached from line 5 of
#: the template; and one in the same view with no instantiation (as a generator bug would give).
HEADER = (
    "namespace lg {\n"                                                  # 1
    "template <typename T> struct Field { T* base; };\n"                # 2
    "}  // namespace lg\n"                                              # 3
    "// `Window.snap`: columns 0..40 of Window [B, K, 56] f32.\n"       # 4
    "// Declared in specs/spec.py. Rows allow 16-byte accesses.\n"      # 5
    "template <typename T>\n"                                           # 6
    "struct Window_snap_view : lg::Field<T> {\n"                        # 7
    "    T& at(long long r, int c) const { return this->base[r]; }\n"   # 8
    "};\n"                                                              # 9
)
LOG = (
    'example.cuh(8): error: expression must have class type but it has type "float"\n'
    "      T& at(long long r, int c) const { return this->base[r]; }\n"
    "                                               ^\n"
    '          detected during instantiation of "T &Window_snap_view<T>::at(long long, int) const [with T=float]" '
    "at line 5 of scale.cu.j2\n"
    "\n"
    "example.cuh(8): error: this declaration has no storage class or type specifier\n"
    "      T& at(long long r, int c) const { return this->base[r]; }\n"
    "      ^\n"
    "\n"
    "example.cuh(2): error: expected a \";\"\n"
    "\n"
    "3 errors detected in the compilation of \"generated/example/scale.cu\".\n"
)


def test_an_error_in_the_generated_header_is_placed_at_the_users_line(tmp_path: Path) -> None:
    from layoutgen.project.compile_all import declared_at, placed
    from layoutgen.runtime.nvrtc import parse_log

    names = {"example.cuh": "generated/example/example.cuh"}
    headers = {"example.cuh": HEADER}
    sites = {"Window_snap_view": Site("specs/spec.py", 4)}  # from the loaded spec: the header names no line
    assert declared_at(HEADER, 8, sites) == Site("specs/spec.py", 4)
    assert declared_at(HEADER, 7, sites) == Site("specs/spec.py", 4)  # the struct's own line
    assert declared_at(HEADER, 2, sites) is None  # lg::Field: no declaration made it
    placed_errors = [placed(e, names, headers, "generated/example/scale.cu", tmp_path, sites)
                     for e in parse_log(LOG)]
    assert placed_errors == [
        Diagnostic("LG501", (
            'expression must have class type but it has type "float" (in generated/example/example.cuh:8, the view '
            f"declared at {Site(str(tmp_path / 'specs/spec.py'), 4)}, instantiated here)\n"
            "        T& at(long long r, int c) const { return this->base[r]; }\n"
            "                                                 ^\n"
            '            detected during instantiation of "T &Window_snap_view<T>::at(long long, int) const '
            '[with T=float]" at line 5 of scale.cu.j2'
        ), Site(str(tmp_path / "scale.cu.j2"), 5)),
        Diagnostic("LG501", (
            "this declaration has no storage class or type specifier (in generated/example/example.cuh:8, the view "
            "generated from this declaration)\n"
            "        T& at(long long r, int c) const { return this->base[r]; }\n"
            "        ^"
        ), Site(str(tmp_path / "specs/spec.py"), 4)),
        Diagnostic("LG501", 'expected a ";"', Site(str(tmp_path / "generated/example/example.cuh"), 2)),
    ]


@nvrtc
def test_a_static_assertion_in_the_device_library_is_at_the_templates_line(project: Path) -> None:
    (project / "specs" / "scale.cu.j2").write_text(
        "    // One thread per row: y = 2 x, through 32-byte groups the launcher does not check.\n"
        "    for (int f = 0; f < F; ++f)\n"
        "        y.at(row, f) = 2.0f * x.at(row, f);\n"
        "    auto group = x.vec<32>(row, 0);\n"
    )
    renamed_as_it_should_be(project)
    assert layoutgen(project, "generate", "-q", "specs/renamed.py")[0] == 0
    status, out = layoutgen(project, "check", "--compile", "specs/renamed.py")
    library = Path(__file__).resolve().parent.parent / "layoutgen" / "include" / "lg" / "field.cuh"
    line = next(n for n, text in enumerate(library.read_text().splitlines(), 1)
                if "static_assert(BYTES <= VectorBytes" in text)  # the device library's, not the views header's
    first = [ln for ln in out.splitlines() if "error[LG501]" in ln]
    assert status == 1 and len(first) == 1, out  # three kernels, one template line: one cause, one diagnostic
    assert first[0].startswith("specs/scale.cu.j2:4: error[LG501]: static assertion failed with \"vec<N>: "), out
    assert first[0].endswith(f" (in lg/field.cuh:{line}, instantiated here)"), out
    assert f"  lg/field.cuh({line}): note #3453-D: the final comparison was 32 <= 4\n" in out, out
    assert "at line 4 of specs/scale.cu.j2\n" in out and " renamed.cuh(" not in out and "/include/" not in out, out
    assert out.endswith("Found 1 error in 1 spec.\n"), out


@nvrtc
def test_an_arch_nvrtc_cannot_compile_for_is_one_diagnostic_naming_it_and_the_supported_ones(project: Path) -> None:
    from layoutgen.runtime.nvrtc import supported_archs

    renamed_as_it_should_be(project)  # three kernels
    assert layoutgen(project, "generate", "-q", "specs/renamed.py")[0] == 0
    archs = ", ".join(f"sm_{n}" for n in supported_archs() or ())
    major, minor = nvrtc_version()
    assert layoutgen(project, "check", "--compile", "--arch", "sm_20", "specs/renamed.py") == (1, (
        f"error[LG501]: `arch` must be an architecture NVRTC {major}.{minor} compiles for ({archs}), got `sm_20`\n"
        "  hint: pass another --arch, or set `arch` in [tool.layoutgen]; other versions of nvidia-cuda-nvrtc "
        "compile for other GPUs\n"
        "Found 1 error in 1 spec.\n"
    ))


def test_an_arch_is_left_to_nvrtc_where_cupy_cannot_list_the_supported_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    from layoutgen.runtime import nvrtc as module

    monkeypatch.setattr(module, "supported_archs", lambda: None)
    assert module.check_arch("sm_20") is None  # nothing to compare with: NVRTC itself refuses it, once per kernel


def test_a_syntax_error_without_its_source_text_is_still_at_its_line(tmp_path: Path) -> None:
    from layoutgen.project.specload import load_spec

    spec = tmp_path / "spec.py"
    spec.write_text("x = 1\ny = (\n")
    (diag,) = load_spec(spec).diagnostics
    assert diag.site == Site(str(spec), 2)
    assert diag.message == "importing the spec raised SyntaxError: '(' was never closed\n    y = (\n        ^"


def test_a_jinja_error_outside_any_expression_gets_no_brace_hint(project: Path) -> None:
    template = project / "specs" / "brace.cu.j2"
    template.write_text("    for (int f = 0; f < {{ C }}; ++f) {% if %}\n        dst.at(element / C, f) = 0.0f;\n")
    status, out = layoutgen(project, "check", "specs/brace.py")
    assert (status, out) == (1, (
        "specs/brace.cu.j2:1: error[LG402]: template of kernel `halve` failed to render: Expected an expression, "
        "got 'end of statement block'\n"
        "  hint: templates see the kernel's static symbols, `kernel` and `params`; names are case-sensitive\n"
        "Found 1 error in 1 spec.\n"
    ))


# -- the class: every unknown name of any run of lookups is reported once, in order --------------------------

NAMES = ["snap", "context", "trade", "lots", "nope", "gone", "old"]


@given(st.lists(st.lists(st.sampled_from(NAMES), min_size=1, max_size=4), min_size=1, max_size=6))
@settings(max_examples=200, deadline=None)
def test_every_unknown_first_name_is_collected_once_and_a_plain_lookup_raises_at_the_first(
    paths: list[list[str]]
) -> None:
    from layoutgen import Field, Group, Layout, dims, f32
    from layoutgen.schema.unknown import collecting_unknown_fields

    (b,) = dims("B")
    window = Layout("Window", [b], f32, [Field("snap", 4), Group("context", [Field("trade", 2), Field("lots", 2)])])

    def walk(path: list[str]) -> object:  # attribute by attribute, as a spec writes `Window.context.trade`
        view: object = window
        for name in path:
            view = getattr(view, name)
        return view

    def first_unknown(path: list[str]) -> tuple[str, str] | None:
        """(the view's name, the unknown name) of the first step the layout lacks."""
        view = window.view
        for name in path:
            known = {c.name for c in view.region.children}
            if name not in known:
                return view.name, name
            view = getattr(view, name)
        return None

    expected = [u for u in map(first_unknown, paths) if u is not None]
    with collecting_unknown_fields() as collected:
        for path in paths:
            walk(path)
    assert [d.diagnostic.message.split(" (its fields")[0] for d in collected] == [
        f"`{view}` has no field `{name}`" for view, name in expected
    ]
    if expected:
        with pytest.raises(UnknownFieldError) as info:
            for path in paths:
                walk(path)
        assert info.value.diagnostic.message.startswith(f"`{expected[0][0]}` has no field `{expected[0][1]}` ")
    else:
        for path in paths:
            walk(path)
