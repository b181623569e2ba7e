"""The team's fixed VSN kernels (examples/existing_kernels/vsn_kernels_fixed.cu), declared as they are and
launched by the generated launchers, on a GPU against float64 NumPy; the launcher refuses wrong arrays."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

from examples.vsn.reference import context_broadcast, relative_error, vsn_backward, vsn_forward

pytestmark = pytest.mark.gpu
cp = pytest.importorskip("cupy")


@pytest.fixture
def ek() -> object:
    if cp.cuda.runtime.getDeviceCount() == 0:
        pytest.skip("no GPU")
    return importlib.import_module("generated.existing_kernels")


def data(seed: int, b_: int = 37, k_: int = 65) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)  # fresh random data each seed, never zeros; a partial last block
    return {"window": rng.standard_normal((b_, k_, 56)).astype(np.float32),
            "ctx": rng.standard_normal((b_, 16)).astype(np.float32),
            "W": (rng.standard_normal((40, 40)) * 0.2).astype(np.float32),
            "b": rng.standard_normal(40).astype(np.float32),
            "grad_y": rng.standard_normal((b_, k_, 40)).astype(np.float32)}


def poisoned(shape: tuple[int, ...]) -> object:
    return cp.full(shape, np.nan, np.float32)


@pytest.mark.parametrize("seed", [3, 4])
def test_the_fixed_kernels_match_float64(ek: object, seed: int) -> None:
    d = data(seed)
    b_, k_ = d["window"].shape[:2]
    window = cp.asarray(d["window"])
    window[..., 40:] = np.nan  # the context columns are the broadcast's to write
    ek.context_broadcast(cp.asarray(d["ctx"]), window)  # type: ignore[attr-defined]
    want_ctx = context_broadcast(d["ctx"], k_)
    assert relative_error(cp.asnumpy(window)[..., 40:], want_ctx) < 1e-6
    assert relative_error(cp.asnumpy(window)[..., :40], d["window"][..., :40].astype(np.float64)) == 0.0
    gates, y = poisoned((b_, k_, 40)), poisoned((b_, k_, 40))
    ek.vsn_forward(window, cp.asarray(d["W"]), cp.asarray(d["b"]), gates, y)  # type: ignore[attr-defined]
    want_gates, want_y = vsn_forward(d["window"][..., :40], d["W"], d["b"])
    assert relative_error(cp.asnumpy(gates), want_gates) < 1e-5 and relative_error(cp.asnumpy(y), want_y) < 1e-5
    grad_x, grad_z = poisoned((b_, k_, 40)), poisoned((b_, k_, 40))
    ek.vsn_backward(window, cp.asarray(d["W"]), gates, cp.asarray(d["grad_y"]), grad_x, grad_z)  # type: ignore[attr-defined]
    want_grad_x, _, want_grad_b = vsn_backward(d["window"][..., :40], d["W"], cp.asnumpy(gates), d["grad_y"])
    assert relative_error(cp.asnumpy(grad_x), want_grad_x) < 1e-5
    assert relative_error(cp.asnumpy(grad_z).reshape(-1, 40).sum(axis=0), want_grad_b) < 1e-4


def test_the_program_runs_the_broadcast_then_the_forward(ek: object) -> None:
    d = data(5)
    b_, k_ = d["window"].shape[:2]
    window = cp.asarray(d["window"])
    gates, y = poisoned((b_, k_, 40)), poisoned((b_, k_, 40))
    ek.forward(ctx=cp.asarray(d["ctx"]), window=window, W=cp.asarray(d["W"]), b=cp.asarray(d["b"]),  # type: ignore[attr-defined]
               gates=gates, y=y)
    assert relative_error(cp.asnumpy(y), vsn_forward(d["window"][..., :40], d["W"], d["b"])[1]) < 1e-5


def test_the_launcher_refuses_features_packed_at_stride_40(ek: object) -> None:
    from layoutgen.runtime.launch import LaunchError

    d = data(6)
    b_, k_ = d["window"].shape[:2]
    gates, y = poisoned((b_, k_, 40)), poisoned((b_, k_, 40))
    with pytest.raises(LaunchError) as info:  # the seed bug's buffer: rows 40 apart, not the Window's 56
        ek.vsn_forward(cp.asarray(d["window"][..., :40].copy()), cp.asarray(d["W"]), cp.asarray(d["b"]), gates, y)  # type: ignore[attr-defined]
    assert info.value.code == "LG601"
    assert bool(cp.isnan(y).all())  # nothing ran


# The debug build of the original kernels (examples/existing_kernels/seed_bug.py, rendered without its lint, which
# refuses them already): each pointer parameter is an lg::checked_ptr (layoutgen/codegen/existing_debug.py), so
# the unmodified body's reads of `x` at stride 40 stop the kernel. The message is the CPU run's LG650
# (tests/test_existing_kernels_execute.py), as LG611, at the line of the pointer parameter in the .cu. The forward's
# first bad read (line 39, through `const float* xr`, which the debug copy writes as an lg::checked_ptr keeping
# x's footprint: layoutgen/codegen/checked_types.py) stops it. `<N>`: which thread meets it first is the device's.
CU = "examples/existing_kernels/vsn_kernels.cu"
STOPPED = {
    "vsn_forward": (f"{CU}:27", "`vsn_forward` read `x` (Window.snap) at row <N>, column <N>, outside the field's "
                                "columns 0..40 (rows 56 elements apart), in block <N>, thread <N>"),
    "vsn_backward": (f"{CU}:70", "`vsn_backward` read `x` (Window.snap) at row <N>, column <N>, outside the field's "
                                 "columns 0..40 (rows 56 elements apart), in block <N>, thread <N>"),
}


def _debug_build(spec: str, out: str) -> object:
    """The debug build of ``spec`` rendered into ``build/<out>`` (ignored by git), its lint not run, imported."""
    import importlib.util
    from pathlib import Path

    from layoutgen.codegen.render import render_spec
    from layoutgen.project.specload import load_spec

    repo = Path(__file__).resolve().parent.parent.parent
    loaded = load_spec(repo / spec)
    assert loaded.spec is not None
    rendered = render_spec(loaded.spec, repo, spec, debug=True, out=f"build/{out}")
    assert not rendered.diagnostics, rendered.diagnostics
    for path, text in rendered.files.items():
        (repo / "build" / out / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / "build" / out / path).write_text(text, encoding="utf-8")
    init = repo / "build" / out / loaded.spec.name / "__init__.py"
    module_spec = importlib.util.spec_from_file_location(f"{out.replace('-', '_')}_{loaded.spec.name}", init)
    assert module_spec is not None and module_spec.loader is not None
    module = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("kernel", sorted(STOPPED))
def test_the_buggy_kernels_are_stopped_by_the_debug_build(ek: object, kernel: str) -> None:
    import re

    from layoutgen.runtime.debug import KernelFault

    debug = _debug_build("examples/existing_kernels/seed_bug.py", "existing-kernels-seed-debug")
    d = data(7)
    b_, k_ = d["window"].shape[:2]
    window, W = cp.asarray(d["window"]), cp.asarray(d["W"])
    out1, out2 = poisoned((b_, k_, 40)), poisoned((b_, k_, 40))
    with pytest.raises(KernelFault) as fault:
        if kernel == "vsn_forward":
            debug.vsn_forward(window, W, cp.asarray(d["b"]), out1, out2)  # type: ignore[attr-defined]
        else:
            gates = cp.asarray(np.full((b_, k_, 40), 1 / 40, np.float32))
            debug.vsn_backward(window, W, gates, cp.asarray(d["grad_y"]), out1, out2)  # type: ignore[attr-defined]
    site, message = STOPPED[kernel]
    assert fault.value.code == "LG611"
    assert str(fault.value.diagnostic.site) == site
    assert re.fullmatch(re.escape(message).replace("<N>", r"\d+"), fault.value.diagnostic.message), str(fault.value)


def test_the_fixed_kernels_match_float64_in_the_debug_build(ek: object) -> None:
    """The checked pointers and the rows the launcher passes them change nothing a correct kernel computes."""
    debug = _debug_build("examples/existing_kernels/spec.py", "existing-kernels-fixed-debug")
    d = data(8)
    b_, k_ = d["window"].shape[:2]
    window = cp.asarray(d["window"])
    window[..., 40:] = np.nan
    debug.context_broadcast(cp.asarray(d["ctx"]), window)  # type: ignore[attr-defined]
    assert relative_error(cp.asnumpy(window)[..., 40:], context_broadcast(d["ctx"], k_)) < 1e-6
    gates, y = poisoned((b_, k_, 40)), poisoned((b_, k_, 40))
    debug.vsn_forward(window, cp.asarray(d["W"]), cp.asarray(d["b"]), gates, y)  # type: ignore[attr-defined]
    want_gates, want_y = vsn_forward(d["window"][..., :40], d["W"], d["b"])
    assert relative_error(cp.asnumpy(gates), want_gates) < 1e-5 and relative_error(cp.asnumpy(y), want_y) < 1e-5
    grad_x, grad_z = poisoned((b_, k_, 40)), poisoned((b_, k_, 40))
    debug.vsn_backward(window, cp.asarray(d["W"]), gates, cp.asarray(d["grad_y"]), grad_x, grad_z)  # type: ignore[attr-defined]
    want_grad_x, _, _ = vsn_backward(d["window"][..., :40], d["W"], cp.asnumpy(gates), d["grad_y"])
    assert relative_error(cp.asnumpy(grad_x), want_grad_x) < 1e-5
