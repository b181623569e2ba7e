"""Ahead-of-time builds: `layoutgen build`, the cubins and manifest it ships, how launchers choose from them.

Everything here runs without a GPU: the build compiles offline with NVRTC,
and the launcher tests stand in for the device (its arch) and for the driver
(loading a module), so what they check is which bytes a launcher loads, and
that NVRTC is not asked when a shipped cubin fits.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import struct
import warnings
from pathlib import Path
from typing import Any

import pytest

from layoutgen.cli import main
from layoutgen.project.config import ConfigError, load_config
from layoutgen.runtime import cache as cache_module
from layoutgen.runtime import cubin_module, launch, prebuilt
from layoutgen.runtime.device_library import library_digest
from layoutgen.runtime.errors import LaunchError
from layoutgen.runtime.prebuilt import PrebuiltFallback, pick_arch
from tests.helpers.aot import SCALE, SHIFT, SPEC, launcher
from tests.helpers.cli import nvrtc_missing

needs_nvrtc = pytest.mark.skipif(nvrtc_missing() is not None, reason=str(nvrtc_missing()))


def run(project: Path, *args: str) -> tuple[int, str]:
    """``layoutgen ARGS`` in ``project``: the exit status, and stdout and stderr as one text."""
    out = io.StringIO()
    with contextlib.chdir(project), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(list(args))
    return code, out.getvalue()


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project of one spec with two kernels, generated; its own compile cache; compiling allowed."""
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["spec.py"]\n')
    (root / "spec.py").write_text(SPEC)
    (root / "scale.cu.j2").write_text(SCALE)
    (root / "shift.cu.j2").write_text(SHIFT)
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LAYOUTGEN_NO_JIT", raising=False)
    monkeypatch.setattr(prebuilt, "_NOTED", set())
    monkeypatch.setattr(prebuilt, "driver_major", lambda: None)  # no driver here: its version is not known
    monkeypatch.chdir(root)  # where paths in messages are shown from
    assert run(root, "generate", "-q")[0] == 0
    return root


@pytest.fixture
def built(project: Path) -> Path:
    code, out = run(project, "build", "--arch", "sm_90,sm_80")
    assert code == 0, out
    return project


def cubin_sm(data: bytes) -> int:
    """The SM number an ELF cubin is for (e_flags: its low byte in ABI 7, NVRTC 12 below sm_100; the next in ABI 8)."""
    assert data[:4] == b"\x7fELF", "not a cubin (PTX is text)"
    flags = struct.unpack_from("<I", data, 0x30)[0]
    return int(flags & 0xFF if data[8] < 8 else (flags >> 8) & 0xFF)


class FakeModule:
    """Stands in for a loaded cubin: records the bytes the launcher loaded."""

    loaded: list[bytes] = []

    def __init__(self, cubin: bytes) -> None:
        FakeModule.loaded.append(cubin)

    def get_function(self, name: str) -> str:
        return name


class NamedLaunch(str):
    """A launch that launches nothing: the kernel's name, with the CUfunction handle a Launch has."""

    handle = 0


@pytest.fixture
def no_device(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """Loading a module records its bytes; making a launch of it does nothing; the bytes loaded, in order."""
    FakeModule.loaded = []
    monkeypatch.setattr(cubin_module, "LoadedCubin", FakeModule)
    monkeypatch.setattr(launch, "make_launch", lambda kernel, n, name: NamedLaunch(kernel))
    return FakeModule.loaded


def forbid_nvrtc(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("NVRTC or the compile cache was asked")

    monkeypatch.setattr(cache_module, "compile_cubin", refuse)
    monkeypatch.setattr(cache_module.CubinCache, "load", refuse)


def jit_gives(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    """The compile cache (and so NVRTC) hands out ``data``."""
    monkeypatch.setattr(cache_module.CubinCache, "load", lambda self, request: data)


# -- the build ------------------------------------------------------------------------------------


@needs_nvrtc
def test_build_writes_a_cubin_for_each_kernel_and_arch_and_a_manifest(project: Path) -> None:
    code, out = run(project, "build", "--arch", "sm_90,sm_80")
    assert code == 0, out
    folder = project / "generated" / "example" / "cubins"
    assert out.splitlines() == [
        "wrote generated/example/cubins/scale.sm_80.cubin",
        "wrote generated/example/cubins/shift.sm_80.cubin",
        "wrote generated/example/cubins/scale.sm_90.cubin",
        "wrote generated/example/cubins/shift.sm_90.cubin",
        "wrote generated/example/cubins/manifest.json",
        "Built 2 kernels for sm_80, sm_90 in 1 spec: 5 files changed.",
    ]
    manifest = json.loads((folder / "manifest.json").read_text())
    assert manifest["archs"] == ["sm_80", "sm_90"] and manifest["format"] == 2
    assert manifest["library"] == library_digest()  # the device library the cubins were compiled against
    assert sorted(manifest["kernels"]) == ["scale", "shift"]
    for name, entry in manifest["kernels"].items():
        assert entry["project_headers"] is None
        assert sorted(entry["cubins"]) == ["sm_80", "sm_90"]
        for arch, cubin in entry["cubins"].items():
            data = (folder / cubin["file"]).read_bytes()
            assert cubin["file"] == f"{name}.{arch}.cubin" and cubin["size"] == len(data)
            assert cubin_sm(data) == int(arch[3:])  # a cubin for exactly that arch, not PTX
    # A second build of the same sources writes nothing: the files are byte for byte the same.
    assert run(project, "build", "--arch", "sm_80,sm_90") == (
        0, "Built 2 kernels for sm_80, sm_90 in 1 spec: 0 files changed.\n")
    assert run(project, "check")[0] == 0
    assert run(project, "generate", "--check")[0] == 0  # generate leaves the cubins alone


@needs_nvrtc
def test_build_for_fewer_archs_removes_the_cubins_of_the_others(built: Path) -> None:
    code, out = run(built, "build", "-q", "--arch", "sm_90")
    assert (code, out) == (0, "Built 2 kernels for sm_90 in 1 spec: 3 files changed.\n")
    folder = built / "generated" / "example" / "cubins"
    assert sorted(p.name for p in folder.iterdir()) == ["manifest.json", "scale.sm_90.cubin", "shift.sm_90.cubin"]


def test_build_without_archs_is_lg521(project: Path) -> None:
    code, out = run(project, "build")
    assert code == 1
    assert out == (
        "pyproject.toml:1: error[LG521]: `layoutgen build` needs the architectures to build for: "
        "`[tool.layoutgen].build_archs` is missing or empty and no --arch was given\n"
        '  hint: list them under [tool.layoutgen], like `build_archs = ["sm_80", "sm_90"]`, or pass --arch '
        "sm_80,sm_90\n"
        "Found 1 error in 1 spec.\n")


@needs_nvrtc
def test_build_archs_come_from_the_config(project: Path) -> None:
    (project / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["spec.py"]\nbuild_archs = ["sm_89"]\n')
    assert run(project, "build", "-q") == (0, "Built 2 kernels for sm_89 in 1 spec: 3 files changed.\n")


def test_build_archs_must_be_a_list_of_archs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.layoutgen]\nbuild_archs = "sm_90"\n')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    assert str(info.value) == ('`[tool.layoutgen].build_archs` must be a list of architectures like ["sm_80", '
                               '"sm_90"], got "sm_90" (pyproject.toml)')
    (tmp_path / "pyproject.toml").write_text('[tool.layoutgen]\nbuild_archs = ["sm_90"]\n')
    with pytest.raises(ConfigError, match=r'got "compute_90" in \["compute_90"\] \(override\)$'):
        load_config(tmp_path, {"build_archs": ["compute_90"]})


def test_build_refuses_generated_files_that_are_not_current(project: Path) -> None:
    (project / "scale.cu.j2").write_text(SCALE.replace("2.0f", "3.0f"))
    code, out = run(project, "build", "--arch", "sm_90")
    assert code == 1
    assert "error[LG502]: 2 files of `generated/example/` are not what spec `example` generates now:" in out
    assert not (project / "generated" / "example" / "cubins").exists()


# -- drift -----------------------------------------------------------------------------------------


@needs_nvrtc
def test_check_reports_cubins_of_another_source(built: Path) -> None:
    (built / "shift.cu.j2").write_text(SHIFT.replace("1.0f", "2.0f"))
    assert run(built, "generate", "-q")[0] == 0
    code, out = run(built, "check")
    assert code == 1
    assert out == (
        "spec.py:1: error[LG520]: the cubins in `generated/example/cubins/` are not of the kernels spec `example` "
        "generates now:\n"
        "  the cubins of `shift` in `generated/example/cubins/` were built from another `shift.cu` or `example.cuh` "
        "than the generated ones\n"
        "  hint: run `layoutgen build` (after `layoutgen generate`) and ship the new cubins; launchers compile with "
        "NVRTC what does not fit\n"
        "Found 1 error in 1 spec.\n")
    code, out = run(built, "generate", "--check")
    assert code == 1 and "error[LG520]" in out


@needs_nvrtc
def test_check_reports_a_changed_cubin_a_removed_kernel_and_other_archs(built: Path) -> None:
    folder = built / "generated" / "example" / "cubins"
    with (folder / "scale.sm_80.cubin").open("ab") as handle:
        handle.write(b"\0")
    (built / "spec.py").write_text(SPEC.replace(", shift.bind(x=Window.snap, y=Features)", ""))
    (built / "pyproject.toml").write_text(
        '[tool.layoutgen]\nspecs = ["spec.py"]\nbuild_archs = ["sm_80", "sm_90", "sm_100"]\n')
    assert run(built, "generate", "-q")[0] == 0
    code, out = run(built, "check")
    assert code == 1
    assert out.splitlines()[1:5] == [
        "  they were built for sm_80, sm_90, and `build_archs` lists sm_80, sm_90, sm_100",
        "  `generated/example/cubins/scale.sm_80.cubin` is not the cubin its manifest names (size or sha256 differ)",
        "  `shift` is no longer generated, but generated/example/cubins/ has its cubins",
        "  hint: run `layoutgen build` (after `layoutgen generate`) and ship the new cubins; launchers compile with "
        "NVRTC what does not fit",
    ]


def test_check_is_silent_where_nothing_was_built(project: Path) -> None:
    assert run(project, "check") == (0, "All checks passed: 1 spec, no errors.\n")


# -- launchers -------------------------------------------------------------------------------------


@needs_nvrtc
def test_the_launcher_loads_the_built_cubin_without_nvrtc(built: Path, no_device: list[bytes],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_nvrtc(monkeypatch)
    monkeypatch.setenv("LAYOUTGEN_NO_JIT", "1")  # and it is not needed
    folder = built / "generated" / "example" / "cubins"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no note either
        assert launcher(built, "scale").function(0, "sm_90") == "scale"
        launcher(built, "shift").function(0, "sm_86")  # sm_80's cubin runs on an sm_86
    assert no_device == [(folder / "scale.sm_90.cubin").read_bytes(), (folder / "shift.sm_80.cubin").read_bytes()]


@needs_nvrtc
def test_no_fitting_cubin_compiles_with_a_note_once(built: Path, no_device: list[bytes],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    jit_gives(monkeypatch, b"compiled")
    with pytest.warns(PrebuiltFallback) as notes:
        launcher(built, "scale").function(0, "sm_75")
        launcher(built, "shift").function(0, "sm_75")
    assert [str(n.message) for n in notes] == [
        "note[LG627]: `generated/example/cubins/` has no cubin that runs on sm_75 (built for sm_80, sm_90); "
        "compiling with NVRTC instead"]
    assert no_device == [b"compiled", b"compiled"]


@needs_nvrtc
def test_a_kernel_changed_since_the_build_compiles_with_a_note(built: Path, no_device: list[bytes],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    jit_gives(monkeypatch, b"compiled")
    kernel = built / "generated" / "example" / "scale.cu"
    kernel.write_text(kernel.read_text() + "// edited after the build\n")
    with pytest.warns(PrebuiltFallback) as notes:
        launcher(built, "scale").function(0, "sm_90")
    assert [str(n.message) for n in notes] == [
        "note[LG627]: the cubins of `scale` in `generated/example/cubins/` were built from another `scale.cu` or "
        "`example.cuh` than the generated ones; compiling with NVRTC instead"]
    assert no_device == [b"compiled"]


@needs_nvrtc
def test_cubins_built_against_another_device_library_compile_with_a_note(built: Path, no_device: list[bytes],
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The device library (`lg/*.cuh`) is compiled into every cubin, and the generated sources name only its
    version: a package built against other library headers (an edited checkout, another build of the same
    version) must not be loaded. The manifest holds the library's digest; a launcher compares it."""
    path = built / "generated" / "example" / "cubins" / "manifest.json"
    manifest = json.loads(path.read_text())
    assert manifest["library"] == library_digest()
    path.write_text(json.dumps({**manifest, "library": "0" * 64}))  # as a build against other headers writes it
    jit_gives(monkeypatch, b"compiled")
    reason = ("the cubins in `generated/example/cubins/` were built against another device library (`lg/*.cuh`) "
              "than this layoutgen's")
    with pytest.warns(PrebuiltFallback) as notes:
        launcher(built, "scale").function(0, "sm_90")
    assert [str(n.message) for n in notes] == [f"note[LG627]: {reason}; compiling with NVRTC instead"]
    assert no_device == [b"compiled"]
    code, out = run(built, "check")  # and `check` says the shipped cubins are stale
    assert code == 1 and out.splitlines()[1] == f"  {reason}", out
    # A manifest of the format before the digest (1) has none to compare: its cubins are not loaded either.
    path.write_text(json.dumps({k: v for k, v in {**manifest, "format": 1}.items() if k != "library"}))
    with pytest.warns(PrebuiltFallback) as notes:
        launcher(built, "shift").function(0, "sm_90")
    assert [str(n.message) for n in notes] == [
        "note[LG627]: `generated/example/cubins/manifest.json` cannot be read: it is not a manifest of format 2; "
        "compiling with NVRTC instead"]


@needs_nvrtc
def test_cubins_of_a_newer_cuda_than_the_driver_compile_with_a_note(built: Path, no_device: list[bytes],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from layoutgen.runtime.nvrtc import nvrtc_version

    jit_gives(monkeypatch, b"compiled")
    major, minor = nvrtc_version()
    monkeypatch.setattr(prebuilt, "driver_major", lambda: major - 1)
    with pytest.warns(PrebuiltFallback) as notes:
        launcher(built, "scale").function(0, "sm_90")
    assert [str(n.message) for n in notes] == [
        f"note[LG627]: the cubins in `generated/example/cubins/` were built by NVRTC {major}.{minor}, and the driver "
        f"runs CUDA {major - 1} (a CUDA {major - 1} driver loads the cubins of NVRTC {major - 1}: build them with "
        f"layoutgen[cuda{major - 1}]); compiling with NVRTC instead"]


def test_without_a_build_the_launcher_compiles_silently(project: Path, no_device: list[bytes],
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    jit_gives(monkeypatch, b"compiled")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        launcher(project, "scale").function(0, "sm_90")
    assert no_device == [b"compiled"]


@needs_nvrtc
def test_no_jit_refuses_to_compile_when_no_cubin_fits(built: Path, no_device: list[bytes],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_nvrtc(monkeypatch)
    monkeypatch.setenv("LAYOUTGEN_NO_JIT", "1")
    with pytest.raises(LaunchError) as info:
        launcher(built, "scale").function(0, "sm_75")
    assert info.value.code == "LG626"
    assert str(info.value) == (
        "error[LG626]: `scale` has no prebuilt cubin for sm_75: `generated/example/cubins/` has no cubin that runs "
        "on sm_75 (built for sm_80, sm_90); `LAYOUTGEN_NO_JIT=1` forbids compiling it at run time\n"
        "  hint: run `layoutgen build --arch sm_75` and ship the generated package's `cubins/` with it, or unset "
        "LAYOUTGEN_NO_JIT to let the launcher compile with NVRTC")
    assert no_device == []


def test_no_jit_refuses_a_package_without_cubins(project: Path, no_device: list[bytes],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    forbid_nvrtc(monkeypatch)
    monkeypatch.setenv("LAYOUTGEN_NO_JIT", "1")
    with pytest.raises(LaunchError, match=r"^error\[LG626\]: `scale` has no prebuilt cubin for sm_90: "
                       r"`generated/example/cubins/` is not there \(`layoutgen build` was not run\); "):
        launcher(project, "scale").function(0, "sm_90")
    monkeypatch.setenv("LAYOUTGEN_NO_JIT", "0")  # 0 allows it again
    jit_gives(monkeypatch, b"compiled")
    launcher(project, "scale").function(0, "sm_90")
    assert no_device == [b"compiled"]


@pytest.mark.parametrize(("archs", "device", "chosen"), [
    (("sm_80", "sm_90"), "sm_90", "sm_90"),
    (("sm_80", "sm_90"), "sm_86", "sm_80"),  # same major, lower minor
    (("sm_80", "sm_86"), "sm_89", "sm_86"),  # the nearest lower minor
    (("sm_80", "sm_90"), "sm_75", None),  # an older GPU runs no newer cubin
    (("sm_80",), "sm_90", None),  # nor another major's
    (("sm_90a",), "sm_90", "sm_90a"),
    (("sm_90", "sm_90a"), "sm_90", "sm_90"),
    (("sm_80a",), "sm_86", None),  # arch-specific: only sm_80 itself
    (("sm_100f",), "sm_103", "sm_100f"),  # a family cubin runs on later minors
    (("sm_89", "sm_100"), "sm_120", None),
])
def test_pick_arch_follows_cuda_binary_compatibility(archs: tuple[str, ...], device: str, chosen: str | None) -> None:
    assert pick_arch(archs, device) == chosen


# -- where and how a build writes (issue 29, item 5) ------------------------------------------------


def test_a_cubins_folder_that_is_a_link_is_refused_and_nothing_is_written_through_it(
        project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.sm_90.cubin").write_bytes(b"not layoutgen's")  # named like a stale cubin: a build would remove it
    (project / "generated" / "example" / "cubins").symlink_to(outside, target_is_directory=True)
    assert run(project, "build", "--arch", "sm_90") == (1, (
        "error[LG517]: `generated/example/cubins` is a symbolic link; layoutgen makes none inside a generated "
        "package and writes through none\n"
        "  hint: remove the link (`rm generated/example/cubins`) and let layoutgen make the folder\n"
        "Found 1 error in 1 spec.\n"))
    assert sorted(p.name for p in outside.iterdir()) == ["keep.sm_90.cubin"]


@needs_nvrtc
@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_build_writes_cubins_and_manifest_with_the_umasks_mode(project: Path, umask: int, mode: int) -> None:
    """Like any compiler's output: another user of a shared package can read them (else LG627, and LG626 under
    LAYOUTGEN_NO_JIT=1), unless the umask says otherwise."""
    before = os.umask(umask)
    try:
        code, out = run(project, "build", "--arch", "sm_90")
    finally:
        os.umask(before)
    assert code == 0, out
    folder = project / "generated" / "example" / "cubins"
    assert {p.name: p.stat().st_mode & 0o777 for p in folder.iterdir()} == {
        "manifest.json": mode, "scale.sm_90.cubin": mode, "shift.sm_90.cubin": mode}
