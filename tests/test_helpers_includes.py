"""Helpers (issue 15 item 5): a template's preamble, project headers, Jinja includes and imports.

- ``{% block preamble %}`` puts device functions at file scope, before the kernel, with its own ``#line``;
- ``include = [...]`` of ``[tool.layoutgen]``: NVRTC searches those folders (``check --compile`` and the
  launchers, which find them relative to the generated module), and every file under them is part of
  the cubin cache's key;
- ``templates = [...]``: ``{% include %}``, ``{% import %}`` and ``{% from %}`` look in the including
  template's folder, then in those; an included file's lines carry their own ``#line``;
- and the errors: LG514 (a folder that is not there), LG515 (a block other than ``preamble``), LG516 (a
  header named like the views header), LG402 (a missing include), LG501 (a missing header).

The offline compiles need NVRTC (no GPU); they skip where it cannot be loaded.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen import InOut, Kernel, Layout, Site, Spec, dims, f32
from layoutgen.checks.lint import lint_rendered
from layoutgen.cli import main
from layoutgen.codegen.render import Rendered, render_spec
from layoutgen.project.config import Config, ConfigError, load_config
from layoutgen.project.process import process_specs
from layoutgen.runtime import cache as cache_module
from layoutgen.runtime.cache import CubinCache
from layoutgen.runtime.nvrtc import CompileRequest, CompileResult, HeaderFolderError, compile_cubin
from layoutgen.runtime.project_headers import project_header_digest
from tests.helpers.cli import nvrtc_missing

B, K, F = dims("B K F")
ROWS = Layout("Rows", [B], f32, width=4)


needs_nvrtc = pytest.mark.skipif(nvrtc_missing() is not None, reason=str(nvrtc_missing()))


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")


def render(root: Path, template: str, templates: tuple[str, ...] = ()) -> Rendered:
    k = Kernel("k", template, [InOut("x", [B, F])], template_root=root)
    return render_spec(Spec("s", kernels=[k.bind(x=ROWS)]), root, "spec.py",
                       templates=tuple(root / t for t in templates))


def kernel_text(root: Path, template: str, templates: tuple[str, ...] = ()) -> str:
    rendered = render(root, template, templates)
    assert rendered.diagnostics == (), [str(d) for d in rendered.diagnostics]
    return rendered.files["s/k.cu"]


def problems(root: Path, template: str, templates: tuple[str, ...] = ()) -> list[tuple[str, Site | None, str]]:
    rendered = render(root, template, templates)
    assert rendered.files == {}
    return [(d.code, d.site, d.message) for d in rendered.diagnostics]


def between(text: str, first: str, last: str) -> list[str]:
    """The lines of ``text`` after the line ``first`` and before the first line starting with ``last``."""
    lines = text.split("\n")
    start = lines.index(first) + 1
    return lines[start:next(i for i in range(start, len(lines)) if lines[i].startswith(last))]


def run(args: list[str], cwd: Path) -> str:
    """``layoutgen ARGS`` in-process in ``cwd``: what it printed, then the exit status."""
    buffer = io.StringIO()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            status = main(args)
    finally:
        os.chdir(before)
    return f"{buffer.getvalue()}exit {status}\n"


# -- the preamble ---------------------------------------------------------------------------------


PREAMBLE_TEMPLATE = """\
{% import "macros.j2" as m %}
{% block preamble %}
// helpers of kernel {{ kernel.name }}
__device__ inline float scaled(float v) { return {{ m.factor() }} * v * {{ F }}; }
{% endblock %}
    // body
    x.at(row, 0) = scaled(x.at(row, 0));
"""


def test_a_preamble_goes_before_the_kernel_with_its_own_line_numbers(tmp_path: Path) -> None:
    write(tmp_path, {"k.cu.j2": PREAMBLE_TEMPLATE, "macros.j2": "{% macro factor() %}2.0f{% endmacro %}\n"})
    text = kernel_text(tmp_path, "k.cu.j2")
    # At file scope, after the views header, with the template's line numbers; then the file's own again.
    assert between(text, '#include "s.cuh"', "// The launch") == [
        "",
        '#line 3 "k.cu.j2"',
        "// helpers of kernel k",
        "__device__ inline float scaled(float v) { return 2.0f * v * 4; }",
        f'#line {text.split(chr(10)).index("// helpers of kernel k") + 4} "generated/s/k.cu"',
        "",
    ]
    body = between(text, "    if (row >= x.rows()) return;", "}")
    assert body == ['#line 6 "k.cu.j2"', "    // body", "    x.at(row, 0) = scaled(x.at(row, 0));",
                    '#line 7 "k.cu.j2"']
    assert text.count("__device__ inline float scaled") == 1  # not in the body too


def test_the_lint_reads_the_body_after_a_preamble_at_the_templates_lines(tmp_path: Path) -> None:
    # Only the rendered text shows the stride: `{{ }}` places it, so the template's own text does not.
    write(tmp_path, {"k.cu.j2": "{% block preamble %}\n__device__ inline int two() { return 2; }\n{% endblock %}\n"
                                "    x.row(0)[row * {{ params.x.view.row_stride }}] = 0.0f;\n"})
    k = Kernel("k", "k.cu.j2", [InOut("x", [B, F])], template_root=tmp_path)
    binding = k.bind(x=ROWS)
    rendered = render_spec(Spec("s", kernels=[binding]), tmp_path, "spec.py")
    found = lint_rendered(binding, tmp_path / "k.cu.j2", "k.cu.j2", rendered.files["s/k.cu"])
    assert [(d.code, d.site) for d in found] == [("LG401", Site(str(tmp_path / "k.cu.j2"), 4))]


def test_an_undefined_name_in_the_preamble_is_lg402_at_its_line(tmp_path: Path) -> None:
    write(tmp_path, {"k.cu.j2": "{% block preamble %}\n// ok\n__device__ int f() { return {{ nope }}; }\n"
                                "{% endblock %}\n    x.at(row, 0) = 0.0f;\n"})
    assert problems(tmp_path, "k.cu.j2") == [
        ("LG402", Site(str(tmp_path / "k.cu.j2"), 3), "template of kernel `k` failed to render: 'nope' is undefined"),
    ]


def test_a_block_other_than_the_preamble_is_lg515_at_its_line(tmp_path: Path) -> None:
    write(tmp_path, {"k.cu.j2": "    // body\n{% block preambel %}\n__device__ int f() { return 1; }\n"
                                "{% endblock %}\n{% block main %}{% endblock %}\n"})
    rendered = render(tmp_path, "k.cu.j2")
    assert rendered.files == {}
    assert [(d.code, d.site, d.message, d.hint) for d in rendered.diagnostics] == [
        ("LG515", Site(str(tmp_path / "k.cu.j2"), 2),
         "template of kernel `k` must define no block but `preamble`, got `{% block preambel %}`",
         "did you mean `{% block preamble %}`? It holds what goes before the kernel, at file scope (device "
         "functions, `#include`s); every line outside it is the body, where a block of another name would land "
         "unseen"),
        ("LG515", Site(str(tmp_path / "k.cu.j2"), 5),
         "template of kernel `k` must define no block but `preamble`, got `{% block main %}`",
         "`{% block preamble %}` holds what goes before the kernel, at file scope (device functions, `#include`s); "
         "every line outside it is the body, where a block of another name would land unseen"),
    ]


# -- Jinja includes and imports -----------------------------------------------------------------


def test_includes_and_imports_look_in_the_templates_folder_then_the_template_folders(tmp_path: Path) -> None:
    write(tmp_path, {
        "kernels/k.cu.j2": '{% import "math.j2" as math %}\n{% from "math.j2" import twice %}\n'
                           '{% include "part.j2" %}\n'
                           '    x.at(row, 1) = {{ twice("x.at(row, 1)") }} + {{ math.one() }};\n',
        "kernels/part.j2": "    x.at(row, 0) = 0.0f;  // the template's own part\n",
        "cuda/templates/part.j2": "    // the template folder's part, shadowed by the template's own\n",
        "cuda/templates/math.j2": '{% macro twice(v) %}2.0f * {{ v }}{% endmacro %}\n'
                                  '{% macro one() %}1.0f{% endmacro %}\n',
    })
    body = between(kernel_text(tmp_path, "kernels/k.cu.j2", ("cuda/templates",)),
                   "    if (row >= x.rows()) return;", "}")
    assert body == [
        '#line 1 "kernels/part.j2"',
        "    x.at(row, 0) = 0.0f;  // the template's own part",
        '#line 4 "kernels/k.cu.j2"',
        "    x.at(row, 1) = 2.0f * x.at(row, 1) + 1.0f;",
        '#line 4 "kernels/k.cu.j2"',
    ]


def test_line_directives_follow_an_included_template_and_come_back(tmp_path: Path) -> None:
    write(tmp_path, {
        "k.cu.j2": "    // one\n{% include \"lib/two.j2\" %}\n    // three\n{% for i in range(2) %}\n"
                   "{% include \"lib/two.j2\" %}\n{% endfor %}\n    // seven\n",
        "lib/two.j2": "    // two-a\n    // two-b\n",
    })
    body = between(kernel_text(tmp_path, "k.cu.j2"), "    if (row >= x.rows()) return;", "}")
    assert body == [
        '#line 1 "k.cu.j2"', "    // one",
        '#line 1 "lib/two.j2"', "    // two-a", "    // two-b",
        '#line 3 "k.cu.j2"', "    // three",
        '#line 1 "lib/two.j2"', "    // two-a", "    // two-b",
        '#line 1 "lib/two.j2"', "    // two-a", "    // two-b",
        '#line 7 "k.cu.j2"', "    // seven",
        '#line 7 "k.cu.j2"',
    ]


# A template file as items: a plain line, an include of a later file, or a loop around items.
Item = tuple[Any, ...]
ITEMS = st.recursive(
    st.one_of(st.just(("line",)), st.integers(1, 3).map(lambda j: ("include", j))),
    lambda inner: st.tuples(st.just("loop"), st.integers(1, 2), st.lists(inner, max_size=3)),
    max_leaves=8,
)


def _source(number: int, items: list[Item], files: int) -> str:
    lines: list[str] = []

    def emit(part: list[Item]) -> None:
        for item in part:
            if item[0] == "line":
                lines.append(f"    // file {number}, item {len(lines)}")
            elif item[0] == "include" and number + item[1] < files:  # later files only: no cycle
                lines.append(f'{{% include "f{number + item[1]}.j2" %}}')
            elif item[0] == "loop":
                lines.append(f"{{% for _ in range({item[1]}) %}}")
                emit(item[2])
                lines.append("{% endfor %}")

    emit(items)
    return "\n".join(lines) + "\n" if lines else ""


def _mapped_lines(kernel: str, root: Path, first: str, last: str) -> list[tuple[str, int, str]]:
    """(file, line, text) of each line between ``first`` and ``last``, as the `#line` directives place it."""
    out = []
    where: tuple[str, int] | None = None
    for text in between(kernel, first, last):
        if text.startswith("#line "):
            number, name = text[len("#line "):].split(" ", 1)
            where = (name.strip('"'), int(number))
            continue
        if where is None and not text:
            continue  # an empty body leaves its line blank
        assert where is not None, f"a line before any #line: {text!r}"
        out.append((where[0], where[1], text))
        where = (where[0], where[1] + 1)
    return out


@settings(deadline=None, max_examples=60)
@given(st.lists(st.lists(ITEMS, max_size=4), min_size=1, max_size=4), st.lists(ITEMS, max_size=3))
def test_every_line_of_the_kernel_maps_to_the_template_line_it_came_from(files: list[list[Item]],
                                                                        preamble: list[Item]) -> None:
    """Through includes (of includes), loops and the preamble: each `#line` names the file and line whose
    text the next lines are, so NVRTC's errors always point at the line that wrote the code."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder).resolve()
        top = _source(0, files[0], len(files))
        head = _source(0, preamble, len(files)).replace("item ", "preamble item ")
        write(root, {"k.cu.j2": f"{{% block preamble %}}\n{head}{{% endblock %}}\n{top}"})
        write(root, {f"tpl/f{n}.j2": _source(n, items, len(files)) for n, items in enumerate(files) if n})
        kernel = kernel_text(root, "k.cu.j2", ("tpl",))
        mapped = (_mapped_lines(kernel, root, "    if (row >= x.rows()) return;", "}")
                  + (_mapped_lines(kernel, root, '#include "s.cuh"', "// The launch") if head.strip() else []))
        sources: dict[str, list[str]] = {}
        for name, line, text in mapped:
            if name.startswith("generated/"):
                assert text == "", (name, line, text)  # the blank line after the preamble's restore
                continue
            lines = sources.setdefault(name, (root / name).read_text().split("\n"))
            assert lines[line - 1] == text, (name, line, text, kernel)
        expected = kernel.count("    // file ")
        assert len([m for m in mapped if "// file " in m[2]]) == expected


def test_a_missing_include_is_lg402_at_the_including_line(tmp_path: Path) -> None:
    write(tmp_path, {"kernels/k.cu.j2": "    // one\n{% include \"gone.j2\" %}\n", "cuda/templates/other.j2": ""})
    site = Site(str(tmp_path / "kernels" / "k.cu.j2"), 2)
    assert problems(tmp_path, "kernels/k.cu.j2", ("cuda/templates",)) == [(
        "LG402", site, "template of kernel `k` failed to render: `gone.j2` is not in the template's folder "
        "(`kernels/`) or a folder of `templates` (`cuda/templates/`)",
    )]
    assert problems(tmp_path, "kernels/k.cu.j2") == [(
        "LG402", site, "template of kernel `k` failed to render: `gone.j2` is not in the template's folder "
        "(`kernels/`), and `templates` in [tool.layoutgen] names no other folder",
    )]
    rendered = render(tmp_path, "kernels/k.cu.j2")
    assert rendered.diagnostics[0].hint == (
        "`{% include %}`, `{% import %}` and `{% from %}` look in the including template's folder, then in each "
        "folder of `templates` in [tool.layoutgen]")


def test_an_undefined_name_in_a_template_folders_macro_is_lg402_there(tmp_path: Path) -> None:
    write(tmp_path, {"k.cu.j2": '{% import "m.j2" as m %}\n    x.at(row, 0) = {{ m.f() }};\n',
                     "cuda/templates/m.j2": "{% macro f() %}\n{{ undefined_thing }}\n{% endmacro %}\n"})
    assert problems(tmp_path, "k.cu.j2", ("cuda/templates",)) == [(
        "LG402", Site(str(tmp_path / "cuda" / "templates" / "m.j2"), 2),
        "template of kernel `k` failed to render: 'undefined_thing' is undefined",
    )]


# -- configuration --------------------------------------------------------------------------------


@pytest.mark.parametrize(("table", "message"), [
    ('include = "cuda/include"\n', '`[tool.layoutgen].include` must be a list of folders relative to the project '
     'root, like ["cuda/include"], got "cuda/include" (pyproject.toml)'),
    ('templates = ["/opt/templates"]\n', '`[tool.layoutgen].templates` must be a list of folders relative to the '
     'project root, like ["cuda/templates"], got "/opt/templates", which is not relative: generated modules would '
     'name a path of this machine (pyproject.toml)'),
    ('templates = ["../shared/templates"]\n', '`[tool.layoutgen].templates` must be a list of folders relative to '
     'the project root, like ["cuda/templates"], got "../shared/templates", which is outside the project: '
     '`#line` directives to its templates would name a path of this machine (pyproject.toml)'),
    ('include = ["cuda\\\\include"]\n', '`[tool.layoutgen].include` must be a list of folders relative to the '
     'project root, like ["cuda/include"], with "/" between their parts and no control characters, got '
     '"cuda\\\\include" (pyproject.toml)'),
])
def test_bad_folder_settings_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str,
                                        message: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.layoutgen]\n" + table)
    with pytest.raises(ConfigError) as caught:
        load_config(tmp_path)
    assert str(caught.value) == message


def test_folders_are_read_and_named_relative_to_the_generated_module(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.layoutgen]\ninclude = ["cuda/include/", "../shared"]\n'
                                             'templates = ["cuda/templates"]\n')
    config = load_config(tmp_path)
    assert (config.include, config.templates) == (("cuda/include", "../shared"), ("cuda/templates",))
    assert config.include_from("generated/vsn") == ("../../cuda/include", "../../../shared")


def spec_project(root: Path, table: str, template: str, header: str | None = None) -> Path:
    files = {
        "pyproject.toml": "[tool.layoutgen]\n" + table,
        "spec.py": (
            "from layoutgen import Field, In, Kernel, Layout, Out, Spec, dims, f32\n\n"
            'B, K, F = dims("B K F")\n'
            'Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", 16)])\n'
            'Features = Layout("Features", [B, K], f32, width=40)\n\n'
            'scale = Kernel("scale", "scale.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])])\n\n'
            'spec = Spec("example", kernels=[scale.bind(x=Window.snap, y=Features)])\n'
        ),
        "scale.cu.j2": template,
    }
    if header is not None:
        files["cuda/include/helpers.cuh"] = header
    write(root, files)
    return root


HELPER_TEMPLATE = """\
{% block preamble %}
#include "helpers.cuh"
{% endblock %}
    for (int f = 0; f < F; ++f)
        y.at(row, f) = twice(x.at(row, f));
"""
HELPER = "#pragma once\n__device__ inline float twice(float v) { return 2.0f * v; }\n"


def test_a_folder_that_is_not_there_is_lg514_once_at_its_setting(tmp_path: Path) -> None:
    root = spec_project(tmp_path, 'specs = ["spec.py"]\ninclude = ["cuda/include"]\ntemplates = ["cuda/tpl"]\n',
                        HELPER_TEMPLATE)
    (root / "cuda").mkdir(exist_ok=True)
    (root / "cuda" / "tpl").write_text("a file")
    config = load_config(root)
    results = process_specs(config, [root / "spec.py", root / "spec.py"])
    assert [(d.code, d.site, d.message, d.hint) for r in results for d in r.diagnostics] == [
        ("LG514", Site(str(root / "pyproject.toml"), 3),
         "`[tool.layoutgen].include` must name folders, got `cuda/include`, which does not exist",
         "create the folder, or remove it from `include`; its paths are relative to the project root"),
        ("LG514", Site(str(root / "pyproject.toml"), 4),
         "`[tool.layoutgen].templates` must name folders, got `cuda/tpl`, which is a file",
         "create the folder, or remove it from `templates`; its paths are relative to the project root"),
    ]
    assert all(r.files == {} and r.plan is None for r in results)  # nothing to write, or to compile


def test_a_header_named_like_the_views_header_is_lg516(tmp_path: Path) -> None:
    root = spec_project(tmp_path, 'include = ["cuda/include"]\n', HELPER_TEMPLATE, HELPER)
    (root / "cuda" / "include" / "example.cuh").write_text("// mine\n")
    (result,) = process_specs(load_config(root), [root / "spec.py"])
    assert [(d.code, d.site, d.message, d.hint) for d in result.diagnostics] == [(
        "LG516", Site(str(root / "cuda" / "include" / "example.cuh"), 1),
        "project header `cuda/include/example.cuh` must not be named like the views header of spec `example`, got "
        '`example.cuh`: NVRTC gives each `#include "example.cuh"` the views header',
        'rename the header, or move it into a sub-folder and include it as `"<sub-folder>/example.cuh"`',
    )]


# -- the compile cache's key ----------------------------------------------------------------------

SOURCE = '#include "helpers.cuh"\nextern "C" __global__ void k(float* p) { p[0] = twice(p[0]); }\n'


TREES = st.dictionaries(st.sampled_from(["a.cuh", "b.cuh", "sub/a.cuh", "sub/c.cuh", "sub/deeper/a.cuh"]),
                        st.binary(max_size=3), max_size=4)


@settings(deadline=None, max_examples=100)
@given(TREES, TREES)
def test_the_header_digest_is_the_same_exactly_for_the_same_tree(one: dict[str, bytes],
                                                                  two: dict[str, bytes]) -> None:
    """Same paths and bytes: same digest; any file's name, place or bytes differing: another digest."""
    with tempfile.TemporaryDirectory() as folder:
        digests = []
        for n, tree in enumerate((one, two)):
            (Path(folder) / str(n)).mkdir()
            for rel, data in tree.items():
                (Path(folder) / str(n) / rel).parent.mkdir(parents=True, exist_ok=True)
                (Path(folder) / str(n) / rel).write_bytes(data)
            digests.append(project_header_digest([str(Path(folder) / str(n))]))
        assert (digests[0] == digests[1]) == (one == two)


@needs_nvrtc
def test_include_folders_come_first_on_the_nvrtc_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    request = CompileRequest(SOURCE, "k.cu", include_dirs=("generated/vsn/../../cuda/include", str(tmp_path / "b")))
    assert request.include_dirs == (str(tmp_path / "cuda" / "include"), str(tmp_path / "b"))
    options = request.nvrtc_options()
    assert options[:4] == ("-arch=sm_90", "--std=c++17", f"-I{tmp_path / 'cuda' / 'include'}", f"-I{tmp_path / 'b'}")
    assert CompileRequest(SOURCE, "k.cu").nvrtc_options()[2:] == options[4:]  # then the CUDA headers, as before


@needs_nvrtc
def test_the_key_covers_every_file_under_the_include_folders(tmp_path: Path) -> None:
    write(tmp_path, {"inc/helpers.cuh": HELPER, "inc/sub/more.cuh": "// more\n", "other/x.cuh": "// x\n"})
    request = CompileRequest(SOURCE, "k.cu", include_dirs=(str(tmp_path / "inc"),))
    keys = [request.key()]
    assert request.key() == keys[0]  # read again, the same
    (tmp_path / "inc" / "sub" / "more.cuh").write_text("// more, edited\n")
    keys.append(request.key())
    (tmp_path / "inc" / "sub" / "new.cuh").write_text("")
    keys.append(request.key())
    (tmp_path / "inc" / "sub" / "new.cuh").rename(tmp_path / "inc" / "sub" / "renamed.cuh")
    keys.append(request.key())
    (tmp_path / "inc" / "sub" / "renamed.cuh").unlink()
    keys.append(request.key())
    keys.append(dataclasses.replace(request, include_dirs=(str(tmp_path / "inc"), str(tmp_path / "other"))).key())
    keys.append(dataclasses.replace(request, include_dirs=(str(tmp_path / "other"), str(tmp_path / "inc"))).key())
    keys.append(CompileRequest(SOURCE, "k.cu").key())
    assert len(set(keys)) == len(keys) - 1, keys  # each change another key; deleting the new file went back
    assert keys[4] == keys[1]


@needs_nvrtc
def test_a_request_whose_header_folder_is_not_there_is_lg514(tmp_path: Path) -> None:
    request = CompileRequest(SOURCE, "k.cu", include_dirs=(str(tmp_path / "gone"),))
    with pytest.raises(HeaderFolderError) as caught:
        CubinCache(tmp_path / "cache").get_or_compile(request)
    assert caught.value.code == "LG514"
    assert caught.value.diagnostic.message == (
        f"the project header folder `{tmp_path / 'gone'}` must be a folder, got nothing there")
    assert caught.value.diagnostic.hint == (
        "generated modules look for the folders of `include` in [tool.layoutgen] relative to their own folder, "
        "where they were when `layoutgen generate` ran: keep the headers there")


@needs_nvrtc
def test_a_header_edited_during_the_compile_is_not_stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, {"inc/helpers.cuh": HELPER})
    request = CompileRequest(SOURCE, "k.cu", include_dirs=(str(tmp_path / "inc"),))
    compiled = compile_cubin(request)

    def compile_while_edited(req: CompileRequest) -> CompileResult:
        (tmp_path / "inc" / "helpers.cuh").write_text(HELPER + "// edited while NVRTC ran\n")
        return compiled

    monkeypatch.setattr(cache_module, "compile_cubin", compile_while_edited)
    cache = CubinCache(tmp_path / "cache")
    key = request.key()
    assert cache.get_or_compile(request).cubin == compiled.cubin  # used ...
    assert not any(path.exists() for path in cache.paths(key))  # ... but not stored under the old key
    assert cache.lookup(request) is None


# -- offline compiles through the command line --------------------------------------------------


@needs_nvrtc
def test_a_kernel_calls_a_function_from_a_project_header(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = spec_project(tmp_path / "project", 'include = ["cuda/include"]\n', HELPER_TEMPLATE, HELPER)
    assert run(["generate", "-q", "spec.py"], root) == "3 files changed in 1 spec.\nexit 0\n"
    assert run(["check", "--compile", "spec.py"], root) == "All checks passed: 1 spec, no errors.\nexit 0\n"
    module = (root / "generated" / "example" / "__init__.py").read_text()
    assert "_lg_INCLUDE = ('../../cuda/include',)\n" in module
    # The launcher finds the folder relative to its module, wherever the project lies: the same request.
    moved = root.rename(tmp_path / "moved")
    launcher = _launcher(moved / "generated" / "example" / "__init__.py", "scale")
    request = launcher.compile_request("sm_90")
    assert request.include_dirs == (str(moved / "cuda" / "include"),)
    assert compile_cubin(request).cubin

    # A changed header is compiled again (another key), and its error is at its own line.
    (moved / "cuda" / "include" / "helpers.cuh").write_text(HELPER.replace("2.0f * v", "2.0f * w"))
    assert run(["check", "--compile", "spec.py"], moved) == (
        'cuda/include/helpers.cuh:2: error[LG501]: identifier "w" is undefined\n'
        "    __device__ inline float twice(float v) { return 2.0f * w; }\n"
        "                                                           ^\n"
        "Found 1 error in 1 spec.\nexit 1\n"
    )


def _launcher(path: Path, name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"_lg_test_{path.parent.name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[spec.name]
    return next(v for v in vars(module).values() if getattr(getattr(v, "spec", None), "name", None) == name
                and hasattr(v, "compile_request"))


@needs_nvrtc
def test_a_header_nvrtc_cannot_find_is_lg501_at_the_templates_include(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(tmp_path / "cache"))
    root = spec_project(tmp_path / "project", 'include = ["cuda/include"]\n',
                        HELPER_TEMPLATE.replace("helpers.cuh", "helper.cuh"), HELPER)
    run(["generate", "-q", "spec.py"], root)
    assert run(["check", "--compile", "spec.py"], root) == (
        'scale.cu.j2:2: error[LG501]: cannot open source file "helper.cuh"\n'
        '    #include "helper.cuh"\n'
        "                         ^\n"
        "  hint: project headers are searched in `cuda/include/` (`include` in [tool.layoutgen]); CUDA headers in "
        "the nvidia-cuda-runtime wheel and the CUDA toolkit, or `LAYOUTGEN_CUDA_INCLUDE`\n"
        "Found 1 error in 1 spec.\nexit 1\n"
    )
    # Without `include`, the hint says where project headers go.
    bare = spec_project(tmp_path / "bare", "", HELPER_TEMPLATE)
    run(["generate", "-q", "spec.py"], bare)
    assert run(["check", "--compile", "spec.py"], bare).split("\n")[3] == (
        "  hint: project headers are searched in the folders of `include` in [tool.layoutgen], which names none: "
        'add the folder of yours (`include = ["cuda/include"]`); CUDA headers in the nvidia-cuda-runtime wheel and '
        "the CUDA toolkit, or `LAYOUTGEN_CUDA_INCLUDE`")


@needs_nvrtc
def test_an_nvrtc_error_in_the_preamble_is_at_the_templates_line(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(tmp_path / "cache"))
    template = ("{% block preamble %}\n__device__ inline float twice(float v) {\n    return 2.0f * nope;\n}\n"
                "{% endblock %}\n    for (int f = 0; f < F; ++f)\n        y.at(row, f) = twice(x.at(row, f));\n")
    root = spec_project(tmp_path / "project", "", template)
    run(["generate", "-q", "spec.py"], root)
    assert run(["check", "--compile", "spec.py"], root) == (
        'scale.cu.j2:3: error[LG501]: identifier "nope" is undefined\n'
        "        return 2.0f * nope;\n"
        "                      ^\n"
        "Found 1 error in 1 spec.\nexit 1\n"
    )


def test_a_config_made_in_python_takes_the_folders(tmp_path: Path) -> None:
    config = Config(tmp_path, include=("cuda/include",), templates=("t",))
    assert (config.include_paths, config.template_paths) == ((tmp_path / "cuda" / "include",), (tmp_path / "t",))
    with pytest.raises(ConfigError) as caught:
        Config(tmp_path, include=("",))
    assert str(caught.value) == ('`Config.include` must be a list of folders relative to the project root, like '
                                 '["cuda/include"], got [""]')
