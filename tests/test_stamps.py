"""A package of two `layoutgen generate` runs never launches (issue 29, item 4; LG640).

`generate` renames its staged files one at a time, `__init__.py` last, so a run killed between two renames
leaves kernels or a views header of the new run beside the launchers of the old one. The generated module
names the stamp of every file its launchers compile (`layoutgen.runtime.stamps`), and a launcher refuses
a file of another run before compiling it or loading any cubin of it. The kill test kills `generate` before
each rename in turn (30 kills) and launches every kernel of what is left on the stand-in device.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from layoutgen.cli import main
from layoutgen.codegen.stamp import stamp, stamps_by_name
from layoutgen.runtime import cache as cache_module
from layoutgen.runtime import cubin_module, launch, prebuilt, stamps
from layoutgen.runtime.errors import LaunchError
from layoutgen.runtime.launch import KernelLauncher
from layoutgen.runtime.paths import PYTHON_LAUNCH_ENV
from tests.fake_device import FUNCTION, Recorded, fake_device
from tests.helpers.cli import nvrtc_missing
from tests.helpers.launch import Dev, dev_reader

KERNELS = ("k0", "k1", "k2", "k3")
#: The files `generate` renames, in its order (by name, the module last).
FILES = ("example.cuh", *(f"{k}.cu" for k in KERNELS), "__init__.py")
#: The two runs a kill falls between: the context field 16 wide (rows of 56) or 24 (rows of 64).
CONTEXT = {"56": 16, "64": 24}
B, K = 2, 3


def spec_text(context: int) -> str:
    kernels = "\n".join(f'{k} = Kernel("{k}", "{k}.cu.j2", [In("x", [B, K, F]), Out("y", [B, K, F])])'
                        for k in KERNELS)
    binds = ", ".join(f"{k}.bind(x=Window.snap, y=Features)" for k in KERNELS)
    return (f'from layoutgen import Field, In, Kernel, Layout, Out, Spec, dims, f32\n\n'
            f'B, K, F = dims("B K F")\n'
            f'Window = Layout("Window", [B, K], f32, [Field("snap", 40), Field("context", {context})])\n'
            f'Features = Layout("Features", [B, K], f32, width=40)\n\n{kernels}\n\n'
            f'spec = Spec("example", kernels=[{binds}])\n')


def run(project: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.chdir(project), contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
        code = main(list(args))
    return code, out.getvalue()


def package(project: Path) -> Path:
    return project / "generated" / "example"


def on_disk(project: Path) -> dict[str, str]:
    return {name: (package(project) / name).read_text(encoding="utf-8") for name in FILES}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["spec.py"]\n')
    for i, k in enumerate(KERNELS):
        (root / f"{k}.cu.j2").write_text(f"    for (int f = 0; f < F; ++f)\n        y.at(row, f) = {i + 1}.0f * "
                                         "x.at(row, f);\n")
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("LAYOUTGEN_NO_JIT", raising=False)
    monkeypatch.setenv(PYTHON_LAUNCH_ENV, "1")  # each launcher's first call is the Python path's anyway
    monkeypatch.chdir(root)
    return root


def generate(project: Path, width: str) -> dict[str, str]:
    (project / "spec.py").write_text(spec_text(CONTEXT[width]))
    code, out = run(project, "generate", "-q")
    assert code == 0, out
    return on_disk(project)


def import_package(project: Path, name: str) -> Any:
    """The generated package, imported afresh from its files under ``name`` (as a new process would)."""
    spec = importlib.util.spec_from_file_location(name, package(project) / "__init__.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Device 0 stood in for; loading a kernel records the request it was compiled from (nothing compiles)."""
    requests: list[Any] = []
    monkeypatch.setattr(launch, "find_device", lambda: 0)
    monkeypatch.setattr(launch, "device_arch", lambda device: "sm_90")
    monkeypatch.setitem(launch._FAST_READERS, Dev, dev_reader)
    fake_device(monkeypatch)
    monkeypatch.setattr(launch, "_load", lambda request, *rest: requests.append(request) or SimpleNamespace(
        get_function=lambda name: SimpleNamespace(kernel=SimpleNamespace(ptr=FUNCTION))))
    monkeypatch.setattr(launch, "make_launch", lambda kernel, n, name: Recorded(lambda *launched: None))
    return requests


def launch_all(module: Any, width: int, requests: list[Any]) -> dict[str, Any]:
    """Each kernel of ``module`` called on arrays of the widths its launchers check: the request it compiled
    from, or the LaunchError that refused it (with nothing compiled or loaded)."""
    outcome: dict[str, Any] = {}
    for k in KERNELS:
        before = len(requests)
        try:
            getattr(module, k)(Dev((B, K, width)), Dev((B, K, 40), ptr=0x7E00_0000_0000))
        except LaunchError as exc:
            assert len(requests) == before, "a refused kernel was compiled or loaded"
            outcome[k] = exc
        else:
            outcome[k] = requests[-1]
    return outcome


def killed_generate(project: Path, before: int) -> None:
    """`layoutgen generate` in a child process killed (``os._exit``) just before its rename number ``before``
    (0-based) of a file in the package."""
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        try:
            renames = [0]
            real = os.replace

            def replace(src: Any, dst: Any, **kwargs: Any) -> None:
                if Path(os.fsdecode(dst)).parent == package(project).resolve() or \
                        Path(os.fsdecode(dst)).parent == package(project):
                    if renames[0] == before:
                        os._exit(9)
                    renames[0] += 1
                real(src, dst, **kwargs)

            os.replace = replace  # type: ignore[assignment]
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                main(["generate", "-q"])
        finally:
            os._exit(0)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 9, "generate finished before the kill"


def test_a_kill_before_each_rename_leaves_no_package_that_launches_mixed_code(
        project: Path, stand_in: list[Any]) -> None:
    runs = {width: generate(project, width) for width in ("64", "56")}  # each run's files, as it writes them
    assert all(runs["56"][name] != runs["64"][name] for name in FILES)  # every file changes between the two
    refused = 0
    for kill in range(30):
        target, renamed = ("64", "56")[kill % 2], kill % len(FILES)
        (project / "spec.py").write_text(spec_text(CONTEXT[target]))
        killed_generate(project, renamed)
        files = on_disk(project)
        of = {name: next(w for w in runs if runs[w][name] == text) for name, text in files.items()}  # never half
        assert [of[name] for name in FILES] == [target] * renamed + [of["__init__.py"]] * (len(FILES) - renamed), kill
        module_run = of["__init__.py"]
        module = import_package(project, f"_lg_kill_{kill}")
        assert module.Window.spec.width == int(module_run)
        for k, got in launch_all(module, int(module_run), stand_in).items():
            whole = of[f"{k}.cu"] == of["example.cuh"] == module_run
            if whole:  # launched, compiled from the files of the module's own run
                assert not isinstance(got, LaunchError), got
                assert got.source == runs[module_run][f"{k}.cu"]
                assert got.headers == (("example.cuh", runs[module_run]["example.cuh"]),)
            else:
                assert isinstance(got, LaunchError) and got.code == "LG640", got
                refused += 1
        # The next generate recovers: the whole package of the target run, which launches every kernel.
        assert run(project, "generate", "-q")[0] == 0
        assert on_disk(project) == runs[target]
        assert sorted(p.name for p in package(project).iterdir() if p.name != "__pycache__") == sorted(FILES)
        recovered = launch_all(import_package(project, f"_lg_recovered_{kill}"), int(target), stand_in)
        assert all(not isinstance(got, LaunchError) for got in recovered.values()), recovered
    # Killed before the first rename, the package is the earlier run's; before any other, the views header is the
    # new run's and every kernel is refused: 25 kills of 4 kernels.
    assert refused == 25 * len(KERNELS)


def test_a_kernel_of_another_run_is_refused_naming_both_runs(project: Path, stand_in: list[Any]) -> None:
    old = generate(project, "56")
    new = generate(project, "64")
    (package(project) / "__init__.py").write_text(old["__init__.py"])  # the module of the earlier run
    module = import_package(project, "_lg_mixed")
    with pytest.raises(LaunchError) as info:
        module.k2(Dev((B, K, 56)), Dev((B, K, 40), ptr=0x7E00_0000_0000))
    assert stand_in == []
    found, want = stamps.stamp_of(new["k2.cu"]), stamps.stamp_of(old["k2.cu"])
    assert found is not None and want is not None
    assert str(info.value) == (
        f"error[LG640]: `generated/example/k2.cu` is of another run of `layoutgen generate` than "
        f"`generated/example/__init__.py`: the file is {found[:19]}, the module was generated with {want[:19]}; "
        "`k2` would check arrays against the layouts of one run and compile the kernel of another, so it compiles "
        "and loads nothing\n"
        "  hint: run `layoutgen generate` to write the whole package again (a run that was interrupted leaves "
        "files of two runs), then import it again")


def test_a_header_of_another_run_or_without_a_stamp_is_refused(project: Path, stand_in: list[Any]) -> None:
    old = generate(project, "56")
    want = stamps.stamp_of(generate(project, "64")["example.cuh"])
    header = package(project) / "example.cuh"
    header.write_text(old["example.cuh"])
    module = import_package(project, "_lg_mixed_header")
    with pytest.raises(LaunchError, match=r"^error\[LG640\]: `generated/example/example.cuh` is of another run "):
        module.k0(Dev((B, K, 64)), Dev((B, K, 40), ptr=0x7E00_0000_0000))
    header.write_text("#pragma once\n")
    with pytest.raises(LaunchError) as info:
        module.k0(Dev((B, K, 64)), Dev((B, K, 40), ptr=0x7E00_0000_0000))
    assert str(info.value).startswith(
        f"error[LG640]: `generated/example/example.cuh` has no `layoutgen-hash` line, and "
        f"`generated/example/__init__.py` was generated with the one of {(want or '')[:19]}; `k0` would check ")
    assert stand_in == []


def test_a_file_edited_by_hand_keeps_its_runs_stamp_and_launches(project: Path, stand_in: list[Any]) -> None:
    files = generate(project, "56")
    kernel = package(project) / "k1.cu"
    kernel.write_text(files["k1.cu"] + "// tried something\n")
    outcome = launch_all(import_package(project, "_lg_edited"), 56, stand_in)
    assert outcome["k1"].source == files["k1.cu"] + "// tried something\n"


@pytest.mark.skipif(nvrtc_missing() is not None, reason=str(nvrtc_missing()))
def test_a_shipped_cubin_is_not_loaded_for_a_kernel_of_another_run(project: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The check comes before the shipped cubins are looked at: a package whose module is of one run and whose
    kernel, header and cubins are of another loads nothing, even where compiling is forbidden (not LG626)."""
    old = generate(project, "56")
    generate(project, "64")
    assert run(project, "build", "-q", "--arch", "sm_90")[0] == 0
    (package(project) / "__init__.py").write_text(old["__init__.py"])
    loaded: list[bytes] = []
    monkeypatch.setattr(cubin_module, "LoadedCubin", lambda data: loaded.append(data))
    monkeypatch.setattr(cache_module.CubinCache, "load", lambda self, request: pytest.fail("compiled"))
    monkeypatch.setattr(prebuilt, "driver_major", lambda: None)
    monkeypatch.setenv("LAYOUTGEN_NO_JIT", "1")
    module = import_package(project, "_lg_mixed_built")
    launcher = next(v for v in vars(module).values() if isinstance(v, KernelLauncher) and v.spec.name == "k0")
    with pytest.raises(LaunchError, match=r"^error\[LG640\]: `generated/example/k0.cu` is of another run "):
        launcher.function(0, "sm_90")
    assert loaded == []


@settings(max_examples=200, deadline=None)
@given(body=st.text(), source=st.text(min_size=1), comment=st.sampled_from(["//", "#"]),
       version=st.from_regex(r"[0-9][0-9a-z.+]{0,12}", fullmatch=True))
def test_the_runtime_reads_the_stamp_the_generator_writes(body: str, source: str, comment: str, version: str) -> None:
    """The runtime may not import the generator, so it reads the stamp line on its own: the two agree for any
    body, source and version, and with what a generated module is given to expect."""
    text = stamp(body, comment=comment, source=source, version=version)
    found = stamps.stamp_of(text)
    assert found is not None and found == stamps_by_name({"pkg/file.cu": text})["file.cu"]
    assert text.split("\n")[1] == f"{comment} layoutgen-hash: {found}"
