"""The debug build, without a GPU: what `--debug` adds, that it compiles, and that release output ignores it.

The release build is pinned by the golden files (tests/golden) and by the
committed generated code; here the same specs are rendered both ways and
compared. The debug build's checks are the device library's (lg/debug.cuh: the
views' base lg::CheckedField and the checked pointers of lg/checked.cuh, the
fault records of lg/fault.cuh): the generated debug header wraps each release
view in CheckedField, and tests/test_debug_accessors_host.py runs every
accessor of both builds on the host. The debug build's own behaviour on a
device (a planted out-of-field access, a planted NaN) is in
tests/gpu/test_program_gpu.py.
"""

from __future__ import annotations

import os
import re
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from layoutgen.codegen.library import library_namespace
from layoutgen.codegen.render import render_spec
from layoutgen.project.config import ConfigError, load_config
from layoutgen.project.specload import load_spec
from layoutgen.runtime.debug import FAULT_FILE_BYTES, FAULT_SYMBOL, FaultRecord
from layoutgen.runtime.nvrtc import CompileRequest, compile_cubin
from tests.helpers.cli import layoutgen
from tests.helpers.golden import render

REPO = Path(__file__).resolve().parent.parent
SPEC = "tests/specs/debug/spec.py"
# A view struct of a generated header and its base (the release build's lg::Field, the debug build's CheckedField).
VIEW = re.compile(r"^struct (?P<name>\w+) : (?P<base>.+) \{$", re.M)


def _render(spec: str, debug: bool) -> dict[str, str]:
    return render(spec, debug=debug, project=True).files  # as the committed `generated/` is: with the configuration


def _as_debug(line: str) -> str:
    """A line of a release views header as the debug build writes it: the build named where the header names it,
    and each view's base wrapped in the library's checks (lg::CheckedField<the view, the release base>)."""
    line = (line.replace("lg/lg.cuh", "lg/debug.cuh").replace("release build's", "debug build's")
            .replace("inline namespace release", "inline namespace debug"))
    if view := VIEW.match(line):
        name, base = view["name"], view["base"]
        return f"struct {name} : lg::{library_namespace()}::debug::CheckedField<{name}<T, VectorBytes, Pack>, {base}> {{"
    return line


def test_release_output_is_the_committed_code_and_debug_only_adds() -> None:
    release = _render("examples/vsn/spec.py", debug=False)
    for path, text in release.items():  # the feature changes nothing of the release build
        assert (REPO / "generated" / path).read_text(encoding="utf-8") == text, path
    debug = _render("examples/vsn/spec.py", debug=True)
    assert debug.keys() == release.keys()
    header, plain = debug["vsn/vsn.cuh"], release["vsn/vsn.cuh"]
    # Every view of the debug header is its release view under the library's CheckedField, which checks each
    # accessor first; the header includes the debug library (its checked pointers, its fault records).
    views = VIEW.findall(plain)
    assert len(views) == len(VIEW.findall(header)) > 0
    assert all(_as_debug(f"struct {name} : {base} {{") in header.splitlines() for name, base in views)
    assert "#include <lg/debug.cuh>\n" in header and "#include <lg/checked_cast.cuh>\n" in header
    assert "#include <lg/lg.cuh>\n" in plain
    assert "CheckedField" not in plain and "lg/debug.cuh" not in plain and "checked_cast" not in plain
    kernel = debug["vsn/variable_selection_fwd.cu"]
    assert ('const lg::views::vsn::Window_snap_view<const float, 16, lg::Packing::strided> x{ { {lg_arg_x}, 0, '
            '"variable_selection_fwd.x (Window.snap)" }, lg_dim_B, lg_dim_K };') in kernel
    module = debug["vsn/__init__.py"]
    assert "debug=True," in module and "cols=(0, 40)" in module and "This is the debug build" in module
    assert "debug=True" not in release["vsn/__init__.py"]


def test_every_release_line_survives_in_the_debug_build() -> None:
    # Debug code is only added: the release build's lines appear in order in the debug build's (apart from the
    # stamp, which hashes the text, and the stamps of the other files the module names); a views header's lines
    # as the debug build names its build and wraps each view's base (_as_debug).
    release, debug = _render(SPEC, debug=False), _render(SPEC, debug=True)
    for path in release:
        lines = iter(debug[path].splitlines()[2:])
        # Lines that gain debug arguments; a view's operator() hands out a checked reference and takes the
        # caller's line in the debug build (a redefinition, the one line the debug build replaces).
        kept = [_as_debug(line) if path.endswith(".cuh") else line for line in release[path].splitlines()[2:]
                if "{ {lg_" not in line and "ParamSpec(" not in line and "'sha256:" not in line
                and not line.startswith(("    __device__ __forceinline__ T& operator()(", "        return this->at("))]
        missing = [line for line in kept if not any(line == d for d in lines)]
        assert missing == [], (path, missing)


def _symbols(cubin: bytes) -> dict[str, int]:
    """The names an ELF64 image's symbol table defines, and their sizes."""
    shoff, shentsize, shnum = struct.unpack_from("<Q", cubin, 0x28)[0], *struct.unpack_from("<HH", cubin, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", cubin, shoff + k * shentsize) for k in range(shnum)]
    found = {}
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        names = sections[link][4]
        for at in range(offset, offset + size, entsize):
            name, _, _, shndx, _, length = struct.unpack_from("<IBBHQQ", cubin, at)
            if shndx:  # defined here
                found[cubin[names + name: cubin.index(b"\0", names + name)].decode()] = length
    return found


def test_the_debug_cubin_defines_the_fault_records_the_launcher_reads() -> None:
    """The launcher reads `lg_fault` by name after each launch of a debug build, as lg::Fault's words
    (runtime/debug.py's FaultRecord) and the file's name; the release build's cubin has no record."""
    built = {}
    for debug in (False, True):
        files = _render(SPEC, debug=debug)
        headers = tuple((path.rsplit("/", 1)[-1], text) for path, text in files.items() if path.endswith(".cuh"))
        request = CompileRequest(files["debugged/shift.cu"], "generated/debugged/shift.cu", headers=headers)
        built[debug] = _symbols(compile_cubin(request).cubin)
    assert built[True][FAULT_SYMBOL] == 8 * len(FaultRecord._fields) + FAULT_FILE_BYTES
    assert "lg_unheld" in built[True] and "shift" in built[True]  # a shared tile's unheld rows' record, the kernel
    assert FAULT_SYMBOL not in built[False] and "lg_unheld" not in built[False] and "shift" in built[False]


def test_the_debug_build_compiles_offline(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "LAYOUTGEN_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, "-m", "layoutgen", "check", "--compile", "--debug", "--out",
                          "build/test-debug-offline", SPEC], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=600)
    # Nothing was generated into that folder, so drift is expected; compile errors are not.
    assert "LG501" not in run.stdout, run.stdout
    assert list((tmp_path / "cache").rglob("*.cubin")), run.stdout + run.stderr


def test_generate_debug_into_the_committed_folder_is_drift() -> None:
    run = layoutgen("generate", "--check", "--debug", "examples/vsn/spec.py", cwd=REPO)
    assert run.returncode == 1
    assert "\n-#include <lg/lg.cuh>\n+#include <lg/debug.cuh>\n" in run.stdout, run.stdout


def test_debug_is_a_config_key(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.layoutgen]\ndebug = true\n")
    assert load_config(tmp_path).debug is True
    (tmp_path / "pyproject.toml").write_text('[tool.layoutgen]\ndebug = "yes"\n')
    with pytest.raises(ConfigError, match=r'`\[tool.layoutgen\].debug` must be true or false, got "yes"'):
        load_config(tmp_path)


@pytest.mark.parametrize("spec", ["tests/specs/sanitizer/bad.py", "tests/specs/sanitizer/good.py",
                                  "tests/specs/sanitizer/pointers.py"])
def test_the_checked_pointers_of_the_debug_build_compile_with_nvrtc(spec: str) -> None:
    """The sanitizer's test kernels (pointers from views kept raw, in `auto`, through template helpers, cast to
    float4 with reinterpret_cast, a hand-written entry) compile unchanged in the debug build, where `&x.at(r, c)`
    of every view is an lg::checked_ptr (the CPU run compiles the same build for the host:
    tests/test_execute_host.py)."""
    loaded = load_spec(REPO / spec)
    assert loaded.spec is not None
    rendered = render_spec(loaded.spec, REPO, spec, debug=True, out="build/test-debug-checked")
    headers = tuple(sorted((path.rsplit("/", 1)[-1], text) for path, text in rendered.files.items()
                           if path.endswith(".cuh")))
    kernels = {path: text for path, text in rendered.files.items() if path.endswith(".cu")}
    assert kernels and all("#include <lg/debug.cuh>\n" in text for _, text in headers)
    lib = f"lg::{library_namespace()}"
    views = [f"{lib}::debug::views::{loaded.spec.name}::{name}<float, 4, {lib}::Packing::strided>"
             for _, text in headers for name, _ in VIEW.findall(text)]
    # Asked of the compiler after each kernel: the address of each view's element is a checked pointer.
    probe = "template <typename T> __device__ T&& lg_test_declval();\n" + "".join(
        f"static_assert({lib}::debug::is_checked_ptr<decltype(&lg_test_declval<const {v}&>().at(0, 0))>::value, "
        f'"{v}");\n' for v in views)
    assert views
    for path, text in sorted(kernels.items()):
        assert compile_cubin(CompileRequest(text + probe, path, headers=headers, arch="sm_90")).cubin, path
