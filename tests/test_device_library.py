"""layoutgen's device library (layoutgen/include/lg/*.cuh) as C++ of its own, and the one-definition rule.

Each header compiles alone, for the host (g++, the CPU run's path: lg/host/runtime.h and sanitizer.h first) and
with NVRTC for sm_90. Its namespace is layoutgen's version. Two views headers from different builds (debug and
release of one spec), from two specs that declare a layout of the same name, and from two layoutgen versions
compile into one translation unit, each keeping its own definitions. Generated headers hold none of the
library's code.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from layoutgen import Field, Layout, dims, f32
from layoutgen import version as layoutgen_version
from layoutgen.codegen.library import library_namespace, library_version_macro
from layoutgen.declare.kernels import Grid, InOut, Kernel
from layoutgen.declare.spec import Spec
from layoutgen.runtime.device_library import LIBRARY_INCLUDE, library_digest, library_headers, library_names
from layoutgen.runtime.nvrtc import CompileError, CompileRequest, compile_cubin
from tests.helpers.cli import layoutgen
from tests.helpers.host import COMPILER
from tests.helpers.rendering import render, write_template

REPO = Path(__file__).resolve().parent.parent
LIBRARY = LIBRARY_INCLUDE / "lg"
HEADERS = sorted(p.name for p in LIBRARY.glob("*.cuh"))
# The headers of the contract with what reports the debug build's faults (lg/site.cuh, lg/fault.cuh), and the
# debug build's cast macro: no namespace of a version (their comments say why).
UNVERSIONED = {"site.cuh", "fault.cuh", "checked_cast.cuh"}
HOST_FIRST = '#include "lg/host/runtime.h"\n#include "lg/host/sanitizer.h"\n'


def _nvrtc(source: str, include_dirs: tuple[str, ...] = ()) -> str:
    """NVRTC's errors compiling ``source`` for sm_90 ("" when it compiles)."""
    try:
        compile_cubin(CompileRequest(source=source, name="tu.cu", include_dirs=include_dirs))
    except CompileError as exc:
        return exc.log or str(exc)
    return ""


# -- the library as headers of its own ---------------------------------------------------------------------------


def test_every_header_is_in_the_namespace_of_layoutgens_version() -> None:
    expected = library_namespace()
    assert expected == "v" + layoutgen_version.__version__.replace(".", "_")
    versioned = [n for n in HEADERS if n not in UNVERSIONED]
    assert {"lg.cuh", "debug.cuh", "field.cuh", "tile.cuh", "copy.cuh", "grid.cuh", "checked.cuh"} <= set(HEADERS)
    for name in [*versioned, "detail/shared_tile.cuh"]:
        text = (LIBRARY / name).read_text(encoding="utf-8")
        namespaces = set(re.findall(r"inline namespace (v\w+) \{", text))
        guards = set(re.findall(r"#ifndef LG_(V\w+?)_[A-Z_]+_CUH", text))
        if name != "detail/shared_tile.cuh":  # included into the namespaces of tile.cuh and debug_tile.cuh
            assert guards == {expected.upper()}, (name, guards)
        if name not in ("lg.cuh", "debug.cuh", "version.cuh", "detail/shared_tile.cuh"):  # umbrellas: includes only
            assert namespaces == {expected}, (name, namespaces)
    assert f"#define {library_version_macro()} 1" in (LIBRARY / "version.cuh").read_text(encoding="utf-8")


@pytest.mark.skipif(COMPILER is None, reason="no host C++ compiler (g++) here")
@pytest.mark.parametrize("header", HEADERS)
def test_each_header_compiles_alone_for_the_host(tmp_path: Path, header: str) -> None:
    source = tmp_path / "alone.cpp"
    source.write_text(f'{HOST_FIRST}#include <lg/{header}>\n#include <lg/{header}>\n', encoding="utf-8")  # twice: guarded
    run = subprocess.run([str(COMPILER), "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror",
                          "-Wno-unknown-pragmas", "-I", str(LIBRARY_INCLUDE / "lg" / "host" / "cuda"), "-I",
                          str(LIBRARY_INCLUDE), str(source)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize("header", HEADERS)
def test_each_header_compiles_alone_with_nvrtc(header: str) -> None:
    assert _nvrtc(f"#include <lg/{header}>\n#include <lg/{header}>\nextern \"C\" __global__ void k() {{}}\n") == ""


def test_the_library_instantiated_with_nvrtc_keeps_the_release_tile_plain() -> None:
    """Both builds' tiles in one unit: the release tile is a pointer, the debug one carries its checks."""
    source = ("#include <lg/lg.cuh>\n#include <lg/debug.cuh>\n"
              "using Release = lg::release::SharedTile<float, 8, 4, 4, 16, 32>;\n"
              "using Debug = lg::debug::SharedTile<float, 8, 4, 4, 16, 32>;\n"
              'static_assert(sizeof(Release) == sizeof(float*), "the release tile is its pointer");\n'
              'static_assert(sizeof(Debug) > sizeof(Release), "the debug tile knows which tile it is");\n'
              'extern "C" __global__ void k(float* out) { extern __shared__ float s[]; Release r{s}; '
              "out[0] = r(0, 0); }\n")
    assert _nvrtc(source) == ""


def test_the_cache_key_holds_the_library_digest(tmp_path: Path) -> None:
    copy = tmp_path / "include"
    shutil.copytree(LIBRARY_INCLUDE, copy, ignore=shutil.ignore_patterns("host"))
    assert library_digest(copy) == library_digest()
    assert all("host" not in p.relative_to(copy).parts for p in library_headers(copy))
    (copy / "lg" / "field.cuh").write_text((copy / "lg" / "field.cuh").read_text() + "// edited\n")
    other = tmp_path / "other"
    shutil.copytree(copy, other)
    assert library_digest(other) != library_digest()
    request = CompileRequest("", "k.cu")
    assert f"-I{LIBRARY_INCLUDE}" in request.nvrtc_options()


def test_includes_prints_the_folder_of_lg_lg_cuh() -> None:
    run = layoutgen("includes", cwd=REPO)
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"-I{LIBRARY_INCLUDE}\n"
    assert (Path(run.stdout.strip().removeprefix("-I")) / "lg" / "lg.cuh").is_file()


@pytest.mark.parametrize("name", sorted(library_names().values()))
def test_an_error_in_the_library_is_placed_at_the_users_line_and_named_by_its_include_name(
        tmp_path: Path, name: str) -> None:
    """`check --compile`: an error NVRTC places in a header of the library (a static_assert of lg::Field, reached
    from a view of the spec's header, reached from the template) is the template line's, as one in the spec's
    header is; the library's files are named as `#include <lg/...>` names them, never by the installed path."""
    from layoutgen.project.compile_all import placed
    from layoutgen.runtime.nvrtc_log import parse_log
    from layoutgen.schema.diagnostics import Site

    path = str(LIBRARY_INCLUDE / name)
    log = (f'{path}(12): error: static assertion failed with "no"\n'
           '      static_assert(false, "no");\n'
           "      ^\n"
           f"{path}(12): note #3453-D: the final comparison was 0 == 1\n"
           "          detected during:\n"
           '            instantiation of "g" at line 30 of spec.cuh\n'
           '            instantiation of "f" at line 2 of k.cu.j2\n\n'
           "1 error detected in the compilation of \"generated/spec/k.cu\".\n")
    (error,) = parse_log(log)
    placed_at = placed(error, {"spec.cuh": "generated/spec/spec.cuh"}, {"spec.cuh": ""}, "generated/spec/k.cu",
                       tmp_path, {})
    assert placed_at.site == Site(str(tmp_path / "k.cu.j2"), 2)
    assert placed_at.message.splitlines()[:4] == [
        f'static assertion failed with "no" (in {name}:12, instantiated here)',
        '        static_assert(false, "no");',
        "        ^",
        f"  {name}(12): note #3453-D: the final comparison was 0 == 1"]
    assert str(LIBRARY_INCLUDE) not in placed_at.message


# -- generated headers hold only what is the spec's own ----------------------------------------------------------

_LIBRARY_CODE = re.compile(r"struct (Field|Row|Vec|SharedTile|Fault|footprint|Tile|Tiles)\b|"
                           r"LG_FIELD_DEFINED|LG_DEBUG_DEFINED|LG_CHECKED_DEFINED|namespace entry|class checked_ptr")


@pytest.mark.parametrize("debug", [False, True])
def test_generated_headers_hold_no_library_code(debug: bool) -> None:
    from tests.helpers.golden import render as render_module

    for spec in ("examples/vsn/spec.py", "examples/qkv/spec.py", "tests/specs/tiles/spec.py",
                 "tests/specs/grids/spec.py"):
        rendered = render_module(spec, debug=debug)
        for path, text in rendered.files.items():
            if path.endswith((".cuh", ".cu")):
                found = _LIBRARY_CODE.search(text)
                assert found is None, (path, found and found.group(0))
                if path.endswith(".cuh"):
                    assert f"#include <lg/{'debug' if debug else 'lg'}.cuh>\n#ifndef {library_version_macro()}\n" in text


# -- the one-definition rule -------------------------------------------------------------------------------------

B = dims("B")[0]
SCALE = "    if (row >= x.rows()) return;\n    x.at(row, 0) *= 2.0f;\n"


def _spec(tmp: Path, name: str, width: int) -> Spec:
    """A spec `name` with a layout `Window` whose field `snap` is ``width`` columns of rows of ``width + 4``."""
    window = Layout("Window", [B], f32, [Field("snap", width), Field("rest", 4)], width=width + 4)
    kernel = Kernel("scale", write_template(tmp, SCALE), [InOut("x", [B, width])], grid=Grid.rows("x"),
                    template_root=tmp)
    return Spec(name, kernels=[kernel.bind(x=window.snap)])


def _header(tmp: Path, spec: Spec, folder: str, *, debug: bool = False) -> str:
    """``spec``'s views header, written into ``tmp/folder``; its path."""
    files = render(spec, tmp, debug=debug).files
    (tmp / folder).mkdir(exist_ok=True)
    path = tmp / folder / f"{spec.name}.cuh"
    path.write_text(files[f"{spec.name}/{spec.name}.cuh"], encoding="utf-8")
    return str(path)


def _view(build: str, spec: str, version: str | None = None) -> str:
    return f"lg::{version or library_namespace()}::{build}::views::{spec}::Window_snap_view<float, 4, lg::{version or library_namespace()}::Packing::strided>"


def _odr_unit(tmp: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, tuple[str, ...]]:
    """One translation unit holding: this library (both builds; by path, as the include path finds the other
    version's first), spec `a`'s release and debug headers, spec `b` (a `Window` of another
    width) in release, and spec `a` generated by "layoutgen 9.9.9" against its own library (this library,
    its namespace renamed, Field one member larger, in a folder of its own); the include folders it needs."""
    release_a = _header(tmp, _spec(tmp, "a", 8), "release")
    debug_a = _header(tmp, _spec(tmp, "a", 8), "debug", debug=True)
    release_b = _header(tmp, _spec(tmp, "b", 12), "release_b")
    ours = library_namespace()
    other = tmp / "other-layoutgen" / "include"
    shutil.copytree(LIBRARY_INCLUDE, other, ignore=shutil.ignore_patterns("host"))
    for path in other.rglob("*.cuh"):
        text = path.read_text(encoding="utf-8").replace(ours, "v9_9_9").replace(ours.upper(), "V9_9_9")
        if path.name == "field.cuh":  # the other version's Field has grown a member
            text = text.replace("    Scale scale;  // what one column counts", "    long long grown;\n    Scale scale;  // what")
            assert "long long grown;" in text
        path.write_text(text, encoding="utf-8")
    monkeypatch.setattr(layoutgen_version, "__version__", "9.9.9")
    release_a9 = _header(tmp, _spec(tmp, "a", 8), "v9")
    monkeypatch.undo()
    ra, da, rb, r9 = (_view("release", "a"), _view("debug", "a"), _view("release", "b"), _view("release", "a", "v9_9_9"))
    source = f"""
#include "{LIBRARY_INCLUDE / 'lg' / 'lg.cuh'}"
#include "{LIBRARY_INCLUDE / 'lg' / 'debug.cuh'}"
#include "{release_a}"
#include "{debug_a}"
#include "{release_b}"
#include "{release_a9}"
template <typename A, typename B> struct same {{ static constexpr bool value = false; }};
template <typename A> struct same<A, A> {{ static constexpr bool value = true; }};
// debug and release of one spec: two views, two tiles
static_assert(sizeof({da}) > sizeof({ra}), "the debug view carries its parameter's number and name");
static_assert(sizeof(lg::{ours}::debug::SharedTile<float, 8, 4, 4, 16, 32>) > sizeof(float*), "debug tile");
static_assert(sizeof(lg::{ours}::release::SharedTile<float, 8, 4, 4, 16, 32>) == sizeof(float*), "release tile");
// two specs with a layout of the same name: each its own width
static_assert({ra}::width == 8 && {rb}::width == 12, "each spec's Window");
// two versions: each header's views derive from its own version's Field
static_assert(sizeof({r9}) == sizeof({ra}) + sizeof(long long), "9.9.9's Field has one member more");
static_assert(!same<{r9}::Row, {ra}::Row>::value, "two versions, two Rows");
extern "C" __global__ void k(float* x) {{
    const {ra} r{{ {{x}} }};
    const {r9} r9{{ {{x}} }};
    const {da} d{{ {{ {{x}}, 0, "k.x (Window.snap)" }} }};
    r.at(0, 0) += r9.at(0, 1);
    (void)d;
}}
"""
    return source, (str(other),)


def test_two_builds_two_specs_and_two_versions_in_one_translation_unit_keep_their_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source, include = _odr_unit(tmp_path, monkeypatch)
    assert _nvrtc(source, include) == ""


@pytest.mark.skipif(COMPILER is None, reason="no host C++ compiler (g++) here")
def test_the_same_unit_compiles_for_the_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source, include = _odr_unit(tmp_path, monkeypatch)
    unit = tmp_path / "unit.cpp"
    unit.write_text(HOST_FIRST + source, encoding="utf-8")
    run = subprocess.run([str(COMPILER), "-std=c++17", "-fsyntax-only", "-Wno-unknown-pragmas", "-I", include[0],
                          "-I", str(LIBRARY_INCLUDE / "lg" / "host" / "cuda"), "-I", str(LIBRARY_INCLUDE), str(unit)],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr


def test_a_header_of_another_version_without_its_library_stops_the_compile_with_a_message(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(layoutgen_version, "__version__", "9.9.9")
    header = _header(tmp_path, _spec(tmp_path, "a", 8), "v9")
    monkeypatch.undo()
    log = _nvrtc(f'#include "{header}"\n')
    assert ('#error directive: "a.cuh was generated by layoutgen 9.9.9: put that version\'s device library first '
            "on the include path (`layoutgen includes` prints its folder), or generate it again\"") in log, log
