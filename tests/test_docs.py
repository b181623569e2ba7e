"""The documentation says what the code does.

- every diagnostic code in the registry has its `## LGnnn name` section in
  docs/diagnostics.md, and every configuration key its entry in docs/config.md;
- every public name of `layoutgen` is in docs/api.md;
- the README's quickstart is exactly `make demo` and `make test`;
- each example of docs/diagnostics.md produces its code: the files a section
  shows (a code block under a line ending in "`path`:") are written to an empty
  project, the `$ layoutgen ...` commands of its `console` block are run there,
  and what they print must be what the section shows;
- the LG6xx examples, which need a GPU to run as written, are replayed through
  the launcher's own checks with stand-in arrays of the same shape, strides,
  dtype, device and pointer, and must give the message shown;
- `console` blocks of the README, docs/cli.md, docs/ci.md and examples/vsn/README.md that
  run `layoutgen show` or `layoutgen check` (no `--compile`) print what they show,
  run from the repository root;
- docs/tutorial.md runs, block by block, in an empty project: its files are
  written, its commands print what it shows, its Python runs (the blocks
  marked `gpu` only where CuPy sees a GPU).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import layoutgen
from layoutgen.cli import main
from layoutgen.project.config import KEYS
from layoutgen.schema.diagnostics import CODES

from tests.helpers.cli import nvrtc_missing, run_layoutgen
from tests.helpers.docs import (DIAGNOSTICS, DOCS, FENCE, FILE_CAPTION, REPO, blocks, console_blocks, files_of, read,
                                sections)

# -- registries against pages ---------------------------------------------------


def test_every_diagnostic_code_has_its_section() -> None:
    page = read(DOCS / "diagnostics.md")
    headings = re.findall(r"^## (LG\d{3}) ([\w-]+)\s*$", page, flags=re.M)
    documented = dict(headings)
    missing = [c for c in CODES if c not in documented]
    assert not missing, f"docs/diagnostics.md has no `## LGnnn name` section for {missing}"
    wrong = {c: (documented[c], CODES[c].name) for c in CODES if documented[c] != CODES[c].name}
    assert not wrong, f"section names differ from the registry's: {wrong}"
    stale = sorted(set(documented) - set(CODES))
    assert not stale, f"docs/diagnostics.md documents codes the registry no longer has: {stale}"
    for code, text in sections(page).items():
        severity = CODES[code].severity.value
        assert f"**Severity:** {severity}" in text, f"{code}: the section must say its severity ({severity})"


def test_every_install_command_of_the_docs_names_the_cuda_extra_of_a_driver() -> None:
    """`compile` is an old name of the CUDA 13 set: a CUDA 12 user who follows it gets NVRTC 13. Every page
    names `cuda13` or `cuda12`, never the alias."""
    pages = [REPO / "README.md", *sorted(DOCS.glob("*.md"))]
    installs = [(p.name, m[0]) for p in pages for m in re.finditer(r"pip install[^`\n]*", p.read_text("utf-8"))]
    assert installs
    offenders = [(page, line) for page, line in installs if "[compile]" in line or "compile]" in line]
    assert offenders == []
    tutorial = (DOCS / "tutorial.md").read_text("utf-8")
    assert '`pip install -e ".[cuda13]"` from a clone, or `.[cuda12]` where `nvidia-smi` shows a CUDA 12' in " ".join(
        tutorial.split())


def test_the_command_table_of_cli_md_lists_every_command() -> None:
    import argparse

    from layoutgen.cli import _parser

    actions = [a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction)]
    verbs = sorted(v for a in actions for v in a.choices)
    table = re.findall(r"^\| \[`(\w+)`\]\(#layoutgen-\1\) \|", (DOCS / "cli.md").read_text("utf-8"), re.M)
    assert sorted(table) == verbs


def test_the_generate_check_example_of_cli_md_is_what_generate_prints(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The header's diff after widening `Window.context` from 16 to 24 columns, as shown: every line but the
    stamps' hashes (which follow the version and the templates)."""
    page = (DOCS / "cli.md").read_text("utf-8")
    shown = re.search(r"^```text\n(--- a/generated/example/example\.cuh\n.*?)^```", page, re.M | re.S)
    assert shown
    spec = ("from layoutgen import Field, In, Kernel, Layout, Out, Spec, dims, f32\n\n"
            "B, K, F = dims(\"B K F\")\n"
            "Window = Layout(\"Window\", [B, K], f32, [Field(\"snap\", 40), Field(\"context\", 16)])\n"
            "Features = Layout(\"Features\", [B, K], f32, width=40)\n"
            "scale = Kernel(\"scale\", \"scale.cu.j2\", [In(\"x\", [B, K, F]), Out(\"y\", [B, K, F])])\n"
            "spec = Spec(\"example\", kernels=[scale.bind(x=Window.snap, y=Features)])\n")
    (tmp_path / "spec.py").write_text(spec)
    (tmp_path / "scale.cu.j2").write_text("    for (int f = 0; f < F; ++f) y.at(row, f) = 2.0f * x.at(row, f);\n")
    (tmp_path / "pyproject.toml").write_text('[tool.layoutgen]\nspecs = ["spec.py"]\n')
    monkeypatch.chdir(tmp_path)
    assert run_cli("generate", "-q")[0] == 0
    (tmp_path / "spec.py").write_text(spec.replace('Field(\"context\", 16)', 'Field(\"context\", 24)'))
    status, out = run_cli("generate", "--check")
    assert status == 1
    header = out[out.index("--- a/generated/example/example.cuh"):out.index("--- a/generated/example/scale.cu")]
    unhashed = re.compile(r"layoutgen-hash: sha256:[0-9a-f]{64}")
    assert unhashed.sub("HASH", header) == unhashed.sub("HASH", shown[1].split("3 generated files would")[0])
    assert out.endswith("3 generated files would change; run `layoutgen generate`.\n")


def run_cli(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = main(list(args))
    return status, out.getvalue()


def test_every_config_key_is_documented() -> None:
    page = read(DOCS / "config.md")
    missing = [key for key in KEYS if not re.search(rf"^### `{re.escape(key)}`", page, flags=re.M)]
    assert not missing, f"docs/config.md has no `### `key`` entry for {missing}"


def test_every_public_name_is_in_the_api_reference() -> None:
    page = read(DOCS / "api.md")
    missing = [n for n in layoutgen.__all__ if n != "__version__" and f"`{n}" not in page]
    assert not missing, f"docs/api.md does not mention {missing}"


def test_the_quickstart_is_exactly_make_demo_and_make_test() -> None:
    readme = read(REPO / "README.md")
    m = re.search(r"^## Quickstart\s*$(.*?)(?=^## )", readme, flags=re.M | re.S)
    assert m, "README.md has no `## Quickstart` section"
    code = [content for _, _, content in blocks(m.group(1))]
    assert len(code) == 1, f"the quickstart must have one code block, found {len(code)}"
    commands = [line.strip().removeprefix("$ ") for line in code[0].splitlines() if line.strip()]
    assert commands == ["make demo", "make test"]


# -- diagnostics: each example produces its code --------------------------------

RUNNABLE = sorted(code for code, text in DIAGNOSTICS.items() if console_blocks(text))


def _held_output_lock(project: Path, monkeypatch: pytest.MonkeyPatch) -> int:
    """LG508: another process holds the lock of `generated`; a clock that runs fast makes the wait short."""
    import fcntl

    from layoutgen.project import outlock

    (project / "generated").mkdir()
    holder = os.open(project / "generated", os.O_RDONLY)
    fcntl.flock(holder, fcntl.LOCK_EX)
    ticks = iter(range(0, 10**9, 100))
    monkeypatch.setattr(outlock, "time", SimpleNamespace(monotonic=lambda: next(ticks), sleep=lambda s: None))
    return holder


def _linked_out(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LG510: `generated` is a link to ../elsewhere."""
    (project.parent / "elsewhere").mkdir()
    (project / "generated").symlink_to(project.parent / "elsewhere")


def _open_cache(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LG512: `mkdir cache && chmod 777 cache`."""
    (project / "cache").mkdir()
    (project / "cache").chmod(0o777)


def _looped_out(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LG517: `ln -s generated generated`."""
    (project / "generated").symlink_to("generated")


#: Examples whose situation files cannot make: each is set up as the section's prose says.
PREPARE: dict[str, Any] = {"LG508": _held_output_lock, "LG510": _linked_out, "LG512": _open_cache,
                           "LG517": _looped_out}


@pytest.mark.parametrize("code", RUNNABLE)
def test_diagnostic_example_gives_its_code(code: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = DIAGNOSTICS[code]
    if "--compile" in text or "$ layoutgen build" in text:  # both compile with NVRTC
        reason = nvrtc_missing()
        if reason:
            pytest.skip(reason)
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text("")  # the project root: every setting has its default
    for rel, content in files_of(text).items():
        (project / rel).parent.mkdir(parents=True, exist_ok=True)
        (project / rel).write_text(content, encoding="utf-8")
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(tmp_path / "cache"))
    held = PREPARE[code](project, monkeypatch) if code in PREPARE else None  # what the section's prose says
    (runs,) = console_blocks(text)
    shown = "".join(f"$ {cmd}\n{out}" for cmd, out in runs)
    try:
        actual = "".join(f"$ {cmd}\n{run_layoutgen(cmd, project)}" for cmd, _ in runs)
    finally:
        if held is not None:
            os.close(held)
    severity = CODES[code].severity.value
    assert f"{severity}[{code}]" in actual, actual
    assert actual == shown, f"docs/diagnostics.md, {code}: the example's output changed"


# Stand-ins for the arrays of the LG6xx examples: what the launcher reads of a
# CuPy array, through ``__cuda_array_interface__`` (byte strides).
BASE = 0x7F00_0000_0000


class Dev:
    def __init__(self, shape: tuple[int, ...], typestr: str = "<f4", ptr: int = BASE,
                 strides: tuple[int, ...] | None = None, readonly: bool = False, device: int = 0) -> None:
        self.__cuda_array_interface__: dict[str, Any] = {
            "version": 3, "shape": shape, "typestr": typestr, "data": (ptr, readonly), "strides": strides,
        }
        self.device = SimpleNamespace(id=device)


def _fwd(**replace: Any) -> tuple[Any, ...]:
    """The arguments of the examples' `variable_selection_fwd(window, W, b, gates, y)` at B, K = 256, 64."""
    args: dict[str, Any] = {
        "x": Dev((256, 64, 56), ptr=BASE), "W": Dev((40, 40), ptr=BASE + 0x1000000),
        "b": Dev((40,), ptr=BASE + 0x2000000), "gates": Dev((256, 64, 40), ptr=BASE + 0x3000000),
        "y": Dev((256, 64, 40), ptr=BASE + 0x4000000),
    }
    args.update(replace)
    return tuple(args.values())


def _host_array() -> Any:
    import numpy as np

    return np.zeros((40, 40), np.float32)


LAUNCH_CASES: dict[str, Any] = {
    # window[:, :, :40]: the slice keeps the window's strides
    "LG601": lambda: _fwd(x=Dev((256, 64, 40), strides=(64 * 56 * 4, 56 * 4, 4))),
    "LG602": lambda: _fwd(W=Dev((40, 40), "<f8")),
    "LG603": lambda: _fwd(gates=Dev((128, 64, 40), ptr=BASE + 0x3000000)),
    # cp.empty((K, B, 40)).transpose(1, 0, 2)
    "LG604": lambda: _fwd(y=Dev((256, 64, 40), ptr=BASE + 0x4000000, strides=(40 * 4, 256 * 40 * 4, 4))),
    "LG605": lambda: _fwd(y=Dev((256, 64, 40), ptr=BASE + 0x4000000, device=1)),
    "LG606": lambda: _fwd(gates=Dev((256, 64, 40), ptr=BASE + 0x3000004)),
    "LG607": lambda: _fwd(gates=Dev((256, 64, 40), ptr=BASE + 0x3000000, readonly=True)),
    "LG608": lambda: _fwd(W=_host_array()),
    # cp.broadcast_to(cp.empty((1, K, 40)), (B, K, 40)): stride 0 on B, an output
    "LG610": lambda: _fwd(y=Dev((256, 64, 40), ptr=BASE + 0x4000000, strides=(0, 40 * 4, 4))),
    # gates for both outputs
    "LG614": lambda: _fwd(y=Dev((256, 64, 40), ptr=BASE + 0x3000000)),
    # the cases below make the call themselves: what they show happens in the call, past the arguments' checks
    "LG615": lambda: _without_a_device(lambda: _vsn().variable_selection_fwd(*_fwd())),
    "LG616": lambda: _vsn().variable_selection_fwd(*_fwd(), stream=12345),
    "LG617": lambda: _vsn().context_broadcast(Dev((2**31 - 1, 16)), Dev((2**31 - 1, 65, 56), ptr=BASE + 2**40)),
    "LG620": lambda: _vsn().sgd_update(*_sgd(), lr="5e-5"),
    "LG621": lambda: _dropout()(Dev((256, 64, 40)), Dev((256, 64, 40), ptr=BASE + 0x1000000), 0.1, -1),
    "LG622": lambda: _vsn().sgd_update(*_sgd(), lr=float("nan")),
    "LG623": lambda: _captured_vsn_step(lr=0.05).replay(lr=0.01),
    "LG624": lambda: _on_an_h200(_grid_launcher("series_reverse", 256, "general", 1, dims=("B",), shared=True),
                                 Dev((4, 60000, 1)), Dev((4, 60000, 1), ptr=BASE + 2**32)),
    "LG625": lambda: _on_an_h200(_grid_launcher("colsum", 1024, "persistent", 32), Dev((4096, 40)), occupancy=0),
    "LG626": lambda: _without_jit_on_an_sm_86(lambda: _vsn().variable_selection_fwd(*_fwd())),
    # the torch operators (docs/torch.md): meta tensors carry the shapes, as on a GPU; skipped without torch
    "LG629": lambda: _without_torch(lambda: _torch_runtime().import_torch("generated.vsn.torch_ops")),
    "LG630": lambda: _torch_ops().register("layoutgen_vsn", "vendored.vsn.torch_ops", "/vendored/vsn/torch_ops.py", ()),
    "LG631": lambda: _vsn_ops().context_broadcast(_meta(256, 16), -1),
    "LG632": lambda: _twice_differentiated(),
}


def _torch_runtime() -> Any:
    from layoutgen.runtime import torch_ops  # imports no torch

    return torch_ops


def _torch_ops() -> Any:
    """layoutgen's torch runtime, with the example's operators registered (skipped without torch)."""
    pytest.importorskip("torch")
    import generated.vsn.torch_ops  # noqa: F401  (registers layoutgen_vsn)
    from layoutgen.runtime import torch_ops

    return torch_ops


def _vsn_ops() -> Any:
    _torch_ops()
    import generated.vsn.torch_ops as module

    return module.ops


def _meta(*shape: int, grad: bool = False) -> Any:
    import torch

    return torch.empty(*shape, device="meta", requires_grad=grad)


def _without_torch(call: Any) -> None:
    """``call()`` where `import torch` fails as it does where torch is not installed."""
    import builtins
    from unittest import mock

    real = builtins.__import__

    def imports(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
        return real(name, *args, **kwargs)

    with mock.patch.object(builtins, "__import__", imports):
        call()


def _twice_differentiated() -> None:
    ops = _vsn_ops()  # skipped without torch
    import torch

    x, W, b = _meta(256, 64, 56, grad=True), _meta(40, 40, grad=True), _meta(40, grad=True)
    _, y = ops.variable_selection_fwd(x, W, b)
    torch.autograd.grad(y.sum(), (x,), create_graph=True)


def _grid_launcher(name: str, block: int, kind: str, per_block: int, dims: tuple[str, ...] = (),
                   shared: bool = False) -> Any:
    """The launcher of the grids examples: `series_reverse` (x, y: [B, K, 1], a `stage` of K floats) or a
    persistent `colsum` over one [N, 40] array."""
    from layoutgen.runtime.launch import BlockRule, KernelLauncher, KernelSpec, LayoutSpec, ParamSpec, SharedArray

    if shared:
        series = LayoutSpec("Series", ("B", "K"), 1, "f32", 4)
        params = (ParamSpec("x", "in", series, "Series", 4), ParamSpec("y", "out", series, "Series", 4))
    else:
        params = (ParamSpec("x", "in", LayoutSpec("Rows", ("N",), 40, "f32", 4), "Rows", 4),)
    spec = KernelSpec(name, f"{name}.cu", params, symbols=tuple(dict.fromkeys(
        s for p in params for s in p.layout.symbols)), grid_param=0, per_row=1, block=block,
        count=BlockRule(kind, per_block, dims), shared=(SharedArray("stage", 4, ("K",)),) if shared else ())
    return KernelLauncher(spec, REPO, "")


def _on_an_h200(launcher: Any, *arrays: Any, occupancy: int = 8) -> None:
    """Call ``launcher`` on device 0 as an H200 (132 SMs, 227 KiB a block) whose kernels launch nothing."""
    from unittest import mock

    from layoutgen.runtime import launch
    from layoutgen.runtime import occupancy as device

    function = mock.Mock(handle=0xF00D)
    with mock.patch.object(launch, "find_device", lambda: 0), mock.patch.object(launch, "device_arch", lambda d: "sm_90"), \
            mock.patch.object(type(launcher), "function", lambda self, d, a: function), \
            mock.patch.object(device, "_DEVICES", {0: device.DeviceLimits(232448, 132)}), \
            mock.patch.object(device, "_STATIC", {(0, 0xF00D): 0}), mock.patch.object(device, "_ALLOWED", {}), \
            mock.patch.object(device, "_RESIDENT", {(0, 0xF00D, launcher.spec.block, 0): occupancy}):
        launcher(*arrays)


def _vsn() -> Any:
    import generated.vsn as vsn

    return vsn


def _without_jit_on_an_sm_86(call: Any) -> None:
    """``call()`` on device 0 as an sm_86, under LAYOUTGEN_NO_JIT=1, where generated/vsn ships no cubins."""
    from unittest import mock

    from layoutgen.runtime import launch

    with mock.patch.object(launch, "find_device", lambda: 0), mock.patch.object(launch, "device_arch", lambda d: "sm_86"), \
            mock.patch.dict(os.environ, {"LAYOUTGEN_NO_JIT": "1"}):
        call()


def _without_a_device(call: Any) -> None:
    """``call()`` with CuPy as on a machine without a driver (getDevice: cudaErrorInsufficientDriver)."""
    from unittest import mock

    from cupy_backends.cuda.api.runtime import CUDARuntimeError

    from layoutgen.runtime import driver

    def get_device() -> int:
        raise CUDARuntimeError(35)

    with mock.patch.object(driver, "_GET_DEVICE", get_device), mock.patch.object(driver, "_NO_DEVICE", CUDARuntimeError):
        call()


def _sgd() -> tuple[Any, ...]:
    """The arrays of the examples' `sgd_update(W, b, grad_W, grad_b, lr)`."""
    return (Dev((40, 40)), Dev((40,), ptr=BASE + 0x1000000), Dev((40, 40), ptr=BASE + 0x2000000),
            Dev((40,), ptr=BASE + 0x3000000))


def _dropout() -> Any:
    """The launcher of LG621's `dropout(x, mask, p, seed)`: `Scalar("p", f32, finite=True)`, `Scalar("seed", u64)`."""
    from layoutgen.runtime.launch import KernelLauncher, KernelSpec, LayoutSpec, ParamSpec, ScalarSpec

    features = LayoutSpec("Features", ("B", "K"), 40, "f32", 4)
    params = (ParamSpec("x", "in", features, "Features", 4), ParamSpec("mask", "out", features, "Features", 4))
    spec = KernelSpec("dropout", "dropout.cu", params, symbols=("B", "K"), grid_param=0, per_row=40, block=256,
                      scalars=(ScalarSpec("p", "f32", finite=True), ScalarSpec("seed", "u64")))
    return KernelLauncher(spec, Path(), "")


def _captured_vsn_step(lr: float) -> Any:
    """A graph of `vsn_step` as `capture_vsn_step(..., lr=lr)` makes one (its capture needs a GPU)."""
    from layoutgen.runtime.program import ProgramGraph, ProgramRunner
    from layoutgen.runtime.validate import check_scalar

    (runner,) = [v for v in vars(_vsn()).values() if isinstance(v, ProgramRunner) and v.spec.name == "vsn_step"]
    (value,) = runner.spec.values
    return ProgramGraph("vsn_step", SimpleNamespace(launch=lambda stream: None), (), 7,
                        ((value, lr, check_scalar("vsn_step", value, lr)),))


@pytest.mark.parametrize("code", sorted(LAUNCH_CASES))
def test_launch_example_gives_its_message(code: str) -> None:
    import generated.vsn as vsn
    from layoutgen.runtime.launch import KernelLauncher, LaunchError

    (fwd,) = [v for v in vars(vsn).values() if isinstance(v, KernelLauncher) and v.spec.name == "variable_selection_fwd"]
    with pytest.raises(LaunchError) as info:
        fwd.check(LAUNCH_CASES[code](), device=0)
    assert info.value.code == code
    shown = [content for info_string, _, content in blocks(DIAGNOSTICS[code]) if info_string == "text"]
    kind = type(info.value)  # LaunchError, or a subclass of it (TorchUnavailable, LG629)
    assert shown == [f"{kind.__module__}.{kind.__qualname__}: {info.value}\n"], str(info.value)


# -- console blocks of the other pages, run from the repository root -------------

PAGES = [REPO / "README.md", DOCS / "cli.md", DOCS / "ci.md", REPO / "examples" / "vsn" / "README.md"]


def _replayable(runs: list[tuple[str, str]]) -> bool:
    return bool(runs) and all(
        cmd.startswith(("layoutgen show ", "layoutgen check ")) and "--compile" not in cmd
        and "--svg" not in cmd and "--png" not in cmd  # those write files; tests/test_diagram.py runs them
        for cmd, _ in runs
    )


REPLAYS = [
    pytest.param(page, n, runs, id=f"{page.relative_to(REPO).as_posix()}-{n}")
    for page in PAGES if page.exists()
    for n, runs in enumerate(console_blocks(read(page)))
    if _replayable(runs)
]


@pytest.mark.parametrize(("page", "n", "runs"), REPLAYS)
def test_console_output_on_the_pages_is_current(page: Path, n: int, runs: list[tuple[str, str]]) -> None:
    for command, shown in runs:
        assert run_layoutgen(command, REPO) == shown, f"{page.name}: the output of `{command}` changed"


def test_pages_show_commands_that_are_replayed() -> None:
    """The seed bug's diagnostic on the README and the example's page is checked, not just pasted."""
    for page in (REPO / "README.md", REPO / "examples" / "vsn" / "README.md"):
        commands = [cmd for p, _, runs in (r.values for r in REPLAYS) if p == page for cmd, _ in runs]
        assert "layoutgen check examples/vsn/seed_bug.py" in commands, page


# -- the README's Python example, on a GPU ----------------------------------------


def _gpu_reason() -> str | None:
    try:
        import cupy

        return None if cupy.cuda.runtime.getDeviceCount() > 0 else "no CUDA GPU here (0 devices)"
    except Exception as exc:  # no CuPy, or no driver: CUDARuntimeError
        return f"no CUDA GPU here ({type(exc).__name__}: {exc})"


@pytest.mark.gpu
def test_the_readme_python_example_runs_and_its_refusal_is_as_shown() -> None:
    reason = _gpu_reason()
    if reason:
        pytest.skip(reason)
    from layoutgen.runtime.launch import LaunchError

    readme = read(REPO / "README.md")
    python = [content for info, _, content in blocks(readme) if info == "python"]
    example = next(c for c in python if "import generated.vsn as vsn" in c)
    refusal = next(c for c in python if "window.data[:, :, :40]" in c)
    namespace: dict[str, Any] = {}
    exec(compile(example, "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
    y = namespace["y"].data
    assert bool(namespace["cp"].isfinite(y).all())
    with pytest.raises(LaunchError) as info:
        exec(compile(refusal, "README.md", "exec"), namespace)  # noqa: S102
    shown = next(c for i, _, c in blocks(readme) if i == "text" and "error[LG601]" in c)
    device = namespace["cp"].cuda.runtime.getDevice()
    assert shown == f"layoutgen.runtime.errors.LaunchError: {info.value}\n".replace(
        f"on device {device}", "on device 0")


# -- links between the pages -------------------------------------------------------

LINKED = [REPO / "README.md", REPO / "examples" / "vsn" / "README.md", *sorted(DOCS.glob("*.md"))]


def _slugs(markdown: str) -> set[str]:
    """GitHub's anchors of a page's headings (outside code blocks)."""
    text = FENCE.sub("", markdown)
    out = set()
    for heading in re.findall(r"^#{1,6} (.+?)\s*$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        out.add(slug)
    return out


@pytest.mark.parametrize("page", LINKED, ids=lambda p: p.relative_to(REPO).as_posix())
def test_relative_links_and_anchors_resolve(page: Path) -> None:
    text = FENCE.sub("", read(page))
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # https: and the like
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        if not linked.exists():
            broken.append(target)
        elif anchor and linked.suffix == ".md" and anchor not in _slugs(read(linked)):
            broken.append(target)
    assert not broken, f"{page.name}: broken links {broken}"


# -- the tutorial runs, in order, in an empty project ------------------------------------

TUTORIAL = DOCS / "tutorial.md"
_BLOCK = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```[ \t]*$", re.M | re.S)


def tutorial_steps(text: str) -> list[tuple[str, set[str], str, str]]:
    """Each fenced block: (language, the other words of its info string, caption line, content)."""
    out = []
    for m in _BLOCK.finditer(text):
        before = [line for line in text[: m.start()].splitlines() if line.strip()]
        out.append((m.group(1), set(m.group(2).split()), before[-1] if before else "", m.group(3)))
    return out


@pytest.fixture
def fresh_modules() -> Any:
    """Forget the tutorial's `spec` and `generated` modules before and after (the repo has its own)."""
    import sys

    def forget() -> dict[str, Any]:
        names = [n for n in sys.modules if n in ("spec", "generated") or n.startswith("generated.")]
        return {n: sys.modules.pop(n) for n in names}

    saved = forget()
    yield
    forget()
    sys.modules.update(saved)


def test_the_tutorial_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fresh_modules: Any) -> None:
    """Files are written, `$ layoutgen` commands give the output shown, Python blocks run.

    A ```text block captioned "It prints:" is the output of the Python block
    before it. Python blocks marked `gpu` (```python gpu) need a CUDA GPU;
    without one the test skips at the first of them, having run everything
    before it.
    """
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.setenv("LAYOUTGEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(project)
    monkeypatch.syspath_prepend(str(project))
    namespace: dict[str, Any] = {}
    printed = ""
    for n, (language, words, caption, content) in enumerate(tutorial_steps(read(TUTORIAL))):
        where = f"docs/tutorial.md, block {n + 1}"
        file = FILE_CAPTION.search(caption)
        if file:
            (project / file.group(1)).write_text(content, encoding="utf-8")
        elif language == "console":
            (runs,) = console_blocks(f"```console\n{content}```\n")
            for command, shown in runs:
                if "--compile" in command and nvrtc_missing():
                    pytest.skip(f"{where}: {nvrtc_missing()}")
                assert run_layoutgen(command, project) == shown, f"{where}: the output of `{command}` changed"
        elif language == "python":
            if "gpu" in words and _gpu_reason():
                pytest.skip(f"{where} needs a GPU: {_gpu_reason()}")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                exec(compile(content, where, "exec"), namespace)  # noqa: S102 - the tutorial's own code
            printed = out.getvalue()
        elif language == "text" and caption == "It prints:":
            assert printed == content, f"{where}: the Python block before it printed {printed!r}"


def test_the_tutorial_marks_gpu_blocks_and_ends_running_a_kernel() -> None:
    steps = tutorial_steps(read(TUTORIAL))
    gpu = [content for language, words, _, content in steps if language == "python" and "gpu" in words]
    assert gpu and any("tut.softmax_gate(" in c for c in gpu)
    first_gpu = next(i for i, (lang, words, _, _) in enumerate(steps) if lang == "python" and "gpu" in words)
    later = [lang for lang, words, caption, _ in steps[first_gpu:]
             if lang in ("python", "console") and "gpu" not in words]
    assert not later, "blocks after the first GPU block would be skipped without a GPU"
