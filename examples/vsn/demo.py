"""`make demo`: the story of layoutgen in about 40 lines, from the layout to a running kernel.

1. the layout the VSN kernels share: `Window`, 40 features and 16 context columns in rows of 56;
2. the original mistake, a kernel reading the features at row stride 40: `layoutgen check` refuses it (LG201);
3. the spec as written: every check passes and every kernel compiles offline with NVRTC (no GPU needed);
4. on a machine with a GPU, every kernel and the training-step program against a float64 NumPy reference.

The generated files are brought up to date first, silently unless something changed. `--verbose` (or
`make demo ARGS=--verbose`) shows the details: every layout, binding and program, what `generate` wrote, and
each kernel's registers and spills.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def step(title: str) -> None:
    print(f"\n== {title}")


def layoutgen(*args: str, echo: bool = True) -> int:
    """Run ``layoutgen ARGS`` from the repository root, its output shown as it comes."""
    if echo:
        print(f"$ layoutgen {' '.join(args)}", flush=True)
    return subprocess.call([sys.executable, "-m", "layoutgen", *args], cwd=ROOT)


def generate_quietly(verbose: bool) -> int:
    """`layoutgen generate`, shown only when it wrote something, failed, or with --verbose."""
    if verbose:
        return layoutgen("generate")
    run = subprocess.run([sys.executable, "-m", "layoutgen", "generate", "-q"], cwd=ROOT, capture_output=True,
                         text=True)
    if run.returncode or not run.stdout.startswith("No files changed"):
        print(f"$ layoutgen generate -q\n{run.stdout}{run.stderr}", end="")
    return run.returncode


def gpu_reason() -> str | None:
    try:
        import cupy

        return None if cupy.cuda.runtime.getDeviceCount() > 0 else "no CUDA device"
    except Exception as exc:  # no driver: CUDARuntimeError
        return f"{type(exc).__name__}: {exc}"


def run_on_gpu() -> None:
    import cupy
    import numpy as np

    sys.path.insert(0, str(ROOT))
    import generated.vsn as vsn
    from examples.vsn import reference as ref

    rng = np.random.default_rng()
    b, k = 256, 64
    dev = lambda a: cupy.asarray(np.asarray(a, np.float32))  # noqa: E731
    raw = rng.normal(1.0, 2.0, (b, k, 40))
    stats = np.stack([rng.normal(size=40), rng.uniform(0.2, 1.0, 40)], axis=1)
    ctx = rng.normal(size=(b, 16)) * 20
    w, bias = rng.normal(size=(40, 40)) * 0.3, rng.normal(size=40)
    window = cupy.full((b, k, 56), cupy.nan, cupy.float32)
    vsn.snap_feature_assemble(dev(raw), dev(stats), dev(stats), window)
    vsn.context_broadcast(dev(ctx), window)
    gates, y = cupy.full((b, k, 40), cupy.nan, cupy.float32), cupy.full((b, k, 40), cupy.nan, cupy.float32)
    vsn.variable_selection_fwd(window, dev(w), dev(bias), gates, y)
    grad_y = rng.normal(size=(b, k, 40))
    grad_x = cupy.full((b, k, 40), cupy.nan, cupy.float32)
    grad_w, grad_b = cupy.zeros((40, 40), cupy.float32), cupy.zeros(40, cupy.float32)
    vsn.variable_selection_bwd(window, dev(w), gates, dev(grad_y), grad_x, grad_w, grad_b)
    host = window.get()
    snap = ref.snap_feature_assemble(raw, stats)
    want_gates, want_y = ref.vsn_forward(host[..., ref.SNAP], w, bias)
    want_dx, want_dw, want_db = ref.vsn_backward(host[..., ref.SNAP], w, gates.get(), grad_y)
    rows = [
        ("snap_feature_assemble", ref.relative_error(host[..., ref.SNAP], snap)),
        ("context_broadcast", ref.relative_error(host[..., ref.CONTEXT], ref.context_broadcast(ctx, k))),
        ("variable_selection_fwd gates", ref.relative_error(gates.get(), want_gates)),
        ("variable_selection_fwd y", ref.relative_error(y.get(), want_y)),
        ("variable_selection_bwd grad_x", ref.relative_error(grad_x.get(), want_dx)),
        ("variable_selection_bwd grad_W", ref.relative_error(grad_w.get(), want_dw)),
        ("variable_selection_bwd grad_b", ref.relative_error(grad_b.get(), want_db)),
    ]
    name = cupy.cuda.runtime.getDeviceProperties(0)["name"].decode()
    print(f"[B, K] = [{b}, {k}] on {name}; relative error against float64 NumPy:")
    for kernel, err in rows:
        print(f"  {kernel:<32} {err:.2e}")
    run_program(vsn, ref, rng, b, k)


def run_program(vsn, ref, rng, b: int, k: int) -> None:  # type: ignore[no-untyped-def]
    """The training step as a program: once launch by launch, once replayed from a CUDA graph."""
    import cupy
    import numpy as np

    lr = 0.05
    inputs = {"raw": rng.normal(1.0, 2.0, (b, k, 40)), "ctx": rng.normal(size=(b, 16)) * 20,
              "stats": np.stack([rng.normal(size=40), rng.uniform(0.2, 1.0, 40)], axis=1),
              "target": rng.normal(size=(b, k, 40)), "W": rng.normal(size=(40, 40)) * 0.3, "b": rng.normal(size=40)}
    want = ref.vsn_step(inputs["raw"], inputs["stats"], inputs["ctx"], inputs["target"], inputs["W"], inputs["b"], lr)

    def buffers():  # type: ignore[no-untyped-def]
        dev = {name: cupy.asarray(np.asarray(a, np.float32)) for name, a in inputs.items()}
        for name in want:
            if name not in dev:
                dev[name] = cupy.full(want[name].shape, cupy.nan, cupy.float32)
        return dev

    plain, replayed = buffers(), buffers()
    vsn.vsn_step(**plain, lr=lr)  # the learning rate is a scalar, given each run
    vsn.capture_vsn_step(**replayed, lr=lr).replay()  # the graph keeps the lr it was captured with
    cupy.cuda.get_current_stream().synchronize()
    print(f"program vsn_step ({len(want)} buffers written, 7 launches); relative error against float64 NumPy:")
    for name in want:
        print(f"  {name:<10} plain {ref.relative_error(plain[name].get(), want[name]):.2e}   "
              f"graph replay {ref.relative_error(replayed[name].get(), want[name]):.2e}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="demo", description=__doc__.splitlines()[0])
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="every layout, binding and program; what generate wrote; registers and spills")
    verbose = parser.parse_args(argv).verbose
    step("1. The layout: declared once in examples/vsn/spec.py; every stride and offset comes from it")
    if layoutgen("show", "examples/vsn/spec.py" if verbose else "examples/vsn/spec.py:Window"):
        return 1
    step("2. The original mistake: a kernel that reads the features as packed rows of 40")
    if layoutgen("check", "examples/vsn/seed_bug.py") != 1:
        print("expected the seed bug to be refused")
        return 1
    print("Refused (exit 1) before anything is generated or run: the bug cannot ship.")
    step("3. The spec as written: every check, and every kernel compiled offline with NVRTC for sm_90")
    if generate_quietly(verbose):
        return 1
    if layoutgen("check", "--compile", *(["--report"] if verbose else ["-q"]), "examples/vsn/spec.py"):
        return 1
    step("4. On the GPU: every kernel against a float64 NumPy reference")
    reason = gpu_reason()
    if reason is not None:
        print(f"No GPU here ({reason}); on a GPU machine this step runs every kernel and the")
        print("training-step program, plain and replayed from a CUDA graph, and prints their errors.")
        return 0
    run_on_gpu()
    return 0


if __name__ == "__main__":
    sys.exit(main())
