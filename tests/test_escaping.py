"""Spec text in generated files: docs, paths and sites are escaped for the language they land in.

A kernel's or program's ``doc`` becomes a Python docstring; the spec module's
path the stamp of every file; each template's path a ``#line`` directive and
a C++ comment; each declaration's file a comment and a docstring. Whatever
they say, the generated module compiles, importing it runs nothing but the
generated code, the docstrings read back as declared, and the ``.cu`` and
``.cuh`` files have the same lines (directives included) as for plain text.
"""

from __future__ import annotations

import ast
import builtins
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from layoutgen.codegen.env import skeletons
from layoutgen.codegen.escape import (
    c_ident, c_include, c_string, cpp_code, cpp_comment, py_comment, py_docstring, py_literal,
)
from layoutgen.codegen.render import Rendered, render_spec
from layoutgen.codegen.stamp import verify
from layoutgen.declare.spec import Spec

from tests.helpers.rendering import load

REPO = Path(__file__).resolve().parent.parent

# -- each escaper, exactly ----------------------------------------------------------------------------------


def test_a_docstring_keeps_its_text_and_cannot_close_early() -> None:
    assert py_docstring('say """hi""" \\N{x} \\x4 \\u12') == 'say "\\"\\"hi"\\"\\" \\\\N{x} \\\\x4 \\\\u12'
    assert py_docstring("tab\there\r\nNUL\x00 end\"") == 'tab\\there\\r\nNUL\\x00 end\\"'
    assert py_docstring("caf\u00e9 \u2028 \udcff") == "caf\u00e9 \\u2028 \\udcff"
    for text in ['"""', 'a"', '\\', '\\"""', '""""\n"']:
        assert eval('"""' + py_docstring(text) + '"""') == text  # noqa: S307 - the literal as Python reads it


def test_comments_stay_on_one_line_and_never_continue_onto_the_next() -> None:
    assert cpp_comment("a\nb\rc\u2028d") == "a\\nb\\rc\\u2028d"
    assert cpp_comment("dir\\") == "dir\\x5c"  # a final backslash would splice the next line into the comment
    assert cpp_comment("a\\b") == "a\\\\b"
    assert py_comment("x/coding=latin-1/coding: utf-16") == "x/coding\\x3dlatin-1/coding\\x3a utf-16"


def test_c_strings_escape_quotes_backslashes_and_every_byte_that_is_not_printable() -> None:
    assert c_string('a"b\\c\nd') == '"a\\"b\\\\c\\nd"'
    assert c_string("\x01\t\udcff\u2028") == '"\\001\\011\\377\\342\\200\\250"'
    assert c_string("caf\u00e9.cu.j2") == '"caf\u00e9.cu.j2"'


def test_the_checking_escapers_refuse_what_cannot_be_placed() -> None:
    assert (c_ident("Window_snap"), c_include("vsn.cuh"), cpp_code("(long long)lg_dim_B * 4")) == (
        "Window_snap", "vsn.cuh", "(long long)lg_dim_B * 4")
    for bad, escaper in [("a b", c_ident), ('x"y.cuh', c_include), ("a\nb", cpp_code), ("a // b", cpp_code),
                         ("#define", cpp_code), ('"s"', cpp_code)]:
        with pytest.raises(ValueError):
            escaper(bad)
    assert py_literal(("B", 4, None)) == "('B', 4, None)"
    with pytest.raises(ValueError):
        py_literal(1.5)


def test_a_skeleton_cannot_place_a_string_without_an_escaper() -> None:
    env = skeletons()
    assert env.from_string("{{ 3 }} {{ x | py_literal }}").render(x="a") == "3 'a'"
    with pytest.raises(TypeError, match="without an escaper"):
        env.from_string("// {{ x }}").render(x="a\n#define float double")


# -- regressions: each of these made a broken or hostile file ----------------------------------------------


def spec_source(*, kernel_doc: str = "scale", program_doc: str = "run it", template: str = "k.cu.j2") -> str:
    """A spec module's source: one layout, one kernel whose template is ``template``, one program."""
    return (
        "from layoutgen import Buffer, Grid, InOut, Kernel, Launch, Layout, Program, Spec, f32\n"
        "Rows = Layout('Rows', ['N'], f32, width=4)\n"
        f"k = Kernel('k', {template!r}, [InOut('x', ['N', 4])], grid=Grid.rows('x'), doc={kernel_doc!r},\n"
        "           template_root=ROOT)\n"
        "rows = Buffer('rows', Rows, input=True, output=True)\n"
        f"p = Program('p', [Launch(k, x=rows)], doc={program_doc!r})\n"
        "spec = Spec('esc', kernels=[k.bind(x=Rows)], programs=[p])\n"
    )


def declare(source: str, filename: str, root: Path) -> Spec:
    """Run a spec module's ``source`` as if it were the file ``filename``: every site names that file."""
    scope: dict[str, Any] = {"ROOT": root}
    exec(compile(source, filename, "exec"), scope)  # noqa: S102 - the test's own spec text
    spec = scope["spec"]
    assert isinstance(spec, Spec)
    return spec


def render_text(tmp: Path, *, spec_path: str = "spec.py", site: str = "spec.py", debug: bool = False,
                **texts: str) -> Rendered:
    template = texts.get("template", "k.cu.j2")
    (tmp / template).write_text("    x.at(row, 0) *= 2.0f;\n", encoding="utf-8", errors="surrogateescape")
    spec = declare(spec_source(**texts), str(tmp / site), tmp)
    rendered = render_spec(spec, tmp, spec_path, debug=debug)
    assert rendered.diagnostics == (), [str(d) for d in rendered.diagnostics]
    return rendered


INJECTED = '"""\nimport builtins; builtins.LG_INJECTED = True\n"""'


def test_a_doc_with_triple_quotes_runs_nothing_when_the_module_is_imported(tmp_path: Path) -> None:
    files = render_text(tmp_path, kernel_doc=INJECTED, program_doc=INJECTED).files
    module = load(files["esc/__init__.py"], tmp_path, "esc_injected")
    assert not hasattr(builtins, "LG_INJECTED")
    assert module.k.__doc__.startswith(INJECTED + "\n\n")
    assert module.p.__doc__.startswith(INJECTED + "\n\n")


def test_backslash_escapes_nul_and_tabs_in_a_doc_read_back_as_written(tmp_path: Path) -> None:
    doc = "\\N{GREEK} \\x4 \\u12 \\ \x00 a\ttab\r\nand a last quote\""
    module = load(render_text(tmp_path, kernel_doc=doc).files["esc/__init__.py"], tmp_path, "esc_backslash")
    assert module.k.__doc__.startswith(doc + "\n\n")


def test_a_template_path_with_a_newline_adds_no_line_to_the_kernel(tmp_path: Path) -> None:
    template = "k\n#define float double\n.cu.j2"
    kernel = render_text(tmp_path, template=template).files["esc/k.cu"]
    assert "#define float double" not in kernel.splitlines()
    assert '#line 1 "k\\n#define float double\\n.cu.j2"' in kernel.splitlines()
    assert "// Kernel `k`, bound in spec.py; body from k\\n#define float double\\n.cu.j2." in kernel


def test_a_spec_path_or_a_site_with_a_newline_stays_in_its_comment(tmp_path: Path) -> None:
    hostile = "specs\n#define float double\nx = (\n"
    files = render_text(tmp_path, spec_path=hostile + "spec.py", site=hostile.replace("\n", "_") + "spec.py").files
    for path, text in files.items():
        assert "#define float double" not in text.splitlines(), path
        assert verify(text), path  # the stamp's hash covers the escaped path it shows
    assert files["esc/__init__.py"].startswith(
        "# Generated by layoutgen 0.1.0 from specs\\n#define float double\\nx = (\\nspec.py. Do not edit.\n")
    compile(files["esc/__init__.py"], "esc.py", "exec")
    declared = declare(spec_source(), str(tmp_path / "a\nb" / "spec.py"), tmp_path)
    header = render_spec(declared, tmp_path, "spec.py").files["esc/esc.cuh"]
    assert "// Declared in a\\nb/spec.py. Rows allow 16-byte accesses; VectorBytes is what a launcher checks." in header


def test_a_spec_path_that_reads_like_an_encoding_declaration_does_not_change_the_encoding(tmp_path: Path) -> None:
    files = render_text(tmp_path, spec_path="specs/coding=latin-1/spec.py", kernel_doc="caf\u00e9").files
    module = load(files["esc/__init__.py"], tmp_path, "esc_coding")
    assert module.k.__doc__.startswith("caf\u00e9\n\n")


# -- the property: any text, any path -------------------------------------------------------------------------

# Characters and pieces that end or escape something in one of the languages, and any other text.
HOSTILE = ['"""', "'''", '"', "\\", "\\N", "\\x", "\\u", "\x00", "\t", "\n", "\r", "\r\n", "\u2028", "\x0c",
           "*/", "/*", "//", "#define float double", "#include <x>", "??/", "coding=utf-16", "\udcff", "{{", "%}"]
TEXT = st.lists(st.sampled_from(HOSTILE) | st.text(st.characters(exclude_categories=()), max_size=6),
                max_size=8).map("".join)
# File names: no `/`, no NUL, no surrogate but those that stand for a byte, short enough for the file system.
FILE_NAME = TEXT.map(lambda t: re.sub("[/\x00\ud800-\udc7f\udd00-\udfff]", "_", t)).filter(
    lambda t: t not in ("", ".", "..") and len(t.encode("utf-8", "surrogateescape")) < 120)


def _blank_strings(module: ast.Module) -> str:
    """The module's syntax tree with every string constant emptied: what the text cannot change."""
    for node in ast.walk(module):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            node.value = ""
    return ast.dump(module)


def _c_unescape(literal: str) -> bytes:
    """The bytes a C string literal (the text between its quotes) stands for."""
    out = bytearray()
    for m in re.finditer(r'\\([0-7]{3}|n|\\|")|([^\\])', literal):
        if m[2] is not None:
            out += m[2].encode("utf-8", "surrogateescape")
        else:
            esc = m[1]
            out += {"n": b"\n", "\\": b"\\", '"': b'"'}.get(esc) or bytes([int(esc, 8)])
    return bytes(out)


SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])


@SETTINGS
@example(doc=INJECTED, program_doc="\\", spec_path="a\n#define float double\n", template="k\n#pragma x\n.j2",
         debug=True)
@given(doc=TEXT, program_doc=TEXT, spec_path=TEXT, template=FILE_NAME, debug=st.booleans())
def test_any_doc_or_path_lands_inert_in_every_generated_file(tmp_path_factory: pytest.TempPathFactory, doc: str,
                                                             program_doc: str, spec_path: str, template: str,
                                                             debug: bool) -> None:
    tmp = tmp_path_factory.mktemp("escape")
    plain = render_text(tmp, debug=debug)
    (tmp / "k.cu.j2").unlink()
    hostile = render_text(tmp, spec_path=spec_path, kernel_doc=doc, program_doc=program_doc, template=template,
                          debug=debug)
    assert sorted(hostile.files) == sorted(plain.files)
    # Python: it compiles, its statements are the plain module's, and importing it runs only them.
    source = hostile.files["esc/__init__.py"]
    tree = ast.parse(source)
    assert _blank_strings(tree) == _blank_strings(ast.parse(plain.files["esc/__init__.py"]))
    module = load(source, tmp, "esc_property")
    assert module.k.__doc__.startswith((doc or "Kernel `k`.") + "\n\n")
    assert module.p.__doc__.startswith((program_doc or "Program `p`.") + "\n\n")
    assert not hasattr(builtins, "LG_INJECTED")
    # C++: the same lines; where they differ, a comment or a `#line` whose string is the template's path.
    for path in ("esc/esc.cuh", "esc/k.cu"):
        ours, theirs = hostile.files[path].split("\n"), plain.files[path].split("\n")
        assert len(ours) == len(theirs), path
        for line, base in zip(ours, theirs):
            if line == base:
                continue
            directive = re.fullmatch(r'#line (\d+) "((?:[^"\\]|\\.)*)"', line)
            if directive:
                assert _c_unescape(directive[2]) in (template.encode("utf-8", "surrogateescape"), b"generated/esc/k.cu")
            else:
                assert line.startswith("//") and not line.endswith("\\"), (path, line)
        assert verify(hostile.files[path]), path
    compile_with_nvrtc(hostile)


def compile_with_nvrtc(rendered: Rendered) -> None:
    """The kernel compiles: NVRTC reads every `#line` string the escapers wrote (no GPU needed)."""
    from layoutgen.runtime.nvrtc import CompileRequest, compile_cubin

    header = ("esc.cuh", rendered.files["esc/esc.cuh"])
    compile_cubin(CompileRequest(source=rendered.files["esc/k.cu"], name="generated/esc/k.cu", headers=(header,)))
