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
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen.codegen.library import library_namespace
from layoutgen.codegen.render import render_spec
from layoutgen.project.config import ConfigError, load_config
from layoutgen.project.execute_harness import HostProgram
from layoutgen.project.specload import load_spec
from layoutgen.runtime.debug import FAULT_FILE_BYTES, FAULT_SYMBOL, TILE_BYTES, FaultRecord, UnheldRecord
from layoutgen.runtime.nvrtc import CompileRequest, compile_cubin
from layoutgen.schema.diagnostics import Diagnostic
from tests.helpers.cli import layoutgen
from tests.helpers.golden import render
from tests.helpers.spellings import write_project

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
        # caller's line in the debug build (a redefinition, the one line the debug build replaces); the
        # generated file's own `#line` back to itself, which counts the lines the debug build adds before it.
        kept = [_as_debug(line) if path.endswith(".cuh") else line for line in release[path].splitlines()[2:]
                if "{ {lg_" not in line and "ParamSpec(" not in line and "'sha256:" not in line
                and not (line.startswith("#line ") and line.endswith(f' "generated/{path}"'))
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
    (runtime/debug.py's FaultRecord), the file's name and a shared tile's (a fault of a pointer taken from a tile);
    the release build's cubin has no record."""
    built = {}
    for debug in (False, True):
        files = _render(SPEC, debug=debug)
        headers = tuple((path.rsplit("/", 1)[-1], text) for path, text in files.items() if path.endswith(".cuh"))
        request = CompileRequest(files["debugged/shift.cu"], "generated/debugged/shift.cu", headers=headers)
        built[debug] = _symbols(compile_cubin(request).cubin)
    assert built[True][FAULT_SYMBOL] == 8 * len(FaultRecord._fields) + FAULT_FILE_BYTES + TILE_BYTES
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


# -- a shared tile's element and the pointers taken from it (lg/detail/shared_tile.cuh) ----------------------------

def _tile_probe() -> str:
    """Asked of the compiler after a kernel: a debug tile's element (a plain tile's, a ring's stage's) is a checked
    reference whose address is a checked pointer (lg/checked.cuh), so `const float* a = &xs(0, 0)` stays checked."""
    lib = f"lg::{library_namespace()}::debug"
    tiles = [f"{lib}::SharedTile<float, 32, 96, 100, 16, 128>", f"{lib}::SharedTile<float, 32, 96, 100, 16, 32, "
             f"lg::{library_namespace()}::TileScope::warp, 3>::Stage"]
    return "template <typename T> __device__ T&& lg_test_tile_declval();\n" + "".join(
        f"static_assert({lib}::is_checked_ptr<decltype(&lg_test_tile_declval<const {t}&>()(0, 0))>::value, "
        f'"{t}");\n' for t in tiles)


def test_the_examples_debug_builds_compile_offline(tmp_path: Path) -> None:
    """Every kernel of the examples in the debug build, where a tile's element is a checked reference: the VSN
    tensor-core kernels (warp tiles in cp.async rings, their mma fragments read through the tile's accessor), QKV,
    the hand-written and existing kernels."""
    examples = ["examples/vsn/spec.py", "examples/qkv/spec.py", "examples/own_kernel/spec.py",
                "examples/existing_kernels/spec.py"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "LAYOUTGEN_CACHE_DIR": str(tmp_path / "cache")}
    run = subprocess.run([sys.executable, "-m", "layoutgen", "check", "--compile", "--debug", "--out",
                          "build/test-debug-examples", *examples], cwd=REPO, env=env, capture_output=True, text=True,
                         timeout=900)
    # Nothing was generated into that folder, so drift is expected; compile errors are not.
    assert "LG501" not in run.stdout, run.stdout
    assert len(list((tmp_path / "cache").rglob("*.cubin"))) >= 17, run.stdout + run.stderr


@pytest.mark.parametrize("kind", ["bad", "good"])
def test_the_spelling_corpus_tile_kernels_compile_in_the_debug_build(tmp_path: Path, kind: str) -> None:
    """The corpus's kernels over a shared tile (tests/specs/spellings/corpus.py: column sums, a narrower fill, the
    tile product through `const float* a = &xs(0, 0)`), as templates and helpers, compile in the debug build, where
    the tile's element is a checked reference and its address a checked pointer."""
    written = write_project(tmp_path)
    loaded = load_spec(tmp_path / kind / "spec.py")
    assert loaded.spec is not None, loaded.diagnostics
    rendered = render_spec(loaded.spec, tmp_path, f"{kind}/spec.py", debug=True, out="build")
    headers = tuple(sorted((path.rsplit("/", 1)[-1], text) for path, text in rendered.files.items()
                           if path.endswith(".cuh")))
    tiles = [w for w in written[kind] if w.spelling.tile]
    assert {w.spelling.name for w in tiles} >= {"tile_product_ld", "tile_product_width", "tile_capacity"}
    for w in tiles:
        path = f"{loaded.spec.name}/{w.kernel}.cu"
        text = rendered.files[path]
        assert "lg::checked_ptr<const float> a = &xs(0, 0);" in text or "&xs(" not in text, path
        assert compile_cubin(CompileRequest(text + _tile_probe(), path, headers=headers, arch="sm_90")).cubin, path


# -- the checked barrier (lg/debug_barrier.cuh) ------------------------------------------------------------------

# lg::v0_1_0::debug::syncthreads_checked(const char*, int, int)
BARRIER = "_ZN2lg6v0_1_05debug19syncthreads_checkedEPKcii"


@pytest.mark.parametrize(("spec", "kernel"), [
    ("tests/specs/sanitizer/bad.py", "barrier_branch"), ("tests/specs/sanitizer/bad.py", "barrier_two"),
    ("tests/specs/sanitizer/good.py", "block_sum"), ("tests/specs/sanitizer/good.py", "static_shared_entry"),
    ("examples/existing_kernels/spec.py", "vsn_forward"), ("examples/vsn/spec.py", "variable_selection_bwd")])
def test_the_users_barriers_are_checked_in_the_debug_build_only(spec: str, kernel: str) -> None:
    """A template's `__syncthreads()`, a hand-written entry's and an existing kernel's debug copy's call the checked
    barrier in the debug build (its function is in the cubin); the release build keeps the hardware's alone."""
    assert library_namespace() == "v0_1_0", "BARRIER names the library's namespace: rename it with the version"
    loaded = load_spec(REPO / spec)
    assert loaded.spec is not None
    found = {}
    for debug in (False, True):
        rendered = render_spec(loaded.spec, REPO, spec, debug=debug, out="build/test-debug-barrier")
        headers = tuple(sorted((path.rsplit("/", 1)[-1], text) for path, text in rendered.files.items()
                               if path.endswith(".cuh")))
        path = f"{loaded.spec.name}/{kernel}.cu"
        assert "__syncthreads()" in rendered.files[path]
        request = CompileRequest(rendered.files[path], path, headers=headers, arch="sm_90",
                                 include_dirs=(str(REPO / "examples" / "vsn" / "include"),))
        symbols = _symbols(compile_cubin(request).cubin)
        found[debug] = sorted({name.rsplit("$", 1)[-1] for name in symbols if name.endswith(BARRIER)})
    assert found == {False: [], True: [BARRIER]}


def _gpu_barrier_fault(monkeypatch: pytest.MonkeyPatch, access: int, thread: int, line: int) -> Diagnostic:
    """What the launcher raises for a debug build's barrier record (lg::syncthreads_checked's `access` and thread) of
    kernel `barrier_two`, in block 2, at ``line`` of its template."""
    from layoutgen.runtime import debug
    from layoutgen.runtime.plan import KernelSpec, LayoutSpec, ParamSpec
    from tests.helpers.debug_fault import install_fault

    install_fault(monkeypatch, b"tests/specs/sanitizer/barrier_two.cu.j2", hit=1, block=2, thread=thread,
                  access=access, line=line)
    window = LayoutSpec("Window", ("B", "K"), 136, "f32", 4)
    spec = KernelSpec("barrier_two", "barrier_two.cu", (ParamSpec("x", "in", window, "Window.snap", 4, cols=(0, 96)),),
                      ("B", "K"), 0, 1, 128)
    with pytest.raises(debug.BarrierFault) as info:
        debug.check_fault(spec, object(), None)
    assert isinstance(info.value, debug.KernelFault)
    return info.value.diagnostic


def _cpu_barrier_finding(kind: str, thread: int, line: int) -> Diagnostic:
    """The CPU run's finding of the same barrier (lg/host/runtime.h's report), at the same line."""
    from layoutgen.project.execute_findings import finding_diagnostic
    from layoutgen.project.execute_harness import HostProgram
    from layoutgen.project.footprints import Footprint
    from layoutgen.schema.diagnostics import Site

    program = HostProgram("barrier_two", "barrier_two.cu",
                          (Footprint("x", "Window.snap", "in", 4, "f32", 183, 136, 0, 96),), 1, 6, 128, 0, "")
    fields = {"kind": kind, "what": "__syncthreads()", "block": "2", "thread": str(thread), "pc": "", "calls": ""}
    return finding_diagnostic(program, fields, Site("tests/specs/sanitizer/barrier_two.cu.j2", line), None)


@pytest.mark.parametrize(("access", "kind", "words"), [
    (-2, "barrier-exit", "returned while other threads wait at __syncthreads()"),
    (-3, "divergent", "reached another __syncthreads() than the threads waiting at one")])
def test_the_gpu_and_the_cpu_word_a_barrier_fault_alike(monkeypatch: pytest.MonkeyPatch, access: int, kind: str,
                                                        words: str) -> None:
    """The debug build's barrier record on the GPU (LG642) and the CPU run's finding of the same barrier (LG652): one
    message, one hint, at the barrier's line, from one function (runtime.debug.barrier_fault)."""
    gpu = _gpu_barrier_fault(monkeypatch, access, 33, 5)
    cpu = _cpu_barrier_finding(kind, 33, 5)
    assert (gpu.code, cpu.code) == ("LG642", "LG652")
    assert gpu.message == cpu.message == (
        f"`barrier_two`: block 2, thread 33 {words}: a barrier that some threads never reach")
    assert gpu.hint == cpu.hint
    assert str(gpu.site) == str(cpu.site) == "tests/specs/sanitizer/barrier_two.cu.j2:5"


# -- a NaN in an output, named as the CPU run names it -----------------------------------------------------------

def test_the_debug_cubins_unheld_record_is_the_one_the_launcher_reads() -> None:
    """The launcher reads `lg_unheld` (lg::Unheld of lg/fault.cuh) as runtime/debug.py's UnheldRecord words, the
    file's name and the tile's."""
    from layoutgen.runtime.debug import TILE_BYTES, UNHELD_SYMBOL, UnheldRecord

    files = _render(SPEC, debug=True)
    headers = tuple((path.rsplit("/", 1)[-1], text) for path, text in files.items() if path.endswith(".cuh"))
    request = CompileRequest(files["debugged/shift.cu"], "generated/debugged/shift.cu", headers=headers)
    assert _symbols(compile_cubin(request).cubin)[UNHELD_SYMBOL] == (8 * len(UnheldRecord._fields) + FAULT_FILE_BYTES
                                                                     + TILE_BYTES)


def _program() -> HostProgram:
    """The CPU run's host program of bad.py's `tile_capacity_loop`: x, y and the shared tile xs."""
    from layoutgen.project.execute_harness import HostProgram
    from layoutgen.project.footprints import Footprint

    return HostProgram("tile_capacity_loop", "tile_capacity_loop.cu", (
        Footprint("x", "Window.snap", "in", 4, "f32", 183, 136, 0, 96),
        Footprint("y", "Packed", "out", 4, "f32", 183, 96, 0, 96),
        Footprint("xs", "a tile of x", "shared", 4, "f32", 32, 100, 0, 96)), 2, 6, 128, 0, "")


def _gpu_nan(unheld: tuple[UnheldRecord, str, str] | None, inputs_finite: bool = True,
             at: tuple[int, int, int] = (2, 38, 7)) -> Diagnostic:
    """The launcher's report of a NaN its scan found in `y` at ``at`` ([2, 38, 7]: field row 160, column 7)."""
    from layoutgen.runtime import debug
    from layoutgen.runtime.plan import KernelSpec, LayoutSpec, ParamSpec

    window, packed = LayoutSpec("Window", ("B", "K"), 136, "f32", 4), LayoutSpec("Packed", ("B", "K"), 96, "f32", 4)
    y = ParamSpec("y", "out", packed, "Packed", 4, cols=(0, 96))
    spec = KernelSpec("tile_capacity_loop", "tile_capacity_loop.cu",
                      (ParamSpec("x", "in", window, "Window.snap", 4, cols=(0, 96)), y), ("B", "K"), 0, 1, 128)
    return debug._non_finite_output(spec, y, at, at, (3, 61, 96), "NaN", inputs_finite, unheld)


def test_the_gpu_and_the_cpu_word_a_read_past_a_tiles_rows_alike() -> None:
    """A NaN in an output after a read of a short last tile's unheld row: the debug build's LG612 on the GPU (its scan,
    with lg_unheld's record: the read, its thread and line, the tile as the build names it) and the CPU run's LG655
    say the same (runtime.debug.unheld_fault), at the read's line."""
    from layoutgen.project.execute_findings import finding_diagnostic
    from layoutgen.runtime.debug import UnheldRecord
    from layoutgen.schema.diagnostics import Site

    record = UnheldRecord(hit=1, tile=0, row=23, col=7, held=23, capacity=32, block=5, thread=7, line=6)
    gpu = _gpu_nan((record, "tests/specs/sanitizer/tile_capacity_loop.cu.j2", "tile_capacity_loop.xs (a tile of x)"))
    fields = {"kind": "unheld", "region": "1", "row": "160", "col": "7", "field_row": "160", "tile": "0",
              "tile_row": "23", "tile_col": "7", "held": "23", "capacity": "32", "block": "5", "thread": "7"}
    cpu = finding_diagnostic(_program(), fields, Site("tests/specs/sanitizer/tile_capacity_loop.cu.j2", 6), None)
    assert (gpu.code, cpu.code) == ("LG612", "LG655")
    assert gpu.message == cpu.message == (
        "`tile_capacity_loop` read shared `xs` (a tile of x) at row 23, column 7, past the 23 rows it holds (capacity "
        "32), in block 5, thread 7: the NaN it read reached `y` (Packed) at row 160, column 7")
    assert gpu.hint == cpu.hint
    assert str(gpu.site) == str(cpu.site) == "tests/specs/sanitizer/tile_capacity_loop.cu.j2:6"


def test_the_gpu_and_the_cpu_word_a_nan_from_finite_inputs_alike() -> None:
    """A NaN from finite inputs with no unheld read: LG612 on the GPU, LG654 on the CPU, one message
    (runtime.debug.nan_fault); where an input held NaN or Inf, the GPU names the element of the array instead."""
    from layoutgen.project.execute_findings import finding_diagnostic

    gpu = _gpu_nan(None)
    fields = {"kind": "nan", "region": "1", "row": "160", "col": "7", "field_row": "160"}
    cpu = finding_diagnostic(_program(), fields, None, None)
    assert (gpu.code, cpu.code) == ("LG612", "LG654")
    assert gpu.message == cpu.message == (
        "`tile_capacity_loop` wrote NaN to `y` (Packed) at row 160, column 7 although every input was finite: it "
        "computed with memory nothing wrote")
    assert gpu.hint == cpu.hint
    carried = _gpu_nan(None, inputs_finite=False)
    assert (carried.code, carried.message) == (
        "LG612", "`tile_capacity_loop` wrote NaN to `y` (Packed) at index [2, 38, 7] of the Packed array")


@settings(max_examples=60, deadline=None)
@given(access=st.sampled_from([-2, -3]), block=st.integers(0, 2**31 - 1), thread=st.integers(0, 1023),
       line=st.integers(1, 10**6))
def test_every_barrier_record_is_worded_as_the_cpu_runs_finding(access: int, block: int, thread: int,
                                                                line: int) -> None:
    """Whatever the record holds, the GPU's report of it and the CPU run's of the same barrier agree word for word."""
    from layoutgen.runtime import debug
    from layoutgen.runtime.plan import KernelSpec, LayoutSpec, ParamSpec
    from tests.helpers.debug_fault import FaultRecord, fault_words

    record = FaultRecord(fault_words(b"k.cu.j2", hit=1, block=block, thread=thread, access=access, line=line))
    window = LayoutSpec("Window", ("B", "K"), 136, "f32", 4)
    spec = KernelSpec("barrier_two", "barrier_two.cu", (ParamSpec("x", "in", window, "Window.snap", 4, cols=(0, 96)),),
                      ("B", "K"), 0, 1, 128)
    real = debug._fault_record, debug._synchronize
    debug._fault_record, debug._synchronize = (lambda module: record), (lambda stream: None)
    try:
        with pytest.raises(debug.BarrierFault) as info:
            debug.check_fault(spec, object(), None)
    finally:
        debug._fault_record, debug._synchronize = real
    from layoutgen.project.execute_findings import finding_diagnostic
    from layoutgen.project.execute_harness import HostProgram
    from layoutgen.project.footprints import Footprint
    from layoutgen.schema.diagnostics import Site

    program = HostProgram("barrier_two", "barrier_two.cu",
                          (Footprint("x", "Window.snap", "in", 4, "f32", 183, 136, 0, 96),), 1, 6, 128, 0, "")
    fields = {"kind": debug.BARRIER_KINDS[access], "what": "__syncthreads()", "block": str(block),
              "thread": str(thread), "pc": "", "calls": ""}
    cpu = finding_diagnostic(program, fields, Site("k.cu.j2", line), None)
    gpu = info.value.diagnostic
    assert (gpu.message, gpu.hint, str(gpu.site)) == (cpu.message, cpu.hint, str(cpu.site))
    assert (gpu.code, cpu.code) == ("LG642", "LG652")


FILL = "_ZN2lg6v0_1_05debug21fill_shared_with_onesEv"  # lg::v0_1_0::debug::fill_shared_with_ones()


@pytest.mark.parametrize("kernel", ["static_shared_block", "tile_capacity_loop", "entry_pitch"])
def test_a_debug_kernel_fills_its_blocks_shared_memory_with_ones_first(kernel: str) -> None:
    """Each generated kernel of the debug build (a template's, a hand-written entry's) first fills the block's shared
    memory, static arrays and dynamic buffer, with all-ones bytes (lg/debug_shared.cuh), as the CPU run does before
    each block: what a block reads of it before writing is a NaN there too. The release build does not."""
    spec = "tests/specs/sanitizer/bad.py"
    loaded = load_spec(REPO / spec)
    assert loaded.spec is not None
    found = {}
    for debug in (False, True):
        rendered = render_spec(loaded.spec, REPO, spec, debug=debug, out="build/test-debug-fill")
        headers = tuple(sorted((path.rsplit("/", 1)[-1], text) for path, text in rendered.files.items()
                               if path.endswith(".cuh")))
        path = f"{loaded.spec.name}/{kernel}.cu"
        body = rendered.files[path].split(f"{kernel}(", 1)[1].split("{\n", 1)[1]
        found[debug] = (body.splitlines()[0].strip(), sorted({name.rsplit("$", 1)[-1] for name in _symbols(
            compile_cubin(CompileRequest(rendered.files[path], path, headers=headers, arch="sm_90")).cubin)
            if name.endswith(FILL)}))
    assert found[True] == ("lg::fill_shared_with_ones();  // debug build: the block's shared memory all-ones bytes "
                           "first (lg/debug_shared.cuh)", [FILL])
    assert found[False][1] == [] and "fill_shared_with_ones" not in found[False][0]


@settings(max_examples=60, deadline=None)
@given(b=st.integers(0, 2), k=st.integers(0, 60), col=st.integers(0, 95), held=st.integers(1, 31),
       extra=st.integers(0, 30), tile_col=st.integers(0, 95), block=st.integers(0, 5), thread=st.integers(0, 127),
       line=st.integers(0, 10**5), unheld=st.booleans())
def test_every_nan_from_finite_inputs_is_worded_as_the_cpu_runs_finding(b: int, k: int, col: int, held: int,
                                                                       extra: int, tile_col: int, block: int,
                                                                       thread: int, line: int, unheld: bool) -> None:
    """Whatever the NaN's place and the unheld read's record, the GPU's LG612 and the CPU run's LG655 (or LG654, with no
    such read) agree word for word, at the same line (none where the record has none)."""
    from layoutgen.project.execute_findings import finding_diagnostic
    from layoutgen.runtime.debug import UnheldRecord
    from layoutgen.schema.diagnostics import Site

    row, tile_row = b * 61 + k, min(held + extra, 31)
    record = UnheldRecord(1, 0, tile_row, tile_col, held, 32, block, thread, line)
    file = "tests/specs/sanitizer/tile_capacity_loop.cu.j2"
    gpu = _gpu_nan((record, file, "tile_capacity_loop.xs (a tile of x)") if unheld else None, at=(b, k, col))
    fields = {"kind": "unheld" if unheld else "nan", "region": "1", "row": str(row), "col": str(col),
              "field_row": str(row), "tile": "0", "tile_row": str(tile_row), "tile_col": str(tile_col),
              "held": str(held), "capacity": "32", "block": str(block), "thread": str(thread)}
    at = Site(file, line) if unheld and line > 0 else None
    cpu = finding_diagnostic(_program(), fields, at, None)
    assert (gpu.message, gpu.hint, str(gpu.site)) == (cpu.message, cpu.hint, str(cpu.site))
