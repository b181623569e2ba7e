"""`make demo`: the motivating pipeline, from declaration to a running kernel.

1. prints the layouts of examples/vsn/spec.py;
2. generates the CUDA views, kernels and launchers into generated/vsn/;
3. runs `layoutgen check` on the spec (clean) and on seed_bug.py (the
   original mistake, refused with LG201);
4. compiles every kernel offline with NVRTC for sm_90;
5. on a machine with a GPU, runs each kernel and prints its error against a
   float64 NumPy reference; without one, says so and stops.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def step(title: str) -> None:
    print(f"\n== {title} " + "=" * max(0, 70 - len(title)))


def layoutgen(*args: str) -> int:
    print(f"$ layoutgen {' '.join(args)}", flush=True)
    return subprocess.call([sys.executable, "-m", "layoutgen", *args], cwd=ROOT)


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


def main() -> int:
    step("1. the layouts (examples/vsn/spec.py)")
    sys.stdout.flush()
    if layoutgen("show", "examples/vsn/spec.py"):
        return 1
    step("2. generate CUDA views, kernels and launchers")
    if layoutgen("generate"):
        return 1
    step("3. check the spec, then the original mistake")
    if layoutgen("check", "examples/vsn/spec.py"):
        return 1
    if layoutgen("check", "examples/vsn/seed_bug.py") != 1:
        print("expected the seed bug to be refused")
        return 1
    print("(exit 1, as it should: the bug is caught before anything is generated)")
    step("4. compile every kernel offline with NVRTC (sm_90, no GPU needed)")
    if layoutgen("check", "--compile", "--report", "examples/vsn/spec.py"):
        return 1
    step("5. run on the GPU")
    reason = gpu_reason()
    if reason is not None:
        print(f"No GPU here ({reason}); stopping before the run. On a GPU machine this step runs every")
        print("kernel and prints its error against a float64 NumPy reference.")
        return 0
    run_on_gpu()
    return 0


if __name__ == "__main__":
    sys.exit(main())
