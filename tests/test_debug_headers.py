"""The debug build carries the project's headers rewritten as the kernel's own code is (checked pointers), and
its module, `check --compile` and the CPU run find those copies first.

A `__device__` helper of a project header taking `const float*` (tests/helpers/debug_headers.py) receives
`&x.at(row, 0)`; NVRTC reads the header from disk, so without its rewritten copy the checked pointer became a raw
one there, unchecked on the GPU. Built for the host with the debug build's fault functions replaced by recorders,
a call reading past the field is reported by the checked pointer itself (lg::out_of_footprint), not only by
AddressSanitizer. The release build does not change at all.
"""

from __future__ import annotations

import ctypes
import re
import string
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from layoutgen.codegen.debug_headers import COPIES, debug_header_copies
from layoutgen.codegen.render import render_spec
from layoutgen.codegen.stamp import is_generated, stamp, verify
from layoutgen.project.config import Config
from layoutgen.project.execute import execute_results
from layoutgen.project.process import SpecResult
from tests.helpers.debug_headers import HELPER_LINE, header_folder, rowsum_spec
from tests.helpers.host import RECORDED_FAULTS, build_shared, needs_compiler

COPY = f"rowsum/{COPIES}/0/row_help.cuh"


def _render(tmp: Path, *, debug: bool, headers: bool = True) -> dict[str, str]:
    folder = header_folder(tmp)
    rendered = render_spec(rowsum_spec(tmp), tmp, "spec.py", debug=debug, include=("../../include",),
                           headers=(folder,) if headers else ())
    assert rendered.diagnostics == (), [str(d) for d in rendered.diagnostics]
    return rendered.files


def test_the_debug_build_carries_the_header_with_checked_pointers(tmp_path: Path) -> None:
    copy = _render(tmp_path, debug=True)[COPY]
    assert verify(copy)  # a generated file like the others: the writer owns it, a hand edit is LG509
    lines = copy.split("\n")
    assert lines[2] == '#line 1 "include/row_help.cuh"'  # errors and findings name the user's header, at its lines
    assert lines[3 + 3] == "__device__ inline float row_sum(lg::checked_ptr<const float> p, int n) {"
    assert len(lines) - 3 == len((tmp_path / "include" / "row_help.cuh").read_text().split("\n"))


def test_the_debug_module_searches_the_copies_first(tmp_path: Path) -> None:
    debug = _render(tmp_path, debug=True)["rowsum/__init__.py"]
    assert "_lg_INCLUDE = ('lg_debug_include/0', '../../include')\n" in debug
    release = _render(tmp_path, debug=False)["rowsum/__init__.py"]
    assert "_lg_INCLUDE = ('../../include',)\n" in release


def test_a_header_folder_with_nothing_to_copy_is_not_named(tmp_path: Path) -> None:
    """A launcher refuses an include folder that is not there (LG514): a folder of copies is named only where a
    file was copied into it."""
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "latin1.cuh").write_bytes(b"// caf\xe9\n")
    rendered = render_spec(rowsum_spec(tmp_path), tmp_path, "spec.py", debug=True, include=("../../empty", "../../include"),
                           headers=(tmp_path / "empty", header_folder(tmp_path)))
    assert "_lg_INCLUDE = ('lg_debug_include/1', '../../empty', '../../include')\n" in rendered.files["rowsum/__init__.py"]


def test_the_release_build_is_the_same_with_and_without_the_headers(tmp_path: Path) -> None:
    assert _render(tmp_path, debug=False) == _render(tmp_path, debug=False, headers=False)
    assert not any(COPIES in path for path in _render(tmp_path, debug=False))


# Header trees drawn at random: names, folders, texts of whole declarations (one over two lines), lines, a file that is not UTF-8
# and one that layoutgen generated (neither is copied: the original is found after the copies).
_NAMES = st.text(string.ascii_lowercase + "_", min_size=1, max_size=6)
_LINES = st.lists(st.sampled_from([
    "__device__ float f(const float* p, int n) { return p[n]; }", "#pragma once", "// const float* in a comment",
    "__device__ void g(float* __restrict__ q,\n    const float4* r) { q[0] = r->x; }", "", "int x;",
    '#include "other.cuh"', "__device__ const half* h(const half* p) { return p + 1; }",
]), max_size=8)
_TREES = st.dictionaries(st.lists(_NAMES, min_size=1, max_size=3).map(lambda p: "/".join(p) + ".cuh"),
                         _LINES.map("\n".join), max_size=5)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(trees=st.lists(_TREES, min_size=1, max_size=2))
def test_every_header_file_is_copied_once_its_lines_kept(tmp_path_factory: Any, trees: list[dict[str, str]]) -> None:
    tmp = tmp_path_factory.mktemp("trees")
    folders, expected = [], {}
    for n, tree in enumerate(trees):
        folder = tmp / f"inc{n}"
        folder.mkdir()
        for rel, text in tree.items():
            if any((folder / part).is_file() for part in _prefixes(rel)):
                continue  # a file where this one needs a folder
            (folder / rel).parent.mkdir(parents=True, exist_ok=True)
            (folder / rel).write_text(text, encoding="utf-8")
            expected[f"{COPIES}/{n}/{rel}"] = text
        (folder / "latin1.cuh").write_bytes(b"// caf\xe9\n")
        (folder / "made.cuh").write_text(stamp("int y;\n", comment="//", source="s.py", version="0"))
        folders.append(folder)
    shown = tuple(f"inc{n}" for n in range(len(folders)))
    copies = debug_header_copies(tuple(folders), shown, source="spec.py", version="1")
    assert copies == debug_header_copies(tuple(folders), shown, source="spec.py", version="1")  # deterministic
    assert set(copies) == set(expected) and list(copies) == sorted(copies)
    for path, text in copies.items():
        original = expected[path]
        head, body = text.split("\n", 3)[2:]
        assert is_generated(text) and head == f'#line 1 "inc{path.split("/")[1]}/{path.split("/", 2)[2]}"'
        assert body.count("\n") == original.count("\n")  # every line keeps its number
        assert not re.search(r"\b(?:float|float4|half)\s*\*\s*(?:__restrict__\s*)?[pqr]\b", body), body


def _prefixes(rel: str) -> list[str]:
    parts = rel.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


@needs_compiler
def test_a_helper_of_a_project_header_reports_through_the_checked_pointer(tmp_path: Path) -> None:
    fn = _build(tmp_path)
    rows = (2, 3)
    x = np.random.default_rng(7).standard_normal((*rows, 136)).astype(np.float32)
    y = np.full((*rows, 96), np.nan, dtype=np.float32)
    out = (ctypes.c_longlong * 7)()
    hits = fn(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y.ctypes.data), ctypes.c_int(100),
              ctypes.c_longlong(rows[0]), ctypes.c_longlong(rows[1]), out)
    # Row 0 reads columns 96..99 of its own row, past the field's 96: the checked pointer's report, a read of `x`.
    param, row, col, field_row, width, access, _ = list(out)
    assert hits >= 1
    assert (param, row, col, field_row, width, access) == (0, 0, 96, 0, 96, 0)
    # n = 96: every row's sum of its field, nothing reported.
    hits = fn(ctypes.c_void_p(x.ctypes.data), ctypes.c_void_p(y.ctypes.data), ctypes.c_int(96),
              ctypes.c_longlong(rows[0]), ctypes.c_longlong(rows[1]), out)
    assert hits == 0
    assert np.allclose(y[..., 0], x[..., :96].astype(np.float64).sum(axis=-1), rtol=1e-5, atol=1e-4)
    assert not y[..., 1:].any()


def _build(tmp: Path) -> Any:
    files = _render(tmp, debug=True)
    build = tmp / "build"
    for path, text in files.items():
        under = path.removeprefix("rowsum/")
        target = build / (under if under.startswith(COPIES) else Path(path).name)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    source = build / "rowsum_host.cpp"
    source.write_text(
        RECORDED_FAULTS + '#include "rowsum.cu"\n'
        'extern "C" long long host_launch(const float* x, float* y, int n, long long b, long long k, '
        "long long* out) {\n"
        "    lg::lg_test_hits = 0;\n"
        "    blockDim.x = 32;\n"
        "    for (long long t = 0; t < b * k; ++t) {\n"
        "        blockIdx.x = static_cast<unsigned>(t / 32);\n"
        "        threadIdx.x = static_cast<unsigned>(t % 32);\n"
        "        rowsum(x, y, n, b, k);\n"
        "    }\n"
        "    for (int n = 0; n < 7; ++n) out[n] = lg::lg_test_hit[n];\n"
        "    return lg::lg_test_hits;\n"
        "}\n", encoding="utf-8")
    # The copy first, then the project's folder, as the debug module's include list names them.
    return build_shared(source, build / "rowsum.so", "c++17", (build / COPIES / "0", tmp / "include"), "-O1")


@needs_compiler
def test_the_cpu_run_reports_the_helpers_read_at_the_headers_line(tmp_path: Path) -> None:
    """`check --execute` compiles the same copies: the read past the field is the checked pointer's finding (LG650),
    at the line of the user's header."""
    header_folder(tmp_path)
    result = SpecResult("spec.py", rowsum_spec(tmp_path, "100"), {"rendered": ""}, (), None)
    found = execute_results([result], Config(tmp_path, include=("include",), cache_dir="cache"), progress=False)
    assert [(d.code, str(d.site)) for d in found] == [("LG650", f"include/row_help.cuh:{HELPER_LINE}")], found


# A header that compiles only where its pointer is a checked pointer: its copy in the debug build, not itself.
CHECKED_ONLY = """#pragma once
template <class T> struct only_checked { static constexpr bool value = true; };
template <class T> struct only_checked<T*> { static constexpr bool value = false; };
__device__ inline float row_sum(const float* p, int n) {
    static_assert(only_checked<decltype(p)>::value, "a raw pointer: the original header, not its debug copy");
    return p[n - 1];
}
"""


def test_check_compile_debug_compiles_the_copies(tmp_path: Path) -> None:
    """`check --compile --debug` hands NVRTC the rewritten copies (in memory, by their include names), found before
    the project's folders, as the debug module's include list finds them at launch."""
    from layoutgen.project.compile_all import compile_results

    header_folder(tmp_path)
    (tmp_path / "include" / "row_help.cuh").write_text(CHECKED_ONLY, encoding="utf-8")
    spec = rowsum_spec(tmp_path)
    rendered = render_spec(spec, tmp_path, "spec.py", debug=True, include=("../../include",),
                           headers=(tmp_path / "include",))
    files = {f"generated/{path}": text for path, text in rendered.files.items()}
    config = Config(tmp_path, include=("include",), cache_dir="cache", debug=True)
    assert compile_results([SpecResult("spec.py", spec, files, (), None)], config, progress=False) == []


def test_the_debug_launcher_compiles_the_copy(tmp_path: Path) -> None:
    """Written out as `generate --debug` writes it, the debug module's launcher hands NVRTC the folder of copies
    before the project's: the header that compiles only with a checked pointer compiles."""
    from layoutgen.runtime.nvrtc import CompileRequest, compile_cubin
    from tests.helpers.rendering import load

    header_folder(tmp_path)
    (tmp_path / "include" / "row_help.cuh").write_text(CHECKED_ONLY, encoding="utf-8")
    rendered = render_spec(rowsum_spec(tmp_path), tmp_path, "spec.py", debug=True, include=("../../include",),
                           headers=(tmp_path / "include",))
    for path, text in rendered.files.items():
        (tmp_path / "generated" / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "generated" / path).write_text(text, encoding="utf-8")
    launcher = load((tmp_path / "generated" / "rowsum" / "__init__.py").read_text(), tmp_path / "generated",
                    "rowsum")._lg_kernel_rowsum
    folder = tmp_path / "generated" / "rowsum"
    request = CompileRequest(source=(folder / "rowsum.cu").read_text(), name="rowsum/rowsum.cu", arch="sm_90",
                             headers=(("rowsum.cuh", (folder / "rowsum.cuh").read_text()),),
                             include_dirs=tuple(str(folder / d) for d in launcher.include_dirs))
    assert compile_cubin(request).cubin


SPEC = '''from layoutgen import Field, Grid, In, Kernel, Layout, Out, Scalar, Spec, dims, f32, i32

B, K, F = dims("B K F")
Window = Layout("Window", [B, K], f32, [Field("snap", 96), Field("ctx", 40)])
Packed = Layout("Packed", [B, K], f32, width=96)
kernel = Kernel("rowsum", "k.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F]), Scalar("n", i32)],
                grid=Grid.rows("x", block=32))
spec = Spec("rowsum", kernels=[kernel.bind(x=Window.snap, y=Packed)])
'''


def test_generate_debug_writes_the_copies_and_release_removes_them(tmp_path: Path) -> None:
    """`generate --debug` writes the copies with the rest of the output (a second run finds nothing to change);
    `generate` without it deletes them, as any file no longer generated."""
    from layoutgen.cli import main

    header_folder(tmp_path)
    rowsum_spec(tmp_path)  # its template, k.cu.j2
    (tmp_path / "spec.py").write_text(SPEC, encoding="utf-8")
    (tmp_path / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["spec.py"]\ninclude = ["include"]\n',
                                             encoding="utf-8")
    copy = tmp_path / "generated" / COPY
    assert main(["generate", "--debug", str(tmp_path / "spec.py")]) == 0
    assert "lg::checked_ptr<const float> p" in copy.read_text(encoding="utf-8")
    assert main(["generate", "--debug", "--check", str(tmp_path / "spec.py")]) == 0
    assert main(["generate", str(tmp_path / "spec.py")]) == 0
    assert not copy.exists()
